/**
 * One multi-row INSERT from a single-row one, for batches (EMQ X 4.4 batched its SQL actions
 * the same way): `INSERT INTO t (a, b) VALUES ($1, $2)` for three rows is
 * `INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4), ($5, $6)`. The text is the parameterized
 * one node/template/sql.ts compiled, so every value stays a bound parameter.
 *
 * Only an `INSERT`/`REPLACE` whose parameter markers are all in its one `VALUES (...)` tuple
 * qualifies (what follows the tuple, `ON CONFLICT DO NOTHING`, is kept); any other statement
 * gets undefined and its rows are written one statement each in one transaction.
 */
import type { SqlDialect } from '../../../node/template/index.js'

/** A statement split around its VALUES tuple: the tuple as text pieces and parameter numbers (0-based). */
export interface MultiRowForm {
  head: string
  tuple: Array<string | number>
  tail: string
  /** Parameters per row. */
  params: number
}

/** Where the quoted run starting at `i` ends (the index after it), or -1 when unterminated. */
function quotedEnd (text: string, i: number, dialect: SqlDialect): number {
  const q = text[i]
  const backslash = dialect === 'mysql' && q !== '`'
  for (let j = i + 1; j < text.length; j++) {
    if (backslash && text[j] === '\\') { j++; continue }
    if (text[j] === q) {
      if (text[j + 1] === q) { j++; continue }
      return j + 1
    }
  }
  return -1
}

/** The multi-row form of `text`, or undefined when it has none (see the module comment). */
export function multiRowForm (text: string, dialect: SqlDialect): MultiRowForm | undefined {
  if (!/^\s*(insert|replace)\s/i.test(text)) return undefined
  const mysql = dialect === 'mysql'
  const pieces: Array<string | number> = []
  let piece = ''
  let depth = 0
  let tupleStart = -1
  let head = ''
  let headCut = -1
  let tupleEnd = -1
  let markersOutside = 0
  let lastWord = ''
  let i = 0
  while (i < text.length) {
    const c = text[i]
    const inTuple = tupleStart >= 0 && tupleEnd < 0
    if (c === '\'' || c === '"' || (c === '`' && mysql)) {
      const end = quotedEnd(text, i, dialect)
      if (end < 0) return undefined
      piece += text.slice(i, end)
      i = end
      lastWord = ''
      continue
    }
    if ((c === '-' && text[i + 1] === '-') || (c === '#' && mysql) || (c === '/' && text[i + 1] === '*')) {
      const end = c === '/' ? text.indexOf('*/', i + 2) + 2 : text.indexOf('\n', i)
      const stop = end <= 0 ? text.length : end
      piece += text.slice(i, stop)
      i = stop
      continue
    }
    const marker = mysql ? (c === '?' ? '?' : undefined) : (/^\$\d+/.exec(text.slice(i, i + 8))?.[0])
    if (marker !== undefined) {
      if (inTuple) {
        pieces.push(piece)
        piece = ''
        pieces.push(mysql ? pieces.filter((p) => typeof p === 'number').length : Number(marker.slice(1)) - 1)
      } else {
        markersOutside++
        piece += marker
      }
      i += marker.length
      continue
    }
    if (/[A-Za-z_]/.test(c)) {
      const word = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(text.slice(i))![0]
      piece += word
      i += word.length
      lastWord = word.toLowerCase()
      continue
    }
    if (c === '(') {
      if (depth === 0 && tupleStart < 0 && lastWord === 'values') {
        tupleStart = i
        head = piece
        headCut = i
        piece = ''
      }
      depth++
    } else if (c === ')') {
      depth--
      if (depth === 0 && tupleStart >= 0 && tupleEnd < 0) {
        piece += c
        pieces.push(piece)
        piece = ''
        tupleEnd = i
        i++
        continue
      }
    }
    if (!/\s/.test(c)) lastWord = ''
    piece += c
    i++
  }
  if (tupleStart < 0 || tupleEnd < 0 || headCut < 0 || markersOutside > 0) return undefined
  const tuple = pieces.filter((p) => p !== '')
  const params = tuple.filter((p) => typeof p === 'number').length
  if (params === 0) return undefined
  return { head, tuple, tail: piece, params }
}

/** The text of `rows` rows of `form`: markers numbered on (`$n`) or `?` for each. */
export function multiRowText (form: MultiRowForm, rows: number, dialect: SqlDialect): string {
  const tuples: string[] = []
  for (let r = 0; r < rows; r++) {
    let t = ''
    for (const p of form.tuple) t += typeof p === 'string' ? p : dialect === 'mysql' ? '?' : `$${r * form.params + p + 1}`
    tuples.push(t)
  }
  return form.head + tuples.join(', ') + form.tail
}
