/**
 * `mqtt.retry_interval`: a QoS 1/2 PUBLISH (or a PUBREL) sent to a connected MQTT 3.1/3.1.1
 * client and not acknowledged within the interval is sent again, the PUBLISH with DUP set
 * [MQTT-3.3.1-1], and again each interval until it is acknowledged or the connection ends.
 * aedes never retries on a live connection (it resends only on reconnect).
 *
 * MQTT 5 clients are not retried: MQTT 5 forbids resending on a live connection
 * [MQTT-4.4.0-1] (a client that loses an acknowledgement reconnects, and the session resends
 * then). EMQ X 4.x retries them too; docs/mqtt.md notes the difference.
 *
 * Built as a {@link PacketTap} on the wire's frames: it copies each outbound QoS 1/2 PUBLISH
 * and PUBREL frame of v3 clients, forgets it on PUBACK, PUBREC or PUBCOMP, and a timer a
 * quarter of the interval apart (100 ms to 5 s) resends what is due. QoS 0 frames cost one
 * type test.
 *
 * Invariant: `pending` holds an entry only for a wire whose socket is open, and for each
 * packet identifier at most one frame, the last one sent (the PUBLISH, then its PUBREL).
 */
import { PACKET, type PacketTap, type TappedWire } from '../sys/packet-tap.js'
import type { BrokerSettings } from './settings.js'

/** A frame awaiting its acknowledgement: what to resend, and when it was last sent. */
interface Unacked { frame: Buffer, at: number }

/** Writes a frame of ours to the wire's connection (the wire's `writeFrame`). */
export type FrameWriter = (wire: TappedWire, frame: Buffer) => void

/** See the file comment. */
export class DeliveryRetry implements PacketTap {
  private readonly pending = new Map<TappedWire, Map<number, Unacked>>()
  private timer: NodeJS.Timeout | null = null
  private stopped = false

  constructor (private readonly settings: BrokerSettings, private readonly write: FrameWriter) {}

  outbound (wire: TappedWire, buf: Buffer, start: number, body: number, end: number): void {
    const type = buf[start] >> 4
    if (type === PACKET.PUBLISH) {
      if ((buf[start] & 6) === 0 || wire.protocolVersion === 5 || end > buf.length) return
      const id = buf.readUInt16BE(body + 2 + buf.readUInt16BE(body))
      const frame = Buffer.from(buf.subarray(start, end))
      frame[0] |= 0x08 // DUP: this copy is only ever sent again
      this.remember(wire, id, frame)
    } else if (type === PACKET.PUBREL && wire.protocolVersion !== 5 && end <= buf.length) {
      this.remember(wire, buf.readUInt16BE(body), Buffer.from(buf.subarray(start, end)))
    }
  }

  inbound (wire: TappedWire, buf: Buffer, start: number, body: number, end: number): void {
    const type = buf[start] >> 4
    if (type !== PACKET.PUBACK && type !== PACKET.PUBREC && type !== PACKET.PUBCOMP) return
    const sent = this.pending.get(wire)
    if (sent === undefined || end - body < 2) return
    sent.delete(buf.readUInt16BE(body))
    if (sent.size === 0) this.pending.delete(wire)
  }

  /** Stops the timer; nothing is resent afterwards. */
  stop (): void {
    this.stopped = true
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    this.pending.clear()
  }

  private remember (wire: TappedWire, id: number, frame: Buffer): void {
    if (this.stopped) return
    let sent = this.pending.get(wire)
    if (sent === undefined) this.pending.set(wire, sent = new Map())
    sent.set(id, { frame, at: Date.now() })
    if (this.timer === null) this.schedule()
  }

  private schedule (): void {
    const period = Math.min(5000, Math.max(100, Math.floor(this.settings.retryIntervalMs / 4)))
    this.timer = setTimeout(() => this.resendDue(), period)
    this.timer.unref()
  }

  private resendDue (): void {
    this.timer = null
    const due = Date.now() - this.settings.retryIntervalMs
    for (const [wire, sent] of this.pending) {
      const socket = wire.socket as { destroyed?: boolean, client?: { connected?: boolean } }
      if (socket.destroyed === true) { this.pending.delete(wire); continue }
      if (socket.client?.connected !== true) continue
      for (const unacked of sent.values()) {
        // written again through the wire, whose tap records it anew with the time of this send
        if (unacked.at <= due) this.write(wire, unacked.frame)
      }
    }
    if (this.pending.size > 0 && !this.stopped) this.schedule()
  }
}
