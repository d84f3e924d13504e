import type { Wire } from './wire.js'
import { readVarint, varintSize } from './wire-bytes.js'

const PUBLISH = 3

/**
 * The client's Receive Maximum applied to what the broker sends (MQTT 5.0 §4.9): at most
 * `receiveMaximum` QoS 1/2 PUBLISH packets unacknowledged [MQTT-3.3.4-9], [MQTT-4.9.0-2];
 * the others wait, in order, and go out as a PUBACK, a PUBCOMP or a PUBREC with an error
 * reason code frees a slot (the send quota of §4.9).
 *
 * It works on the frames the wire flushes, so it sees every QoS 1/2 PUBLISH whatever wrote
 * it: live deliveries and the queue aedes resends on reconnect alike. A held frame stays in
 * aedes' outgoing queue of a persistent session until acknowledged, so a disconnect loses
 * nothing; it is sent again on the next connection, through that connection's window.
 * QoS 0 PUBLISHes and every other packet pass: they are never queued behind held ones
 * [MQTT-4.9.0-3].
 *
 * Held bytes count as unsent bytes for the wire's back-pressure (see {@link heldBytes}).
 */
export class OutboundWindow {
  /** Packet identifiers of QoS 1/2 PUBLISHes sent and not yet acknowledged. */
  private readonly inflight = new Set<number>()
  /** Frames held back, oldest first. */
  private held: Buffer[] = []
  /** Bytes of the held frames: the wire adds them to its unsent bytes. */
  heldBytes = 0

  constructor (private readonly wire: Wire, readonly receiveMaximum: number) {}

  /** Number of QoS 1/2 PUBLISHes sent and not yet acknowledged. */
  get inflightOut (): number { return this.inflight.size }

  /** Number of QoS 1/2 PUBLISHes held back. */
  get heldCount (): number { return this.held.length }

  /**
   * Takes the QoS 1/2 PUBLISH frames the window must hold back out of `buf` (complete
   * frames, as the wire flushes them); returns the bytes to send now (`buf` itself when
   * nothing is held).
   */
  filter (buf: Buffer): Buffer {
    let parts: Buffer[] | null = null
    let keptFrom = 0
    let pos = 0
    while (pos < buf.length) {
      const b0 = buf[pos]
      // frames aedes and we encoded: well-formed, their lengths in shortest form
      const len = readVarint(buf, pos + 1, buf.length)
      if (len < 0) break
      const i = pos + 1 + varintSize(len)
      const end = i + len
      if ((b0 >> 4) === PUBLISH && (b0 & 6) !== 0 && !this.admit(packetIdOf(buf, i))) {
        parts ??= []
        if (pos > keptFrom) parts.push(buf.subarray(keptFrom, pos))
        // a copy: a view would keep the whole flushed buffer alive while the frame waits
        const frame = Buffer.from(buf.subarray(pos, end))
        this.held.push(frame)
        this.heldBytes += frame.length
        keptFrom = end
      }
      pos = end
    }
    if (parts === null) return buf
    if (keptFrom < buf.length) parts.push(buf.subarray(keptFrom))
    return parts.length === 1 ? parts[0] : Buffer.concat(parts)
  }

  /**
   * The client acknowledged `messageId` (PUBACK, PUBCOMP, or PUBREC with an error reason
   * code): its slot is free, and held frames go out in order while slots are free.
   */
  acked (messageId: number): void {
    if (!this.inflight.delete(messageId) || this.held.length === 0) return
    const frames: Buffer[] = []
    while (this.held.length > 0 && this.inflight.size < this.receiveMaximum) {
      const frame = this.held.shift()!
      this.heldBytes -= frame.length
      // admitted now: when the wire flushes it, filter() finds its id in flight and lets it pass
      this.inflight.add(packetIdOf(frame, bodyOf(frame)))
      frames.push(frame)
    }
    this.wire.sendFirst(frames)
  }

  /**
   * Whether a QoS 1/2 PUBLISH with this identifier may go out now. A PUBLISH already in
   * flight passes (a resend, or a frame released by {@link acked}); a new one passes only
   * when nothing is held before it and a slot is free.
   */
  private admit (messageId: number): boolean {
    if (this.inflight.has(messageId)) return true
    if (this.held.length > 0 || this.inflight.size >= this.receiveMaximum) return false
    this.inflight.add(messageId)
    return true
  }
}

/** Offset of the variable header of the frame starting at 0. */
function bodyOf (frame: Buffer): number {
  let i = 1
  while ((frame[i] & 128) !== 0) i++
  return i + 1
}

/** Packet identifier of a QoS 1/2 PUBLISH whose variable header starts at `body`. */
function packetIdOf (buf: Buffer, body: number): number {
  return buf.readUInt16BE(body + 2 + buf.readUInt16BE(body))
}

/**
 * Applies the Receive Maximum a v5 client announced in CONNECT to what `wire` sends it:
 * creates the window and follows the client's acknowledgements as aedes' parser decodes them
 * (whole packets, however they were split across reads).
 */
export function installOutboundWindow (client: any, wire: Wire, receiveMaximum: number): void {
  const window = new OutboundWindow(wire, receiveMaximum)
  wire.window = window
  client._parser.on('packet', (packet: any) => {
    const cmd: string = packet.cmd
    if (cmd === 'puback' || cmd === 'pubcomp') window.acked(packet.messageId)
    // a PUBREC with an error reason code ends the QoS 2 exchange (§4.9); one without does not
    else if (cmd === 'pubrec' && (packet.reasonCode ?? 0) >= 0x80) window.acked(packet.messageId)
  })
}
