import net from 'node:net'
import tls from 'node:tls'
import http from 'node:http'
import https from 'node:https'
import { readFileSync } from 'node:fs'
import type { Duplex } from 'node:stream'
import { WebSocketServer, createWebSocketStream } from 'ws'
import type { Logger } from '../logger.js'
import type { Broker } from './broker.js'

/** WebSocket sub-protocols an MQTT client may ask for (spec: default ports table). */
const MQTT_WS_PROTOCOLS = ['mqtt', 'mqttv3.1', 'mqttv3.1.1']

/** TLS settings of an `ssl` or `wss` listener (`listener.ssl.external.*`). */
export interface ListenerTls {
  keyfile: string
  certfile: string
  cacertfile: string
  /** `verify_peer` asks clients for a certificate. */
  verify: 'verify_none' | 'verify_peer'
  /** With `verify_peer`: refuse clients that send none. */
  failIfNoPeerCert: boolean
}

/** What one MQTT listener is configured with. */
export interface ListenerSpec {
  /** Spec protocol name: `mqtt:tcp`, `mqtt:ssl`, `mqtt:ws`, `mqtt:wss`. */
  protocol: 'mqtt:tcp' | 'mqtt:ssl' | 'mqtt:ws' | 'mqtt:wss'
  host: string
  port: number
  maxConns: number
  acceptors: number
  tls?: ListenerTls
  /** WebSocket path, e.g. `/mqtt`. */
  path?: string
}

/** A listener as the listeners API and `starling-ctl listeners` report it (spec: Listener). */
export interface ListenerInfo {
  protocol: string
  listen_on: string
  acceptors: number
  max_conns: number
  current_conns: number
  /** Empty array when nothing was shut down, otherwise counters by reason. */
  shutdown_count: Record<string, number> | []
}

/**
 * One MQTT listener: accepts sockets, enforces `max_conns`, hands each connection to the
 * broker and counts why connections ended.
 */
export class MqttListener {
  private server: net.Server | http.Server | null = null
  private wss: WebSocketServer | null = null
  private current = 0
  private readonly shutdowns = new Map<string, number>()
  private boundPort = 0

  constructor (readonly spec: ListenerSpec, private readonly broker: Broker, private readonly logger: Logger) {}

  /** The port actually bound (differs from the configured one when that was 0). */
  get port (): number { return this.boundPort }

  /** Starts listening; resolves once bound, rejects with the reason when it cannot bind. */
  async start (): Promise<void> {
    const { spec } = this
    if (spec.protocol === 'mqtt:tcp') {
      this.server = net.createServer(socket => this.accept(socket, socket))
    } else if (spec.protocol === 'mqtt:ssl') {
      const server = tls.createServer(tlsOptions(spec.tls!))
      server.on('secureConnection', socket => { if (this.checkPeer(socket)) this.accept(socket, socket) })
      server.on('tlsClientError', err => this.logger.debug({ err: err.message }, 'TLS handshake failed'))
      this.server = server
    } else {
      const web = spec.protocol === 'mqtt:wss' ? https.createServer(tlsOptions(spec.tls!)) : http.createServer()
      web.on('request', (_req, res) => { res.writeHead(426, { 'content-type': 'text/plain' }); res.end(`MQTT over WebSocket is at ${spec.path}\n`) })
      this.wss = new WebSocketServer({
        server: web,
        path: spec.path,
        maxPayload: 256 * 1024 * 1024,
        handleProtocols: (protocols) => MQTT_WS_PROTOCOLS.find(p => protocols.has(p)) ?? false
      })
      // ws re-emits its server's errors (a failed bind included) on itself: the bind failure
      // is answered by start()'s rejection, later ones are logged below
      this.wss.on('error', () => {})
      this.wss.on('connection', (ws, req) => {
        const tlsSocket = req.socket as tls.TLSSocket
        if (spec.protocol === 'mqtt:wss' && !this.checkPeer(tlsSocket)) { ws.terminate(); return }
        const stream = createWebSocketStream(ws)
        stream.on('error', () => stream.destroy())
        this.accept(stream, req.socket)
      })
      this.server = web
    }
    this.server.maxConnections = spec.maxConns
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject)
      this.server!.listen(spec.port, spec.host, () => {
        this.server!.off('error', reject)
        this.boundPort = (this.server!.address() as net.AddressInfo).port
        resolve()
      })
    })
    this.server.on('error', err => this.logger.error({ err, protocol: spec.protocol }, 'listener error'))
    this.logger.info({ protocol: spec.protocol, host: spec.host, port: this.boundPort }, 'listener started')
  }

  /**
   * Stops accepting connections. Open ones are not waited for: the broker closes them
   * (a Node server's close callback only runs once every connection has ended).
   */
  async stop (): Promise<void> {
    if (this.server === null) return
    const server = this.server
    this.server = null
    this.wss?.close()
    server.close()
  }

  /** The listener's counters (spec: Listener). */
  info (): ListenerInfo {
    const { spec } = this
    return {
      protocol: spec.protocol,
      listen_on: `${spec.host}:${this.boundPort || spec.port}`,
      acceptors: spec.acceptors,
      max_conns: spec.maxConns,
      current_conns: this.current,
      shutdown_count: this.shutdowns.size === 0 ? [] : Object.fromEntries(this.shutdowns)
    }
  }

  private accept (stream: Duplex, socket: net.Socket): void {
    if (this.current >= this.spec.maxConns) {
      stream.destroy()
      return
    }
    this.current++
    socket.setNoDelay(true)
    this.broker.handle(stream, {
      protocol: this.spec.protocol,
      address: socket.remoteAddress ?? '',
      port: socket.remotePort ?? 0,
      localAddress: socket.localAddress ?? '',
      localPort: socket.localPort ?? 0,
      tlsSocket: socket instanceof tls.TLSSocket ? socket : undefined,
      onClose: (reason) => {
        this.current--
        this.shutdowns.set(reason, (this.shutdowns.get(reason) ?? 0) + 1)
      }
    })
  }

  /**
   * With `verify_peer`, Node is told not to reject so that the two EMQ X cases can be told
   * apart: a certificate that does not verify is always refused; a missing one only with
   * `fail_if_no_peer_cert`.
   */
  private checkPeer (socket: tls.TLSSocket): boolean {
    const t = this.spec.tls!
    if (t.verify !== 'verify_peer') return true
    const cert = socket.getPeerCertificate()
    const hasCert = cert !== null && Object.keys(cert).length > 0
    if (!hasCert && !t.failIfNoPeerCert) return true
    if (hasCert && socket.authorized) return true
    this.logger.debug({ error: socket.authorizationError }, 'refused a TLS client certificate')
    socket.destroy()
    return false
  }
}

function tlsOptions (t: ListenerTls): tls.TlsOptions {
  return {
    key: readFileSync(t.keyfile),
    cert: readFileSync(t.certfile),
    ca: t.verify === 'verify_peer' ? readFileSync(t.cacertfile) : undefined,
    requestCert: t.verify === 'verify_peer',
    rejectUnauthorized: false
  }
}
