/**
 * Bit-level functions over binaries (EMQ X 4.4 `bitsize/1`, `subbits/2,3,6`; `subbits/4,5`
 * are EMQ X 5's defaults-filled forms). Offsets are 1-based bit positions; a length past the
 * end takes what remains; a start past the end gives `undefined`. Integers wider than 53 bits
 * lose precision (EMQ X has bignums).
 */
import { ConversionError, badArg } from './errors.js'
import { BitString, binaryValue, intArg, isBinary, textOf, bytesOf } from './value-model.js'
import type { RuleFunction } from './types.js'

interface Bits { bytes: Buffer, bitLength: number }

function bitsOf (fn: string, v: unknown): Bits {
  if (v instanceof BitString) return v
  if (isBinary(v)) { const bytes = bytesOf(fn, v); return { bytes, bitLength: bytes.length * 8 } }
  throw badArg(fn, v, 'a binary')
}

/** `n` bits from bit `start` (0-based), most significant first, as an unsigned integer. */
function readBits (b: Buffer, start: number, n: number): bigint {
  let v = 0n
  let i = start
  const end = start + n
  // Whole bytes when aligned, single bits otherwise.
  while (i < end) {
    if ((i & 7) === 0 && end - i >= 8) {
      v = (v << 8n) | BigInt(b[i >> 3])
      i += 8
    } else {
      v = (v << 1n) | BigInt((b[i >> 3] >> (7 - (i & 7))) & 1)
      i++
    }
  }
  return v
}

/** Erlang's little-endian order: low byte first, a trailing partial byte holding the high bits. */
function littleEndian (v: bigint, n: number): bigint {
  const whole = Math.floor(n / 8)
  const rest = BigInt(n % 8)
  let out = 0n
  let remaining = v
  for (let k = 0; k < whole; k++) {
    const shift = BigInt(n - 8 * (k + 1))
    out |= ((remaining >> shift) & 0xffn) << BigInt(8 * k)
  }
  remaining = v & ((1n << rest) - 1n)
  return out | (remaining << BigInt(8 * whole))
}

function toFloat (v: bigint, n: number): number | undefined {
  const buf = Buffer.alloc(8)
  let x: number
  if (n === 64) { buf.writeBigUInt64BE(v); x = buf.readDoubleBE(0) } else if (n === 32) { buf.writeUInt32BE(Number(v)); x = buf.readFloatBE(0) } else if (n === 16) x = half(Number(v))
  else return undefined
  // Erlang refuses NaN and infinities in a float segment: the pattern does not match.
  return Number.isFinite(x) ? x : undefined
}

function half (h: number): number {
  const s = h & 0x8000 ? -1 : 1
  const e = (h >> 10) & 0x1f
  const f = h & 0x3ff
  if (e === 0) return s * 2 ** -14 * (f / 1024)
  if (e === 31) return f ? NaN : s * Infinity
  return s * 2 ** (e - 15) * (1 + f / 1024)
}

function segment (bits: Bits, start: number, n: number, type: string, signed: boolean, little: boolean): unknown {
  if (type === 'bits') {
    const bytes = Buffer.alloc(Math.ceil(n / 8))
    for (let k = 0; k < n; k++) {
      const bit = (bits.bytes[(start + k) >> 3] >> (7 - ((start + k) & 7))) & 1
      bytes[k >> 3] |= bit << (7 - (k & 7))
    }
    return n % 8 === 0 ? binaryValue(bytes) : new BitString(bytes, n)
  }
  let v = readBits(bits.bytes, start, n)
  if (little) v = littleEndian(v, n)
  if (type === 'float') return toFloat(v, n)
  if (signed && n > 0 && (v >> BigInt(n - 1)) === 1n) v -= 1n << BigInt(n)
  return Number(v)
}

const TYPES = ['integer', 'float', 'bits']
const SIGNS = ['unsigned', 'signed']
const ENDIANS = ['big', 'little']

function option (fn: string, v: unknown, allowed: string[]): string {
  const s = textOf(fn, v)
  if (!allowed.includes(s)) throw badArg(fn, v, allowed.map((a) => `'${a}'`).join(' or '))
  return s
}

/** `subbits(Bits, Len)`, `subbits(Bits, Start, Len[, Type[, Signedness[, Endianness]]])`. */
function subbits (...args: unknown[]): unknown {
  const fn = 'subbits'
  const bits = bitsOf(fn, args[0])
  const start = args.length === 2 ? 1 : intArg(fn, args[1])
  const len = intArg(fn, args.length === 2 ? args[1] : args[2])
  const type = args.length > 3 ? option(fn, args[3], TYPES) : 'integer'
  const signed = (args.length > 4 ? option(fn, args[4], SIGNS) : 'unsigned') === 'signed'
  const little = (args.length > 5 ? option(fn, args[5], ENDIANS) : 'big') === 'little'
  const begin = start - 1
  if (begin < 0 || begin >= bits.bitLength) return undefined
  const size = bits.bitLength - begin
  // EMQ X matches <<Sub:Len, _/bits>> first and falls back to <<Sub:Size>> (what remains).
  const first = len >= 0 && len <= size ? segment(bits, begin, len, type, signed, little) : undefined
  if (first !== undefined) return first
  const rest = segment(bits, begin, size, type, signed, little)
  if (rest === undefined) throw new ConversionError(fn, 'case_clause', `no ${type} of ${len} bits at bit ${start}`)
  return rest
}

/** bitsize/1 and subbits/2..6. */
export const bitFunctions: RuleFunction[] = [
  { name: 'bitsize', minArgs: 1, maxArgs: 1, fn: (v: unknown) => bitsOf('bitsize', v).bitLength },
  { name: 'subbits', minArgs: 2, maxArgs: 6, fn: subbits }
]
