/**
 * Drives the fuzzer through one door of a broker: many connections at once, each opened by
 * the door's transport (TCP, TLS, WebSocket, WebSocket over TLS) and fed a script by the
 * door's packet source (a CONNECT and packets, then a protocol error or a blind mutation;
 * a malformed CONNECT; a persistent session's visit), written in random splits; some
 * connections get the transport's own garbage instead. Meanwhile a well-behaved QoS 1
 * client pair (the witness) publishes and receives over the same listener; nothing it
 * sends may be lost. Used by the seeded slices in `test/e2e/fuzz*.test.ts` and by
 * `bench/fuzz.ts` (the long run).
 */
import net from 'node:net'
import mqtt, { type IClientOptions } from 'mqtt'
import { Random } from './packets.js'
import { writes } from './mutator.js'
import { sleep, type Endpoint, type Garbage, type Transport } from './transports.js'
import { readVarint, varintSize } from '../../node/mqtt/wire-bytes.js'

/**
 * What the broker must do with one connection's script:
 * - `survive`: nothing is known of the bytes (blind mutations); the node must only go on;
 * - `close`: a protocol error after the CONNECT; the connection must be closed, MQTT 5 with a
 *   DISCONNECT or CONNACK carrying a reason code >= 0x80;
 * - `refuse`: a CONNECT to be refused: closed, and a CONNACK, if one comes, carries one of
 *   the codes listed (`v5` for a level 5 CONNECT, `v4` for 3.1/3.1.1; null: any refusal);
 *   `silent` allows a close without a CONNACK (always allowed for 3.1/3.1.1 unless `v4Required`);
 * - `accept`: a CONNECT to be accepted: CONNACK 0, the connection open.
 */
export type Expectation =
  | { kind: 'survive', name: string }
  | { kind: 'close', name: string }
  | { kind: 'refuse', name: string, v5: number[] | null, v4: number[] | null, silent?: boolean, v4Required?: boolean }
  | { kind: 'accept', name: string }

/** What one connection sends. */
export interface Script {
  /** Protocol level of its CONNECT (3, 4 or 5). */
  version: number
  /** Written first, in random splits (each frame counts as one input). */
  frames: Buffer[]
  /** How long to stay open after `frames` (answering with `react`) before `final`. */
  holdMs?: number
  /** Written last (the mutation, a DISCONNECT); then the expectation is checked. */
  final: Buffer[]
  expect: Expectation
  /** Answers to the broker's frames while the connection is open (acknowledgements), or null. */
  react?: (b0: number, body: Buffer) => Buffer | null
  /** At the end, destroy the socket without waiting (an abrupt drop). */
  drop?: boolean
  /** The client id, when other connections of the run may use it too (takeovers). */
  clientId?: string
}

/** What a packet source knows when it writes a script. */
export interface ScriptContext {
  /** The connection's number in the run (from 0). */
  n: number
  seed: number
  /** The node runs with `mqtt.strict_mode`. */
  strict: boolean
}

/** Writes the script of one connection. */
export type PacketSource = (r: Random, ctx: ScriptContext) => Script

/** One way in: how to connect, what to send, and the garbage below MQTT. */
export interface MqttDoor {
  name: string
  /** The listener it talks to (as the node logs it). */
  listener: 'mqtt:tcp' | 'mqtt:ssl' | 'mqtt:ws' | 'mqtt:wss'
  transport: Transport
  source: PacketSource
  /** Garbage below MQTT, sent instead of a script on `garbageShare` of the connections. */
  garbage?: Garbage
  garbageShare?: number
  /** The witness subscriber keeps a persistent session and leaves and comes back all the time. */
  persistentWitness?: boolean
  /**
   * Bytes every connection of the door sends before MQTT, the witness's too (the `proxy`
   * door's PROXY header); the door's transport sends them for the fuzz connections.
   */
  preface?: (r: Random) => Buffer
  /** `STARLING_*` variables the door's node needs (`npm run fuzz` starts it with them). */
  nodeEnv?: Record<string, string>
}

/** What to run. */
export interface FuzzOptions {
  door: MqttDoor
  /** The door's listener. */
  endpoint: Endpoint
  /** Inputs to send in all: frames (valid and mutated) and pieces of garbage. */
  inputs: number
  seed: number
  /** The node runs with `mqtt.strict_mode` (some CONNECT cases depend on it). */
  strict?: boolean
  /** Fuzz connections open at once (default 16). */
  concurrency?: number
  /** How long a connection that must be closed may stay open before it counts as slow (default 5000 ms). */
  closeTimeoutMs?: number
  /** ... and before it counts as left open (default 30000 ms). */
  leftOpenMs?: number
  /** Called every `progressMs` (default 2000) with the counts so far. */
  onProgress?: (stats: FuzzStats) => void
  progressMs?: number
  /** Stops early (and the run fails) when this returns false, e.g. the broker process exited. */
  alive?: () => boolean
}

/** What happened. Every `Record` counts by case name (for `unexpected`: case and answer). */
export interface FuzzStats {
  door: string
  /** Inputs sent: frames and pieces of garbage. */
  inputs: number
  connections: number
  /** Connections that had to be closed (protocol errors, refused CONNECTs, definite garbage), and those the broker closed. */
  protocolErrors: number
  closedForProtocolError: number
  /** Not closed within `leftOpenMs`, by case name. */
  leftOpen: Record<string, number>
  /** Closed, but only after `closeTimeoutMs` (a busy node), by case name. */
  closedSlowly: Record<string, number>
  /** MQTT 5 connections closed for a protocol error without a CONNACK/DISCONNECT reason code >= 0x80, by case. */
  closedWithoutReason: Record<string, number>
  /** CONNECT cases answered otherwise than the standard says (accepted when to be refused, a wrong code ...), by case and answer. */
  unexpected: Record<string, number>
  /** Connections by case (the expectation's name: mutation, CONNECT case, garbage). */
  cases: Record<string, number>
  /** CONNECTs accepted / refused as expected. */
  accepted: number
  refused: number
  blindMutations: number
  /** Pieces of garbage below MQTT sent. */
  garbage: number
  /** Connections where the broker sent packets after its DISCONNECT, by case: MQTT 5 forbids it [MQTT-3.14.4-1]. Part of the bar. */
  afterDisconnect: Record<string, number>
  /**
   * Connections the broker closed before the script's last frames, not by a takeover, by case
   * and the last frame received: valid traffic must not be cut off. Reported, not part of the bar.
   */
  closedEarly: Record<string, number>
  /**
   * MQTT 5 connections whose CONNACK accepted them, closed without a DISCONNECT while another
   * connection with the same client id was open (a takeover), by case: each is owed DISCONNECT
   * 0x8E [MQTT-3.1.4-3], whether its session's queue was still going out or not. Counted
   * apart from `closedWithoutReason`; part of the bar.
   */
  takeoverWithoutReason: Record<string, number>
  /** Connections the broker closed with DISCONNECT 0x8E (another connection took the client id). */
  takenOver: number
  witnessSent: number
  witnessReceived: number
  /** Times the persistent witness left and came back. */
  witnessReconnects: number
  /** Both witness clients stayed connected to the end (the persistent one: is connected at the end). */
  witnessConnected: boolean
  elapsedMs: number
}

/** The counts of a run that has not started. */
export function emptyStats (door: string): FuzzStats {
  return {
    door, inputs: 0, connections: 0, protocolErrors: 0, closedForProtocolError: 0, leftOpen: {}, closedSlowly: {}, closedWithoutReason: {},
    unexpected: {}, cases: {}, accepted: 0, refused: 0, blindMutations: 0, garbage: 0, afterDisconnect: {}, closedEarly: {}, takeoverWithoutReason: {}, takenOver: 0,
    witnessSent: 0, witnessReceived: 0, witnessReconnects: 0, witnessConnected: true, elapsedMs: 0
  }
}

/**
 * Whether the run met the bar: everything that had to be closed was, with its reason, as the
 * standard says (a takeover with 0x8E, nothing after a DISCONNECT), and the witness lost nothing.
 */
export function passed (s: FuzzStats): boolean {
  return Object.keys(s.leftOpen).length === 0 && Object.keys(s.closedWithoutReason).length === 0 && Object.keys(s.unexpected).length === 0 &&
    Object.keys(s.takeoverWithoutReason).length === 0 && Object.keys(s.afterDisconnect).length === 0 &&
    s.closedForProtocolError === s.protocolErrors && s.witnessConnected && s.witnessSent > 0 && s.witnessReceived === s.witnessSent
}

/** Runs the door until `inputs` are sent; resolves with the counts once the witness has caught up. */
export async function runFuzz (opts: FuzzOptions): Promise<FuzzStats> {
  const started = Date.now()
  const stats = emptyStats(opts.door.name)
  const witness = await startWitness(opts.door, opts.endpoint, stats)
  const timer = setInterval(() => { stats.elapsedMs = Date.now() - started; opts.onProgress?.(stats) }, opts.progressMs ?? 2000)
  const alive = opts.alive ?? (() => true)
  let next = 0
  const worker = async (): Promise<void> => {
    while (stats.inputs < opts.inputs && alive()) {
      const n = next++
      await fuzzConnection(opts, new Random(opts.seed * 1_000_003 + n), n, stats)
    }
  }
  try {
    await Promise.all(Array.from({ length: opts.concurrency ?? 16 }, worker))
    await witness.finish(alive)
  } finally {
    clearInterval(timer)
    witness.close()
  }
  stats.elapsedMs = Date.now() - started
  return stats
}

/** One fuzz connection: garbage, or a script written in random splits, then the wait its expectation calls for. */
async function fuzzConnection (opts: FuzzOptions, r: Random, n: number, stats: FuzzStats): Promise<void> {
  const { door } = opts
  const closeMs = opts.closeTimeoutMs ?? 5000
  const leftOpenMs = opts.leftOpenMs ?? 30_000
  stats.connections++
  if (door.garbage !== undefined && r.chance(door.garbageShare ?? 0.1)) {
    stats.inputs++
    stats.garbage++
    const g = await door.garbage(opts.endpoint, r, { closeMs, leftOpenMs })
    count(stats.cases, g.name)
    if (g.definite) {
      stats.protocolErrors++
      if (g.closed) stats.closedForProtocolError++
      else count(stats.leftOpen, g.name)
      if (g.slow) count(stats.closedSlowly, g.name)
    }
    return
  }
  const script = door.source(r, { n, seed: opts.seed, strict: opts.strict === true })
  const { expect } = script
  stats.inputs += script.frames.length + script.final.length
  count(stats.cases, expect.name)
  if (expect.kind === 'survive' && expect.name !== 'valid') stats.blindMutations++
  // a protocol error counts once it is written: a connection closed before (taken over) never sent it
  if (expect.kind === 'refuse') stats.protocolErrors++

  // another visit with the same client id open at the same time makes this one contested:
  // a later one takes it over, and an earlier one still connecting may register after it
  const id = script.clientId
  const visit = id === undefined ? 0 : bump(visits, id)
  const racing = id !== undefined && (openVisits.get(id) ?? 0) > 0
  if (id !== undefined) bump(openVisits, id)
  const contested = (): boolean => id !== undefined && (racing || visits.get(id) !== visit)
  try {
    await runScript(opts, r, script, stats, contested)
  } finally {
    if (id !== undefined) openVisits.set(id, openVisits.get(id)! - 1)
  }
}

/** Runs a script over a new connection of the door's transport and judges the outcome. */
async function runScript (opts: FuzzOptions, r: Random, script: Script, stats: FuzzStats, contested: () => boolean): Promise<void> {
  const { door } = opts
  const { expect } = script
  const closeMs = opts.closeTimeoutMs ?? 5000
  const leftOpenMs = opts.leftOpenMs ?? 30_000
  let mustClose = expect.kind === 'refuse'
  const socket = await door.transport(opts.endpoint, r)
  if (socket === null) {
    // the listener refused the transport (max_conns, a failed handshake): nothing was sent
    if (mustClose) stats.closedForProtocolError++
    return
  }
  if (script.react !== undefined) reactTo(socket.received, socket.write, script.react, socket.closed)
  for (const chunk of writes(r, Buffer.concat(script.frames))) {
    if (socket.isClosed()) break
    socket.write(chunk)
  }
  if (expect.kind === 'accept') {
    await Promise.race([socket.closed, waitFor(() => Buffer.concat(socket.received).length >= 4, closeMs)])
    const answer = connackCode(Buffer.concat(socket.received))
    if (answer === 0) stats.accepted++
    else count(stats.unexpected, `${expect.name}: ${answer === null ? 'no CONNACK' : `refused 0x${answer.toString(16)}`}`)
  }
  if ((script.holdMs ?? 0) > 0) await Promise.race([socket.closed, sleep(script.holdMs!)])
  if (socket.isClosed() && script.final.length > 0 && expect.kind !== 'refuse') {
    // closed before its last frames: only a takeover may do that to a valid connection
    const early = Buffer.concat(socket.received)
    if (disconnectCode(early) !== 0x8e) {
      const what = `${expect.name}${script.version === 5 ? '' : ' (v' + script.version + ')'}: ${describeEnd(early)}`
      count(stats.closedEarly, contested() ? `${what} (id taken over)` : what)
      // accepted, then closed by a takeover without the DISCONNECT 0x8E it is owed [MQTT-3.1.4-3]
      if (script.version === 5 && contested() && connackCode(early) === 0 && disconnectCode(early) === null) count(stats.takeoverWithoutReason, expect.name)
    }
  } else if (expect.kind === 'close') {
    mustClose = true
    stats.protocolErrors++
  }
  for (const chunk of script.final.length === 0 ? [] : writes(r, Buffer.concat(script.final))) {
    if (socket.isClosed()) break
    socket.write(chunk)
  }
  if (mustClose) {
    const inTime = await Promise.race([socket.closed.then(() => true), sleep(closeMs).then(() => false)])
    const late = !inTime && await Promise.race([socket.closed.then(() => true), sleep(leftOpenMs).then(() => false)])
    const bytes = Buffer.concat(socket.received)
    const name = expect.kind === 'close' && connackCode(bytes) === null ? `${expect.name} (no CONNACK)` : expect.name
    if (inTime || late) {
      stats.closedForProtocolError++
      if (late) count(stats.closedSlowly, name)
      judgeClose(script.version, expect, bytes, stats, contested())
    } else {
      count(stats.leftOpen, name)
    }
  } else if (script.drop !== true) {
    await Promise.race([socket.closed, sleep(r.int(30))])
  }
  const answer = Buffer.concat(socket.received)
  if (disconnectCode(answer) === 0x8e) stats.takenOver++
  if (framesAfterDisconnect(answer) > 0) count(stats.afterDisconnect, expect.name)
  socket.destroy()
  await socket.closed
}

/** Checks the answer of a connection that was closed as it had to be. */
function judgeClose (version: number, expect: Expectation, bytes: Buffer, stats: FuzzStats, contested: boolean): void {
  if (expect.kind === 'close') {
    if (version === 5 && !endsWithErrorCode(bytes)) {
      count(contested ? stats.takeoverWithoutReason : stats.closedWithoutReason, expect.name)
      if (process.env.FUZZ_DEBUG !== undefined) process.stderr.write(`closed without reason: ${expect.name}: received (last 6 frames) ${frames(bytes).slice(-6).map(([b0, body]) => `${b0.toString(16)}:${body.subarray(0, 4).toString('hex')}`).join(' ')}\n`)
    }
    return
  }
  if (expect.kind !== 'refuse') return
  const code = connackCode(bytes)
  if (code === null) {
    if (version === 5 && expect.silent !== true) count(stats.closedWithoutReason, expect.name)
    else if (version !== 5 && expect.v4Required === true) count(stats.unexpected, `${expect.name}: closed without CONNACK`)
    else stats.refused++
    return
  }
  const allowed = version === 5 ? expect.v5 : expect.v4
  const ok = allowed === null ? code !== 0 : allowed.includes(code)
  if (ok) stats.refused++
  else count(stats.unexpected, `${expect.name} (v${version}): CONNACK 0x${code.toString(16)}`)
}

/** Resolves once `predicate` holds (polled every 5 ms) or after `ms`. */
async function waitFor (predicate: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms
  while (!predicate() && Date.now() < deadline) await sleep(5)
}

/** Answers the broker's frames as they arrive (`react`), until the connection closes. */
function reactTo (received: Buffer[], write: (b: Buffer) => void, react: (b0: number, body: Buffer) => Buffer | null, closed: Promise<void>): void {
  let seen = 0
  let buf = Buffer.alloc(0)
  let done = false
  void closed.then(() => { done = true })
  const poll = (): void => {
    if (done) return
    if (received.length > seen) {
      buf = Buffer.concat([buf, ...received.slice(seen)])
      seen = received.length
      const { list, used } = splitFrames(buf)
      for (const [b0, body] of list) {
        const answer = react(b0, body)
        if (answer !== null) write(answer)
      }
      buf = buf.subarray(used)
    }
    setTimeout(poll, 5).unref()
  }
  poll()
}

/** The frames at the start of `bytes`, as [first byte, body]. */
function frames (bytes: Buffer): Array<[number, Buffer]> {
  return splitFrames(bytes).list
}

/** The complete frames at the start of `bytes`, as [first byte, body], and how many bytes they take. */
function splitFrames (bytes: Buffer): { list: Array<[number, Buffer]>, used: number } {
  const list: Array<[number, Buffer]> = []
  let pos = 0
  while (pos < bytes.length) {
    const len = readVarint(bytes, pos + 1, bytes.length)
    if (len < 0) break
    const i = pos + 1 + varintSize(len)
    if (i + len > bytes.length) break
    list.push([bytes[pos], bytes.subarray(i, i + len)])
    pos = i + len
  }
  return { list, used: pos }
}

/** The code of the first CONNACK (3.1.1 return code or 5.0 reason code), null when none came. */
function connackCode (bytes: Buffer): number | null {
  const first = frames(bytes)[0]
  return first !== undefined && first[0] >> 4 === 2 && first[1].length >= 2 ? first[1][1] : null
}

/** The reason code of the broker's DISCONNECT, null when it sent none. */
function disconnectCode (bytes: Buffer): number | null {
  const d = frames(bytes).find(([b0]) => b0 >> 4 === 14)
  return d === undefined ? null : d[1].length > 0 ? d[1][0] : 0
}

/**
 * Whether the broker said why it closed: its last frame is a CONNACK or DISCONNECT with a
 * reason code >= 0x80, or it sent such a DISCONNECT before (then packets after it are a
 * separate fault, counted in `afterDisconnect`).
 */
function endsWithErrorCode (bytes: Buffer): boolean {
  const all = frames(bytes)
  const last = all[all.length - 1]
  if (last === undefined) return false
  if (last[0] >> 4 === 2) return last[1].length >= 2 && last[1][1] >= 0x80
  return all.some(([b0, body]) => b0 >> 4 === 14 && body.length > 0 && body[0] >= 0x80)
}

/** The broker's last frame, for the reports: `CONNACK 0x00`, `DISCONNECT 0x81`, `PUBLISH` ... or `nothing`. */
function describeEnd (bytes: Buffer): string {
  const all = frames(bytes)
  const last = all[all.length - 1]
  if (last === undefined) return 'nothing'
  const type = last[0] >> 4
  const name = ['?', 'CONNECT', 'CONNACK', 'PUBLISH', 'PUBACK', 'PUBREC', 'PUBREL', 'PUBCOMP', 'SUBSCRIBE', 'SUBACK', 'UNSUBSCRIBE', 'UNSUBACK', 'PINGREQ', 'PINGRESP', 'DISCONNECT', 'AUTH'][type]
  const code = type === 2 && last[1].length >= 2 ? last[1][1] : type === 14 && last[1].length > 0 ? last[1][0] : -1
  return code < 0 ? name : `${name} 0x${code.toString(16).padStart(2, '0')}`
}

/** How many frames the broker sent after its DISCONNECT [MQTT-3.14.4-1]. */
function framesAfterDisconnect (bytes: Buffer): number {
  const all = frames(bytes)
  const at = all.findIndex(([b0]) => b0 >> 4 === 14)
  return at < 0 ? 0 : all.length - at - 1
}

/** Visits per client id in this process, and those open now (only ids a packet source shares). */
const visits = new Map<string, number>()
const openVisits = new Map<string, number>()

/** Counts one more visit of `id`; returns the count. */
function bump (into: Map<string, number>, id: string): number {
  const n = (into.get(id) ?? 0) + 1
  into.set(id, n)
  return n
}

function count (into: Record<string, number>, key: string): void {
  into[key] = (into[key] ?? 0) + 1
}

/** The URL and options mqtt.js needs to reach the door's listener. */
function witnessUrl (door: MqttDoor, ep: Endpoint): string {
  const scheme = { 'mqtt:tcp': 'mqtt', 'mqtt:ssl': 'mqtts', 'mqtt:ws': 'ws', 'mqtt:wss': 'wss' }[door.listener]
  return `${scheme}://${ep.host}:${ep.port}${door.listener === 'mqtt:ws' || door.listener === 'mqtt:wss' ? ep.path ?? '/mqtt' : ''}`
}

async function connected (c: mqtt.MqttClient): Promise<void> {
  await new Promise<void>((resolve, reject) => { c.once('connect', () => resolve()); c.once('close', () => reject(new Error('witness could not connect'))) })
}

/**
 * The well-behaved pair, over the door's listener: a v5 QoS 1 subscriber and a 3.1.1 QoS 1
 * publisher, one message at a time. With `persistentWitness`, the subscriber has a lasting
 * session and leaves (DISCONNECT) and comes back every second or so: what was published
 * meanwhile must be queued and delivered.
 */
async function startWitness (door: MqttDoor, ep: Endpoint, stats: FuzzStats): Promise<{ finish: (alive: () => boolean) => Promise<void>, close: () => void }> {
  const url = witnessUrl(door, ep)
  const base: IClientOptions = { reconnectPeriod: 0, connectTimeout: 10_000, keepalive: 60, rejectUnauthorized: false }
  const persistent = door.persistentWitness === true
  const subOpts: IClientOptions = {
    ...base,
    protocolVersion: 5,
    clientId: `fuzz-witness-sub-${door.name}`,
    clean: !persistent,
    properties: persistent ? { sessionExpiryInterval: 600 } : undefined
  }
  // with a preface, over a TCP socket that sends it first
  const preface = door.preface
  const random = new Random(0x77)
  const open = (opts: IClientOptions): mqtt.MqttClient => preface === undefined
    ? mqtt.connect(url, opts)
    : new mqtt.MqttClient(() => { const s = net.connect(ep.port, ep.host); s.write(preface(random)); return s }, opts)
  let sub = open(subOpts)
  const pub = open({ ...base, protocolVersion: 4, clientId: `fuzz-witness-pub-${door.name}` })
  const seen = new Set<string>()
  const listen = (c: mqtt.MqttClient): void => {
    c.on('error', () => {})
    c.on('message', (_topic, payload) => { seen.add(payload.toString()); stats.witnessReceived = seen.size })
  }
  listen(sub)
  pub.on('error', () => {})
  await Promise.all([connected(sub), connected(pub)])
  await sub.subscribeAsync('witness/#', { qos: 1 })
  let running = true
  let subLost = false
  const loop = (async () => {
    let n = 0
    while (running && pub.connected) {
      await pub.publishAsync(`witness/${n % 10}`, String(n), { qos: 1 })
      stats.witnessSent = ++n
      await sleep(5)
    }
  })()
  // the persistent subscriber: away for a while, then back, over and over
  const cycle = persistent
    ? (async () => {
        while (running) {
          await sleep(800)
          if (!running) break
          await sub.endAsync()
          await sleep(200)
          sub = open(subOpts)
          listen(sub)
          try { await connected(sub) } catch { subLost = true; break }
          stats.witnessReconnects++
        }
      })()
    : Promise.resolve()
  return {
    finish: async (alive) => {
      running = false
      // a publish to a broker that went away never settles
      await Promise.race([loop.catch(() => {}), sleep(5000)])
      await Promise.race([cycle, sleep(5000)])
      stats.witnessConnected = sub.connected && pub.connected && !subLost
      const deadline = Date.now() + 10_000
      while (stats.witnessReceived < stats.witnessSent && Date.now() < deadline && alive()) await sleep(20)
    },
    close: () => { running = false; sub.end(true); pub.end(true) }
  }
}
