/**
 * The replay queue's record format (docs/replayq.md): one record per item, appended to a
 * segment file `<seqno>.seg`.
 *
 * ```
 * offset  size  field
 *  0      4     payload length, big-endian
 *  4      4     CRC32 (zlib's) of bytes 8 .. end of the record
 *  8      8     sequence number of the item, big-endian (below 2^53)
 * 16      1     flags: bits 4-7 the format version (1), bit 0 droppable
 * 17      n     payload (the item, encoded)
 * ```
 *
 * Invariants:
 * - The CRC covers the sequence number, the flags and the payload, so a record is either
 *   read back exactly as written or reported invalid; a torn write never reads as a record.
 * - Within a file, sequence numbers strictly increase (gaps are items whose write failed).
 */
import { crc32 } from 'node:zlib'

/** Bytes before the payload. */
export const RECORD_HEADER_BYTES = 17
/** A record whose declared payload is larger is invalid (a corrupt length field). */
export const MAX_PAYLOAD_BYTES = 256 * 1024 * 1024
const FORMAT_VERSION = 1
const FLAG_DROPPABLE = 0x01
const TWO_32 = 2 ** 32

/** One record read back. `payload` is a view into the buffer it was parsed from. */
export interface StoredRecord {
  seq: number
  droppable: boolean
  payload: Buffer
}

/** The outcome of parsing at an offset: a record, too few bytes, or an invalid record. */
export type ParseResult =
  | { kind: 'record', record: StoredRecord, end: number }
  | { kind: 'incomplete', need: number }
  | { kind: 'invalid', reason: string }

/** Encodes one item as a record (header + a copy of the payload). */
export function encodeRecord (seq: number, payload: Buffer, droppable: boolean): Buffer {
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + payload.length)
  record.writeUInt32BE(payload.length, 0)
  record.writeUInt32BE(Math.floor(seq / TWO_32), 8)
  record.writeUInt32BE(seq >>> 0, 12)
  record[16] = (FORMAT_VERSION << 4) | (droppable ? FLAG_DROPPABLE : 0)
  payload.copy(record, RECORD_HEADER_BYTES)
  record.writeUInt32BE(crc32(record.subarray(8)), 4)
  return record
}

/**
 * Parses the record at `offset` of `buf`. `incomplete` says how many bytes the whole record
 * needs (from `offset`) when `buf` ends before it does.
 */
export function parseRecord (buf: Buffer, offset: number): ParseResult {
  if (buf.length - offset < RECORD_HEADER_BYTES) return { kind: 'incomplete', need: RECORD_HEADER_BYTES }
  const length = buf.readUInt32BE(offset)
  if (length > MAX_PAYLOAD_BYTES) return { kind: 'invalid', reason: `payload length ${length} over ${MAX_PAYLOAD_BYTES}` }
  const end = offset + RECORD_HEADER_BYTES + length
  if (end > buf.length) return { kind: 'incomplete', need: RECORD_HEADER_BYTES + length }
  const flags = buf[offset + 16]!
  if (flags >> 4 !== FORMAT_VERSION) return { kind: 'invalid', reason: `format version ${flags >> 4}` }
  if (crc32(buf.subarray(offset + 8, end)) !== buf.readUInt32BE(offset + 4)) return { kind: 'invalid', reason: 'CRC mismatch' }
  const seq = buf.readUInt32BE(offset + 8) * TWO_32 + buf.readUInt32BE(offset + 12)
  return {
    kind: 'record',
    record: { seq, droppable: (flags & FLAG_DROPPABLE) !== 0, payload: buf.subarray(offset + RECORD_HEADER_BYTES, end) },
    end
  }
}

/** How a segment file read at open ends. */
export type SegmentEnd =
  | { kind: 'clean' }
  /** The bytes from `offset` are an unfinished write (a crash): the file is truncated there. */
  | { kind: 'torn', offset: number }
  /** An invalid record at `offset` with data after it: the rest of the file is skipped. */
  | { kind: 'corrupt', offset: number, reason: string }

/**
 * Reads every valid record of a whole segment file, in order, calling `onRecord` for each.
 * A record that is invalid or cut short is a torn tail when `mayBeTorn` (the file written
 * last) and nothing but zeros or the unfinished record follow it; otherwise it is corrupt.
 * A sequence number not above the previous one is corrupt too. Returns the valid length.
 */
export function scanSegment (buf: Buffer, mayBeTorn: boolean, minSeq: number, onRecord: (record: StoredRecord) => void): { validBytes: number, end: SegmentEnd } {
  let offset = 0
  let lastSeq = minSeq - 1
  while (offset < buf.length) {
    const parsed = parseRecord(buf, offset)
    if (parsed.kind === 'record' && parsed.record.seq > lastSeq) {
      onRecord(parsed.record)
      lastSeq = parsed.record.seq
      offset = parsed.end
      continue
    }
    const reason = parsed.kind === 'invalid' ? parsed.reason : parsed.kind === 'incomplete' ? 'record cut short' : `sequence ${parsed.record.seq} after ${lastSeq}`
    const torn = mayBeTorn && (parsed.kind === 'incomplete' || (parsed.kind === 'invalid' && onlyZerosAfter(buf, offset, 8)) ||
      (parsed.kind === 'invalid' && reason === 'CRC mismatch' && offset + RECORD_HEADER_BYTES + buf.readUInt32BE(offset) === buf.length))
    return { validBytes: offset, end: torn ? { kind: 'torn', offset } : { kind: 'corrupt', offset, reason } }
  }
  return { validBytes: offset, end: { kind: 'clean' } }
}

/** Whether `buf` holds only zeros from `from + skip` (a file extended but never written, after a power loss). */
function onlyZerosAfter (buf: Buffer, from: number, skip: number): boolean {
  for (let i = from + skip; i < buf.length; i++) if (buf[i] !== 0) return false
  return true
}
