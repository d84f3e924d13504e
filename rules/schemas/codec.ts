/**
 * What the registry keeps per schema once compiled: a codec that turns binary data into a
 * key-value map (decode) and back (encode). avro-codec.ts and protobuf-codec.ts compile the
 * schema text when the schema is created; third-party-codec.ts calls an external service.
 *
 * Values follow the rule engine's value model (rules/funcs/value-model.ts): maps are plain
 * objects, arrays are arrays, bytes are Buffers, 64-bit integers are numbers.
 */

/** A compiled schema. Both methods are synchronous (the SQL functions are) and throw on failure. */
export interface SchemaCodec {
  /**
   * Decodes `data`. `messageType` is the optional third SQL argument: the protobuf message
   * (required when the .proto defines more than one), an avro named type.
   */
  decode (data: Buffer, messageType: string | undefined): unknown
  /** Encodes `value` (a map for avro and protobuf) into binary data. */
  encode (value: unknown, messageType: string | undefined): Buffer
}

/**
 * Schema text that does not compile: the message says what the library found and, where
 * the library gives one, the line (`line 4`) or line and column (`line 3, column 12`).
 */
export class SchemaCompileError extends Error {
  override readonly name = 'SchemaCompileError'
}

/** `offset` (0-based, in characters) of `text` as `line L, column C` (1-based). */
export function lineColumnOf (text: string, offset: number): string {
  const before = text.slice(0, Math.max(0, offset))
  const line = before.split('\n').length
  const column = offset - before.lastIndexOf('\n')
  return `line ${line}, column ${column}`
}
