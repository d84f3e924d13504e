/**
 * Bounded memory under a flood (issue 22; docs/performance.md "Memory under a flood"): many
 * publishers writing QoS 0 as fast as they can towards one subscriber. What the node holds
 * for them is bounded by bytes on both sides, whatever the number of publishers:
 *
 * - inbound: the bytes read from all connections whose packets are not handled yet stay
 *   within the node's read budget (node/mqtt/read-gate.ts); without it every publisher had
 *   a read in flight, and a thousand publishers a thousand;
 * - outbound: the frames queued for a slow subscriber stay within its socket's high-water
 *   mark plus what that budget lets in (its deliveries wait for 'drain', so its publishers
 *   are read no faster than it reads). A subscriber that keeps reading, however slowly, loses
 *   nothing; one that stops reading for more than a second has its QoS 0 messages dropped
 *   and counted (node/mqtt/drain-deadline.ts), and the node goes on reading everyone else.
 *
 * In-process node, real sockets: the counters are the adapter's own.
 */
import net from 'node:net'
import mqttPacket from 'mqtt-packet'
import { startTestNode, connect, closeClients, collect, waitFor, type TestNode, type Received } from '../helpers/node.js'
import { READ_BUDGET, READ_SLICE, readBytesInFlight, readBytesPeak, readsWaiting } from '../../node/mqtt/read-gate.js'
import { DRAIN_DEADLINE_MS } from '../../node/mqtt/drain-deadline.js'

const PUBLISHERS = 100
/** PUBLISHes each publisher writes per batch (about 40 KiB). */
const PER_BATCH = 500
/** Batches each publisher writes: 100,000 messages, 8 MB. */
const BATCHES = 2
/** The socket's high-water mark above which deliveries wait for 'drain' (limitsFrom in settings.ts). */
const HIGH_WATER_MARK = 64 * 1024
/** One read may take the budget past itself by its own size: a slice, or a read of what a socket holds below one. */
const MAX_IN_FLIGHT = READ_BUDGET + 2 * READ_SLICE
/** A subscriber's queue: its high-water mark, plus the frames of the publishes the budget let in, plus one turn's slack. */
const MAX_QUEUED = HIGH_WATER_MARK + MAX_IN_FLIGHT + 16 * 1024

let node: TestNode
beforeAll(async () => { node = await startTestNode() })
afterAll(async () => { await closeClients(); await node.destroy() })

/** A raw MQTT 3.1.1 connection, CONNECTed as `clientId`; resolves once the CONNACK has arrived. */
async function raw (clientId: string): Promise<net.Socket> {
  const socket = net.connect(node.port('mqtt:tcp'), '127.0.0.1')
  socket.on('error', () => {})
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId, keepalive: 0 } as any))
  await new Promise<void>((resolve) => socket.once('data', () => resolve()))
  return socket
}

/** A raw subscriber to `filter` that reads only when told to; counts the PUBLISHes it has read. */
async function rawSubscriber (clientId: string, filter: string): Promise<{ socket: net.Socket, received: () => number, readSome: (max: number) => void }> {
  const socket = await raw(clientId)
  let received = 0
  let subacked = false
  const parser = mqttPacket.parser({ protocolVersion: 4 })
  parser.on('packet', (p: any) => { if (p.cmd === 'publish') received++; else if (p.cmd === 'suback') subacked = true })
  socket.on('data', (chunk: Buffer) => parser.parse(chunk))
  socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: filter, qos: 0 }] } as any))
  await waitFor(() => subacked, 'SUBACK')
  socket.pause()
  socket.removeAllListeners('data')
  const readSome = (max: number): void => {
    for (let n = 0; n < max;) {
      const chunk: Buffer | null = socket.read()
      if (chunk === null) break
      parser.parse(chunk)
      n += chunk.length
    }
  }
  return { socket, received: () => received, readSome }
}

/**
 * Publishers writing `prefix/<i>` QoS 0 as fast as TCP lets them, `batches` batches each (or
 * until `stop()`); `sent()` counts what they wrote.
 */
function flood (sockets: net.Socket[], prefix: string, batches = Infinity): { stop: () => Promise<void>, done: Promise<unknown>, sent: () => number } {
  let stopped = false
  let sent = 0
  const writers = sockets.map(async (socket, i) => {
    const batch = Buffer.concat(Array.from({ length: PER_BATCH }, () => mqttPacket.generate({ cmd: 'publish', topic: `${prefix}/${i}`, payload: Buffer.alloc(64, 0x78), qos: 0, retain: false, dup: false } as any)))
    for (let n = 0; n < batches && !stopped && !socket.destroyed; n++) {
      const more = socket.write(batch)
      sent += PER_BATCH
      if (more) await new Promise((resolve) => setImmediate(resolve))
      else await drained(socket)
    }
  })
  return {
    sent: () => sent,
    done: Promise.all(writers),
    stop: async () => {
      stopped = true
      // a publisher waiting for 'drain' still has its batch going out: the node reads it all
      await Promise.all(writers)
    }
  }
}

/** Resolves at the socket's next 'drain', or its close. */
async function drained (socket: net.Socket): Promise<void> {
  await new Promise<void>((resolve) => {
    const done = (): void => { socket.off('drain', done); socket.off('close', done); resolve() }
    socket.on('drain', done)
    socket.on('close', done)
  })
}

/** Samples `f` every few milliseconds until stopped; resolves with the largest value seen. */
function peakOf (f: () => number): { stop: () => number } {
  let peak = f()
  const timer = setInterval(() => { peak = Math.max(peak, f()) }, 2)
  return { stop: () => { clearInterval(timer); return Math.max(peak, f()) } }
}

/** Bytes queued for `clientId` in the node: not yet handed to its socket, and in the socket's buffer. */
function queuedFor (clientId: string): number {
  const wire = node.broker.core.client(clientId)?.wire
  return wire === undefined ? 0 : wire.pending + wire.socket.writableLength
}

/**
 * The scene of each test: a raw subscriber to `<name>/#`, a hundred raw publishers, and
 * beside them an mqtt.js subscriber whose own publisher sends it a message every 10 ms
 * (from `start()`; `otherSent()` says how many) that must all arrive whatever the flood does.
 */
async function scene (name: string): Promise<{
  sub: Awaited<ReturnType<typeof rawSubscriber>>, publishers: net.Socket[], got: Received[]
  start: () => { writing: ReturnType<typeof flood>, queued: { stop: () => number } }
  stopOther: () => void, otherSent: () => number, dropped: () => number
}> {
  const sub = await rawSubscriber(`${name}-reader`, `${name}/#`)
  const other = await connect(node, { clientId: `${name}-other-sub` })
  await other.subscribeAsync(`${name}-other/t`, { qos: 0 })
  const got = collect(other)
  const otherPub = await connect(node, { clientId: `${name}-other-pub` })
  const publishers = await Promise.all(Array.from({ length: PUBLISHERS }, async (_, i) => await raw(`${name}-pub-${i}`)))
  const droppedBefore = node.metrics['messages/dropped']
  let sent = 0
  let timer: NodeJS.Timeout | undefined
  return {
    sub,
    publishers,
    got,
    // resets the read peak, samples what is queued for the subscriber, starts the publishers
    // (BATCHES each: 100,000 messages, 8 MB, about twice what the kernel's socket buffers
    // between the node and a subscriber hold) and the other subscriber's publisher
    start: () => {
      readBytesPeak(true)
      const queued = peakOf(() => queuedFor(`${name}-reader`))
      const writing = flood(publishers, name, BATCHES)
      timer = setInterval(() => { otherPub.publish(`${name}-other/t`, String(sent++), { qos: 0 }) }, 10)
      return { writing, queued }
    },
    stopOther: () => { clearInterval(timer) },
    otherSent: () => sent,
    dropped: () => node.metrics['messages/dropped'] - droppedBefore
  }
}

/** Every message the other subscriber was sent has arrived, in order. */
async function otherGotAll (s: Awaited<ReturnType<typeof scene>>): Promise<void> {
  const n = s.otherSent()
  await waitFor(() => s.got.length >= n, `${n} messages at the other subscriber (has ${s.got.length})`)
  expect(s.got.map((m) => m.payload.toString())).toEqual(Array.from({ length: n }, (_, i) => String(i)))
}

it('keeps what is read and what is queued for a slow subscriber within bytes bounds, and loses nothing while it reads', async () => {
  const s = await scene('slow')
  const slow = s.sub
  // the subscriber reads 32 KiB every 5 ms (about 6 MB/s): slower than the publishers write
  const reader = setInterval(() => slow.readSome(32 * 1024), 5)
  const { writing, queued } = s.start()
  try {
    await writing.done
    s.stopOther()
    const total = writing.sent()
    // every message the publishers wrote reaches the subscriber that kept reading
    await waitFor(() => { slow.readSome(1 << 20); return slow.received() >= total }, `${total} messages at the slow subscriber (has ${slow.received()})`, 30_000)
    await otherGotAll(s)
    expect(slow.received()).toBe(total)
    expect(s.dropped()).toBe(0)
  } finally {
    clearInterval(reader)
    s.stopOther()
    for (const socket of [...s.publishers, slow.socket]) socket.destroy()
  }
  // the bounds held, and the flood did outrun the node (the budget was reached)
  const peak = readBytesPeak()
  expect(peak).toBeLessThanOrEqual(MAX_IN_FLIGHT)
  expect(queued.stop()).toBeLessThanOrEqual(MAX_QUEUED)
  expect(peak).toBeGreaterThanOrEqual(READ_BUDGET)
  await waitFor(() => readBytesInFlight() === 0, 'the budget released')
}, 60_000)

it('drops QoS 0 for a subscriber that stopped reading, counted, and goes on reading everyone else', async () => {
  const s = await scene('frozen')
  const frozen = s.sub
  const { writing, queued } = s.start()
  try {
    await writing.done
    // the node reads the publishers to the end: past the deadline the frozen subscriber's messages are dropped
    await waitFor(() => s.dropped() > 0 && readBytesInFlight() === 0 && readsWaiting() === 0, 'the flood read', 10_000 + DRAIN_DEADLINE_MS)
    s.stopOther()
    await otherGotAll(s)
    // once it reads again it gets what was queued for it; every other message was dropped and counted
    // (messages/dropped, reason queue_full)
    const total = writing.sent()
    await waitFor(() => { frozen.readSome(1 << 20); return frozen.received() + s.dropped() >= total }, 'every message delivered or counted')
    expect(frozen.received() + s.dropped()).toBe(total)
    expect(s.dropped()).toBeGreaterThan(0)
  } finally {
    s.stopOther()
    await writing.stop()
    for (const socket of [...s.publishers, frozen.socket]) socket.destroy()
  }
  expect(readBytesPeak()).toBeLessThanOrEqual(MAX_IN_FLIGHT)
  expect(queued.stop()).toBeLessThanOrEqual(MAX_QUEUED)
}, 60_000)

it('keeps reading everyone else while publishers wait on a slow step (an ACL backend that does not answer) with more than the budget read', async () => {
  // an ACL source that answers publishes to slow/# only when the test lets it (as an HTTP ACL whose server hangs)
  let answer: () => void = () => {}
  const answered = new Promise<void>((resolve) => { answer = resolve })
  let asked = 0
  const off = node.services.acl.addSource({
    name: 'test_slow_acl',
    priority: 100,
    check: (_client, action, topic) => {
      if (action !== 'publish' || !topic.startsWith('slow/')) return 'ignore'
      asked++
      return answered.then(() => 'allow' as const)
    }
  })
  const waiting = await Promise.all(Array.from({ length: 24 }, async (_, i) => await raw(`slowacl-pub-${i}`)))
  try {
    // each writes one PUBLISH of 4,000 bytes: about 96 KB read and waiting on the ACL, more than the budget
    const big = (i: number): Buffer => mqttPacket.generate({ cmd: 'publish', topic: `slow/${i}`, payload: Buffer.alloc(4000, 0x61), qos: 0, retain: false, dup: false } as any)
    waiting.forEach((socket, i) => socket.write(big(i)))
    await waitFor(() => asked === waiting.length, 'every waiting publish at the ACL')
    // what waits on a backend is not counted in the budget (a flood is)
    expect(readBytesInFlight()).toBeLessThan(READ_BUDGET)
    // a client publishing elsewhere is read and delivered all the same, within the stale holders' wait
    const sub = await connect(node, { clientId: 'slowacl-sub' })
    await sub.subscribeAsync('fast/t', { qos: 0 })
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'slowacl-fast' })
    const began = Date.now()
    for (let i = 0; i < 20; i++) pub.publish('fast/t', String(i), { qos: 0 })
    await waitFor(() => got.length === 20, '20 messages past the waiting publishes', 5000)
    expect(Date.now() - began).toBeLessThan(2000)
  } finally {
    answer()
    off()
    for (const socket of waiting) socket.destroy()
  }
  await waitFor(() => readBytesInFlight() === 0 && readsWaiting() === 0, 'the budget released')
}, 30_000)
