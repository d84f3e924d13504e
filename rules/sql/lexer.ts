/**
 * Tokens of the rule SQL (EMQ X 4 `rulesql` dialect, spec: Rule SQL).
 *
 * - Keywords are case-insensitive; identifiers (column names) are case-sensitive.
 * - Quoted tokens: `'...'` is a string literal; `"..."` is a quoted name (the parser reads it
 *   as a column in expressions, as EMQ X 4's NAME, and as an event or topic filter after
 *   FROM); both are `string` tokens with their `quote`. Inside, a doubled quote or a backslash before the
 *   quote stands for the quote and `\\` for one backslash; any other backslash is kept as
 *   written, so regular expressions read as typed (`'^\d+$'`).
 * - Numbers: `12`, `1.5`, `2e3`, `1.5E-2`; `2..4` lexes as `2`, `..`, `4` (array ranges).
 * - Names start with a letter or `_`, then letters, digits, `_`, `$`, `@`, `~` (`payload.a$b`).
 * - `--` starts a comment that runs to the next line break (none after it: two minus signs).
 */
import { SqlError } from './errors.js'

/** The keywords; anything else that looks like a word is an identifier. */
export const KEYWORDS: ReadonlySet<string> = new Set([
  'select', 'from', 'where', 'foreach', 'do', 'incase', 'as', 'and', 'or', 'not', 'in',
  'case', 'when', 'then', 'else', 'end', 'div', 'mod', 'true', 'false'
])

/** Operators and punctuation, longest first (the lexer tries them in this order). */
const PUNCT = ['..', '=~', '<>', '!=', '<=', '>=', '(', ')', ',', '.', '[', ']', '*', '+', '-', '/', '=', '<', '>', ';']

/** The kinds of token. `kw` carries the lower-cased keyword in `text`; `other` is a character no rule accepts. */
export type TokenKind = 'ident' | 'kw' | 'string' | 'number' | 'punct' | 'other' | 'eof'

/** One token and where it starts in the statement. */
export interface Token {
  kind: TokenKind
  /** Identifier as written, keyword lower-cased, string contents unquoted, number text, punctuation. */
  text: string
  /** The number's value (kind `number`). */
  value?: number
  /** The quote a string was written with (kind `string`). */
  quote?: string
  /** The token exactly as written (keywords keep their case: `payload.Select` is key `Select`). */
  raw: string
  /** 0-based offset of the token's first character. */
  offset: number
  /** 0-based offset just past the token. */
  end: number
}

function isIdentStart (c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95
}

/** After the first character a name may also hold `$`, `@` and `~` (EMQ X 4's rulesql names). */
function isIdentPart (c: number): boolean {
  return isIdentStart(c) || isDigit(c) || c === 36 || c === 64 || c === 126
}

function isDigit (c: number): boolean {
  return c >= 48 && c <= 57
}

function isSpace (c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 12
}

/** Splits a statement into tokens; the last one has kind `eof`. Throws {@link SqlError}. */
export function tokenize (sql: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  const push = (kind: TokenKind, text: string, start: number, end: number, extra?: Partial<Token>): void => {
    tokens.push({ kind, text, raw: sql.slice(start, end), offset: start, end, ...extra })
  }
  while (i < sql.length) {
    const c = sql.charCodeAt(i)
    if (isSpace(c)) { i++; continue }
    // `--` starts a comment up to a line break (EMQ X 4's rule: without a line break after
    // it, `--` is two minus signs, so `1--1` is 2)
    if (c === 45 && sql.charCodeAt(i + 1) === 45) {
      const eol = sql.indexOf('\n', i + 2)
      if (eol !== -1) { i = eol + 1; continue }
    }
    const start = i
    if (isIdentStart(c)) {
      while (i < sql.length && isIdentPart(sql.charCodeAt(i))) i++
      const word = sql.slice(start, i)
      const lower = word.toLowerCase()
      if (KEYWORDS.has(lower)) push('kw', lower, start, i)
      else push('ident', word, start, i)
    } else if (isDigit(c)) {
      i = readNumber(sql, i)
      const text = sql.slice(start, i)
      if (i < sql.length && isIdentStart(sql.charCodeAt(i))) {
        throw new SqlError(`invalid number '${text}${sql[i]}'`, sql, start)
      }
      push('number', text, start, i, { value: Number(text) })
    } else if (c === 39 || c === 34) {
      const [text, end] = readString(sql, i)
      push('string', text, start, end, { quote: sql[i] })
      i = end
    } else {
      const p = PUNCT.find(op => sql.startsWith(op, i))
      if (p === undefined) {
        // no rule accepts it: the parser reports it as what it found instead of what it expected
        i++
        push('other', sql[start], start, i)
      } else {
        i += p.length
        push('punct', p, start, i)
      }
    }
  }
  push('eof', '', sql.length, sql.length)
  return tokens
}

/** Reads digits, an optional fraction (not `..`) and an optional exponent; returns the end. */
function readNumber (sql: string, i: number): number {
  while (i < sql.length && isDigit(sql.charCodeAt(i))) i++
  if (sql.charCodeAt(i) === 46 && isDigit(sql.charCodeAt(i + 1))) {
    i++
    while (i < sql.length && isDigit(sql.charCodeAt(i))) i++
  }
  const e = sql.charCodeAt(i)
  if (e === 101 || e === 69) {
    let j = i + 1
    const s = sql.charCodeAt(j)
    if (s === 43 || s === 45) j++
    if (isDigit(sql.charCodeAt(j))) {
      i = j
      while (i < sql.length && isDigit(sql.charCodeAt(i))) i++
    }
  }
  return i
}

/** Reads a quoted string starting at `start` (the quote); returns its contents and the end. */
function readString (sql: string, start: number): [string, number] {
  const q = sql.charCodeAt(start)
  let out = ''
  let i = start + 1
  while (i < sql.length) {
    const c = sql.charCodeAt(i)
    if (c === q) {
      if (sql.charCodeAt(i + 1) === q) { out += sql[i]; i += 2; continue }
      return [out, i + 1]
    }
    if (c === 92) { // backslash
      const n = sql.charCodeAt(i + 1)
      if (n === q || n === 92) { out += sql[i + 1]; i += 2; continue }
    }
    out += sql[i]
    i++
  }
  throw new SqlError(`unterminated string starting with ${sql[start]}`, sql, start)
}
