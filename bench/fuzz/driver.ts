/**
 * Drives the fuzzer against a broker on `port`: many connections at once, each a CONNECT,
 * some valid packets, then a protocol error (must be closed for it) or a blind mutation
 * (must only not hurt anyone), written in random splits. Meanwhile a well-behaved QoS 1
 * client pair (the witness) publishes and receives; nothing it sends may be lost.
 * Used by `test/e2e/fuzz.test.ts` (a seeded slice) and `bench/fuzz.ts` (the long run).
 */
import net from 'node:net'
import mqtt from 'mqtt'
import { Random, connect, publish, ack, subscribe, unsubscribe, disconnect, PINGREQ } from './packets.js'
import { protocolError, blindMutation, writes, type Mutation } from './mutator.js'
import { readVarint, varintSize } from '../../node/mqtt/wire-bytes.js'

/** What to run. */
export interface FuzzOptions {
  port: number
  /** Packets to send in all (frames, valid and mutated). */
  packets: number
  seed: number
  /** Fuzz connections open at once (default 16). */
  concurrency?: number
  /** How long a connection that sent a protocol error may stay open before it counts as slow (default 5000 ms). */
  closeTimeoutMs?: number
  /** ... and before it counts as left open (default 30000 ms). */
  leftOpenMs?: number
  /** Called every `progressMs` (default 2000) with the counts so far. */
  onProgress?: (stats: FuzzStats) => void
  progressMs?: number
  /** Stops early (and the run fails) when this returns false, e.g. the broker process exited. */
  alive?: () => boolean
}

/** What happened. */
export interface FuzzStats {
  packets: number
  connections: number
  /** Connections that sent a protocol error, and those of them the broker closed in time. */
  protocolErrors: number
  closedForProtocolError: number
  /** Protocol errors the broker left open (not closed within `leftOpenMs`), by mutation name. */
  leftOpen: Record<string, number>
  /** Protocol errors closed, but only after `closeTimeoutMs` (a busy node), by mutation name. */
  closedSlowly: Record<string, number>
  /** MQTT 5 connections closed for a protocol error without a CONNACK/DISCONNECT reason code >= 0x80, by mutation. */
  closedWithoutReason: Record<string, number>
  blindMutations: number
  witnessSent: number
  witnessReceived: number
  /** Both witness clients stayed connected to the end. */
  witnessConnected: boolean
  elapsedMs: number
}

/** Runs the fuzzer until `packets` are sent; resolves with the counts once the witness has caught up. */
export async function runFuzz (opts: FuzzOptions): Promise<FuzzStats> {
  const started = Date.now()
  const stats: FuzzStats = {
    packets: 0, connections: 0, protocolErrors: 0, closedForProtocolError: 0, leftOpen: {}, closedSlowly: {}, closedWithoutReason: {},
    blindMutations: 0, witnessSent: 0, witnessReceived: 0, witnessConnected: true, elapsedMs: 0
  }
  const witness = await startWitness(opts.port, stats)
  const timer = setInterval(() => { stats.elapsedMs = Date.now() - started; opts.onProgress?.(stats) }, opts.progressMs ?? 2000)
  const alive = opts.alive ?? (() => true)
  let next = 0
  const worker = async (): Promise<void> => {
    while (stats.packets < opts.packets && alive()) {
      const n = next++
      await fuzzConnection(opts, new Random(opts.seed * 1_000_003 + n), `fz-${opts.seed}-${n}`, stats)
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

/** One fuzz connection: its script, written in random splits, then the wait its ending calls for. */
async function fuzzConnection (opts: FuzzOptions, r: Random, clientId: string, stats: FuzzStats): Promise<void> {
  const version = r.chance(0.5) ? 5 : 4
  const frames: Buffer[] = [connect(r, version, clientId)]
  let id = 1 + r.int(60000)
  for (let n = 1 + r.int(40); n > 0; n--) frames.push(...validPackets(r, version, id++))
  let mutation: Mutation | null = null
  const roll = r.next()
  if (roll < 0.6) mutation = protocolError(r, version)
  else if (roll < 0.95) mutation = blindMutation(r, r.pick(frames.slice(1).concat(frames[0])))
  if (mutation !== null) frames.push(mutation.bytes)
  if (mutation?.definite !== true && r.chance(0.5)) frames.push(disconnect(r, version))
  stats.connections++
  stats.packets += frames.length
  if (mutation?.definite === false) stats.blindMutations++
  if (mutation?.definite === true) stats.protocolErrors++

  const socket = net.connect(opts.port, '127.0.0.1')
  socket.setNoDelay(true)
  socket.on('error', () => {})
  const received: Buffer[] = []
  socket.on('data', (chunk: Buffer) => { received.push(chunk) })
  const closed = new Promise<void>(resolve => socket.once('close', () => resolve()))
  const connected = await new Promise<boolean>(resolve => {
    socket.once('connect', () => resolve(true))
    socket.once('close', () => resolve(false))
  })
  if (!connected) return
  for (const chunk of writes(r, Buffer.concat(frames))) {
    if (socket.destroyed) break
    socket.write(chunk)
  }
  if (mutation?.definite === true) {
    const inTime = await Promise.race([closed.then(() => true), sleep(opts.closeTimeoutMs ?? 5000).then(() => false)])
    // say whether the CONNACK came: without it the node never got as far as the error
    const name = received.length > 0 && received[0][0] === 0x20 ? mutation.name : `${mutation.name} (no CONNACK)`
    const late = !inTime && await Promise.race([closed.then(() => true), sleep(opts.leftOpenMs ?? 30_000).then(() => false)])
    if (inTime || late) {
      stats.closedForProtocolError++
      if (late) count(stats.closedSlowly, name)
      if (version === 5 && !endsWithErrorCode(Buffer.concat(received))) count(stats.closedWithoutReason, mutation.name)
    } else {
      count(stats.leftOpen, name)
    }
  } else {
    await Promise.race([closed, sleep(r.int(30))])
  }
  socket.destroy()
  await closed
}

/** A few valid packets: a PUBLISH (QoS 2 followed by its PUBREL), SUBSCRIBE, UNSUBSCRIBE, an acknowledgement or PINGREQ. */
function validPackets (r: Random, version: 4 | 5, id: number): Buffer[] {
  const pid = 1 + (id % 65535)
  switch (r.int(8)) {
    case 0: case 1: case 2: return [publish(r, version, 0, 0)]
    case 3: return [publish(r, version, 1, pid)]
    case 4: return [publish(r, version, 2, pid), ack(r, version, 6, pid)]
    case 5: return [subscribe(r, version, pid)]
    case 6: return [r.chance(0.5) ? unsubscribe(r, version, pid) : ack(r, version, r.pick([4, 5, 7] as const), pid)]
    default: return [Buffer.from(PINGREQ)]
  }
}

/** Whether the last frame the broker sent is a DISCONNECT or CONNACK with a reason code >= 0x80. */
function endsWithErrorCode (bytes: Buffer): boolean {
  let pos = 0
  let last = -1
  let code = -1
  while (pos < bytes.length) {
    const len = readVarint(bytes, pos + 1, bytes.length)
    if (len < 0) break
    const i = pos + 1 + varintSize(len)
    if (i + len > bytes.length) break
    last = bytes[pos] >> 4
    code = last === 14 ? (len > 0 ? bytes[i] : 0) : last === 2 && len >= 2 ? bytes[i + 1] : -1
    pos = i + len
  }
  return (last === 14 || last === 2) && code >= 0x80
}

function count (into: Record<string, number>, key: string): void {
  into[key] = (into[key] ?? 0) + 1
}

/** Resolves after `ms`; the timer does not keep the process alive (races leave it pending). */
function sleep (ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms).unref())
}

/** The well-behaved pair: a v5 QoS 1 subscriber and a 3.1.1 QoS 1 publisher, one message at a time. */
async function startWitness (port: number, stats: FuzzStats): Promise<{ finish: (alive: () => boolean) => Promise<void>, close: () => void }> {
  const opts = { host: '127.0.0.1', port, reconnectPeriod: 0, connectTimeout: 10_000, keepalive: 60 }
  const sub = mqtt.connect({ ...opts, protocolVersion: 5, clientId: 'fuzz-witness-sub' })
  const pub = mqtt.connect({ ...opts, protocolVersion: 4, clientId: 'fuzz-witness-pub' })
  for (const c of [sub, pub]) c.on('error', () => {})
  await Promise.all([sub, pub].map(c => new Promise<void>((resolve, reject) => { c.once('connect', () => resolve()); c.once('close', () => reject(new Error('witness could not connect'))) })))
  const seen = new Set<string>()
  sub.on('message', (_topic, payload) => { seen.add(payload.toString()); stats.witnessReceived = seen.size })
  await sub.subscribeAsync('witness/#', { qos: 1 })
  let running = true
  const loop = (async () => {
    let n = 0
    while (running && pub.connected) {
      await pub.publishAsync(`witness/${n % 10}`, String(n), { qos: 1 })
      stats.witnessSent = ++n
      await sleep(5)
    }
  })()
  return {
    finish: async (alive) => {
      running = false
      // a publish to a broker that went away never settles
      await Promise.race([loop.catch(() => {}), sleep(5000)])
      stats.witnessConnected = sub.connected && pub.connected
      const deadline = Date.now() + 10_000
      while (stats.witnessReceived < stats.witnessSent && Date.now() < deadline && alive()) await sleep(20)
    },
    close: () => { running = false; sub.end(true); pub.end(true) }
  }
}
