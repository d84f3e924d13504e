/**
 * One raw-TCP MQTT connection of the load generator. It writes pre-encoded bytes, frames
 * what comes back with {@link MqttFramer}, counts PUBLISH/PUBACK into the worker's shared
 * counters, answers QoS 1 PUBLISH with PUBACK, and records end-to-end latency from the
 * timestamp at the start of each payload.
 */
import net from 'node:net'
import { Counter } from './load-plan.js'
import { MqttFramer, PacketType, type FrameSink } from './mqtt-framer.js'
import { encodeConnect, encodeSubscribe, repeatTemplate, writePuback, type PublishTemplate } from './packets.js'
import type { LatencyHistogram } from './latency-histogram.js'

/** Most PUBLISH packets one write carries. */
export const MAX_BATCH = 256

/** Monotonic time in µs, comparable across worker threads (CLOCK_MONOTONIC). */
export function nowUs (): number {
  return Number(process.hrtime.bigint()) / 1000
}

/** What a client shares with the rest of its worker. */
export interface ClientContext {
  counters: Float64Array
  /** Index of this worker's first slot in `counters`. */
  base: number
  histogram: LatencyHistogram
  /** Whether latencies are being recorded right now. */
  recording: () => boolean
}

/** A bench connection: publisher, subscriber or idle, decided by what the worker calls. */
export class LoadClient implements FrameSink {
  private readonly socket: net.Socket
  private readonly framer = new MqttFramer(this)
  private closing = false
  private onConnack: ((code: number) => void) | null = null
  private onSuback: ((code: number) => void) | null = null
  /** Reception time of the chunk being framed, µs. */
  private chunkTime = 0
  private acks: Buffer | null = null
  private ackLength = 0
  // publisher state
  private template: PublishTemplate | null = null
  private batch: Buffer | null = null
  private nextPacketId = 1
  /** Unacknowledged QoS 1 PUBLISHes. */
  inflight = 0
  /** Messages a throttled publisher was due to send so far (sent + skipped). */
  scheduled = 0

  constructor (host: string, port: number, private readonly ctx: ClientContext) {
    this.socket = net.connect({ host, port, noDelay: true })
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk))
    this.socket.on('error', () => { /* reported through 'close' */ })
    this.socket.on('close', () => {
      if (!this.closing) this.ctx.counters[this.ctx.base + Counter.DROPPED]++
      this.onConnack?.(-1)
      this.onSuback?.(-1)
    })
  }

  /** Sends CONNECT and resolves on a CONNACK that accepts it. */
  connect (clientId: string, keepalive: number, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no CONNACK within ${timeoutMs} ms`)), timeoutMs)
      this.onConnack = (code) => {
        clearTimeout(timer)
        this.onConnack = null
        if (code === 0) {
          this.ctx.counters[this.ctx.base + Counter.CONNECTED]++
          resolve()
        } else {
          reject(new Error(code < 0 ? 'connection closed before CONNACK' : `CONNACK return code ${code}`))
        }
      }
      this.socket.write(encodeConnect(clientId, keepalive))
    })
  }

  /** Subscribes to one filter and resolves on a SUBACK that grants it. */
  subscribe (filter: string, qos: 0 | 1, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no SUBACK within ${timeoutMs} ms`)), timeoutMs)
      this.onSuback = (code) => {
        clearTimeout(timer)
        this.onSuback = null
        if (code >= 0 && code !== 0x80) resolve()
        else reject(new Error(code < 0 ? 'connection closed before SUBACK' : `SUBACK refused ${filter}`))
      }
      this.socket.write(encodeSubscribe(filter, qos, 1))
    })
  }

  /** Makes this client a publisher of `template`. */
  preparePublisher (template: PublishTemplate): void {
    this.template = template
    this.batch = repeatTemplate(template, MAX_BATCH)
  }

  /** True when the socket's user-space buffer is over its high-water mark. */
  get backedUp (): boolean {
    return this.socket.writableNeedDrain
  }

  /** Calls `fn` once the socket drains. */
  onceDrained (fn: () => void): void {
    this.socket.once('drain', fn)
  }

  /**
   * Writes up to `count` PUBLISHes (capped at {@link MAX_BATCH} and, for QoS 1, by the
   * free window) in one write, stamped with the current time. Returns how many it wrote.
   */
  publish (count: number, inflightWindow: number): number {
    const template = this.template as PublishTemplate
    const qos1 = template.packetIdOffset >= 0
    let n = Math.min(count, MAX_BATCH)
    if (qos1) n = Math.min(n, inflightWindow - this.inflight)
    if (n <= 0 || this.socket.destroyed) return 0
    const size = template.bytes.length
    // A fresh buffer per write: a queued write must not see later patches.
    const out = Buffer.allocUnsafe(n * size)
    ;(this.batch as Buffer).copy(out, 0, 0, n * size)
    const stamp = nowUs()
    for (let i = 0, at = 0; i < n; i++, at += size) {
      if (template.stamped) out.writeDoubleBE(stamp, at + template.payloadOffset)
      if (qos1) {
        out.writeUInt16BE(this.nextPacketId, at + template.packetIdOffset)
        this.nextPacketId = this.nextPacketId === 0xffff ? 1 : this.nextPacketId + 1
      }
    }
    if (qos1) this.inflight += n
    this.socket.write(out)
    this.ctx.counters[this.ctx.base + Counter.SENT] += n
    return n
  }

  /** Closes with DISCONNECT (graceful) or a TCP reset (abrupt). */
  close (abrupt: boolean): Promise<void> {
    this.closing = true
    if (this.socket.destroyed) return Promise.resolve()
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve())
      if (abrupt) this.socket.resetAndDestroy()
      else this.socket.end(Buffer.from([0xe0, 0x00]))
      setTimeout(() => { this.socket.destroy(); resolve() }, 2000).unref()
    })
  }

  private onData (chunk: Buffer): void {
    this.chunkTime = this.ctx.recording() ? nowUs() : 0
    this.framer.push(chunk)
    if (this.ackLength > 0) {
      this.socket.write((this.acks as Buffer).subarray(0, this.ackLength))
      this.acks = null
      this.ackLength = 0
    }
  }

  /** @internal FrameSink: one packet from the broker. */
  onPacket (type: number, flags: number, buf: Buffer, bodyStart: number, bodyEnd: number): void {
    switch (type) {
      case PacketType.PUBLISH: {
        const ctx = this.ctx
        ctx.counters[ctx.base + Counter.RECEIVED]++
        const qos = (flags >> 1) & 3
        let at = bodyStart + 2 + buf.readUInt16BE(bodyStart)
        if (qos > 0) {
          if (this.acks === null) this.acks = Buffer.allocUnsafe(4096)
          if (this.ackLength + 4 > this.acks.length) this.growAcks()
          this.ackLength = writePuback(this.acks, this.ackLength, buf.readUInt16BE(at))
          at += 2
        }
        if (this.chunkTime > 0 && bodyEnd - at >= 8) ctx.histogram.record(this.chunkTime - buf.readDoubleBE(at))
        break
      }
      case PacketType.PUBACK:
        this.inflight--
        this.ctx.counters[this.ctx.base + Counter.ACKED]++
        break
      case PacketType.CONNACK:
        this.onConnack?.(buf[bodyStart + 1])
        break
      case PacketType.SUBACK:
        this.onSuback?.(buf[bodyEnd - 1])
        break
      default:
        break
    }
  }

  private growAcks (): void {
    const bigger = Buffer.allocUnsafe((this.acks as Buffer).length * 2)
    ;(this.acks as Buffer).copy(bigger, 0, 0, this.ackLength)
    this.acks = bigger
  }
}
