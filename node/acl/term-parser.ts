/**
 * Reads the Erlang term syntax of EMQ X's `acl.conf` (what `file:consult/1` accepts, as far
 * as ACL files use it): a sequence of terms, each ended by `.`, with `%` comments to the end
 * of a line and whitespace anywhere. Terms are atoms (`allow`, `'and'`), strings
 * (`"a/b"`, adjacent strings joined as Erlang does), binaries (`<<"a/b">>`, read as strings),
 * integers, tuples `{...}` and lists `[...]`. Every term remembers its line, so the rule
 * compiler can name the line of whatever it refuses.
 */
import { AclFileError } from './acl-error.js'

/**
 * At most this many tuples and lists inside one another (an ACL rule uses four). The parser
 * recurses once per level: a term nested some thousands deep overflowed the stack and
 * stopped the node at start-up with "Maximum call stack size exceeded" instead of a line.
 */
export const MAX_TERM_DEPTH = 100

/** A parsed term with the 1-based line it starts on. */
export type Term =
  | { kind: 'atom', value: string, line: number }
  | { kind: 'string', value: string, line: number }
  | { kind: 'integer', value: number, line: number }
  | { kind: 'tuple', items: Term[], line: number }
  | { kind: 'list', items: Term[], line: number }

type Punct = '{' | '}' | '[' | ']' | ',' | '.' | '<<' | '>>'

/** A token: punctuation, a value, a variable (refused) or the end of the text. */
type Token =
  | { kind: 'punct', value: Punct, line: number }
  | { kind: 'atom' | 'string' | 'var', value: string, line: number }
  | { kind: 'integer', value: number, line: number }
  | { kind: 'eof', line: number }

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', s: ' ', e: '\x1b', b: '\b', f: '\f', v: '\v', d: '\x7f', 0: '\0' }

/** Splits `text` into tokens; `fail(line, detail)` raises the file's error. */
function tokenize (text: string, fail: (line: number, detail: string) => never): Token[] {
  const tokens: Token[] = []
  let i = 0
  let line = 1
  while (i < text.length) {
    const c = text[i]
    if (c === '\n') { line++; i++; continue }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v') { i++; continue }
    if (c === '%') {
      while (i < text.length && text[i] !== '\n') i++
      continue
    }
    if (text.startsWith('<<', i) || text.startsWith('>>', i)) {
      tokens.push({ kind: 'punct', value: text.slice(i, i + 2) as Punct, line })
      i += 2
      continue
    }
    if ('{}[],.'.includes(c)) {
      tokens.push({ kind: 'punct', value: c as Punct, line })
      i++
      continue
    }
    if (c === '"' || c === "'") {
      const start = line
      let value = ''
      i++
      for (;;) {
        if (i >= text.length) fail(start, `unterminated ${c === '"' ? 'string' : 'quoted atom'}: missing the closing ${c}`)
        const d = text[i++]
        if (d === c) break
        if (d === '\n') line++
        if (d !== '\\') { value += d; continue }
        const e = text[i++] ?? ''
        if (e === '\n') line++
        value += ESCAPES[e] ?? e
      }
      tokens.push({ kind: c === '"' ? 'string' : 'atom', value, line: start })
      continue
    }
    const word = /^[A-Za-z_0-9@]+/.exec(text.slice(i, i + 256))
    if (word !== null) {
      const w = word[0]
      if (/^[0-9]+$/.test(w)) tokens.push({ kind: 'integer', value: Number(w), line })
      else if (/^[a-z]/.test(w)) tokens.push({ kind: 'atom', value: w, line })
      else tokens.push({ kind: 'var', value: w, line })
      i += w.length
      continue
    }
    fail(line, `unexpected character ${JSON.stringify(c)}`)
  }
  // a missing '.' is reported on the line of the rule's last token, not after trailing blank lines
  tokens.push({ kind: 'eof', line: tokens.length > 0 ? tokens[tokens.length - 1].line : line })
  return tokens
}

/** How a token is named in an error message: `'alow'`, `"a/b"`, `'}'`, `end of file`. */
function describeToken (t: Token): string {
  switch (t.kind) {
    case 'eof': return 'end of file'
    case 'string': return JSON.stringify(t.value)
    case 'var': return `${t.value} (a variable; atoms start with a lower-case letter)`
    case 'integer': return String(t.value)
    default: return `'${t.value}'`
  }
}

/**
 * Parses `text` into its top-level terms (one per `.`-ended form). `source` names the file
 * in errors. Throws {@link AclFileError} (`source:line: expected ..., got ...`) on a syntax
 * error or a term nested deeper than {@link MAX_TERM_DEPTH}.
 */
export function parseTerms (text: string, source: string): Term[] {
  const fail = (line: number, detail: string): never => { throw new AclFileError(source, line, detail) }
  const tokens = tokenize(text, fail)
  let pos = 0

  const expected = (what: string): never => {
    const t = tokens[pos]
    return fail(t.line, `expected ${what}, got ${describeToken(t)}`)
  }
  const isPunct = (value: Punct): boolean => {
    const t = tokens[pos]
    return t.kind === 'punct' && t.value === value
  }

  function term (): Term {
    const t = tokens[pos]
    switch (t.kind) {
      case 'atom':
        pos++
        return { kind: 'atom', value: t.value, line: t.line }
      case 'integer':
        pos++
        return { kind: 'integer', value: t.value, line: t.line }
      case 'string': {
        pos++
        let value = t.value
        // adjacent string literals are one string in Erlang: "a/" "b" is "a/b"
        while (tokens[pos].kind === 'string') value += (tokens[pos++] as { value: string }).value
        return { kind: 'string', value, line: t.line }
      }
      case 'punct':
        if (t.value === '{' || t.value === '[') return sequence(t.value, t.line)
        if (t.value === '<<') return binary(t.line)
        break
    }
    return expected('a term')
  }

  let depth = 0
  function sequence (open: '{' | '[', line: number): Term {
    const close = open === '{' ? '}' : ']'
    if (++depth > MAX_TERM_DEPTH) fail(line, `tuples and lists nested more than ${MAX_TERM_DEPTH} levels deep; the limit is ${MAX_TERM_DEPTH}`)
    pos++
    const items: Term[] = []
    if (isPunct(close)) {
      pos++
    } else {
      for (;;) {
        items.push(term())
        if (isPunct(',')) { pos++; continue }
        if (isPunct(close)) { pos++; break }
        expected(`',' or '${close}'`)
      }
    }
    depth--
    return open === '{' ? { kind: 'tuple', items, line } : { kind: 'list', items, line }
  }

  function binary (line: number): Term {
    pos++
    let value = ''
    while (tokens[pos].kind === 'string') value += (tokens[pos++] as { value: string }).value
    if (!isPunct('>>')) expected("a string or '>>' in a binary")
    pos++
    return { kind: 'string', value, line }
  }

  const forms: Term[] = []
  while (tokens[pos].kind !== 'eof') {
    forms.push(term())
    if (!isPunct('.')) expected("'.' at the end of the rule")
    pos++
  }
  return forms
}

/** A term written back compactly for error messages: `'alow'`, `"x"`, `{user,"x"}`, `[...]`. */
export function describeTerm (t: Term): string {
  if (t.kind === 'atom') return `'${t.value}'`
  const text = writeTerm(t)
  return text.length > 60 ? text.slice(0, 57) + '...' : text
}

/** Erlang's own writing of a term: atoms quoted only when they need it. */
function writeTerm (t: Term): string {
  switch (t.kind) {
    case 'atom': return /^[a-z][A-Za-z0-9_@]*$/.test(t.value) ? t.value : `'${t.value}'`
    case 'string': return JSON.stringify(t.value)
    case 'integer': return String(t.value)
    case 'tuple': return `{${t.items.map(writeTerm).join(',')}}`
    case 'list': return `[${t.items.map(writeTerm).join(',')}]`
  }
}
