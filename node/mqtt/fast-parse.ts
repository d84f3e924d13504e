/**
 * The decoding of the packets a busy connection sends most (PUBLISH, PUBACK, PINGREQ) in
 * place of mqtt-packet's parser, for each aedes client (issue 22: CPU per message). In a
 * profile of fan-in QoS 0, mqtt-packet's parser with its `bl` list and its `debug` calls took
 * about a seventh of the broker's CPU per message: a state machine per packet, a Packet and a
 * BufferList consumed piece by piece, some ten `debug` calls. Every frame has already been
 * framed and checked by the wire (wire.ts, packet-check.ts) when aedes hands its bytes to the
 * parser, so a whole frame here needs no checks of its own.
 *
 * Invariants:
 * - aedes sees the same packets, in the same order, with the same fields and values, as
 *   mqtt-packet's parser gives (objects of its own Packet class, fields set in its order),
 *   through the parser's own 'packet' event: every listener (aedes' `enqueue`, the CONNECT
 *   port, the outbound window) is called as before.
 * - Only whole frames of those three kinds are decoded here, and only while mqtt-packet's
 *   parser holds nothing (no partial packet, no error); every other frame and a v5 PUBLISH
 *   with properties go through mqtt-packet's own `parse` whole. A frame cut by the end of a
 *   read waits here for the rest when it is small (at most {@link CARRY_MAX} bytes), and
 *   goes to mqtt-packet when it is larger, which then keeps what it buffered until its
 *   packet is complete.
 * - A parse called again from inside a 'packet' listener (a handler that finished at once and
 *   read on) waits until the frames before it were emitted: order is kept.
 */

const PUBLISH = 3
const PUBACK = 4
const PINGREQ = 12
/** The largest frame a cut read keeps here for the next read (larger ones: mqtt-packet's list). */
const CARRY_MAX = 4096

/** mqtt-packet's `Parser.prototype.parse`, taken from the first parser. */
let originalParse: ((this: any, buf: Buffer) => number) | null = null
/** mqtt-packet's Packet class, taken from the first parser's current packet. */
let PacketClass: (new () => any) | null = null

/** Makes `parser` (an mqtt-packet parser aedes made for a client) decode as the file says. */
export function useFastParse (parser: any): void {
  if (typeof parser?.parse !== 'function' || parser.packet === undefined || parser.packet === null) return
  if (originalParse === null) {
    originalParse = Object.getPrototypeOf(parser).parse
    PacketClass = parser.packet.constructor
  }
  if (parser.packet.constructor !== PacketClass || Object.getPrototypeOf(parser).parse !== originalParse) return
  // undefined: not parsing; null: parsing, nothing read meanwhile; an array: what was
  parser._fastQueue = undefined
  // the start of a small frame cut by the end of the last read (see parseChunk)
  parser._fastCarry = null
  parser.parse = fastParse
}

/** The parser's `parse` (`this` is the parser). Returns what mqtt-packet's does: the bytes it keeps. */
function fastParse (this: any, buf: Buffer): number {
  if (this._fastQueue !== undefined) {
    (this._fastQueue ??= []).push(buf)
    return this._list.length
  }
  this._fastQueue = null
  try {
    parseChunk(this, buf)
    while (this._fastQueue !== null) {
      const queued: Buffer[] = this._fastQueue
      this._fastQueue = null
      for (let i = 0; i < queued.length; i++) parseChunk(this, queued[i])
    }
  } finally {
    this._fastQueue = undefined
  }
  return this._list.length
}

/** Emits the packets of `buf`, in order (see the invariants). */
function parseChunk (parser: any, buf: Buffer): void {
  if (parser._list.length !== 0 || parser._stateCounter !== 0 || parser.packet.length !== -1 || parser.error !== null) {
    originalParse!.call(parser, buf)
    return
  }
  const carry: Buffer | null = parser._fastCarry
  if (carry !== null) {
    parser._fastCarry = null
    buf = Buffer.concat([carry, buf])
  }
  let pos = 0
  let end = 0
  let complete = false
  while (pos < buf.length) {
    const b0 = buf[pos]
    // the remaining length (the wire checked its form)
    let len = 0
    let mul = 1
    let at = pos + 1
    complete = false
    while (at < buf.length && at < pos + 5) {
      const d = buf[at++]
      len += (d & 0x7f) * mul
      mul *= 128
      if ((d & 0x80) === 0) { complete = true; break }
    }
    end = at + len
    if (!complete || end > buf.length) break
    const type = b0 >> 4
    // per frame: a CONNECT earlier in this read set the parser's settings (its protocol level)
    const v5 = parser.settings.protocolVersion === 5
    const packet = type === PUBLISH
      ? publishOf(buf, b0, at, end, len, v5)
      : type === PUBACK && len === 2
        ? pubackOf(buf, at, v5)
        : type === PINGREQ && len === 0 ? pingreqOf() : null
    if (packet === null) originalParse!.call(parser, pos === 0 && end === buf.length ? buf : buf.subarray(pos, end))
    else parser.emit('packet', packet)
    pos = end
  }
  if (pos === buf.length) return
  // a frame cut by the end of the read: a small one waits here for the rest (the reads of a
  // busy connection are slices that seldom end on a frame), a large one goes to mqtt-packet,
  // whose list gathers its pieces without copying them again at each read
  if (complete ? end - pos <= CARRY_MAX : buf.length - pos < 5) parser._fastCarry = pos === 0 ? buf : buf.subarray(pos)
  else originalParse!.call(parser, pos === 0 ? buf : buf.subarray(pos))
}

/** A PUBLISH as mqtt-packet decodes it; null for a v5 one with properties (or a frame too short to be one). */
function publishOf (buf: Buffer, b0: number, body: number, end: number, len: number, v5: boolean): any {
  const qos = (b0 >> 1) & 3
  if (body + 2 > end) return null
  const topicEnd = body + 2 + buf.readUInt16BE(body)
  let at = topicEnd
  if (qos > 0) at += 2
  if (v5) {
    if (at >= end || buf[at] !== 0) return null
    at++
  }
  if (at > end) return null
  const packet = new PacketClass!()
  packet.cmd = 'publish'
  packet.retain = (b0 & 1) !== 0
  packet.qos = qos
  packet.dup = (b0 & 8) !== 0
  packet.length = len
  packet.topic = buf.toString('utf8', body + 2, topicEnd)
  if (qos > 0) packet.messageId = buf.readUInt16BE(topicEnd)
  packet.payload = buf.subarray(at, end)
  return packet
}

/** A PUBACK of two bytes (v5: reason code 0, no properties) as mqtt-packet decodes it. */
function pubackOf (buf: Buffer, body: number, v5: boolean): any {
  const packet = new PacketClass!()
  packet.cmd = 'puback'
  packet.length = 2
  packet.messageId = buf.readUInt16BE(body)
  if (v5) packet.reasonCode = 0
  return packet
}

/** A PINGREQ as mqtt-packet decodes it. */
function pingreqOf (): any {
  const packet = new PacketClass!()
  packet.cmd = 'pingreq'
  packet.length = 0
  return packet
}
