/**
 * A minimal MQTT framer for the load generator: it splits a byte stream into control
 * packets using only the fixed header (MQTT 3.1.1 §2.2: packet type in the high nibble
 * of byte 1, then the Remaining Length varint of §2.2.3) and hands each packet's bounds
 * to a sink. It decodes nothing else, so the generator spends its CPU on the broker,
 * not on parsing.
 */

/** Control packet types (high nibble of the first byte), MQTT 3.1.1 §2.2.1. */
export const PacketType = {
  CONNACK: 2,
  PUBLISH: 3,
  PUBACK: 4,
  SUBACK: 9,
  PINGRESP: 13
} as const

/** Receives each complete packet the framer finds. */
export interface FrameSink {
  /**
   * Called once per complete packet. `buf[bodyStart, bodyEnd)` is the variable header
   * plus payload; the slice is only valid during the call (the framer reuses buffers).
   * `flags` is the low nibble of the first byte (for PUBLISH: DUP, QoS, RETAIN).
   */
  onPacket (type: number, flags: number, buf: Buffer, bodyStart: number, bodyEnd: number): void
}

/** Thrown when the stream holds something that is not MQTT (a varint longer than 4 bytes). */
export class MalformedStreamError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'MalformedStreamError'
  }
}

/**
 * Splits a TCP byte stream into MQTT packets. Feed every chunk to {@link MqttFramer.push};
 * a packet cut across chunks is kept until the rest arrives.
 *
 * Invariant: `pending` is either null or holds the start of exactly one incomplete packet.
 */
export class MqttFramer {
  private pending: Buffer | null = null

  constructor (private readonly sink: FrameSink) {}

  /** Bytes held back waiting for the rest of a packet. */
  get pendingBytes (): number {
    return this.pending === null ? 0 : this.pending.length
  }

  /** Frames as many packets as `chunk` (plus any held-back bytes) completes. */
  push (chunk: Buffer): void {
    let buf = chunk
    if (this.pending !== null) {
      buf = Buffer.concat([this.pending, chunk])
      this.pending = null
    }
    const end = buf.length
    let pos = 0
    while (pos < end) {
      if (end - pos < 2) break
      const first = buf[pos]
      // Remaining Length: up to four 7-bit groups, least significant first [MQTT-2.2.3]
      let length = 0
      let multiplier = 1
      let cursor = pos + 1
      let complete = false
      for (let i = 0; i < 4 && cursor < end; i++) {
        const digit = buf[cursor++]
        length += (digit & 0x7f) * multiplier
        multiplier *= 128
        if ((digit & 0x80) === 0) {
          complete = true
          break
        }
        if (i === 3) throw new MalformedStreamError('remaining length varint longer than 4 bytes')
      }
      if (!complete) break
      const bodyEnd = cursor + length
      if (bodyEnd > end) break
      this.sink.onPacket(first >> 4, first & 0x0f, buf, cursor, bodyEnd)
      pos = bodyEnd
    }
    if (pos < end) this.pending = buf.subarray(pos)
  }
}
