/**
 * A real Mosquitto (Debian package `mosquitto`) for tests: an MQTT listener on
 * 127.0.0.1:<free port>, optionally a TLS listener on a second free port with a CA and a
 * server certificate (for 127.0.0.1 and localhost) made with the openssl CLI in the server's
 * directory, anonymous access, and persistence in that directory (a clean stop saves the
 * persistent sessions and their queued messages; `restart()` reads them back on the same
 * ports). Runs as the `mosquitto` account when the tests run as root.
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { join } from 'node:path'
import { SERVER_HOST, spawnServer, type ServerContext, type ServerProcess } from './core.js'
import { findBinary } from './system.js'

const PACKAGE = 'mosquitto'

/** mosquitto; throws {@link MissingServerError} naming `mosquitto`. */
export function mosquittoBinary (): string {
  return findBinary(['mosquitto', '/usr/sbin/mosquitto'], PACKAGE)
}

/** Options of {@link startMosquitto}. */
export interface MosquittoOptions {
  /** Also listen with TLS on a second port (certificates generated at setup). */
  tls?: boolean
  /** TLS listener: require a client certificate signed by the CA. */
  requireCertificate?: boolean
  /** More lines for mosquitto.conf (global settings). */
  extraConfig?: string[]
}

/** A running Mosquitto. */
export interface MosquittoServer extends ServerProcess {
  /** `mqtt://127.0.0.1:<port>` */
  readonly url: string
  /** The TLS listener's port (with `tls`). */
  readonly tlsPort: number | undefined
  /** PEM files made at setup (with `tls`): the CA, and a client certificate and key it signed. */
  readonly caFile: string | undefined
  readonly clientCertFile: string | undefined
  readonly clientKeyFile: string | undefined
  /** An mqtt.js client on the plain listener, resolved once CONNACK arrived; the caller ends it. */
  connect: (opts?: IClientOptions) => Promise<MqttClient>
}

/** Generates a CA, a server certificate for 127.0.0.1/localhost and a client certificate in `ctx.dir`. */
async function makeCertificates (ctx: ServerContext): Promise<void> {
  const run = async (...args: string[]): Promise<string> => await ctx.run(['openssl', ...args], { timeoutMs: 30_000 })
  await run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=Starling test CA',
    '-keyout', 'ca.key', '-out', 'ca.pem')
  ctx.writeFile('server.ext', 'subjectAltName=IP:127.0.0.1,DNS:localhost\n', 0o644)
  await run('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', 'server.key', '-out', 'server.csr')
  await run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
    '-extfile', 'server.ext', '-out', 'server.pem')
  await run('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=bridge-client', '-keyout', 'client.key', '-out', 'client.csr')
  await run('x509', '-req', '-in', 'client.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-out', 'client.pem')
}

/** Starts Mosquitto; see {@link MosquittoServer}. */
export async function startMosquitto (opts: MosquittoOptions = {}): Promise<MosquittoServer> {
  const bin = mosquittoBinary()
  const tls = opts.tls === true
  const client = async (port: number, extra: IClientOptions = {}, timeoutMs = 10_000): Promise<MqttClient> => {
    const c = mqtt.connect({ host: SERVER_HOST, port, reconnectPeriod: 0, connectTimeout: timeoutMs, ...extra })
    await new Promise<void>((resolve, reject) => {
      // only until CONNACK: a client that reconnects by itself must outlive later errors
      const onConnect = (): void => { off(); resolve() }
      const onError = (err: Error): void => { off(); c.end(true); reject(err) }
      const onClose = (): void => { off(); c.end(true); reject(new Error('closed before CONNACK')) }
      const off = (): void => { c.off('connect', onConnect); c.off('error', onError); c.off('close', onClose) }
      c.on('connect', onConnect)
      c.on('error', onError)
      c.on('close', onClose)
    })
    return c
  }
  const server = await spawnServer({
    name: 'Mosquitto',
    debianPackage: PACKAGE,
    systemUser: 'mosquitto',
    portCount: tls ? 2 : 1,
    setup: async (ctx) => { if (tls) await makeCertificates(ctx) },
    command: (ctx) => {
      const lines = [
        'per_listener_settings false',
        'allow_anonymous true',
        'persistence true',
        `persistence_location ${ctx.dir}/`,
        'max_queued_messages 0',
        'max_inflight_messages 100',
        'log_dest stderr',
        'log_type error',
        'log_type warning',
        'log_type notice',
        ...(opts.extraConfig ?? []),
        `listener ${ctx.ports[0]} ${ctx.host}`
      ]
      if (tls) {
        lines.push(`listener ${ctx.ports[1]} ${ctx.host}`,
          `cafile ${join(ctx.dir, 'ca.pem')}`, `certfile ${join(ctx.dir, 'server.pem')}`, `keyfile ${join(ctx.dir, 'server.key')}`,
          `require_certificate ${opts.requireCertificate === true ? 'true' : 'false'}`)
      }
      const conf = ctx.writeFile('mosquitto.conf', lines.join('\n') + '\n', 0o644)
      return [bin, '-c', conf]
    },
    probe: async (ctx, timeoutMs) => {
      const c = await client(ctx.port, { clientId: 'starling-probe' }, timeoutMs)
      await c.endAsync()
    }
  })
  return Object.assign(server, {
    url: `mqtt://${server.host}:${server.port}`,
    get tlsPort () { return tls ? server.ports[1] : undefined },
    caFile: tls ? join(server.dir, 'ca.pem') : undefined,
    clientCertFile: tls ? join(server.dir, 'client.pem') : undefined,
    clientKeyFile: tls ? join(server.dir, 'client.key') : undefined,
    connect: async (extra: IClientOptions = {}) => await client(server.port, extra)
  }) as MosquittoServer
}
