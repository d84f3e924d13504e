/**
 * The bridge bench's MQTT clients: one raw-TCP MQTT 3.1.1 connection that can publish
 * pre-encoded 100-byte messages (stamped with the send time) and subscribe, counting what
 * it sends, what is acknowledged and what arrives, and recording end-to-end latency. Unlike
 * bench/load-client.ts it can connect with a persistent session (clean session 0), which
 * the drain measurement needs: the remote Mosquitto is stopped and started again, and the
 * subscriber's session and the messages queued for it must survive.
 */
import net from 'node:net'
import mqttPacket from 'mqtt-packet'
import type { LatencyHistogram } from './latency-histogram.js'
import { nowUs } from './load-client.js'
import { MqttFramer, PacketType, type FrameSink } from './mqtt-framer.js'
import { encodePublishTemplate, writePuback, type PublishTemplate } from './packets.js'

/** Most PUBLISH packets one write carries. */
const MAX_WRITE = 64

/** A bench connection: publisher and/or subscriber. */
export class BridgeBenchClient implements FrameSink {
  private readonly socket: net.Socket
  private readonly framer = new MqttFramer(this)
  private closing = false
  private onConnack: ((code: number) => void) | null = null
  private onSuback: ((code: number) => void) | null = null
  private chunkTime = 0
  private acks: Buffer | null = null
  private ackLength = 0
  private template: PublishTemplate | null = null
  private nextPacketId = 1
  /** PUBLISH packets written. */
  sent = 0
  /** PUBACKs received. */
  acked = 0
  /** PUBLISH packets received. */
  received = 0
  /** Unacknowledged QoS 1 PUBLISHes. */
  inflight = 0
  /** Time of the last PUBLISH received, ms (performance.now()). */
  lastArrival = 0
  /** Time of the first PUBLISH received since {@link resetCounts}, ms, or 0. */
  firstArrival = 0
  /** True once the connection is gone. */
  closed = false
  /** Whether arrivals are recorded in the histogram. */
  recording = false
  /** Called after each chunk of packets (a publisher refills its window from here). */
  onActivity: (() => void) | null = null

  constructor (host: string, port: number, public histogram: LatencyHistogram | null = null) {
    this.socket = net.connect({ host, port, noDelay: true })
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk))
    this.socket.on('error', () => { /* reported through 'close' */ })
    this.socket.on('close', () => {
      this.closed = true
      this.onConnack?.(-1)
      this.onSuback?.(-1)
    })
  }

  /** Sends CONNECT (MQTT 3.1.1) and resolves on a CONNACK that accepts it. */
  async connect (clientId: string, clean: boolean, timeoutMs = 10_000): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${clientId}: no CONNACK within ${timeoutMs} ms`)), timeoutMs)
      this.onConnack = (code) => {
        clearTimeout(timer)
        this.onConnack = null
        if (code === 0) resolve()
        else reject(new Error(`${clientId}: ${code < 0 ? 'connection closed before CONNACK' : `CONNACK return code ${code}`}`))
      }
      this.socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean, clientId, keepalive: 300 }))
    })
  }

  /** Subscribes to one filter and resolves on a SUBACK that grants it. */
  async subscribe (filter: string, qos: 0 | 1, timeoutMs = 10_000): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no SUBACK within ${timeoutMs} ms`)), timeoutMs)
      this.onSuback = (code) => {
        clearTimeout(timer)
        this.onSuback = null
        if (code >= 0 && code !== 0x80) resolve()
        else reject(new Error(code < 0 ? 'connection closed before SUBACK' : `SUBACK refused ${filter}`))
      }
      this.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: filter, qos }] }))
    })
  }

  /** Makes this client a publisher on `topic`. */
  preparePublisher (topic: string, qos: 0 | 1, payloadSize: number): void {
    this.template = encodePublishTemplate(topic, qos, payloadSize)
  }

  /** True when the socket's user-space buffer is over its high-water mark. */
  get backedUp (): boolean {
    return this.socket.writableNeedDrain
  }

  /**
   * Writes up to `count` PUBLISHes (at most {@link MAX_WRITE}; for QoS 1 at most what
   * `window` leaves free) in one write, stamped with the current time. Returns how many.
   */
  publish (count: number, window: number): number {
    const template = this.template as PublishTemplate
    const qos1 = template.packetIdOffset >= 0
    let n = Math.min(count, MAX_WRITE)
    if (qos1) n = Math.min(n, window - this.inflight)
    if (n <= 0 || this.closed) return 0
    const size = template.bytes.length
    const out = Buffer.allocUnsafe(n * size)
    const stamp = nowUs()
    for (let i = 0, at = 0; i < n; i++, at += size) {
      template.bytes.copy(out, at)
      out.writeDoubleBE(stamp, at + template.payloadOffset)
      if (qos1) {
        out.writeUInt16BE(this.nextPacketId, at + template.packetIdOffset)
        this.nextPacketId = this.nextPacketId === 0xffff ? 1 : this.nextPacketId + 1
      }
    }
    if (qos1) this.inflight += n
    this.sent += n
    this.socket.write(out)
    return n
  }

  /** Zeroes the arrival counts. */
  resetCounts (): void {
    this.received = 0
    this.firstArrival = 0
  }

  /** Closes with DISCONNECT. */
  async close (): Promise<void> {
    this.closing = true
    if (this.closed) return
    await new Promise<void>((resolve) => {
      this.socket.once('close', () => resolve())
      this.socket.end(Buffer.from([0xe0, 0x00]))
      setTimeout(() => { this.socket.destroy(); resolve() }, 2000).unref()
    })
  }

  /** True when the broker (not us) closed the connection. */
  get lost (): boolean {
    return this.closed && !this.closing
  }

  private onData (chunk: Buffer): void {
    this.chunkTime = this.recording ? nowUs() : 0
    this.framer.push(chunk)
    if (this.ackLength > 0) {
      this.socket.write((this.acks as Buffer).subarray(0, this.ackLength))
      this.acks = null
      this.ackLength = 0
    }
    this.onActivity?.()
  }

  /** @internal FrameSink: one packet from the broker. */
  onPacket (type: number, flags: number, buf: Buffer, bodyStart: number, bodyEnd: number): void {
    switch (type) {
      case PacketType.PUBLISH: {
        this.received++
        const now = performance.now()
        if (this.firstArrival === 0) this.firstArrival = now
        this.lastArrival = now
        const qos = (flags >> 1) & 3
        let at = bodyStart + 2 + buf.readUInt16BE(bodyStart)
        if (qos > 0) {
          if (this.acks === null) this.acks = Buffer.allocUnsafe(4096)
          if (this.ackLength + 4 > this.acks.length) {
            const bigger = Buffer.allocUnsafe(this.acks.length * 2)
            this.acks.copy(bigger, 0, 0, this.ackLength)
            this.acks = bigger
          }
          this.ackLength = writePuback(this.acks, this.ackLength, buf.readUInt16BE(at))
          at += 2
        }
        if (this.chunkTime > 0 && this.histogram !== null && bodyEnd - at >= 8) this.histogram.record(this.chunkTime - buf.readDoubleBE(at))
        break
      }
      case PacketType.PUBACK:
        this.inflight--
        this.acked++
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
}
