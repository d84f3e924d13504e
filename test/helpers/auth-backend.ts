/**
 * What the end-to-end suites of the auth backend plugins (test/e2e/auth-*.test.ts) share: a
 * node with the plugin manager and the plugin's shipped config plus a test's keys, CONNACK
 * codes from mqtt.js and from mosquitto_pub / mosquitto_sub, the usernames that must never
 * authenticate, the ACL checks every backend makes, and the outage sequence: backend down →
 * the CONNECT answered within the timeout (the chain decides) with the alarm raised → the
 * requests the backend decides without asking its server (no username ...) leave the alarm
 * up → backend back → authenticating again with the alarm cleared.
 *
 * The checks here are `expect`s: a suite calls them from its own `it`, so every test keeps
 * its name and file; what differs per backend is a parameter, never a branch on its name.
 */
import { execFile, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { createServer, type RequestListener, type Server } from 'node:http'
import type { Server as HttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import type { StarlingNode } from '../../node/node.js'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'
import { apiRequest, connect, waitFor, type Received, type TestNode } from './node.js'
import { open, pubackCode, refusedConnack, suback } from './mqtt.js'

/** Whether mosquitto_pub / mosquitto_sub are installed (Debian package mosquitto-clients). */
export const hasMosquitto = spawnSync('mosquitto_pub', ['--help']).status !== null

/** `it` where the mosquitto clients are installed, `it.skip` where they are not. */
export const itWithMosquitto = hasMosquitto ? it : it.skip

/**
 * Runs mosquitto_pub or mosquitto_sub against `node`'s TCP listener (`-h`/`-p` given here);
 * resolves with its exit code (non-zero when the CONNECT is refused; -1 when killed after
 * 10 s) and its output. Asynchronous: the node runs in this process.
 */
export async function mosquitto (node: StarlingNode, program: 'mosquitto_pub' | 'mosquitto_sub', args: string[]): Promise<{ code: number, out: string }> {
  return await new Promise((resolve) => {
    execFile(program, ['-h', '127.0.0.1', '-p', String(node.port('mqtt:tcp')), ...args], { encoding: 'utf8', timeout: 10_000, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, out: stdout + stderr })
    })
  })
}

/** Connects once and resolves with the CONNACK code (0: accepted) for either protocol version; the client is closed. */
export async function connackCode (node: StarlingNode, opts: IClientOptions): Promise<number> {
  const client = mqtt.connect({ host: '127.0.0.1', port: node.port('mqtt:tcp'), reconnectPeriod: 0, connectTimeout: 5000, ...opts })
  client.on('error', () => {})
  const connack = await new Promise<any>((resolve) => {
    client.on('packetreceive', (packet: any) => { if (packet.cmd === 'connack') resolve(packet) })
    client.once('close', () => resolve(null))
  })
  client.end(true)
  if (connack === null) throw new Error('no CONNACK')
  return opts.protocolVersion === 5 ? connack.reasonCode ?? 0 : connack.returnCode
}

/** The CONNACK code of a CONNECT the broker refuses (MQTT 5 reason code, 3.1.1 return code). */
export async function refusedCode (node: StarlingNode, opts: IClientOptions): Promise<number> {
  const connack = await refusedConnack(node, opts)
  return opts.protocolVersion === 5 ? connack.reasonCode : connack.returnCode
}

/** Runs `attempt` until it resolves (one at a time, 50 ms apart); fails after `timeoutMs`. */
export async function retryUntil (attempt: () => Promise<void>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await attempt()
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${(err as Error).message}`)
      await new Promise(resolve => setTimeout(resolve, 50))
    }
  }
}

/** A node with a plugin manager, and one auth backend plugin loaded through it. */
export interface BackendNode {
  p: PluginNode
  node: TestNode
  /** The plugin's alarm: `<plugin>_unreachable`. */
  alarm: string
  alarmActive: () => boolean
  /** Writes the shipped etc/plugins/<plugin>.conf with `keys` appended, and loads it. */
  load: (keys?: Record<string, string>) => Promise<void>
  /** Unloads the plugin when it is loaded, then {@link BackendNode.load}. */
  reload: (keys?: Record<string, string>) => Promise<void>
  /** Unloads the plugin when it is loaded. */
  unload: () => Promise<void>
  /** Sets `allow_anonymous` through the API (how the chain decides what the backend ignores). */
  setAnonymous: (allow: boolean) => Promise<void>
  destroy: () => Promise<void>
}

/** Starts a node for `plugin` (`overrides` of etc/starling.conf); loads nothing yet. */
export async function startBackendNode (plugin: string, overrides: Record<string, string>): Promise<BackendNode> {
  const p = await startPluginNode({ overrides })
  const node = p.node
  const alarm = `${plugin}_unreachable`
  const unload = async (): Promise<void> => {
    if (p.manager.isActive(plugin)) await p.manager.unload(plugin)
  }
  const load = async (keys: Record<string, string> = {}): Promise<void> => {
    p.writeConf(plugin, shippedPluginConf(plugin, keys))
    await p.manager.load(plugin)
  }
  return {
    p,
    node,
    alarm,
    alarmActive: () => node.services.alarms.isActive(alarm),
    load,
    reload: async (keys) => {
      await unload()
      await load(keys)
    },
    unload,
    setAnonymous: async (allow) => {
      expect((await apiRequest(node, '/configs/starling', 'PUT', { allow_anonymous: allow })).code).toBe(0)
      expect(node.config.allow_anonymous).toBe(allow)
    },
    destroy: async () => { await p.destroy() }
  }
}

/** Usernames every backend is tried with: a quote that ends a string, and a boolean operator. */
export const QUERY_INJECTIONS = ["' OR 1=1 --", 'x" || true']

/** Usernames that try to change a SQL query: quoting and comments (MySQL and PostgreSQL alike). */
export const SQL_INJECTIONS = ["' OR 1=1 --", "x' OR '1'='1", 'x" || true', "victim' -- "]

/** Expects none of `usernames` to authenticate with `password` (MQTT 5: the chain's 0x87, no such user). */
export async function expectNeverAuthenticated (node: StarlingNode, usernames: readonly string[], password: string): Promise<void> {
  for (const username of usernames) {
    expect([username, await refusedCode(node, { protocolVersion: 5, username, password })]).toEqual([username, 0x87])
  }
}

/**
 * Expects `client`'s publishes to `allowed` topics acknowledged (0) and to `denied` ones
 * refused (0x87), and `watcher` (a superuser subscribed to `#`) to get the last allowed one
 * and none of the denied.
 */
export async function expectPublishes (client: MqttClient, watcher: { messages: Received[] }, topics: { allowed: string[], denied: string[] }): Promise<void> {
  for (const topic of topics.allowed) expect(await pubackCode(client, topic)).toBe(0)
  for (const topic of topics.denied) expect(await pubackCode(client, topic)).toBe(0x87)
  const last = topics.allowed[topics.allowed.length - 1]
  await waitFor(() => watcher.messages.some(m => m.topic === last), 'the allowed publish')
  for (const topic of topics.denied) expect(watcher.messages.map(m => m.topic)).not.toContain(topic)
}

/** The ACL cache check: a publish allowed, the backend's rule then revoked. */
export interface AclCacheCase {
  node: StarlingNode
  /** A superuser that watches `topic`, and the user whose rule allows publishing to it. */
  watcher: IClientOptions
  user: IClientOptions
  topic: string
  /** Revokes the user's rule in the backend; resolves with what puts it back. */
  revoke: () => Promise<() => Promise<void>>
}

/**
 * Expects an allowed publish to stay allowed for the client that was allowed (the ACL
 * cache), while a new client of the same user is denied once the rule is revoked.
 */
export async function expectAclCached ({ node, watcher, user, topic, revoke }: AclCacheCase): Promise<void> {
  const root = await open(node, watcher)
  await root.client.subscribeAsync(topic, { qos: 1 })
  const a = await connect(node, { ...user, clientId: `${user.clientId ?? 'user'}-cache` })
  expect(await pubackCode(a, topic)).toBe(0)
  const restore = await revoke()
  try {
    expect(await pubackCode(a, topic)).toBe(0) // cached allow
    const b = await connect(node, { ...user, clientId: `${user.clientId ?? 'user'}-fresh` })
    expect(await pubackCode(b, topic)).toBe(0x87)
    await waitFor(() => root.messages.filter(m => m.topic === topic).length === 2, 'two cached-allowed messages')
  } finally {
    await restore()
  }
}

/** One backend outage: how to take it down and back, and what the node must answer meanwhile. */
export interface OutageCase {
  backend: BackendNode
  /** Takes the backend down (kill, stop) and brings it back (restart, start on the same port). */
  down: () => Promise<void>
  up: () => Promise<void>
  /** Runs once the backend is down, before the first CONNECT (loading the plugin then tests a load with the backend down). */
  whileDown?: () => Promise<void>
  /** CONNECTs the chain refuses while the backend is down (allow_anonymous = false), with their CONNACK codes. */
  refused: Array<[IClientOptions, number]>
  /** Longest all of `refused` may take together, in ms. */
  withinMs: number
  /** `at once`: the alarm is up when the refusal is answered; `eventually`: waited for. */
  alarm: 'at once' | 'eventually'
  /** Whether the alarm is checked in the API's /alarms/present too. */
  listed: boolean
  /** A CONNECT accepted while down once allow_anonymous is true: the backend ignores, the chain decides. */
  anonymous?: IClientOptions
  /** Resolves once authentication works again (a connect, or a retried one). */
  recovered: () => Promise<void>
  /** `[plugin, server]` for the timing lines in the test's output (`svc_auth_redis`, `Redis`). */
  timings?: [string, string]
}

/**
 * How many times `backend`'s alarm has been cleared (its entries in the alarm history):
 * a clear followed by a new raise leaves the alarm present but shows here.
 */
export function alarmClears (backend: BackendNode): number {
  return backend.node.services.alarms.history().filter((a) => a.id === backend.alarm).length
}

/**
 * With the alarm up and allow_anonymous true: runs `unasked` (requests that do not reach the
 * backend's server, or fail to), then CONNECTs without a username (MQTT 5 and 3.1.1) whose
 * client publishes and subscribes (the ACL path); expects the alarm never cleared meanwhile,
 * still present and (with `listed`) in the API's /alarms/present. allow_anonymous is set
 * back to false.
 */
export async function expectAlarmKept (backend: BackendNode, listed: boolean, unasked?: () => Promise<void>): Promise<void> {
  const { node } = backend
  expect(backend.alarmActive()).toBe(true)
  const clears = alarmClears(backend)
  await backend.setAnonymous(true)
  try {
    await unasked?.()
    await connect(node, { protocolVersion: 4, clientId: 'outage-anonymous-4' })
    const anonymous = await connect(node, { protocolVersion: 5, clientId: 'outage-anonymous-5' })
    await pubackCode(anonymous, 'outage/anonymous') // answered either way: the ACL chain decides
    await suback(anonymous, 'outage/anonymous')
    anonymous.end(true)
  } finally {
    await backend.setAnonymous(false)
  }
  expect([backend.alarm, backend.alarmActive(), alarmClears(backend)]).toEqual([backend.alarm, true, clears])
  if (listed) expect(JSON.stringify(await apiRequest(node, '/alarms/present'))).toContain(backend.alarm)
}

/**
 * Backend down → every CONNECT of `refused` answered by the chain within `withinMs`, the
 * alarm raised (and listed), an anonymous CONNECT accepted when allowed → the requests that
 * do not reach the backend ({@link expectAlarmKept}) leave the alarm up → backend back →
 * authentication works again and the alarm is cleared. The backend is brought back even
 * when an expectation fails.
 */
export async function expectOutageAndRecovery (o: OutageCase): Promise<void> {
  const { backend } = o
  await o.down()
  try {
    await o.whileDown?.()
    const began = Date.now()
    for (const [opts, code] of o.refused) expect(await refusedCode(backend.node, opts)).toBe(code)
    const refusedInMs = Date.now() - began
    expect(refusedInMs).toBeLessThan(o.withinMs)
    if (o.alarm === 'at once') expect(backend.alarmActive()).toBe(true)
    else await waitFor(backend.alarmActive, 'the unreachable alarm')
    if (o.listed) expect(JSON.stringify(await apiRequest(backend.node, '/alarms/present'))).toContain(backend.alarm)
    const anonymous = o.anonymous
    await expectAlarmKept(backend, o.listed, anonymous === undefined ? undefined : async () => { await connect(backend.node, anonymous) })
    if (o.timings !== undefined) console.log(`${o.timings[0]}: CONNECT with ${o.timings[1]} down refused in ${refusedInMs} ms`)
  } finally {
    await o.up()
  }
  const back = Date.now()
  await o.recovered()
  if (o.timings !== undefined) console.log(`${o.timings[0]}: auth works again ${Date.now() - back} ms after ${o.timings[1]} restarted`)
  expect(backend.alarmActive()).toBe(false)
}

/** mosquitto_pub with the right and with a wrong password, per protocol version. */
export interface MosquittoPubCase {
  username: string
  password: string
  wrongPassword: string
  topic: string
  /** `-V` values (`mqttv311`, `mqttv5`, or `311`, `5`). */
  versions: readonly string[]
  /** The versions a wrong password is tried with; default: all of `versions`. */
  refusedWith?: readonly string[]
  /** What mosquitto_pub prints when refused. */
  refusal: RegExp
  /** Expect an accepted publish to print nothing at all. */
  quiet?: boolean
}

/** Expects mosquitto_pub accepted (exit 0) with the right password and refused (non-zero, `refusal`) with a wrong one. */
export async function expectMosquittoPub (node: StarlingNode, c: MosquittoPubCase): Promise<void> {
  const args = (version: string, password: string): string[] => ['-V', version, '-u', c.username, '-P', password, '-t', c.topic, '-m', 'hi', '-q', '1']
  for (const version of c.versions) {
    const ok = await mosquitto(node, 'mosquitto_pub', args(version, c.password))
    if (c.quiet === true) expect([version, ok.code, ok.out]).toEqual([version, 0, ''])
    else expect([version, ok.code]).toEqual([version, 0])
    if (!(c.refusedWith ?? c.versions).includes(version)) continue
    const bad = await mosquitto(node, 'mosquitto_pub', args(version, c.wrongPassword))
    expect(bad.code).not.toBe(0)
    expect(bad.out).toMatch(c.refusal)
  }
}

/** Expects mosquitto_sub (MQTT 5) to report its subscription to `topic` denied (`denial`). */
export async function expectMosquittoSubDenied (node: StarlingNode, who: { username: string, password: string }, topic: string, denial: RegExp): Promise<void> {
  const r = await mosquitto(node, 'mosquitto_sub', ['-V', 'mqttv5', '-u', who.username, '-P', who.password, '-t', topic, '-C', '1', '-W', '3'])
  expect(r.out).toMatch(denial)
}

/**
 * An HTTP service on 127.0.0.1 that a test stops (every open connection dropped: the
 * service is down) and starts again on the same port: the backend an auth plugin calls
 * (svc_auth_http's service, svc_auth_jwt's JWKS).
 */
export class StoppableHttpServer {
  port = 0
  protected readonly server: Server | HttpsServer
  private readonly sockets = new Set<Socket>()

  /** An http server answering with `handler`, or a server made by the caller (https). */
  constructor (handler: RequestListener | Server | HttpsServer) {
    this.server = typeof handler === 'function' ? createServer(handler) : handler
    this.server.on('connection', (s: Socket) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)) })
  }

  /** Listens on `port` (0: a free one, then kept in `port` for a restart). */
  async start (port = 0): Promise<void> {
    this.server.listen(port, '127.0.0.1')
    await once(this.server, 'listening')
    this.port = (this.server.address() as AddressInfo).port
  }

  /** Stops listening and drops every open connection. */
  async stop (): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()))
    for (const s of this.sockets) s.destroy()
    this.server.closeAllConnections()
    await closed
  }
}

/**
 * Expects a user the backend does not know to be left to the chain: refused while
 * allow_anonymous is false (0x87 / 5), accepted (and a client without a username too) once
 * it is true, while `knownWithWrongPassword` is still refused (0x86).
 */
export async function expectUnknownUserToChain (backend: BackendNode, knownWithWrongPassword: IClientOptions): Promise<void> {
  const { node } = backend
  expect(await refusedCode(node, { protocolVersion: 5, username: 'stranger', password: 'x' })).toBe(0x87)
  expect(await refusedCode(node, { protocolVersion: 4, username: 'stranger', password: 'x' })).toBe(5)
  await backend.setAnonymous(true)
  await connect(node, { protocolVersion: 5, username: 'stranger', password: 'x' })
  await connect(node, { protocolVersion: 4 })
  // a known user with a wrong password is still refused
  expect(await refusedCode(node, { protocolVersion: 5, ...knownWithWrongPassword })).toBe(0x86)
}
