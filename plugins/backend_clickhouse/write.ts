/**
 * What a ClickHouse resource buffers and writes: rows for one table and column list, each a
 * JSONEachRow object (column name -> value), made from the selected data by the action's
 * compiled template (template.ts).
 */
import { lookup } from '../../node/template/index.js'
import type { ClickhouseInsert } from './template.js'

/** A value in a JSONEachRow row. */
export type RowValue = string | number | null

/** One buffered write (JSON-encodable: it goes to disk with the local buffer on). */
export interface ClickhouseWrite {
  /** The table, quoted (`` `db`.`t` ``). */
  t: string
  /** The columns (names, unquoted). */
  c: string[]
  /** The rows: column name -> value; a column left out takes its default. */
  r: Array<Record<string, RowValue>>
}

/**
 * A selected value as ClickHouse reads it from JSON: numbers as numbers, strings as they are,
 * booleans as 1 and 0 (ClickHouse's UInt8 convention), objects and arrays as their JSON text;
 * undefined when absent (the column takes its default).
 */
export function rowValue (v: unknown): RowValue | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  if (typeof v === 'string') return v
  if (typeof v === 'boolean') return v ? 1 : 0
  if (typeof v === 'bigint') return v.toString()
  if (Buffer.isBuffer(v)) return v.toString('utf8')
  return JSON.stringify(v)
}

/** The row of one run. */
export function clickhouseRow (t: ClickhouseInsert, selected: Record<string, unknown>): ClickhouseWrite {
  const row: Record<string, RowValue> = {}
  for (let i = 0; i < t.columns.length; i++) {
    const source = t.values[i]
    const v = 'key' in source ? rowValue(lookup(selected, source.key)) : source.literal
    if (v !== undefined) row[t.columns[i]] = v
  }
  return { t: t.table, c: t.columns, r: [row] }
}

/** The kit's merge, split and row count of {@link ClickhouseWrite}s (of one action: one table and column list). */
export const clickhouseWrites = {
  merge: (rows: readonly ClickhouseWrite[]): ClickhouseWrite => ({ t: rows[0].t, c: rows[0].c, r: rows.flatMap((w) => w.r) }),
  split: (w: ClickhouseWrite): ClickhouseWrite[] => w.r.map((r) => ({ t: w.t, c: w.c, r: [r] })),
  rows: (w: ClickhouseWrite): number => w.r.length
}
