/**
 * `data_to_clickhouse`'s `sql` template (EMQ X 4.4's form:
 * `insert into t(a, b) values (${a}, ${b})`) read into what a JSONEachRow insert needs: the
 * table, the columns and, per column, the placeholder or literal giving its value.
 *
 * Invariants:
 * - No value ever becomes SQL text: the template is compiled once (node/template/sql.ts,
 *   `inLiteral: 'refuse'`), its placeholders become markers, and only a plain
 *   `INSERT INTO <table> (<columns>) VALUES (<one placeholder or literal per column>)` is
 *   accepted. The rows then travel as JSON data (Debian's ClickHouse 18.16 has no
 *   server-side query parameters, so binding is done by sending rows, not SQL).
 * - The insert's table and column names are the template's, written again quoted
 *   (`` `name` ``) so that no name is read as anything else.
 */
import { WrongTypeError } from '../../node/errors.js'
import { compileSql, DOLLAR_BRACES } from '../../node/template/index.js'

/** A column's value: a `${key}` of the selected data, or a literal written into every row. */
export type ColumnValue = { key: string } | { literal: string | number | null }

/** A compiled template. */
export interface ClickhouseInsert {
  /** `` `db`.`table` `` or `` `table` `` (then in the resource's database). */
  table: string
  /** The column names (unquoted: the JSONEachRow keys), each once. */
  columns: string[]
  /** One per column. */
  values: ColumnValue[]
}

const FORM = 'INSERT INTO <table> (<columns>) VALUES (<one ${key} or literal per column>)'

function refuse (why: string): never {
  throw new WrongTypeError(`action data_to_clickhouse: parameter sql cannot be used: ${why}. Each batch is written as one JSONEachRow insert whose rows carry the values as data, never as SQL text, so the template must be ${FORM}`)
}

/** A name written for ClickHouse: in backquotes, with `\` and `` ` `` escaped. */
export function quoteName (name: string): string {
  return '`' + name.replace(/\\/g, '\\\\').replace(/`/g, '\\`') + '`'
}

type Token =
  | { kind: 'word', text: string }
  | { kind: 'name', text: string } // a quoted identifier's name
  | { kind: 'string', text: string }
  | { kind: 'number', text: string }
  | { kind: 'punct', text: string }

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', 0: '\0', a: '\x07', v: '\v' }

/** The text of a quoted token starting at `start`, ClickHouse's escapes undone, and where it ends. */
function quoted (s: string, start: number): { text: string, end: number } {
  const q = s[start]
  let text = ''
  for (let i = start + 1; i < s.length; i++) {
    const c = s[i]
    if (c === '\\') {
      const n = s[++i]
      if (n === 'x' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
        text += String.fromCharCode(parseInt(s.slice(i + 1, i + 3), 16))
        i += 2
      } else text += ESCAPES[n] ?? n ?? ''
    } else if (c === q) {
      if (s[i + 1] !== q) return { text, end: i + 1 }
      text += q
      i++
    } else text += c
  }
  return refuse(`the quoted text at offset ${start} is not closed`)
}

/** The tokens of the compiled text (placeholders are `?` there). */
function tokenize (s: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < s.length) {
    const c = s[i]
    if (/\s/.test(c)) { i++; continue }
    if ((c === '-' && s[i + 1] === '-') || c === '#') {
      const end = s.indexOf('\n', i)
      i = end === -1 ? s.length : end
    } else if (c === '/' && s[i + 1] === '*') {
      i = s.indexOf('*/', i + 2) + 2 // compileSql refused an unclosed comment
    } else if (c === '\'') {
      const q = quoted(s, i)
      tokens.push({ kind: 'string', text: q.text })
      i = q.end
    } else if (c === '`' || c === '"') {
      const q = quoted(s, i)
      tokens.push({ kind: 'name', text: q.text })
      i = q.end
    } else {
      const num = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?/.exec(s.slice(i))
      const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(s.slice(i))
      if (num !== null && (c !== '+' && c !== '-' ? true : /[(,]/.test(tokens.at(-1)?.text ?? ''))) {
        tokens.push({ kind: 'number', text: num[0] })
        i += num[0].length
      } else if (word !== null) {
        tokens.push({ kind: 'word', text: word[0] })
        i += word[0].length
      } else {
        tokens.push({ kind: 'punct', text: c })
        i++
      }
    }
  }
  return tokens
}

/** Compiles `sql` (108 naming what is not the accepted form). */
export function compileClickhouseInsert (sql: unknown): ClickhouseInsert {
  if (typeof sql !== 'string') refuse(`it must be a string, got ${JSON.stringify(sql)}`)
  // MySQL's quoting is ClickHouse's for literals (backslash escapes) and backquoted names;
  // each placeholder becomes a `?` marker, its key in `params`
  const compiled = compileSql(sql, { dialect: 'mysql', syntax: DOLLAR_BRACES, inLiteral: 'refuse', fail: (why) => refuse(why) })
  const tokens = tokenize(compiled.text)
  let at = 0
  let param = 0
  const show = (t: Token | undefined): string => t === undefined ? 'the end' : t.kind === 'string' ? `'${t.text}'` : t.kind === 'name' ? quoteName(t.text) : t.text
  const next = (): Token | undefined => tokens[at++]
  const word = (w: string): void => {
    const t = next()
    if (t?.kind !== 'word' || t.text.toUpperCase() !== w) refuse(`expected ${w} but found ${show(t)}`)
  }
  const punct = (p: string): void => {
    const t = next()
    if (t?.kind !== 'punct' || t.text !== p) refuse(`expected "${p}" but found ${show(t)}`)
  }
  const name = (what: string): string => {
    const t = next()
    if (t?.kind === 'word' || (t?.kind === 'name' && t.text !== '')) return t.text
    if (t?.kind === 'punct' && t.text === '?') refuse(`a placeholder cannot name the ${what}: the ${what} is fixed when the rule is created`)
    return refuse(`expected the ${what}'s name but found ${show(t)}`)
  }
  /** `sep`-separated items of `item` up to `)`. */
  const list = <T>(item: () => T): T[] => {
    const items = [item()]
    for (;;) {
      const t = next()
      if (t?.kind === 'punct' && t.text === ')') return items
      if (t?.kind !== 'punct' || t.text !== ',') refuse(`expected "," or ")" but found ${show(t)}`)
      items.push(item())
    }
  }

  word('INSERT')
  word('INTO')
  let table = quoteName(name('table'))
  if (tokens[at]?.kind === 'punct' && tokens[at].text === '.') {
    at++
    table += '.' + quoteName(name('table'))
  }
  if (tokens[at]?.kind === 'word' && tokens[at].text.toUpperCase() === 'VALUES') refuse('it has no column list: name the columns, as in insert into t(a, b) values (${a}, ${b})')
  punct('(')
  const columns = list(() => name('column'))
  const twice = columns.find((c, i) => columns.indexOf(c) !== i)
  if (twice !== undefined) refuse(`column ${quoteName(twice)} is named twice`)
  word('VALUES')
  punct('(')
  const values = list((): ColumnValue => {
    const t = next()
    if (t?.kind === 'punct' && t.text === '?') return { key: compiled.params[param++] }
    if (t?.kind === 'string') return { literal: t.text }
    if (t?.kind === 'number') return { literal: Number(t.text) }
    if (t?.kind === 'word' && t.text.toUpperCase() === 'NULL') return { literal: null }
    if (t?.kind === 'word' && ['TRUE', 'FALSE'].includes(t.text.toUpperCase())) return { literal: t.text.toUpperCase() === 'TRUE' ? 1 : 0 }
    if (t?.kind === 'word' && tokens[at]?.text === '(') return refuse(`a function call (${t.text}(...)) is not a value: select the value in the rule's SQL instead (e.g. SELECT ..., ${t.text}(...) as v) and write \${v}`)
    return refuse(`each value must be one \${key} or a literal (a string, a number, NULL), found ${show(t)}`)
  })
  if (tokens[at]?.kind === 'punct' && tokens[at].text === ',') refuse('it has several rows of values: write one row; each message is one row, and batches are made by batch_size')
  if (tokens[at]?.kind === 'punct' && tokens[at].text === ';') at++
  if (at < tokens.length) refuse(`unexpected ${show(tokens[at])} after the values`)
  if (values.length !== columns.length) refuse(`it names ${columns.length} columns but gives ${values.length} values`)
  return { table, columns, values }
}
