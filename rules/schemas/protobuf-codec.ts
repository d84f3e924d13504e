/**
 * `protobuf` schemas (spec: Schema, parser types): the schema text is a `.proto` file, parsed
 * with protobufjs when the schema is created (no generated code). The message type is the
 * third argument of `schema_decode`/`schema_encode`, as in EMQ X
 * (`schema_decode('pb', payload, 'Sensor')`); it may be left out when the file defines
 * exactly one message. Field names are kept as written (`keepCase`).
 *
 * Decoding gives plain maps with every field (proto3 defaults for absent scalars, `[]` for
 * absent repeated fields, null for absent messages), enums as their names, 64-bit integers
 * as numbers (precise up to 2^53), bytes as Buffers. Encoding checks each field's type
 * first (protobufjs alone would turn `'abc'` into 0 for an int field): strings are accepted
 * for bytes (their UTF-8) and for 64-bit integers (decimal), enum names or numbers for enums;
 * keys that are not fields are ignored.
 */
import protobuf from 'protobufjs'
import { SchemaCompileError, type SchemaCodec } from './codec.js'

type PbType = protobuf.Type

const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: String, defaults: true, arrays: true }

/** Compiles `.proto` text; a syntax error names the line (protobufjs: `... (line 4)`). */
export function compileProtobuf (text: string): SchemaCodec {
  let root: protobuf.Root
  try {
    root = protobuf.parse(text, { keepCase: true }).root
    root.resolveAll()
  } catch (err) {
    const message = (err as Error).message
    // protobufjs stops its recursion at util.recursionLimit (100, protoc's default), which
    // it counts about three times per message inside a message
    if (message === 'max depth exceeded') {
      throw new SchemaCompileError(`invalid protobuf schema: definitions nested too deeply for protobufjs (its recursion limit, ${protobuf.util.recursionLimit}, ` +
        'allows 32 messages inside one another)')
    }
    throw new SchemaCompileError(`invalid protobuf schema: ${withLine(text, message)}`)
  }
  const messages = messageTypes(root)
  if (messages.length === 0) throw new SchemaCompileError('invalid protobuf schema: it defines no message type')
  const typeOf = (name: string | undefined): PbType => {
    if (name === undefined || name === '') {
      if (messages.length === 1) return messages[0]
      throw new Error(`the schema defines ${messages.length} message types (${messages.map(m => m.name).join(', ')}): give the message type as the third argument`)
    }
    try {
      return root.lookupType(name)
    } catch {
      throw new Error(`no message type ${name} in the schema; it defines ${messages.map(m => m.name).join(', ')}`)
    }
  }
  return {
    decode (data, messageType) {
      const type = typeOf(messageType)
      return type.toObject(type.decode(data), TO_OBJECT)
    },
    encode (value, messageType) {
      const type = typeOf(messageType)
      const bytes = type.encode(type.fromObject(normalize(type, value, ''))).finish()
      return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    }
  }
}

/**
 * protobufjs names the line of a syntax error (`(line 4)`) but not of an unknown type
 * (`no such Type or Enum 'foo' in Type .A`): find the first line using the type.
 */
function withLine (text: string, message: string): string {
  const unknown = /no such Type or Enum '([^']+)'/.exec(message)
  if (unknown === null || /\(line \d+\)/.test(message)) return message
  const name = unknown[1].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const line = text.split('\n').findIndex(l => new RegExp(`(^|[\\s<,(])\\.?${name}[\\s>,]`).test(l.replace(/\/\/.*$/, '')))
  return line < 0 ? message : `${message} (line ${line + 1})`
}

/** Every message type of `root`, nested ones included, in definition order. */
function messageTypes (ns: protobuf.NamespaceBase): PbType[] {
  const out: PbType[] = []
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type) out.push(nested)
    if (nested instanceof protobuf.Namespace) out.push(...messageTypes(nested))
  }
  return out
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v)

const INTS = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32'])
const LONGS = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64'])

/** `value` checked against `type`, with bytes given as text made Buffers; throws the first misfit. */
function normalize (type: PbType, value: unknown, path: string): Record<string, unknown> {
  if (!isMap(value)) throw new Error(`${path === '' ? 'value' : 'field ' + path}: expected a map for message ${type.name}, got ${shown(value)}`)
  const out: Record<string, unknown> = {}
  for (const field of type.fieldsArray) {
    const v = value[field.name]
    if (v === undefined || v === null) continue
    const at = path === '' ? field.name : `${path}.${field.name}`
    if (field.map) {
      if (!isMap(v)) throw new Error(`field ${at}: expected a map, got ${shown(v)}`)
      const m: Record<string, unknown> = {}
      for (const [k, item] of Object.entries(v)) m[k] = one(field, item, `${at}.${k}`)
      out[field.name] = m
    } else if (field.repeated) {
      if (!Array.isArray(v)) throw new Error(`field ${at}: expected an array, got ${shown(v)}`)
      out[field.name] = v.map((item, i) => one(field, item, `${at}[${i + 1}]`))
    } else {
      out[field.name] = one(field, v, at)
    }
  }
  return out
}

function one (field: protobuf.Field, v: unknown, at: string): unknown {
  const resolved = field.resolvedType
  if (resolved instanceof protobuf.Type) return normalize(resolved, v, at)
  if (resolved instanceof protobuf.Enum) {
    if ((typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && Object.hasOwn(resolved.values, v))) return v
    throw new Error(`field ${at}: expected one of ${Object.keys(resolved.values).join(', ')}, got ${shown(v)}`)
  }
  const t = field.type
  const fail = (expected: string): never => { throw new Error(`field ${at}: expected ${expected} (${t}), got ${shown(v)}`) }
  if (t === 'double' || t === 'float') return typeof v === 'number' ? v : fail('a number')
  if (INTS.has(t)) return typeof v === 'number' && Number.isInteger(v) ? v : fail('an integer')
  if (LONGS.has(t)) return (typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && /^-?\d+$/.test(v)) ? v : fail('an integer')
  if (t === 'bool') return typeof v === 'boolean' ? v : fail('a boolean')
  if (t === 'string') return typeof v === 'string' ? v : fail('a string')
  if (t === 'bytes') return Buffer.isBuffer(v) ? v : typeof v === 'string' ? Buffer.from(v, 'utf8') : fail('a binary')
  return v
}

function shown (v: unknown): string {
  if (Buffer.isBuffer(v)) return `binary(${v.length} bytes)`
  if (Array.isArray(v)) return 'an array'
  if (isMap(v)) return 'a map'
  return JSON.stringify(v) ?? String(v)
}
