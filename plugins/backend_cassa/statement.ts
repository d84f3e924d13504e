/**
 * `data_to_cassa`'s `sql` (a CQL statement with `${key}` placeholders, EMQ X 4.4's SQL batch
 * arguments) compiled once by the one SQL template module (node/template/sql.ts, dialect `cql`:
 * `?` markers, values bound, never pasted), and what a Cassandra resource buffers: the CQL text
 * and its rows of values.
 */
import { WrongTypeError } from '../../node/errors.js'
import { compileSql, DOLLAR_BRACES, lookup, renderSql, type SqlTemplate } from '../../node/template/index.js'
import { sqlValue } from '../kit/data/index.js'

/** A bound value: booleans stay booleans (a CQL `boolean` takes nothing else). */
export type CqlValue = string | number | boolean | null

/** One buffered write (JSON-encodable). */
export interface CassaWrite { text: string, rows: CqlValue[][] }

/** Compiles (and checks: 108) the action's `sql`. */
export function compileCql (sql: unknown): SqlTemplate {
  return compileSql(String(sql ?? ''), {
    dialect: 'cql',
    syntax: DOLLAR_BRACES,
    inLiteral: 'refuse',
    fail: (why) => { throw new WrongTypeError(`action data_to_cassa: parameter sql cannot be used: ${why}`) }
  })
}

/** The write of one run. */
export function cassaRow (template: SqlTemplate, selected: Record<string, unknown>): CassaWrite {
  const q = renderSql(template, (key) => {
    const v = lookup(selected, key)
    return typeof v === 'boolean' ? v : sqlValue(v, String)
  })
  return { text: q.text, rows: [q.values as CqlValue[]] }
}

/** The kit's merge, split and row count of {@link CassaWrite}s (of one action). */
export const cassaWrites = {
  merge: (rows: readonly CassaWrite[]): CassaWrite => ({ text: rows[0].text, rows: rows.flatMap((r) => r.rows) }),
  split: (w: CassaWrite): CassaWrite[] => w.rows.map((r) => ({ text: w.text, rows: [r] })),
  rows: (w: CassaWrite): number => w.rows.length
}
