/**
 * SQL templates with EMQ X 4.4's placeholders (`select password from mqtt_user where
 * username = '%u' limit 1`) turned into parameterized queries, once, when the plugin loads.
 *
 * Invariants:
 * - The SQL text sent to the server is fixed at compile time and never contains a value:
 *   values only ever travel in {@link SqlQuery.values}, bound by the driver.
 * - A string literal that is exactly one placeholder (`'%u'`, and in MySQL `"%u"` too)
 *   becomes one parameter, as EMQ X's `parse_query` did; so does a bare placeholder
 *   outside literals (`username = %u`), which EMQ X left in the text. A placeholder inside a
 *   longer literal (`like '%u%'`), a quoted identifier or a comment is left as text.
 * - Parameters are numbered in order of appearance: `$1..$n` (PostgreSQL), `?` (MySQL).
 *   A template that already has markers of its own (`$1`, `?`) is refused, so the count of
 *   markers always equals the length of the values array.
 * - A missing value is bound as SQL `NULL` (EMQ X bound the text "undefined"); `= NULL` is
 *   never true, so the lookup finds no row.
 */
import {
  badTemplate, isPlaceholderKey, placeholderValue,
  type AuthContext, type ConfigOrigin, type PlaceholderKey
} from './placeholders.js'

/** The SQL dialect: which parameter markers and which quoting rules. */
export type SqlDialect = 'postgresql' | 'mysql'

/** A query ready for the driver: `pg`'s `query(text, values)`, `mysql2`'s `execute(sql, values)`. */
export interface SqlQuery {
  readonly text: string
  /** One per parameter marker in `text`, in order; `null` for a value the client did not give. */
  readonly values: Array<string | null>
}

/** A compiled SQL template. */
export interface SqlTemplate {
  readonly dialect: SqlDialect
  /** The template as configured. */
  readonly source: string
  /** The parameterized SQL text. */
  readonly text: string
  /** The placeholder bound to each parameter, in order. */
  readonly params: readonly PlaceholderKey[]
  /** The placeholders it uses, each once (for {@link missingPlaceholders}). */
  readonly keys: readonly PlaceholderKey[]
}

/**
 * Compiles `source` for `dialect`. Refuses (ConfigError naming `origin.key`) an empty
 * template, an unterminated literal or comment, and parameter markers of its own.
 */
export function compileSqlTemplate (source: string, dialect: SqlDialect, origin?: ConfigOrigin): SqlTemplate {
  const mysql = dialect === 'mysql'
  const params: PlaceholderKey[] = []
  let text = ''
  const fail = (what: string): never => {
    throw badTemplate(source, `an SQL query with placeholders such as '%u' (${what})`, origin)
  }
  const marker = (key: PlaceholderKey): string => {
    params.push(key)
    return mysql ? '?' : `$${params.length}`
  }

  if (source.trim() === '') fail('it is empty')
  let i = 0
  while (i < source.length) {
    const c = source[i]
    const next = source[i + 1]
    if (c === '\'' || (c === '"' && mysql)) {
      const escapes = mysql || isEscapeStringPrefix(source, i)
      const end = literalEnd(source, i, escapes) ?? fail(`the literal at offset ${i} is not closed`)
      const body = source.slice(i + 1, end)
      text += body.length === 2 && body[0] === '%' && isPlaceholderKey(body[1]) ? marker(body[1]) : source.slice(i, end + 1)
      i = end + 1
    } else if (c === '"' || (c === '`' && mysql)) {
      const end = source.indexOf(c, i + 1) // quoted identifier: doubled quotes are two steps here
      if (end === -1) fail(`the quoted identifier at offset ${i} is not closed`)
      text += source.slice(i, end + 1)
      i = end + 1
    } else if ((c === '-' && next === '-') || (c === '#' && mysql)) {
      const end = source.indexOf('\n', i)
      const stop = end === -1 ? source.length : end
      text += source.slice(i, stop)
      i = stop
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2)
      if (end === -1) fail(`the comment at offset ${i} is not closed`)
      text += source.slice(i, end + 2)
      i = end + 2
    } else if (c === '%' && next !== undefined && isPlaceholderKey(next)) {
      text += marker(next)
      i += 2
    } else if (mysql && c === '?') {
      return fail('a ? marker of its own: write a placeholder such as \'%u\' instead')
    } else if (!mysql && c === '$' && next !== undefined && next >= '0' && next <= '9') {
      return fail(`a $${next} marker of its own: write a placeholder such as '%u' instead`)
    } else {
      text += c
      i++
    }
  }
  return { dialect, source, text, params, keys: [...new Set(params)] }
}

/** The query for `ctx`: the compiled text and one value per parameter. */
export function renderSql (template: SqlTemplate, ctx: AuthContext): SqlQuery {
  const values = new Array<string | null>(template.params.length)
  for (let i = 0; i < values.length; i++) values[i] = placeholderValue(ctx, template.params[i]) ?? null
  return { text: template.text, values }
}

/**
 * Index of the quote closing the literal opened at `start`, or undefined. A doubled quote
 * is an escaped quote; in MySQL (its default mode) and in PostgreSQL's `E'...'` strings a
 * backslash escapes the next character too. PostgreSQL's standard strings have no
 * backslash escapes.
 */
function literalEnd (source: string, start: number, backslashEscapes: boolean): number | undefined {
  const quote = source[start]
  for (let i = start + 1; i < source.length; i++) {
    const c = source[i]
    if (backslashEscapes && c === '\\') i++
    else if (c === quote) {
      if (source[i + 1] !== quote) return i
      i++
    }
  }
  return undefined
}

/** Whether the quote at `quote` opens a PostgreSQL escape string (`E'...'`, not `table'`). */
function isEscapeStringPrefix (source: string, quote: number): boolean {
  const prefix = source[quote - 1]
  if (prefix !== 'E' && prefix !== 'e') return false
  return !/[A-Za-z0-9_$]/.test(source[quote - 2] ?? '')
}
