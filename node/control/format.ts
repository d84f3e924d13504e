/**
 * Text renderers for `starling-ctl` output: tables for list commands, EMQ X style
 * `key : value` blocks, and Erlang-like terms for values EMQ X printed with `~w`.
 * All of them return strings; writing is the caller's job.
 */
import Table from 'cli-table3'

/** One column of {@link formatTable}. */
export interface TableColumn<Row> {
  /** Field of the row to show; also the header when `header` is absent. */
  key: keyof Row & string
  header?: string
  /** Turns the field into cell text; default {@link formatTerm} for objects, `String` otherwise. */
  format?: (value: Row[keyof Row & string], row: Row) => string
  align?: 'left' | 'center' | 'right'
}

/** Options of {@link formatTable}. */
export interface FormatTableOptions {
  /** Printed instead of an empty table (default `No entries`). */
  empty?: string
}

/**
 * Renders rows as a bordered text table, one row per entry, columns in the given order.
 * No colours, so the output is the same on a terminal, in a pipe and in tests.
 */
export function formatTable<Row extends object> (
  rows: readonly Row[],
  columns: ReadonlyArray<TableColumn<Row>>,
  opts: FormatTableOptions = {}
): string {
  if (rows.length === 0) return (opts.empty ?? 'No entries') + '\n'
  const table = new Table({
    head: columns.map((c) => c.header ?? c.key),
    colAligns: columns.map((c) => c.align ?? 'left'),
    style: { head: [], border: [], compact: true }
  })
  for (const row of rows) {
    table.push(columns.map((c) => {
      const value = row[c.key]
      if (c.format !== undefined) return c.format(value, row)
      return typeof value === 'object' && value !== null ? formatTerm(value) : String(value ?? '')
    }))
  }
  return table.toString() + '\n'
}

/** Options of {@link formatFields}. */
export interface FormatFieldsOptions {
  /** Spaces before each key (default 2, as EMQ X indents listener details). */
  indent?: number
  /** Width the key is padded to (default 16, EMQ X's `~-16s`). */
  keyWidth?: number
}

/**
 * Renders `key : value` lines the way EMQ X's ctl prints details
 * (`  acceptors       : 8`). Values that are not strings go through {@link formatTerm}.
 */
export function formatFields (fields: ReadonlyArray<readonly [string, unknown]>, opts: FormatFieldsOptions = {}): string {
  const indent = ' '.repeat(opts.indent ?? 2)
  const width = opts.keyWidth ?? 16
  return fields
    .map(([key, value]) => `${indent}${key.padEnd(width)}: ${typeof value === 'string' ? value : formatTerm(value)}\n`)
    .join('')
}

/**
 * Renders a value the way Erlang's `~w` shows the equivalent term, so output matches EMQ X's:
 * arrays are lists (`[a,b]`), objects are proplists (`[{closed,2},{kicked,1}]`), strings
 * print bare, `null`/`undefined` print as `undefined`.
 */
export function formatTerm (value: unknown): string {
  if (value === null || value === undefined) return 'undefined'
  if (Array.isArray(value)) return `[${value.map(formatTerm).join(',')}]`
  if (typeof value === 'object') {
    return `[${Object.entries(value).map(([k, v]) => `{${k},${formatTerm(v)}}`).join(',')}]`
  }
  return String(value)
}

/** Renders a result for `--json`: indented JSON and a final newline. */
export function formatJson (value: unknown): string {
  return JSON.stringify(value ?? null, null, 2) + '\n'
}
