/**
 * SQL templates turned into parameterized queries, once, when their owner loads: the auth
 * backends' (`where username = '%u'`) and the rule engine's SQL actions
 * (`insert into t values (${clientid}, ${payload.temp})`). The placeholder syntax is the
 * caller's ({@link PlaceholderSyntax}); the SQL scanning is the same for both.
 *
 * Invariants:
 * - The SQL text sent to the server is fixed at compile time and never contains a value:
 *   values only ever travel in {@link SqlQuery.values}, bound by the driver.
 * - A string literal that is exactly one placeholder (`'%u'`, `'${clientid}'`, and in MySQL
 *   `"%u"` too) becomes one parameter, as EMQ X's `parse_query` did; so does a bare
 *   placeholder outside literals (`username = %u`, `values (${qos})`).
 * - A placeholder inside a longer literal (`like '%u%'`), a quoted identifier or a comment
 *   cannot be bound: it is left as text (`inLiteral: 'text'`, the auth backends, where EMQ X
 *   left it too) or the template is refused (`inLiteral: 'refuse'`, the rule actions, where
 *   leaving it would write the template's text into every row).
 * - Parameters are numbered in order of appearance: `$1..$n` (PostgreSQL), `?` (MySQL).
 *   A template that already has markers of its own (`$1`, `?`) is refused, so the count of
 *   markers always equals the length of the values array.
 * - A value the data does not have is bound as SQL `NULL`.
 */

/**
 * The SQL dialect: which parameter markers and which quoting rules. `cql` (Cassandra) marks
 * parameters `?` as MySQL does and quotes as PostgreSQL does without `E'...'` escapes:
 * `'...'` strings with `''` doubled, `"..."` identifiers.
 */
export type SqlDialect = 'postgresql' | 'mysql' | 'cql'

/** How placeholders are written: `%u` (the auth backends) or `${path}` (the rule engine). */
export interface PlaceholderSyntax<K> {
  /** The placeholder starting at `i` in `source`: its key and its length; undefined when none starts there. */
  at: (source: string, i: number) => { key: K, length: number } | undefined
  /** How one is written, for error messages: `'%u'`, `${clientid}`. */
  example: string
}

/** `${path}`: any text up to the next `}` (trimmed; a dotted path into the data). */
export const DOLLAR_BRACES: PlaceholderSyntax<string> = {
  at (source, i) {
    if (source[i] !== '$' || source[i + 1] !== '{') return undefined
    const end = source.indexOf('}', i + 2)
    if (end === -1) return undefined
    const key = source.slice(i + 2, end).trim()
    return key === '' ? undefined : { key, length: end + 1 - i }
  },
  example: '${clientid}'
}

/** A query ready for the driver: `pg`'s `query(text, values)`, `mysql2`'s `execute(sql, values)`. */
export interface SqlQuery {
  readonly text: string
  /** One per parameter marker in `text`, in order; `null` for a value the data does not have. */
  readonly values: unknown[]
}

/** A compiled SQL template. */
export interface SqlTemplate<K = string> {
  readonly dialect: SqlDialect
  /** The template as configured. */
  readonly source: string
  /** The parameterized SQL text. */
  readonly text: string
  /** The placeholder bound to each parameter, in order. */
  readonly params: readonly K[]
  /** The placeholders it uses, each once. */
  readonly keys: readonly K[]
}

/** Options of {@link compileSql}. */
export interface CompileSqlOptions<K> {
  dialect: SqlDialect
  syntax: PlaceholderSyntax<K>
  /** A placeholder inside a longer literal, an identifier or a comment: kept as text, or refused. */
  inLiteral: 'text' | 'refuse'
  /** Throws the caller's error for a bad template; `what` says what is wrong. */
  fail: (what: string) => never
}

/**
 * Compiles `source`. Refuses (through `opts.fail`) an empty template, an unterminated literal
 * or comment, parameter markers of its own, and with `inLiteral: 'refuse'` a placeholder that
 * cannot be bound.
 */
export function compileSql<K> (source: string, opts: CompileSqlOptions<K>): SqlTemplate<K> {
  const { dialect, syntax, fail } = opts
  const mysql = dialect === 'mysql'
  const qmarks = dialect !== 'postgresql'
  const params: K[] = []
  let text = ''
  const marker = (key: K): string => {
    params.push(key)
    return qmarks ? '?' : `$${params.length}`
  }
  /** Text that is kept as it is: refused when it holds a placeholder and the caller says so. */
  const keep = (piece: string, where: string, at: number): string => {
    if (opts.inLiteral === 'refuse') {
      for (let j = 0; j < piece.length; j++) {
        if (syntax.at(piece, j) !== undefined) {
          fail(`the placeholder in ${where} at offset ${at} cannot be bound as a parameter: write it alone, as ${syntax.example} or '${syntax.example}'`)
        }
      }
    }
    return piece
  }

  if (source.trim() === '') fail('it is empty')
  let i = 0
  while (i < source.length) {
    const c = source[i]
    const next = source[i + 1]
    if (c === '\'' || (c === '"' && mysql)) {
      const escapes = mysql || (dialect === 'postgresql' && isEscapeStringPrefix(source, i))
      const end = literalEnd(source, i, escapes) ?? fail(`the literal at offset ${i} is not closed`)
      const body = source.slice(i + 1, end)
      const whole = syntax.at(body, 0)
      text += whole !== undefined && whole.length === body.length ? marker(whole.key) : keep(source.slice(i, end + 1), 'a string literal', i)
      i = end + 1
    } else if (c === '"' || (c === '`' && mysql)) {
      const end = source.indexOf(c, i + 1) // quoted identifier: doubled quotes are two steps here
      if (end === -1) fail(`the quoted identifier at offset ${i} is not closed`)
      text += keep(source.slice(i, end + 1), 'a quoted identifier', i)
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
    } else if (syntax.at(source, i) !== undefined) {
      const found = syntax.at(source, i)!
      text += marker(found.key)
      i += found.length
    } else if (qmarks && c === '?') {
      return fail(`a ? marker of its own: write a placeholder such as ${syntax.example} instead`)
    } else if (!qmarks && c === '$' && next !== undefined && next >= '0' && next <= '9') {
      return fail(`a $${next} marker of its own: write a placeholder such as ${syntax.example} instead`)
    } else {
      text += c
      i++
    }
  }
  return { dialect, source, text, params, keys: [...new Set(params)] }
}

/** The query for one set of data: the compiled text and one value per parameter (`null` when `value` gives undefined). */
export function renderSql<K> (template: SqlTemplate<K>, value: (key: K) => unknown): SqlQuery {
  const values = new Array<unknown>(template.params.length)
  for (let i = 0; i < values.length; i++) values[i] = value(template.params[i]) ?? null
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
