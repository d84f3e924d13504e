/**
 * String functions (EMQ X 4.4 `emqx_rule_funcs` "String Funcs"). Arguments must be strings
 * (binaries); anything else fails the statement. Lengths and offsets count grapheme clusters
 * as Erlang's `string` module does; offsets of `substr` are 0-based.
 */
import { ConversionError, badArg } from './errors.js'
import { arrayArg, intArg, textOf, toBin, bytesOf } from './value-model.js'
import { TRIM_LEADING, TRIM_TRAILING, findAligned, findLastAligned, graphemeLength, graphemes, splitAll } from './text.js'
import { regexMatch, regexReplace } from './regex.js'
import type { RuleFunction } from './types.js'

type Where = 'leading' | 'trailing'

function where (fn: string, v: unknown, allowed: readonly string[]): string {
  const s = textOf(fn, v)
  if (!allowed.includes(s)) throw badArg(fn, v, `one of ${allowed.map((a) => `'${a}'`).join(', ')}`)
  return s
}

function nonNegative (fn: string, v: unknown): number {
  const n = intArg(fn, v)
  if (n < 0) throw badArg(fn, v, 'an integer >= 0')
  return n
}

/** `substr(S, Start)` / `substr(S, Start, Len)`: `string:slice/2,3`, Start 0-based. */
function substr (...args: unknown[]): string {
  const s = textOf('substr', args[0])
  const start = nonNegative('substr', args[1])
  const len = args.length > 2 ? nonNegative('substr', args[2]) : Infinity
  const g = graphemes(s)
  return g.slice(start, len === Infinity ? undefined : start + len).join('')
}

function splitOnce (s: string, p: string, dir: Where): string[] {
  if (p === '') return [s]
  const i = dir === 'leading' ? findAligned(s, p) : findLastAligned(s, p)
  return i === -1 ? [s] : [s.slice(0, i), s.slice(i + p.length)]
}

const SPLIT_MODES = ['notrim', 'leading', 'leading_notrim', 'trailing', 'trailing_notrim'] as const

/**
 * `split(S, Sep)` splits at every separator and drops empty parts; `split(S, Sep, Mode)` with
 * Mode `notrim` keeps them, `leading`/`trailing` split at the first/last separator only
 * (dropping empty parts) and `leading_notrim`/`trailing_notrim` keep them.
 */
function split (...args: unknown[]): string[] {
  const s = textOf('split', args[0])
  const p = textOf('split', args[1])
  const mode = args.length > 2 ? where('split', args[2], SPLIT_MODES) : 'all'
  let parts: string[]
  if (mode === 'all' || mode === 'notrim') parts = splitAll(s, p)
  else parts = splitOnce(s, p, mode.startsWith('leading') ? 'leading' : 'trailing')
  return mode === 'all' || !mode.endsWith('notrim') ? parts.filter((x) => x !== '') : parts
}

/** `tokens(S, Seps[, 'nocrlf'])`: `string:lexemes/2`; Seps is a set of separator characters. */
function tokens (...args: unknown[]): string[] {
  const s = textOf('tokens', args[0])
  const seps = new Set(graphemes(textOf('tokens', args[1])))
  if (args.length > 2) {
    where('tokens', args[2], ['nocrlf'])
    seps.add('\r').add('\n').add('\r\n')
  }
  const out: string[] = []
  let cur = ''
  for (const g of graphemes(s)) {
    if (seps.has(g)) {
      if (cur !== '') out.push(cur)
      cur = ''
    } else cur += g
  }
  if (cur !== '') out.push(cur)
  return out
}

/** `pad(S, Len[, Where[, Char]])`: `string:pad/4`; Char (default space) is repeated whole. */
function pad (...args: unknown[]): string {
  const s = textOf('pad', args[0])
  const len = intArg('pad', args[1])
  const dir = args.length > 2 ? where('pad', args[2], ['trailing', 'both', 'leading']) : 'trailing'
  const ch = args.length > 3 ? textOf('pad', args[3]) : ' '
  const n = len - graphemeLength(s)
  if (n <= 0) return s
  if (dir === 'trailing') return s + ch.repeat(n)
  if (dir === 'leading') return ch.repeat(n) + s
  const left = Math.floor(n / 2)
  return ch.repeat(left) + s + ch.repeat(n - left)
}

/** `replace(S, P, R[, Where])`: `string:replace/4`, Where `all` (default), `leading`, `trailing`. */
function replace (...args: unknown[]): string {
  const s = textOf('replace', args[0])
  const p = textOf('replace', args[1])
  const r = textOf('replace', args[2])
  const mode = args.length > 3 ? where('replace', args[3], ['all', 'leading', 'trailing']) : 'all'
  if (p === '') return s
  if (mode === 'all') return splitAll(s, p).join(r)
  return splitOnce(s, p, mode as Where).join(r)
}

/** `find(S, P[, Where])`: the rest of S from the first (or last) P, or `''` when absent. */
function find (...args: unknown[]): string {
  const s = textOf('find', args[0])
  const p = textOf('find', args[1])
  const dir = args.length > 2 ? where('find', args[2], ['leading', 'trailing']) : 'leading'
  const i = dir === 'leading' ? findAligned(s, p) : findLastAligned(s, p)
  return i === -1 ? '' : s.slice(i)
}

const str1 = (name: string, op: (s: string) => unknown): RuleFunction =>
  ({ name, minArgs: 1, maxArgs: 1, fn: (v: unknown) => op(textOf(name, v)) })

/** The string functions: lower ... find, plus EMQ X 5's `join_to_string`. */
export const stringFunctions: RuleFunction[] = [
  str1('lower', (s) => s.toLowerCase()),
  str1('upper', (s) => s.toUpperCase()),
  str1('trim', (s) => s.replace(TRIM_LEADING, '').replace(TRIM_TRAILING, '')),
  str1('ltrim', (s) => s.replace(TRIM_LEADING, '')),
  str1('rtrim', (s) => s.replace(TRIM_TRAILING, '')),
  str1('reverse', (s) => graphemes(s).reverse().join('')),
  str1('strlen', graphemeLength),
  { name: 'substr', minArgs: 2, maxArgs: 3, fn: substr },
  { name: 'split', minArgs: 2, maxArgs: 3, fn: split },
  {
    name: 'concat',
    minArgs: 2,
    maxArgs: 2,
    fn: (a: unknown, b: unknown) => textOf('concat', a) + textOf('concat', b)
  },
  { name: 'tokens', minArgs: 2, maxArgs: 3, fn: tokens },
  { name: 'pad', minArgs: 2, maxArgs: 4, fn: pad },
  { name: 'replace', minArgs: 3, maxArgs: 4, fn: replace },
  { name: 'regex_match', minArgs: 2, maxArgs: 2, fn: regexMatch },
  { name: 'regex_replace', minArgs: 3, maxArgs: 3, fn: regexReplace },
  {
    name: 'ascii',
    minArgs: 1,
    maxArgs: 1,
    // The first byte of the binary (EMQ X: hd(binary_to_list(Char))).
    fn: (v: unknown) => {
      const b = bytesOf('ascii', v)
      if (b.length === 0) throw new ConversionError('ascii', 'badmatch', 'empty string')
      return b[0]
    }
  },
  { name: 'find', minArgs: 2, maxArgs: 3, fn: find },
  {
    name: 'join_to_string',
    minArgs: 1,
    maxArgs: 2,
    // EMQ X 5: join_to_string(List) joins with ', '; join_to_string(Sep, List). Items via str().
    fn: (...args: unknown[]) => {
      const sep = args.length > 1 ? textOf('join_to_string', args[0]) : ', '
      const list = arrayArg('join_to_string', args[args.length - 1])
      return list.map((x) => { const b = toBin('join_to_string', x); return typeof b === 'string' ? b : b.toString('utf8') }).join(sep)
    }
  }
]
