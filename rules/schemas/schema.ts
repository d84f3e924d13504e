/**
 * The Schema resource (spec: Resources/Schema, Limits 1 and 2) and the checks a new schema
 * passes before anything is compiled or stored. Error codes (the spec leaves them open;
 * docs/schema-registry.md lists them, following docs/rules.md): a missing field is 107, a
 * field of the wrong type or with a value not allowed (a malformed name, an unknown
 * parser_type, a bad URL) 108.
 */
import { ApiError, MissingParameterError, WrongTypeError } from '../../node/errors.js'

/** The parser types (spec: Schema `parser_type`). */
export const PARSER_TYPES = ['avro', 'protobuf', '3rd-party'] as const
/** One of {@link PARSER_TYPES}. */
export type ParserType = typeof PARSER_TYPES[number]

/** Schema names (spec Limits 1): first `[A-Za-z_]`, then `[A-Za-z0-9_]`; at most 128 characters (ours). */
export const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/
/** The longest schema text accepted, in bytes (spec Limits 9 leaves it open). */
export const MAX_SCHEMA_BYTES = 512 * 1024

/** Where a `3rd-party` codec service is: exactly one of the three. */
export interface ParserAddr {
  /** HTTP callback: the URL requests are POSTed to. */
  url?: string
  /** TCP callback: `<ip>:<port>`. */
  server?: string
  /** An existing resource whose `config.url` (HTTP) or `config.server` (TCP) is used. */
  resource_id?: string
}

/** Options of a `3rd-party` schema. */
export interface ParserOpts {
  /** Passed unchanged to the service with every request (application-specific). */
  '3rd_party_opts': string
  /** Seconds; default {@link DEFAULT_CONNECT_TIMEOUT_S}. */
  connect_timeout?: number
  /** Seconds; default {@link DEFAULT_PARSE_TIMEOUT_S}. */
  parse_timeout?: number
}

/** Seconds to connect to a codec service when `connect_timeout` is not given (EMQ X 4's default). */
export const DEFAULT_CONNECT_TIMEOUT_S = 3
/** Seconds to wait for a codec service's answer when `parse_timeout` is not given (EMQ X 4's default). */
export const DEFAULT_PARSE_TIMEOUT_S = 5
/** The longest either timeout may be, in seconds: the rules using the schema wait that long at worst. */
export const MAX_TIMEOUT_S = 60

/**
 * A stored schema, exactly as the API shows it: `parser_addr` is null and `parser_opts`
 * `{}` for avro and protobuf; `schema` is `""` for a 3rd-party schema created without one.
 */
export interface Schema {
  name: string
  parser_type: ParserType
  schema: string
  parser_addr: ParserAddr | null
  parser_opts: ParserOpts | Record<string, never>
  description: string
}

/** What creating a schema takes (the API body, the CLI's arguments): checked by {@link checkSchemaInput}. */
export interface SchemaInput {
  name?: unknown
  parser_type?: unknown
  schema?: unknown
  parser_addr?: unknown
  parser_opts?: unknown
  description?: unknown
}

const missing = (what: string, hint = ''): ApiError => new MissingParameterError(`missing parameter ${what}${hint}`)
const wrong = (message: string): ApiError => new WrongTypeError(message)
const absent = (v: unknown): boolean => v === undefined || v === null
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Checks the fields of a new schema and answers the record to store (not yet compiled or probed). */
export function checkSchemaInput (input: SchemaInput): Schema {
  if (!isObject(input)) throw wrong('the schema must be a JSON object')
  const name = checkName(input.name)
  if (absent(input.parser_type)) throw missing('parser_type', ` (one of ${PARSER_TYPES.join(', ')})`)
  if (typeof input.parser_type !== 'string') throw wrong('parameter parser_type must be a string')
  const type = input.parser_type as ParserType
  if (!PARSER_TYPES.includes(type)) throw wrong(`parameter parser_type must be one of ${PARSER_TYPES.join(', ')}, got ${JSON.stringify(input.parser_type)}`)
  if (!absent(input.description) && typeof input.description !== 'string') throw wrong('parameter description must be a string')
  const description = (input.description as string | undefined | null) ?? ''
  if (type !== '3rd-party') {
    return { name, parser_type: type, schema: checkSchemaText(input.schema, type, true), parser_addr: null, parser_opts: {}, description }
  }
  return {
    name,
    parser_type: type,
    schema: checkSchemaText(input.schema, type, false),
    parser_addr: checkAddr(input.parser_addr),
    parser_opts: checkOpts(input.parser_opts),
    description
  }
}

/** A schema name (spec Limits 1); 107 when absent, 108 when not a string or malformed. */
export function checkName (name: unknown): string {
  if (absent(name)) throw missing('name')
  if (typeof name !== 'string') throw wrong('parameter name must be a string')
  if (!SCHEMA_NAME.test(name)) {
    throw wrong(`invalid schema name ${JSON.stringify(name)}: the first character must be a letter or _, the others letters, digits or _ (at most 128)`)
  }
  return name
}

function checkSchemaText (text: unknown, type: ParserType, required: boolean): string {
  const what = type === 'avro' ? 'the Avro schema JSON' : type === 'protobuf' ? 'the .proto text' : 'kept for the service'
  if (absent(text) || (required && typeof text === 'string' && text.trim() === '')) {
    if (required) throw missing('schema', ` (${what}; required for ${type})`)
    return ''
  }
  if (typeof text !== 'string') throw wrong(`parameter schema must be a string (${what})`)
  if (Buffer.byteLength(text) > MAX_SCHEMA_BYTES) throw wrong(`parameter schema is ${Buffer.byteLength(text)} bytes; at most ${MAX_SCHEMA_BYTES} are accepted`)
  return text
}

function checkAddr (addr: unknown): ParserAddr {
  const hint = ' (an object with url, server or resource_id; required for 3rd-party)'
  if (absent(addr)) throw missing('parser_addr', hint)
  if (!isObject(addr)) throw wrong('parameter parser_addr must be an object with url, server or resource_id')
  const given = (['url', 'server', 'resource_id'] as const).filter(k => !absent(addr[k]))
  if (given.length === 0) throw missing('parser_addr.url, parser_addr.server or parser_addr.resource_id')
  if (given.length > 1) throw wrong(`parser_addr must have one of url, server and resource_id, got ${given.join(' and ')}`)
  const key = given[0]
  const value = addr[key]
  if (typeof value !== 'string') throw wrong(`parameter parser_addr.${key} must be a string`)
  if (key === 'url') {
    let url: URL | null = null
    try { url = new URL(value) } catch { url = null }
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw wrong(`parameter parser_addr.url must be an http:// or https:// URL, got ${JSON.stringify(value)}`)
    }
  }
  if (key === 'server') parseServer(value)
  if (key === 'resource_id' && value === '') throw wrong('parameter parser_addr.resource_id must not be empty')
  return { [key]: value }
}

/** `<ip>:<port>` (a host name is accepted too; IPv6 as `[::1]:port`); 108 otherwise. */
export function parseServer (server: string): { host: string, port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(server)
  const port = m === null ? NaN : Number(m[3])
  if (m === null || port < 1 || port > 65535) throw wrong(`parameter parser_addr.server must be <ip>:<port>, got ${JSON.stringify(server)}`)
  return { host: m[1] ?? m[2], port }
}

function checkOpts (opts: unknown): ParserOpts {
  if (absent(opts)) throw missing('parser_opts', ' (an object with 3rd_party_opts; required for 3rd-party)')
  if (!isObject(opts)) throw wrong('parameter parser_opts must be an object')
  const thirdParty = opts['3rd_party_opts']
  if (absent(thirdParty)) throw missing('parser_opts.3rd_party_opts', ' (a string passed to the codec service)')
  if (typeof thirdParty !== 'string') throw wrong('parameter parser_opts.3rd_party_opts must be a string')
  const out: ParserOpts = { '3rd_party_opts': thirdParty }
  for (const key of ['connect_timeout', 'parse_timeout'] as const) {
    const v = opts[key]
    if (absent(v)) continue
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_TIMEOUT_S) throw wrong(`parameter parser_opts.${key} must be an integer number of seconds from 1 to ${MAX_TIMEOUT_S}`)
    out[key] = v
  }
  return out
}
