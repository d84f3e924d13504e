/**
 * SQL templates with EMQ X 4.4's placeholders (`select password from mqtt_user where
 * username = '%u' limit 1`) turned into parameterized queries, once, when the plugin loads,
 * by the SQL scanner every SQL template shares (node/template/sql.ts).
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
import { compileSql, renderSql as renderSqlWith, type PlaceholderSyntax, type SqlDialect, type SqlTemplate as AnySqlTemplate } from '../../../node/template/index.js'
import {
  badTemplate, isPlaceholderKey, placeholderValue,
  type AuthContext, type ConfigOrigin, type PlaceholderKey
} from './placeholders.js'

export type { SqlDialect }

/** A query ready for the driver: `pg`'s `query(text, values)`, `mysql2`'s `execute(sql, values)`. */
export interface SqlQuery {
  readonly text: string
  /** One per parameter marker in `text`, in order; `null` for a value the client did not give. */
  readonly values: Array<string | null>
}

/** A compiled SQL template of an auth backend. */
export type SqlTemplate = AnySqlTemplate<PlaceholderKey>

/** EMQ X 4.4's auth placeholders: `%` and a letter of {@link PLACEHOLDERS}. */
const PERCENT: PlaceholderSyntax<PlaceholderKey> = {
  at: (source, i) => source[i] === '%' && isPlaceholderKey(source[i + 1] ?? '') ? { key: source[i + 1] as PlaceholderKey, length: 2 } : undefined,
  example: "'%u'"
}

/**
 * Compiles `source` for `dialect` (node/template/sql.ts; a placeholder inside a longer
 * literal stays text, as EMQ X left it). Refuses (ConfigError naming `origin.key`) an empty
 * template, an unterminated literal or comment, and parameter markers of its own.
 */
export function compileSqlTemplate (source: string, dialect: SqlDialect, origin?: ConfigOrigin): SqlTemplate {
  return compileSql(source, {
    dialect,
    syntax: PERCENT,
    inLiteral: 'text',
    fail: (what) => { throw badTemplate(source, `an SQL query with placeholders such as '%u' (${what})`, origin) }
  })
}

/** The query for `ctx`: the compiled text and one value per parameter. */
export function renderSql (template: SqlTemplate, ctx: AuthContext): SqlQuery {
  return renderSqlWith(template, (key) => placeholderValue(ctx, key)) as SqlQuery
}
