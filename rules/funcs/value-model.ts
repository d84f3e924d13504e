/**
 * How EMQ X 4's Erlang values map onto JavaScript in the rule engine, and the conversions
 * every function family shares.
 *
 * | Erlang (EMQ X)        | here                                                        |
 * |-----------------------|-------------------------------------------------------------|
 * | binary                | `string` (printable UTF-8 text) or `Buffer` (other bytes)    |
 * | bitstring (not bytes) | {@link BitString}                                            |
 * | integer / float       | `number`; an integral number counts as an integer (see below) |
 * | map                   | plain object                                                 |
 * | list                  | array                                                        |
 * | true / false          | `boolean`                                                    |
 * | undefined             | `undefined`                                                  |
 * | null (JSON null atom) | `null`                                                       |
 *
 * Integer or float: JavaScript has one number type and JSON.parse drops the `.0` of `2.0`, so
 * an integral number is an integer here. Where EMQ X tells them apart the difference shows only
 * for integral floats: `is_float(2.0)` is false and `str(2.0)` is `'2'` (EMQ X: true, `'2.0'`).
 * Functions that produce integers in EMQ X (`int`, `floor`, `round`, `div` ...) return integral
 * numbers, so `is_int` holds for them. Integers beyond 2^53 lose precision (EMQ X has bignums).
 */
import { isUtf8 } from 'node:buffer'
import { ConversionError, badArg } from './errors.js'

/** The event's columns a rule runs against (EMQ X's `Input`/`Envs`). */
export type Columns = Record<string, unknown>

/** A bitstring whose length is not a whole number of bytes (from `subbits(..., 'bits', ...)`). */
export class BitString {
  /**
   * @param bytes the bits, left-aligned; bits past `bitLength` in the last byte are zero
   * @param bitLength number of valid bits
   */
  constructor (readonly bytes: Buffer, readonly bitLength: number) {}
}

/** True for a map (plain object): not null, not an array, a Buffer or a {@link BitString}. */
export function isMap (v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/** True for an Erlang binary: a string or a Buffer. */
export function isBinary (v: unknown): v is string | Buffer {
  return typeof v === 'string' || Buffer.isBuffer(v)
}

/** True for a number that counts as an Erlang integer (finite and integral). */
export function isInt (v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v)
}

/** True for a finite number. */
export function isNum (v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v)
}

/** The text of a binary argument (a Buffer is read as UTF-8); throws for anything else. */
export function textOf (fn: string, v: unknown): string {
  if (typeof v === 'string') return v
  if (Buffer.isBuffer(v)) return v.toString('utf8')
  throw badArg(fn, v, 'a string')
}

/** The bytes of a binary argument (a string is encoded as UTF-8); throws for anything else. */
export function bytesOf (fn: string, v: unknown): Buffer {
  if (typeof v === 'string') return Buffer.from(v, 'utf8')
  if (Buffer.isBuffer(v)) return v
  throw badArg(fn, v, 'a binary')
}

// io_lib:printable_unicode_list/1: what Erlang prints as text rather than as bytes (ESC included).
// eslint-disable-next-line no-control-regex
const PRINTABLE = /^[\t\n\v\f\r\b\x1b\x20-\x7e\u00a0-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]*$/u

/**
 * A function's binary result: a string when the bytes are printable UTF-8 text (what Erlang
 * would print as text: `base64_decode('aGk=')` is `'hi'`), else the Buffer (`hexstr2bin('05')`).
 */
export function binaryValue (bytes: Buffer): string | Buffer {
  if (!isUtf8(bytes)) return bytes
  const text = bytes.toString('utf8')
  return PRINTABLE.test(text) ? text : bytes
}

/** An integer argument, or a throw (EMQ X's `when is_integer(X)` guards). */
export function intArg (fn: string, v: unknown): number {
  if (isInt(v)) return v
  throw badArg(fn, v, 'an integer')
}

/** A number argument, or a throw (EMQ X's `when is_number(X)` guards). */
export function numArg (fn: string, v: unknown): number {
  if (isNum(v)) return v
  throw badArg(fn, v, 'a number')
}

/** An array argument, or a throw (EMQ X's `when is_list(L)` guards). */
export function arrayArg (fn: string, v: unknown): unknown[] {
  if (Array.isArray(v)) return v
  throw badArg(fn, v, 'an array')
}

/** Erlang's exact equality (`=:=`): deep for maps and arrays, byte-wise for binaries. */
export function termEquals (a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (isBinary(a) && isBinary(b)) return bytesOf('', a).equals(bytesOf('', b))
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!termEquals(a[i], b[i])) return false
    return true
  }
  if (isMap(a)) {
    if (!isMap(b)) return false
    const keys = Object.keys(a)
    if (keys.length !== Object.keys(b).length) return false
    for (const k of keys) if (!Object.hasOwn(b, k) || !termEquals(a[k], b[k])) return false
    return true
  }
  if (a instanceof BitString && b instanceof BitString) {
    return a.bitLength === b.bitLength && a.bytes.equals(b.bytes)
  }
  return false
}

/** An integer as Erlang prints it: every digit, never exponent notation. */
export function integerText (n: number): string {
  return Number.isSafeInteger(n) ? String(n) : BigInt(n).toString()
}

/**
 * `float_to_binary(F, [{decimals, D}, compact])`: fixed notation rounded to `decimals`
 * digits, trailing zeros dropped but one digit kept after the point (`2.0`, `20.2`).
 */
export function formatFloat (x: number, decimals: number): string {
  let s: string
  if (Math.abs(x) < 1e21) s = x.toFixed(Math.min(decimals, 100))
  else s = BigInt(x).toString() + (decimals > 0 ? '.' + '0'.repeat(Math.min(decimals, 100)) : '')
  if (decimals <= 0) return s
  let end = s.length
  while (end > 0 && s.charCodeAt(end - 1) === 48 /* 0 */ && s.charCodeAt(end - 2) !== 46 /* . */) end--
  return s.slice(0, end)
}

/**
 * EMQ X's `emqx_rule_utils:bin/1` (used by `str`, templates, `+` on strings): binaries as they
 * are, integers in full, floats with up to 10 decimals, atoms by name, maps as JSON, and
 * arrays as text when they are printable character codes (Erlang strings), else as JSON.
 */
export function toBin (fn: string, v: unknown): string | Buffer {
  if (typeof v === 'string') return v
  if (Buffer.isBuffer(v)) return isUtf8(v) ? v.toString('utf8') : v
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw badArg(fn, v, 'a finite number')
    return Number.isInteger(v) ? integerText(v) : formatFloat(v, 10)
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false'
  if (v === undefined) return 'undefined'
  if (v === null) return 'null'
  if (Array.isArray(v)) return isPrintableList(v) ? v.map((c) => String.fromCharCode(c as number)).join('') : jsonEncode(fn, v)
  if (isMap(v)) return jsonEncode(fn, v)
  throw new ConversionError(fn, 'invalid_bin', `cannot make a string of ${v instanceof BitString ? 'a bitstring' : typeof v}`)
}

/** `io_lib:printable_list/1` in its default (latin1) range. */
function isPrintableList (list: unknown[]): boolean {
  for (const c of list) {
    if (!isInt(c)) return false
    if (!((c >= 32 && c <= 126) || (c >= 160 && c <= 255) || (c >= 8 && c <= 13) || c === 27)) return false
  }
  return true
}

/**
 * JSON text of a value as EMQ X's `emqx_json:encode` (jiffy) writes it: compact, binaries as
 * strings, `undefined` as the string `"undefined"` (jiffy writes atoms as strings), `null` as null.
 */
export function jsonEncode (fn: string, v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v)
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new ConversionError(fn, 'badarg', `cannot encode ${v} as JSON`)
    return Number.isInteger(v) ? integerText(v) : JSON.stringify(v)
  }
  if (typeof v === 'boolean' || v === null) return String(v)
  if (v === undefined) return '"undefined"'
  if (Buffer.isBuffer(v)) {
    if (!isUtf8(v)) throw new ConversionError(fn, 'invalid_string', 'a binary that is not UTF-8 cannot be JSON')
    return JSON.stringify(v.toString('utf8'))
  }
  if (Array.isArray(v)) return '[' + v.map((e) => jsonEncode(fn, e)).join(',') + ']'
  if (isMap(v)) {
    const parts: string[] = []
    for (const k of Object.keys(v)) parts.push(JSON.stringify(k) + ':' + jsonEncode(fn, v[k]))
    return '{' + parts.join(',') + '}'
  }
  throw new ConversionError(fn, 'badarg', `cannot encode ${v instanceof BitString ? 'a bitstring' : typeof v} as JSON`)
}

/** Parses JSON text (a string or UTF-8 bytes); throws a {@link ConversionError} when invalid. */
export function jsonDecode (fn: string, v: unknown): unknown {
  const text = textOf(fn, v)
  try {
    return JSON.parse(text)
  } catch {
    throw new ConversionError(fn, 'badarg', `not valid JSON: ${text.length > 40 ? text.slice(0, 40) + '...' : text}`)
  }
}
