/**
 * Type conversion and type tests (EMQ X 4.4 `emqx_rule_funcs` "Data Type Conversion" and
 * "Data Type Validation", converting as `emqx_rule_utils` does). A value that cannot be
 * converted throws {@link ConversionError}: the statement does not match (spec Rule SQL point 5).
 */
import { isUtf8 } from 'node:buffer'
import { ConversionError, badArg, describe } from './errors.js'
import { binaryValue, bytesOf, formatFloat, isBinary, isInt, isMap, isNum, jsonDecode, numArg, textOf, toBin } from './value-model.js'
import type { RuleFunction } from './types.js'

// Erlang's number syntax for binary_to_integer/1 and binary_to_float/1: no spaces, no
// exponent without a fraction, digits on both sides of the point.
const ERL_INT = /^[+-]?\d+$/
const ERL_FLOAT = /^[+-]?\d+\.\d+(?:[eE][+-]?\d+)?$/

/**
 * The text of an Erlang string (a list of character codes, as a JSON array of numbers is):
 * `list_to_integer`, `list_to_float` and `unicode:characters_to_binary` read such lists.
 * Undefined when `v` is not a list of Unicode code points.
 */
export function charListText (v: unknown): string | undefined {
  if (!Array.isArray(v)) return undefined
  let s = ''
  for (const c of v) {
    if (!isInt(c) || c < 0 || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return undefined
    s += String.fromCodePoint(c)
  }
  return s
}

/** `int/1`: integers as they are, floats floored, `true`/`false` 1/0, numeric text (or an Erlang string) parsed. */
export function toInt (v: unknown): number {
  if (isInt(v)) return v
  if (isNum(v)) return Math.floor(v) + 0
  if (v === true) return 1
  if (v === false) return 0
  const chars = charListText(v)
  if (isBinary(v) || chars !== undefined) {
    const s = chars ?? textOf('int', v)
    if (ERL_INT.test(s)) return Number(s)
    if (ERL_FLOAT.test(s)) return Math.floor(Number(s)) + 0
  }
  throw new ConversionError('int', 'invalid_number', `cannot convert ${describe(v)} to an integer`)
}

/** `float/1`: numbers as they are, numeric text (or an Erlang string) parsed (`'1'` and `'1.5'` both convert). */
export function toFloat (v: unknown): number {
  if (isNum(v)) return v
  const chars = charListText(v)
  if (isBinary(v) || chars !== undefined) {
    const s = chars ?? textOf('float', v)
    if (ERL_FLOAT.test(s) || ERL_INT.test(s)) {
      const n = Number(s)
      if (Number.isFinite(n)) return n
    }
  }
  throw new ConversionError('float', 'invalid_number', `cannot convert ${describe(v)} to a float`)
}

/** `bool/1`: `true`, `'true'` and 1 are true; `false`, `'false'` and 0 are false; else an error. */
export function toBool (v: unknown): boolean {
  if (v === true || v === 1) return true
  if (v === false || v === 0) return false
  if (isBinary(v)) {
    const s = textOf('bool', v)
    if (s === 'true') return true
    if (s === 'false') return false
  }
  throw new ConversionError('bool', 'invalid_boolean', `cannot convert ${describe(v)} to a boolean`)
}

/** `map/1`: a map as it is, JSON text of an object decoded, an array of `[key, value]` pairs. */
export function toMap (v: unknown): Record<string, unknown> {
  if (isMap(v)) return v
  if (isBinary(v)) {
    let decoded: unknown
    try {
      decoded = jsonDecode('map', v)
    } catch {
      decoded = undefined
    }
    if (isMap(decoded)) return decoded
  } else if (Array.isArray(v)) {
    const out: Record<string, unknown> = {}
    for (const pair of v) {
      if (!Array.isArray(pair) || pair.length !== 2 || !(isBinary(pair[0]) || isNum(pair[0]))) {
        throw new ConversionError('map', 'badarg', 'an array converts to a map only when made of [key, value] pairs')
      }
      out[String(toBin('map', pair[0]))] = pair[1]
    }
    return out
  }
  throw new ConversionError('map', 'invalid_map', `cannot convert ${describe(v)} to a map`)
}

const HEX = /^[0-9a-fA-F]*$/

/** `hexstr2bin/1`: hex text to bytes; an odd length is read as if left-padded with `0`. */
export function hexToBinary (v: unknown): string | Buffer {
  let s = textOf('hexstr2bin', v)
  if (!HEX.test(s)) throw new ConversionError('hexstr2bin', 'badarg', `not hex text: ${describe(v)}`)
  if (s.length % 2 === 1) s = '0' + s
  return binaryValue(Buffer.from(s, 'hex'))
}

const one = (name: string, fn: (v: unknown) => unknown): RuleFunction => ({ name, minArgs: 1, maxArgs: 1, fn })

/** Conversions: str, str_utf8, bool, int, float, float2str, map, bin2hexstr, hexstr2bin. */
export const conversionFunctions: RuleFunction[] = [
  one('str', (v) => toBin('str', v)),
  one('str_utf8', (v) => {
    if (Buffer.isBuffer(v) && !isUtf8(v)) throw new ConversionError('str_utf8', 'badarg', 'the binary is not valid UTF-8')
    // unicode:characters_to_binary/1: a list of code points is text in any script
    const chars = charListText(v)
    if (chars !== undefined) return chars
    const b = toBin('str_utf8', v)
    return typeof b === 'string' ? b : b.toString('utf8')
  }),
  one('bool', toBool),
  one('int', toInt),
  one('float', toFloat),
  {
    name: 'float2str',
    minArgs: 2,
    maxArgs: 2,
    // float_to_binary(F, [{decimals, P}, compact]); P is 0..253 in Erlang.
    fn: (f: unknown, p: unknown) => {
      const x = numArg('float2str', f)
      if (!isInt(p) || p < 0 || p > 253) throw badArg('float2str', p, 'a precision from 0 to 253')
      return formatFloat(x, p)
    }
  },
  one('map', toMap),
  // EMQ X 4.4 writes upper-case hex here (emqx_misc:bin2hexstr_a_f_upper) but lower case in md5/sha.
  one('bin2hexstr', (v) => bytesOf('bin2hexstr', v).toString('hex').toUpperCase()),
  one('hexstr2bin', hexToBinary)
]

/**
 * Type tests. `is_null` is true for `undefined` and, unlike EMQ X 4.4, also for JSON `null`
 * (EMQ X 5's `is_null_var`): a payload field written as `null` is what a user means by null.
 */
export const typeTestFunctions: RuleFunction[] = [
  one('is_null', (v) => v === undefined || v === null),
  one('is_not_null', (v) => v !== undefined && v !== null),
  one('is_str', (v) => isBinary(v)),
  one('is_bool', (v) => typeof v === 'boolean'),
  one('is_int', (v) => isInt(v)),
  one('is_float', (v) => isNum(v) && !Number.isInteger(v)),
  one('is_num', (v) => isNum(v)),
  one('is_map', (v) => isMap(v)),
  one('is_array', (v) => Array.isArray(v))
]
