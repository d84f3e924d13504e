/**
 * `format_date/3,4`, `date_to_unix_ts/3,4` and `timezone_to_second/1` (EMQ X 4.4, formatting
 * and parsing as `emqx_calendar`). Directives: `%Y %m %d %H %M %S`, `%N` (nanoseconds), `%3N`
 * (milliseconds), `%6N` (microseconds), `%z` (`+0800`), `%:z` (`+08:00`), `%::z` (`+08:00:00`);
 * any other character is literal. Parsing reads fixed widths (`%Y` 4 digits, `%m` 2 ...).
 *
 * Two deliberate differences from `emqx_calendar`: parsing counts February 29 in leap years,
 * and a parsed `%z` offset is scaled to the result's precision (EMQ X subtracts it in seconds
 * from a millisecond count). `date_to_unix_ts/4` applies its offset argument only when the
 * text carries no offset of its own (EMQ X subtracts both; its own property test of this form
 * is built but never run).
 */
import { ConversionError } from './errors.js'
import { intArg, isInt, textOf } from './value-model.js'
import { civil, epochSeconds, factor, isLeapYear, localOffset, systemTime, timeUnit, type TimeUnit } from './time.js'
import type { RuleFunction } from './types.js'

type Field = 'year' | 'month' | 'day' | 'hour' | 'minute' | 'second' | 'millisecond' | 'microsecond' | 'nanosecond'
type Zone = 'timezone' | 'timezone1' | 'timezone2'
type Token = { field: Field } | { zone: Zone } | { text: string }

const DIRECTIVES: Array<[string, Token]> = [
  ['%Y', { field: 'year' }], ['%m', { field: 'month' }], ['%d', { field: 'day' }], ['%H', { field: 'hour' }],
  ['%M', { field: 'minute' }], ['%S', { field: 'second' }], ['%N', { field: 'nanosecond' }],
  ['%3N', { field: 'millisecond' }], ['%6N', { field: 'microsecond' }], ['%z', { zone: 'timezone' }],
  ['%:z', { zone: 'timezone1' }], ['%::z', { zone: 'timezone2' }]
]
const WIDTH: Record<Field | Zone, number> = {
  year: 4, month: 2, day: 2, hour: 2, minute: 2, second: 2, millisecond: 3, microsecond: 6, nanosecond: 9, timezone: 5, timezone1: 6, timezone2: 9
}

function tokenize (fmt: string): Token[] {
  const out: Token[] = []
  let i = 0
  outer: while (i < fmt.length) {
    for (const [d, t] of DIRECTIVES) {
      if (fmt.startsWith(d, i)) { out.push(t); i += d.length; continue outer }
    }
    const last = out[out.length - 1]
    if (last !== undefined && 'text' in last) last.text += fmt[i]
    else out.push({ text: fmt[i] })
    i++
  }
  return out
}

/** `emqx_calendar:offset_second/1`: seconds east of UTC for `local`, `Z`, `+08:00`, `+0800`, `-08:00:00` or an integer. */
export function offsetSeconds (fn: string, v: unknown): number {
  if (isInt(v)) return v
  if (v === undefined) return 0
  const s = textOf(fn, v)
  if (s === 'local') return localOffset(Date.now())
  if (s === 'Z' || s === 'z') return 0
  const m = /^([+-])(?:(\d+):(\d+)(?::(\d+))?|(\d{2})(\d{2}))$/.exec(s)
  if (m === null) throw new ConversionError(fn, 'bad_time_offset', `not a time offset: ${JSON.stringify(s)}`)
  const h = Number(m[2] ?? m[5])
  const mi = Number(m[3] ?? m[6])
  const sec = Number(m[4] ?? 0)
  if (h > 23 || mi > 59 || sec > 59) throw new ConversionError(fn, 'bad_time_offset', `offset out of range: ${s}`)
  return (m[1] === '-' ? -1 : 1) * (h * 3600 + mi * 60 + sec)
}

const pad = (n: number | bigint, w: number): string => String(n).padStart(w, '0')

function zoneText (offset: number, zone: Zone): string {
  const a = Math.abs(offset)
  const [h, m, s] = [Math.floor(a / 3600), Math.floor(a % 3600 / 60), a % 60]
  const sign = offset >= 0 ? '+' : '-'
  if (zone === 'timezone') return `${sign}${pad(h, 2)}${pad(m, 2)}`
  if (zone === 'timezone1') return `${sign}${pad(h, 2)}:${pad(m, 2)}`
  return `${sign}${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}`
}

/** `emqx_calendar:format/4`: `time` in `unit`, shown at `offset` seconds east of UTC. */
export function formatDate (time: bigint, unit: TimeUnit, offset: number, fmt: string): string {
  const f = factor(unit)
  const adjusted = time + BigInt(offset) * f
  const c = civil(adjusted / f)
  const sub = time % f // the part below a second, in `unit`
  const fraction = (digits: number): string => {
    const scale = 10n ** BigInt(digits)
    return pad(f >= scale ? sub / (f / scale) : sub * (scale / f), digits)
  }
  let out = ''
  for (const t of tokenize(fmt)) {
    if ('text' in t) out += t.text
    else if ('zone' in t) out += zoneText(offset, t.zone)
    else {
      switch (t.field) {
        case 'year': out += pad(c.y, 4); break
        case 'month': out += pad(c.mo, 2); break
        case 'day': out += pad(c.d, 2); break
        case 'hour': out += pad(c.h, 2); break
        case 'minute': out += pad(c.mi, 2); break
        case 'second': out += pad(c.s, 2); break
        case 'millisecond': out += fraction(3); break
        case 'microsecond': out += fraction(6); break
        case 'nanosecond': out += fraction(9); break
      }
    }
  }
  return out
}

const MONTH_START = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]

/**
 * `emqx_calendar:parse/3`: the timestamp in `unit` of `text` read with `fmt`, and whether the
 * text carried its own offset (`%z` and its variants).
 */
export function parseDate (fn: string, text: string, unit: TimeUnit, fmt: string): { time: number, zoned: boolean } {
  const fields: Partial<Record<Field, number>> = {}
  let offset: number | undefined
  let i = 0
  for (const t of tokenize(fmt)) {
    if (i >= text.length) break
    const width = 'text' in t ? t.text.length : WIDTH['zone' in t ? t.zone : t.field]
    const part = text.slice(i, i + width)
    if (part.length < width) throw new ConversionError(fn, 'badmatch', `${JSON.stringify(text)} is shorter than the format ${JSON.stringify(fmt)}`)
    i += width
    if ('zone' in t) offset = offsetSeconds(fn, part)
    else if ('field' in t) {
      if (!/^[+-]?\d+$/.test(part)) throw new ConversionError(fn, 'badarg', `${JSON.stringify(part)} is not a number (${t.field})`)
      fields[t.field] = Number(part)
    }
  }
  const precision: TimeUnit = fields.nanosecond !== undefined ? 'nanosecond' : fields.microsecond !== undefined ? 'microsecond' : fields.millisecond !== undefined ? 'millisecond' : 'second'
  const p = factor(precision)
  const y = fields.year
  let days = 0n
  if (y !== undefined) days += epochSeconds(y, 1, 1, 0, 0, 0) / 86400n
  if (fields.month !== undefined) {
    const mo = fields.month
    if (mo < 1 || mo > 12) throw new ConversionError(fn, 'function_clause', `month ${mo}`)
    days += BigInt(MONTH_START[mo - 1] + (mo > 2 && y !== undefined && isLeapYear(y) ? 1 : 0))
  }
  days += BigInt(fields.day ?? 0) - 1n // days of the month count from 1
  let count = (days * 86400n + BigInt((fields.hour ?? 0) * 3600 + (fields.minute ?? 0) * 60 + (fields.second ?? 0))) * p
  const sub = (v: number | undefined, digits: bigint): bigint => (v === undefined ? 0n : BigInt(v) * p / 10n ** digits)
  count += sub(fields.millisecond, 3n) + sub(fields.microsecond, 6n) + sub(fields.nanosecond, 9n)
  if (offset !== undefined) count -= BigInt(offset) * p
  // erlang:convert_time_unit/3 floors.
  const num = count * factor(unit)
  const q = num / p
  return { time: Number(num % p !== 0n && num < 0n ? q - 1n : q), zoned: offset !== undefined }
}

/** format_date/3,4, date_to_unix_ts/3,4, timezone_to_second/1. */
export const dateFormatFunctions: RuleFunction[] = [
  {
    name: 'format_date',
    minArgs: 3,
    maxArgs: 4,
    // format_date(Unit, Offset, Format[, Epoch]); without Epoch, now.
    fn: (...args: unknown[]) => {
      const unit = timeUnit('format_date', args[0])
      const offset = offsetSeconds('format_date', args[1])
      const time = args.length > 3 ? BigInt(intArg('format_date', args[3])) : BigInt(systemTime(unit))
      return formatDate(time, unit, offset, textOf('format_date', args[2]))
    }
  },
  {
    name: 'date_to_unix_ts',
    minArgs: 3,
    maxArgs: 4,
    // date_to_unix_ts(Unit, Format, Text) | date_to_unix_ts(Unit, Offset, Format, Text)
    fn: (...args: unknown[]) => {
      const fn = 'date_to_unix_ts'
      const unit = timeUnit(fn, args[0])
      const text = textOf(fn, args[args.length - 1])
      const fmt = textOf(fn, args[args.length - 2])
      const { time, zoned } = parseDate(fn, text, unit, fmt)
      if (args.length === 3 || zoned) return time
      return time - Number(BigInt(offsetSeconds(fn, args[1])) * factor(unit))
    }
  },
  { name: 'timezone_to_second', minArgs: 1, maxArgs: 1, fn: (v: unknown) => offsetSeconds('timezone_to_second', v) }
]
