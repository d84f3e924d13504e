/**
 * `avro` schemas (spec: Schema, parser types): the schema text is Avro JSON, compiled with
 * avsc when the schema is created. Decoding gives plain maps (avsc's record instances are
 * copied into plain objects, which is what the SQL treats as maps); `long` values are
 * numbers (avsc refuses one beyond 2^53); `bytes` and `fixed` are Buffers; enums are their
 * symbol; unions of one non-null branch give the value itself (avsc's `wrapUnions: auto`).
 */
import avro from 'avsc'
import { jsonDepthExceeds } from '../../node/json-depth.js'
import { SchemaCompileError, lineColumnOf, type SchemaCodec } from './codec.js'

type AvroType = ReturnType<typeof avro.Type.forSchema>

/**
 * At most this many JSON objects and arrays inside one another in an avro schema: about 100
 * nested records (a record nested in a field of a union is five levels), as protoc allows
 * 100 nested messages. avsc compiles a schema, and encodes and decodes its data, with one
 * recursion per level: a schema nested a few thousand levels overflowed the stack.
 */
export const MAX_AVRO_SCHEMA_DEPTH = 500

/** Compiles avro schema text; throws {@link SchemaCompileError} naming the line for bad JSON. */
export function compileAvro (text: string): SchemaCodec {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new SchemaCompileError(`avro schema is not valid JSON: ${jsonErrorWhere(text, (err as Error).message)}`)
  }
  if (jsonDepthExceeds(json, MAX_AVRO_SCHEMA_DEPTH)) {
    throw new SchemaCompileError(`avro schema nests JSON objects and arrays more than ${MAX_AVRO_SCHEMA_DEPTH} levels deep (about 100 nested records); the limit is ${MAX_AVRO_SCHEMA_DEPTH}`)
  }
  const registry: Record<string, AvroType> = {}
  let top: AvroType
  try {
    top = avro.Type.forSchema(json as any, { registry })
  } catch (err) {
    throw new SchemaCompileError(`invalid avro schema: ${(err as Error).message}`)
  }
  const named = (name: string | undefined): AvroType => {
    if (name === undefined || name === '') return top
    const type = registry[name] ?? Object.entries(registry).find(([full]) => full.endsWith('.' + name))?.[1]
    if (type === undefined) throw new Error(`no avro type named ${name} in the schema`)
    return type
  }
  return {
    decode (data, messageType) {
      return plain(named(messageType).fromBuffer(data))
    },
    encode (value, messageType) {
      const type = named(messageType)
      try {
        return type.toBuffer(value)
      } catch (err) {
        throw new Error(whyInvalid(type, value) ?? (err as Error).message)
      }
    }
  }
}

/** JSON.parse's message with its `position N` turned into a line and column. */
function jsonErrorWhere (text: string, message: string): string {
  const at = /at position (\d+)/.exec(message)
  if (at === null) return /end of JSON/.test(message) ? `${message} at ${lineColumnOf(text, text.length)}` : message
  return `${message.replace(/ in JSON at position \d+.*$/, '')} at ${lineColumnOf(text, Number(at[1]))}`
}

/** The first field that does not fit the type, as `field a.b: expected "int", got 1.5`. */
function whyInvalid (type: AvroType, value: unknown): string | undefined {
  let first: string | undefined
  type.isValid(value, {
    errorHook: (path, val, t) => {
      first ??= `${path.length === 0 ? 'value' : 'field ' + path.join('.')}: expected ${t.toString()}, got ${val === undefined ? 'nothing' : JSON.stringify(val)}`
    }
  })
  return first
}

/** Decoded avro data with every record (a class instance in avsc) as a plain object. */
function plain (v: unknown): unknown {
  if (typeof v !== 'object' || v === null || Buffer.isBuffer(v)) return v
  if (Array.isArray(v)) return v.map(plain)
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(v)) out[key] = plain((v as Record<string, unknown>)[key])
  return out
}
