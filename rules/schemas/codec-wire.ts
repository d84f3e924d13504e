/**
 * The wire protocol between the schema registry and a `3rd-party` codec service
 * (docs/schema-registry.md, "The 3rd-party codec protocol"; the spec leaves it open, so it
 * follows EMQ X's external codec: a JSON request naming the operation, the schema, the
 * schema's `3rd_party_opts` and the data in base64).
 *
 * - HTTP: `POST <parser_addr.url>` with the request as `application/json`; the service
 *   answers status 200 and, as the body, the result in base64 (EMQ X's format, so a service
 *   written for EMQ X works unchanged). Any other status is a failure; its body says why.
 * - TCP: frames of a 4-byte big-endian length then that many bytes. The registry sends the
 *   request's JSON; the service answers, in order, one frame per request holding
 *   {@link CodecResponse} JSON. A connection is kept open and reused.
 */

/** What the registry asks of a codec service. */
export interface CodecRequest {
  /** `decode` for `schema_decode`, `encode` for `schema_encode`. */
  type: 'decode' | 'encode'
  /** The schema's name (so one service can serve several schemas). */
  schema_name: string
  /** The schema's `parser_opts.3rd_party_opts`, passed unchanged. */
  opts: string
  /** The data to decode or encode, in base64 (a map given to `schema_encode` is sent as its JSON text). */
  payload: string
  /** The optional third argument of `schema_decode`/`schema_encode`, when one was given. */
  message_type?: string
}

/** A TCP answer: `code` 0 and the result in base64, or a non-zero code and why. */
export type CodecResponse = { code: 0, payload: string } | { code: number, message: string }

/** Length prefix of a TCP frame, in bytes (unsigned, big-endian). */
export const FRAME_HEADER_BYTES = 4
/** The largest frame either side accepts (16 MiB): a longer length means a broken stream. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024

/** `body` as one TCP frame. */
export function frame (body: string | Buffer): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES)
  header.writeUInt32BE(bytes.length, 0)
  return Buffer.concat([header, bytes])
}

/**
 * Splits a TCP byte stream into frames: `push` each chunk, get back the frames it
 * completed. Throws when a header announces more than {@link MAX_FRAME_BYTES}.
 */
export class FrameReader {
  private buffered: Buffer = Buffer.alloc(0)

  push (chunk: Buffer): Buffer[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk])
    const frames: Buffer[] = []
    while (this.buffered.length >= FRAME_HEADER_BYTES) {
      const length = this.buffered.readUInt32BE(0)
      if (length > MAX_FRAME_BYTES) throw new Error(`frame of ${length} bytes is larger than ${MAX_FRAME_BYTES}`)
      if (this.buffered.length < FRAME_HEADER_BYTES + length) break
      frames.push(this.buffered.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + length))
      this.buffered = this.buffered.subarray(FRAME_HEADER_BYTES + length)
    }
    return frames
  }
}
