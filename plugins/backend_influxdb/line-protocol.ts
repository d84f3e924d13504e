/**
 * InfluxDB line protocol (`measurement,tag=v field=1i 1700000000000000000`), written from
 * values a rule selected: the escaping InfluxDB 1.x and 2.x read back exactly, and the typing
 * of field values (EMQ X 4.4's `int_suffix`).
 *
 * Invariants:
 * - A rendered line is one line: a newline can only appear inside a string field value (in
 *   double quotes, which InfluxDB reads as part of the string); names, tag keys and values
 *   with one are refused ({@link LineError}), so selected data never adds or cuts a line.
 * - Escaping: measurement: `,` and space; tag keys and values, field keys: `,`, `=` and space;
 *   string field values: `"` and `\`. A name or tag value ending in `\` is refused: line
 *   protocol reads `\` before the separator that follows as an escape, and has no way to write it.
 * - A measurement starting with `#` is refused (InfluxDB reads that line as a comment).
 */

/** A line that cannot be written: the row counts as failed with this message. */
export class LineError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'LineError'
  }
}

/** A field value as written: typed by line protocol. */
export type FieldValue = number | bigint | boolean | string

function checkName (what: string, s: string): void {
  if (s === '') throw new LineError(`${what} is empty`)
  if (/[\n\r]/.test(s)) throw new LineError(`${what} ${JSON.stringify(s)} holds a line break, which line protocol cannot write`)
  if (s.endsWith('\\')) throw new LineError(`${what} ${JSON.stringify(s)} ends with a backslash, which line protocol cannot write`)
}

/**
 * A name or tag value with nothing to check or escape (no `,`, `=`, space, line break or
 * backslash, not empty): most are, and one test then does instead of the checks and the replace.
 */
const PLAIN = /^[^,= \n\r\\]+$/

/** The measurement, escaped (`,` and space). */
export function escapeMeasurement (s: string): string {
  if (PLAIN.test(s) && s[0] !== '#') return s
  checkName('the measurement', s)
  if (s.startsWith('#')) throw new LineError(`the measurement ${JSON.stringify(s)} starts with #, which InfluxDB reads as a comment`)
  return s.replace(/[, ]/g, (c) => `\\${c}`)
}

/** A tag key, tag value or field key, escaped (`,`, `=` and space). */
export function escapeKey (what: string, s: string): string {
  if (PLAIN.test(s)) return s
  checkName(what, s)
  return s.replace(/[,= ]/g, (c) => `\\${c}`)
}

/** {@link escapeKey} of a tag value: the error's wording (naming the tag) made only when it fails. */
function escapeTagValue (key: string, s: string): string {
  if (PLAIN.test(s)) return s
  if (s === '' || s.endsWith('\\') || /[\n\r]/.test(s)) checkName(`tag ${JSON.stringify(key)}'s value`, s)
  return s.replace(/[,= ]/g, (c) => `\\${c}`)
}

/** A string field value, quoted (`"` and `\` escaped). */
export function quoteString (s: string): string {
  return `"${s.replace(/["\\]/g, (c) => `\\${c}`)}"`
}

/**
 * A field value as line protocol writes it: an integer with `intSuffix` (EMQ X's `i`; with
 * the empty suffix, written as a float), another finite number as a float, a boolean as
 * `true`/`false`, a string quoted. NaN and infinities cannot be written (refused).
 */
export function fieldValue (key: string, v: FieldValue, intSuffix: string): string {
  if (typeof v === 'bigint') return `${v.toString()}${intSuffix}`
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new LineError(`field ${JSON.stringify(key)} is ${String(v)}, which InfluxDB cannot store`)
    // String() writes a safe integer's digits; past 2^53 it may use an exponent, BigInt never does
    if (Number.isInteger(v)) return intSuffix === '' ? String(v) : `${Number.isSafeInteger(v) ? String(v) : BigInt(v).toString()}${intSuffix}`
    return String(v)
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false'
  return quoteString(v)
}

/** One point, without its timestamp. */
export interface PointParts {
  measurement: string
  /** Tag key -> value; an empty value is left out (InfluxDB refuses empty tag values). */
  tags: ReadonlyArray<readonly [string, string]>
  /** At least one. */
  fields: ReadonlyArray<readonly [string, FieldValue]>
  intSuffix: string
}

/** `measurement[,tags] fields` (the timestamp is added when written: its unit is the resource's). */
export function renderPoint (p: PointParts): string {
  if (p.fields.length === 0) throw new LineError('no field has a value: a point needs at least one')
  let line = escapeMeasurement(p.measurement)
  // sorted tags are what InfluxDB recommends (it sorts them itself otherwise)
  const tags = p.tags.length <= 1 ? p.tags.filter(([, v]) => v !== '') : p.tags.filter(([, v]) => v !== '').sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
  for (const [k, v] of tags) line += `,${escapeKey('tag key', k)}=${escapeTagValue(k, v)}`
  for (let i = 0; i < p.fields.length; i++) {
    const [k, v] = p.fields[i]
    line += `${i === 0 ? ' ' : ','}${escapeKey('field key', k)}=${fieldValue(k, v, p.intSuffix)}`
  }
  return line
}

/** Nanoseconds per unit of each `precision`. */
export const NS_PER: Readonly<Record<Precision, bigint>> = {
  ns: 1n, us: 1000n, ms: 1_000_000n, s: 1_000_000_000n, m: 60_000_000_000n, h: 3_600_000_000_000n
}

/** A resource's `precision`: the unit of the actions' timestamps. */
export type Precision = 'ns' | 'us' | 'ms' | 's' | 'm' | 'h'

/** Whether `s` is a {@link Precision}. */
export function isPrecision (s: unknown): s is Precision {
  return typeof s === 'string' && Object.hasOwn(NS_PER, s)
}

/**
 * A selected timestamp (an integer, or its text) as a whole number of its unit: undefined
 * for an absent or empty one (the point gets the node's time); anything else is refused.
 */
export function timestampOf (v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v)
  if (typeof v === 'bigint') return v.toString()
  if (typeof v === 'string' && /^-?\d{1,19}$/.test(v.trim())) return v.trim()
  throw new LineError(`the timestamp ${JSON.stringify(typeof v === 'bigint' ? String(v) : v)} is not a whole number`)
}

/** performance.timeOrigin, read once (a getter that asks the runtime each time). */
const TIME_ORIGIN = performance.timeOrigin

/** The last time given, as whole microseconds and the nanoseconds past them (0-999): numbers, no BigInt per point. */
let lastUs = 0
let lastSubNs = 0

/**
 * The node's clock in nanoseconds, strictly increasing within the process: points without
 * a timestamp get it when their row is made, so no two of them share a time (InfluxDB
 * gives every point of one write without a timestamp the same time, and points of one
 * series with the same time overwrite each other), and writing a point again overwrites itself.
 */
export function nodeTimeNs (): bigint {
  return BigInt(nodeTimeNsText())
}

/** {@link nodeTimeNs} as its decimal text (what a point carries), without a BigInt. */
export function nodeTimeNsText (): string {
  const us = Math.round((TIME_ORIGIN + performance.now()) * 1000)
  if (us > lastUs) {
    lastUs = us
    lastSubNs = 0
  } else if (++lastSubNs === 1000) {
    lastUs++
    lastSubNs = 0
  }
  return `${lastUs}${lastSubNs < 10 ? '00' : lastSubNs < 100 ? '0' : ''}${lastSubNs}`
}
