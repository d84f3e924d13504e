/**
 * Raw-socket MQTT 3.1.1 clients for the authentication bench (bench/auth.ts):
 *
 * - {@link ConnectLoop}: C concurrent slots, each looping TCP connect → CONNECT(user, password)
 *   → CONNACK → DISCONNECT, with a fresh client id per connection (no session takeover), the
 *   next connection opened as soon as the CONNACK arrives. It counts CONNACKs by return code
 *   and records the time from writing CONNECT to reading CONNACK.
 * - {@link PubSubPair}: one subscriber (QoS 1, acks every PUBLISH) and one publisher keeping a
 *   window of unacknowledged QoS 1 PUBLISHes full: delivered msg/s and end-to-end latency of
 *   clients that stay connected while others authenticate.
 *
 * Frames are split with bench/mqtt-framer.ts; CONNECT is encoded per connection (bench/packets.ts).
 */
import net from 'node:net'
import { performance } from 'node:perf_hooks'
import { LatencyHistogram } from './latency-histogram.js'
import { MqttFramer, PacketType } from './mqtt-framer.js'
import { encodeConnect, encodePublishTemplate, encodeSubscribe, writePuback } from './packets.js'

const HOST = '127.0.0.1'
const DISCONNECT = Buffer.from([0xe0, 0x00])

/** A CONNECT's credentials. */
export interface Credentials {
  username: string
  password: string
}

/** MQTT 3.1.1 CONNECT with clean session and credentials. */
export function encodeAuthConnect (clientId: string, cred: Credentials): Buffer {
  return encodeConnect(clientId, 60, cred)
}

/** Counters of a {@link ConnectLoop}; `codes` maps a CONNACK return code to its count. */
export interface ConnectCounts {
  /** CONNACKs with return code 0. */
  accepted: number
  /** CONNACKs with another return code. */
  refused: number
  /** Connections that failed or closed without a CONNACK. */
  errors: number
  codes: Record<number, number>
}

/**
 * One CONNECT → CONNACK answered within `timeoutMs`; resolves with the return code, or null
 * when the connection failed or nothing came.
 */
export async function probeConnect (port: number, cred: Credentials, timeoutMs = 5000): Promise<number | null> {
  return await new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port })
    let buf = Buffer.alloc(0)
    const finish = (code: number | null): void => {
      clearTimeout(timer)
      socket.removeAllListeners('data')
      if (code === 0) socket.end(DISCONNECT)
      else socket.destroy()
      resolve(code)
    }
    const timer = setTimeout(() => finish(null), timeoutMs)
    socket.on('error', () => finish(null))
    socket.on('close', () => finish(null))
    socket.once('connect', () => socket.write(encodeAuthConnect(`probe-${Math.random().toString(36).slice(2)}`, cred)))
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      if (buf.length >= 4) finish(buf[0] >> 4 === PacketType.CONNACK ? buf[3] : null)
    })
  })
}

/** C slots looping CONNECT → CONNACK → DISCONNECT until {@link stop}. */
export class ConnectLoop {
  /** CONNECT written → CONNACK read, in µs, of every CONNACK (any return code) since the last reset. */
  readonly latency = new LatencyHistogram()
  private readonly counts: ConnectCounts = { accepted: 0, refused: 0, errors: 0, codes: {} }
  private stopped = false
  private running = 0
  private nextUser = 0
  private seq = 0
  private readonly open = new Set<net.Socket>()
  private drained: (() => void) | null = null

  /**
   * @param port the node's MQTT port
   * @param slots concurrent clients
   * @param users credentials, used round-robin across all slots
   * @param prefix client id prefix (unique per loop)
   */
  constructor (private readonly port: number, private readonly slots: number,
    private readonly users: readonly Credentials[], private readonly prefix: string) {}

  start (): void {
    for (let slot = 0; slot < this.slots; slot++) {
      this.running++
      this.connectOnce()
    }
  }

  /** A copy of the counters. */
  snapshot (): ConnectCounts {
    return { ...this.counts, codes: { ...this.counts.codes } }
  }

  /** Forgets the latency samples (counters keep running; take differences of snapshots). */
  resetLatency (): void {
    this.latency.reset()
  }

  /** Lets every slot finish its connection, then resolves (sockets still open after `graceMs` are destroyed). */
  async stop (graceMs = 3000): Promise<void> {
    this.stopped = true
    if (this.running > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve
        setTimeout(resolve, graceMs).unref()
      })
    }
    for (const socket of this.open) socket.destroy()
  }

  private slotDone (): void {
    this.running--
    if (this.running === 0) this.drained?.()
  }

  private connectOnce (): void {
    if (this.stopped) {
      this.slotDone()
      return
    }
    const cred = this.users[this.nextUser++ % this.users.length]
    const packet = encodeAuthConnect(`${this.prefix}${this.seq++}`, cred)
    const socket = net.connect({ host: HOST, port: this.port })
    socket.setNoDelay(true)
    this.open.add(socket)
    let sentAt = 0
    let done = false
    let buf: Buffer | null = null
    const next = (delayMs: number): void => {
      if (delayMs === 0) setImmediate(() => this.connectOnce())
      else setTimeout(() => this.connectOnce(), delayMs)
    }
    const fail = (): void => {
      if (done) return
      done = true
      this.counts.errors++
      socket.destroy()
      next(10)
    }
    socket.once('connect', () => {
      sentAt = performance.now()
      socket.write(packet)
    })
    socket.on('data', (chunk: Buffer) => {
      if (done) return
      buf = buf === null ? chunk : Buffer.concat([buf, chunk])
      if (buf.length < 4) return
      done = true
      this.latency.record((performance.now() - sentAt) * 1000)
      if (buf[0] >> 4 !== PacketType.CONNACK) {
        this.counts.errors++
        socket.destroy()
        next(10)
        return
      }
      const code = buf[3]
      this.counts.codes[code] = (this.counts.codes[code] ?? 0) + 1
      if (code === 0) {
        this.counts.accepted++
        socket.end(DISCONNECT)
      } else {
        this.counts.refused++
        socket.destroy()
      }
      next(0)
    })
    socket.on('error', fail)
    socket.on('close', () => {
      this.open.delete(socket)
      fail()
    })
  }
}

/** Counters of a {@link PubSubPair}. */
export interface PairCounts {
  published: number
  delivered: number
}

/** A connected client: its socket and framer; resolves once its CONNACK accepted it. */
async function connectClient (port: number, clientId: string, cred: Credentials,
  onPacket: (type: number, flags: number, buf: Buffer, start: number, end: number) => void): Promise<net.Socket> {
  const socket = net.connect({ host: HOST, port })
  socket.setNoDelay(true)
  let connacked: ((code: number) => void) | null = null
  const answered = new Promise<number>((resolve) => { connacked = resolve })
  const framer = new MqttFramer({
    onPacket: (type, flags, buf, start, end) => {
      if (type === PacketType.CONNACK && connacked !== null) {
        const resolve = connacked
        connacked = null
        resolve(buf[start + 1])
        return
      }
      onPacket(type, flags, buf, start, end)
    }
  })
  socket.on('data', (chunk: Buffer) => framer.push(chunk))
  socket.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  socket.write(encodeAuthConnect(clientId, cred))
  const code = await Promise.race([answered, new Promise<number>((resolve) => setTimeout(() => resolve(-1), 10_000).unref())])
  if (code !== 0) {
    socket.destroy()
    throw new Error(`${clientId} was not accepted (CONNACK ${code === -1 ? 'missing' : code})`)
  }
  return socket
}

/**
 * A subscriber on `topic` (QoS 1) and a publisher keeping `window` QoS 1 PUBLISHes in flight:
 * as fast as the node acknowledges them. Latency is publisher write → subscriber read, from the
 * send time in the payload (same process, same clock).
 */
export class PubSubPair {
  /** Delivery latency in µs since the last reset. */
  readonly latency = new LatencyHistogram()
  private readonly counts: PairCounts = { published: 0, delivered: 0 }
  private pub: net.Socket | null = null
  private sub: net.Socket | null = null
  private inflight = 0
  private nextId = 1
  private running = false
  private fillScheduled = false
  private acks: number[] = []
  private readonly template = encodePublishTemplate('bench/auth/pair', 1, 64)

  constructor (private readonly port: number, private readonly window: number) {}

  /** Connects both clients (through the node's auth chain) and subscribes. */
  async connect (pubCred: Credentials, subCred: Credentials): Promise<void> {
    let subacked: (() => void) | null = null
    const suback = new Promise<void>((resolve) => { subacked = resolve })
    this.sub = await connectClient(this.port, 'bench-auth-sub', subCred, (type, flags, buf, start) => {
      if (type === PacketType.SUBACK) {
        subacked?.()
        return
      }
      if (type !== PacketType.PUBLISH) return
      const qos = (flags >> 1) & 3
      let pos = start + 2 + buf.readUInt16BE(start)
      let id = 0
      if (qos > 0) {
        id = buf.readUInt16BE(pos)
        pos += 2
      }
      this.latency.record(performance.now() * 1000 - buf.readDoubleBE(pos))
      this.counts.delivered++
      if (qos > 0) this.ack(id)
    })
    this.sub.write(encodeSubscribe('bench/auth/pair', 1, 1))
    await Promise.race([suback, new Promise((_resolve, reject) => setTimeout(() => reject(new Error('no SUBACK')), 10_000).unref())])
    this.pub = await connectClient(this.port, 'bench-auth-pub', pubCred, (type) => {
      if (type !== PacketType.PUBACK) return
      this.inflight--
      if (this.running && !this.fillScheduled) {
        this.fillScheduled = true
        setImmediate(() => {
          this.fillScheduled = false
          if (this.running) this.fill()
        })
      }
    })
  }

  /** Queues a PUBACK; the queue is written once per turn of the event loop. */
  private ack (id: number): void {
    if (this.acks.length === 0) {
      setImmediate(() => {
        const out = Buffer.allocUnsafe(4 * this.acks.length)
        let at = 0
        for (const one of this.acks) at = writePuback(out, at, one)
        this.acks = []
        this.sub?.write(out)
      })
    }
    this.acks.push(id)
  }

  /** Starts publishing. */
  start (): void {
    this.running = true
    this.fill()
  }

  snapshot (): PairCounts {
    return { ...this.counts }
  }

  resetLatency (): void {
    this.latency.reset()
  }

  /** Stops publishing and disconnects both clients. */
  async stop (): Promise<void> {
    this.running = false
    for (const socket of [this.pub, this.sub]) {
      if (socket === null) continue
      socket.end(DISCONNECT)
      setTimeout(() => socket.destroy(), 1000).unref()
    }
  }

  /** Tops the window up with one write. */
  private fill (): void {
    const room = this.window - this.inflight
    if (room <= 0 || this.pub === null) return
    const one = this.template.bytes.length
    const out = Buffer.allocUnsafe(one * room)
    const now = performance.now() * 1000
    for (let i = 0; i < room; i++) {
      const at = i * one
      this.template.bytes.copy(out, at)
      out.writeUInt16BE(this.nextId, at + this.template.packetIdOffset)
      out.writeDoubleBE(now, at + this.template.payloadOffset)
      this.nextId = this.nextId === 65535 ? 1 : this.nextId + 1
    }
    this.inflight += room
    this.counts.published += room
    this.pub.write(out)
  }
}
