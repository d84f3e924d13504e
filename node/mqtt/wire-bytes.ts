/**
 * Byte-level helpers for the MQTT wire format (variable byte integers, UTF-8 strings): the
 * one place they are written, used by the inbound and outbound scans, the SUBSCRIBE rewriter,
 * the validator, the QoS 0 encoder, the outbound window and the fuzzer. Readers never throw and
 * never allocate on the common path: they return -1 for bytes that do not form a value.
 */
import { isUtf8 } from 'node:buffer'

/** Largest value a variable byte integer can hold (four bytes) [MQTT-1.5.5]. */
export const MAX_VARINT = 268_435_455

/**
 * Reads a variable byte integer at `pos`, bytes up to `end` (exclusive). Returns the value,
 * or -1 when it runs past `end`, past four bytes, or is not in its shortest form
 * [MQTT-1.5.5-1] (its length is then `varintSize(value)`).
 */
export function readVarint (buf: Buffer, pos: number, end: number): number {
  let value = 0
  let mul = 1
  for (let i = 0; i < 4; i++) {
    if (pos + i >= end) return -1
    const byte = buf[pos + i]
    value += (byte & 127) * mul
    if ((byte & 128) === 0) {
      // a last byte of 0 after the first is a longer encoding than needed
      return i > 0 && byte === 0 ? -1 : value
    }
    mul *= 128
  }
  return -1
}

/**
 * Why {@link readVarint} returned -1 for the bytes at `pos` (up to `end`): they are not all
 * here yet (`incomplete`), run past four bytes (`too_long`), or encode the value in more bytes
 * than it needs (`not_shortest`, [MQTT-1.5.5-1]). Only called on that rare path.
 */
export function varintFault (buf: Buffer, pos: number, end: number): 'incomplete' | 'too_long' | 'not_shortest' {
  for (let i = 0; i < 4; i++) {
    if (pos + i >= end) return 'incomplete'
    if ((buf[pos + i] & 128) === 0) return 'not_shortest'
  }
  return 'too_long'
}

/** Bytes a variable byte integer takes for `n` (1..4). */
export function varintSize (n: number): number {
  return n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4
}

/** The encoding of `n` as a variable byte integer. */
export function encodeVarint (n: number): Buffer {
  const out = Buffer.allocUnsafe(varintSize(n))
  writeVarint(out, 0, n)
  return out
}

/** Writes `n` as a variable byte integer at `pos` (room for {@link varintSize} bytes); returns the offset after it. */
export function writeVarint (buf: Buffer, pos: number, n: number): number {
  do {
    let byte = n % 128
    n = Math.floor(n / 128)
    if (n > 0) byte |= 128
    buf[pos++] = byte
  } while (n > 0)
  return pos
}

/** What a UTF-8 string field holds beyond being well-formed; see {@link scanUtf8}. */
export const UTF8_BAD = 1
/** Has `+` or `#` (not allowed in a topic name [MQTT-3.3.2-2]). */
export const UTF8_WILDCARD = 2
/** Has a control character U+0001..U+001F or U+007F..U+009F (allowed, SHOULD NOT [MQTT-1.5.4-2]). */
export const UTF8_CONTROL = 4

/**
 * Scans the bytes [start, end) of a UTF-8 string field. Returns a bit set: {@link UTF8_BAD}
 * when the bytes are not well-formed UTF-8 (which also excludes surrogates) or contain
 * U+0000 [MQTT-1.5.4-1] [MQTT-1.5.4-2]; {@link UTF8_WILDCARD}; {@link UTF8_CONTROL}.
 * ASCII strings, the usual topics, are checked without allocating.
 */
export function scanUtf8 (buf: Buffer, start: number, end: number): number {
  let flags = 0
  let ascii = true
  for (let i = start; i < end; i++) {
    const b = buf[i]
    if (b >= 0x80) { ascii = false; break }
    if (b === 0) return UTF8_BAD
    if (b === 0x2b || b === 0x23) flags |= UTF8_WILDCARD
    else if (b < 0x20 || b === 0x7f) flags |= UTF8_CONTROL
  }
  if (ascii) return flags
  const bytes = buf.subarray(start, end)
  if (bytes.includes(0) || !isUtf8(bytes)) return UTF8_BAD
  for (let i = start; i < end; i++) {
    const b = buf[i]
    if (b === 0x2b || b === 0x23) flags |= UTF8_WILDCARD
    else if (b < 0x20 || b === 0x7f) flags |= UTF8_CONTROL
    // U+0080..U+009F are encoded C2 80..C2 9F
    else if (b === 0xc2 && i + 1 < end && buf[i + 1] <= 0x9f) flags |= UTF8_CONTROL
  }
  return flags
}

/** Bytes [start, end) are well-formed UTF-8 (for payloads that say they are, [MQTT-3.3.2-4]). */
export function isUtf8Range (buf: Buffer, start: number, end: number): boolean {
  return isUtf8(buf.subarray(start, end))
}

/**
 * `buf` (whole frames of ours) without its PUBLISH frames: what a connection that is closing
 * still owes (acknowledgements, SUBACKs ...) but none of the deliveries, which would only
 * stand between the peer and the DISCONNECT. Returns `buf` itself when it holds no PUBLISH.
 */
export function withoutPublishes (buf: Buffer): Buffer {
  const kept: Buffer[] = []
  let pos = 0
  let from = 0
  let dropped = false
  while (pos < buf.length) {
    const len = readVarint(buf, pos + 1, buf.length)
    if (len < 0) break
    const end = pos + 1 + varintSize(len) + len
    if (buf[pos] >> 4 === 3) {
      if (pos > from) kept.push(buf.subarray(from, pos))
      from = end
      dropped = true
    }
    pos = end
  }
  if (!dropped) return buf
  if (from < buf.length) kept.push(buf.subarray(from))
  return kept.length === 1 ? kept[0] : Buffer.concat(kept)
}
