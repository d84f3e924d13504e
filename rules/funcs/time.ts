/**
 * Time functions (EMQ X 4.4 `now_timestamp/0,1`, `now_rfc3339/0,1`, `unix_ts_to_rfc3339/1,2`,
 * `rfc3339_to_unix_ts/1,2`, Erlang's `calendar:system_time_to_rfc3339` and
 * `rfc3339_to_system_time`). Units are `'second'` (default), `'millisecond'`, `'microsecond'`,
 * `'nanosecond'`. RFC 3339 text is written in the node's local time zone with a numeric offset
 * (`+00:00` on a UTC host, never `Z`), with 3, 6 or 9 fraction digits below a second.
 * Arithmetic is done on bigints so nanosecond timestamps round-trip.
 */
import { ConversionError, badArg } from './errors.js'
import { intArg, isInt, textOf } from './value-model.js'
import type { RuleFunction } from './types.js'

/** A time unit and how many of it make a second. */
export type TimeUnit = 'second' | 'millisecond' | 'microsecond' | 'nanosecond'
const FACTOR: Record<TimeUnit, bigint> = { second: 1n, millisecond: 1000n, microsecond: 1000000n, nanosecond: 1000000000n }
const DIGITS: Record<TimeUnit, number> = { second: 0, millisecond: 3, microsecond: 6, nanosecond: 9 }

/** The unit named by an argument (`time_unit/1`); anything else fails. */
export function timeUnit (fn: string, v: unknown): TimeUnit {
  const s = textOf(fn, v)
  if (Object.hasOwn(FACTOR, s)) return s as TimeUnit
  throw badArg(fn, v, "'second', 'millisecond', 'microsecond' or 'nanosecond'")
}

/** Units per second. */
export function factor (unit: TimeUnit): bigint {
  return FACTOR[unit]
}

/** `erlang:system_time(Unit)`. */
export function systemTime (unit: TimeUnit): number {
  if (unit === 'second') return Math.floor(Date.now() / 1000)
  if (unit === 'millisecond') return Date.now()
  const micros = BigInt(Math.floor((performance.timeOrigin + performance.now()) * 1000))
  return Number(unit === 'microsecond' ? micros : micros * 1000n)
}

/** The host's UTC offset in seconds at `epochMs` (Erlang's local time). */
export function localOffset (epochMs: number): number {
  return -new Date(epochMs).getTimezoneOffset() * 60
}

const pad = (n: number | bigint, width: number): string => String(n).padStart(width, '0')

/** Calendar fields of a UTC second count (proleptic Gregorian). */
export function civil (secs: bigint): { y: number, mo: number, d: number, h: number, mi: number, s: number } {
  const days = secs >= 0n ? secs / 86400n : -((-secs + 86399n) / 86400n)
  const rest = Number(secs - days * 86400n)
  const date = new Date(Number(days) * 86400000)
  return { y: date.getUTCFullYear(), mo: date.getUTCMonth() + 1, d: date.getUTCDate(), h: Math.floor(rest / 3600), mi: Math.floor(rest % 3600 / 60), s: rest % 60 }
}

/** Seconds since the epoch of a UTC calendar date and time. */
export function epochSeconds (y: number, mo: number, d: number, h: number, mi: number, s: number): bigint {
  const date = new Date(0)
  date.setUTCFullYear(y, mo - 1, d)
  return BigInt(Math.floor(date.getTime() / 1000)) + BigInt(h * 3600 + mi * 60 + s)
}

/** `calendar:system_time_to_rfc3339(Time, [{unit, Unit}])` in local time. */
export function toRfc3339 (time: bigint, unit: TimeUnit): string {
  const f = FACTOR[unit]
  const offset = localOffset(Number(time * 1000n / f))
  const adjusted = time + BigInt(offset) * f
  // Erlang's div/rem truncate toward zero; the fraction is printed without its sign.
  const secs = adjusted / f
  const frac = adjusted % f
  const c = civil(secs)
  const fracText = unit === 'second' ? '' : '.' + pad(frac < 0n ? -frac : frac, DIGITS[unit])
  const o = Math.abs(offset)
  const zone = (offset < 0 ? '-' : '+') + pad(Math.floor(o / 3600), 2) + ':' + pad(Math.floor(o % 3600 / 60), 2)
  return `${pad(c.y, 4)}-${pad(c.mo, 2)}-${pad(c.d, 2)}T${pad(c.h, 2)}:${pad(c.mi, 2)}:${pad(c.s, 2)}${fracText}${zone}`
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2}).(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([zZ])|([+-])(\d{2}):(\d{2}))$/

/** `calendar:rfc3339_to_system_time(Text, [{unit, Unit}])`. */
export function fromRfc3339 (fn: string, text: string, unit: TimeUnit): bigint {
  const m = RFC3339.exec(text)
  if (m === null) throw new ConversionError(fn, 'badarg', `not an RFC 3339 date-time: ${JSON.stringify(text)}`)
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number)
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59) {
    throw new ConversionError(fn, 'badarg', `not a valid date-time: ${JSON.stringify(text)}`)
  }
  const f = FACTOR[unit]
  const scaled = epochSeconds(y, mo, d, h, mi, s) * f
  let frac = 0n
  if (unit !== 'second' && m[7] !== undefined) frac = roundFraction(m[7], DIGITS[unit])
  const offset = m[8] !== undefined || m[9] === undefined ? 0 : (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 3600 + Number(m[11]) * 60)
  // Erlang copies the sign of the whole seconds onto the fraction (mirrors toRfc3339).
  return scaled + (scaled < 0n ? -frac : frac) - BigInt(offset) * f
}

/** True for a Gregorian leap year. */
export function isLeapYear (y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** Days in month `mo` (1-12) of year `y`. */
export function daysInMonth (y: number, mo: number): number {
  return mo === 2 && isLeapYear(y) ? 29 : MONTH_DAYS[mo - 1]
}

/** A decimal fraction's digits rounded to `digits` places, as an integer. */
function roundFraction (frac: string, digits: number): bigint {
  if (frac.length <= digits) return BigInt(frac.padEnd(digits, '0'))
  const kept = BigInt(frac.slice(0, digits))
  return frac.charCodeAt(digits) >= 53 /* '5' */ ? kept + 1n : kept
}

function epochArg (fn: string, v: unknown): bigint {
  if (!isInt(v)) throw badArg(fn, v, 'an integer timestamp')
  return BigInt(intArg(fn, v))
}

/** now_timestamp, now_rfc3339, unix_ts_to_rfc3339, rfc3339_to_unix_ts. */
export const timeFunctions: RuleFunction[] = [
  {
    name: 'now_timestamp',
    minArgs: 0,
    maxArgs: 1,
    fn: (...args: unknown[]) => systemTime(args.length > 0 ? timeUnit('now_timestamp', args[0]) : 'second')
  },
  {
    name: 'now_rfc3339',
    minArgs: 0,
    maxArgs: 1,
    fn: (...args: unknown[]) => {
      const unit = args.length > 0 ? timeUnit('now_rfc3339', args[0]) : 'second'
      return toRfc3339(BigInt(systemTime(unit)), unit)
    }
  },
  {
    name: 'unix_ts_to_rfc3339',
    minArgs: 1,
    maxArgs: 2,
    fn: (...args: unknown[]) => toRfc3339(epochArg('unix_ts_to_rfc3339', args[0]), args.length > 1 ? timeUnit('unix_ts_to_rfc3339', args[1]) : 'second')
  },
  {
    name: 'rfc3339_to_unix_ts',
    minArgs: 1,
    maxArgs: 2,
    fn: (...args: unknown[]) => {
      const unit = args.length > 1 ? timeUnit('rfc3339_to_unix_ts', args[1]) : 'second'
      return Number(fromRfc3339('rfc3339_to_unix_ts', textOf('rfc3339_to_unix_ts', args[0]), unit))
    }
  }
]
