/**
 * `sprintf(Format, Args...)` and `sprintf_s(Format, ArgList)`: Erlang's `io_lib:format/2`
 * (EMQ X 4.4 formats with it directly). Supported control sequences, with field width,
 * precision, pad character and the `t`/`l` modifiers: `~~ ~n ~c ~s ~w ~p ~W ~P ~d ~f ~e ~g
 * ~b ~B ~x ~X ~# ~+ ~i`. `~w`/`~p` print values as Erlang terms (`<<"text">>`, `#{...}`).
 */
import { ConversionError } from './errors.js'
import { BitString, bytesOf, integerText, isBinary, isInt, isMap, isNum, textOf } from './value-model.js'
import type { RuleFunction } from './types.js'

const FN = 'sprintf'

function fail (detail: string): never {
  throw new ConversionError(FN, 'badarg', detail)
}

/** A float as Erlang's shortest form writes it: always a `.` and an exponent without `+`. */
function erlangFloat (x: number): string {
  let s = String(x)
  const e = s.indexOf('e')
  let mant = e === -1 ? s : s.slice(0, e)
  const exp = e === -1 ? '' : 'e' + s.slice(e + 1).replace('+', '')
  if (!mant.includes('.')) mant += '.0'
  s = mant + exp
  return s
}

const printableLatin1 = (b: number): boolean => (b >= 32 && b <= 126) || (b >= 160 && b <= 255) || (b >= 8 && b <= 13) || b === 27
const ESC: Record<number, string> = { 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 27: '\\e', 34: '\\"', 92: '\\\\' }

function quoted (codes: Iterable<number>): string {
  let s = '"'
  for (const c of codes) s += ESC[c] ?? String.fromCodePoint(c)
  return s + '"'
}

/** Erlang's printed form of a value (`~w` when `pretty` is false, `~p`/`~tp` when true). */
export function writeTerm (v: unknown, pretty: boolean, unicode = false): string {
  if (typeof v === 'number') return Number.isInteger(v) ? integerText(v) : erlangFloat(v)
  if (typeof v === 'boolean') return String(v)
  if (v === undefined) return 'undefined'
  if (v === null) return 'null'
  if (isBinary(v)) {
    const b = bytesOf(FN, v)
    if (pretty && b.every(printableLatin1)) return '<<' + quoted(b) + '>>'
    if (pretty && unicode && typeof v === 'string') return '<<' + quoted([...v].map((c) => c.codePointAt(0) as number)) + '/utf8>>'
    return '<<' + [...b].join(',') + '>>'
  }
  if (v instanceof BitString) return `<<bits:${v.bitLength}>>`
  if (Array.isArray(v)) {
    if (pretty && v.length > 0 && v.every((c) => isInt(c) && printableLatin1(c))) return quoted(v as number[])
    return '[' + v.map((e) => writeTerm(e, pretty, unicode)).join(',') + ']'
  }
  if (isMap(v)) {
    const keys = Object.keys(v).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    return '#{' + keys.map((k) => writeTerm(k, pretty, unicode) + ' => ' + writeTerm(v[k], pretty, unicode)).join(',') + '}'
  }
  return fail(`cannot print ${typeof v}`)
}

/** A parsed `~F.P.PadModC` control sequence. */
interface Spec { width?: number, left: boolean, prec?: number, pad: string, unicode: boolean, ctrl: string }

/** Fits `s` into the field: padded (right-justified unless `left`), truncated when too long. */
function field (s: string, spec: Spec, overflowStars = false): string {
  const w = spec.width
  if (w === undefined) return s
  const len = [...s].length
  if (len > w) return overflowStars ? '*'.repeat(w) : [...s].slice(0, w).join('')
  const fill = spec.pad.repeat(w - len)
  return spec.left ? s + fill : fill + s
}

function stringArg (v: unknown): string {
  if (isBinary(v)) return textOf(FN, v)
  if (typeof v === 'boolean' || v === undefined || v === null) return String(v) // atoms
  if (Array.isArray(v) && v.every(isInt)) return String.fromCodePoint(...(v as number[]))
  return fail('~s needs a string')
}

function numberArg (v: unknown, ctrl: string): number {
  if (!isNum(v)) fail(`~${ctrl} needs a number`)
  return v
}

function intBase (v: unknown, base: number, upper: boolean): string {
  if (!isInt(v)) fail('an integer is needed')
  if (base < 2 || base > 36) fail(`base ${base} is outside 2..36`)
  const s = BigInt(v).toString(base)
  return upper ? s.toUpperCase() : s
}

function formatOne (spec: Spec, next: () => unknown): string {
  const { ctrl } = spec
  switch (ctrl) {
    case '~': return field('~', spec)
    case 'n': return '\n'
    case 'c': {
      const c = next()
      if (!isInt(c)) fail('~c needs a character code')
      return String.fromCodePoint(c).repeat(spec.prec ?? spec.width ?? 1)
    }
    case 's': {
      const s = stringArg(next())
      return field(spec.prec !== undefined ? [...s].slice(0, spec.prec).join('') : s, spec)
    }
    case 'w': case 'p': return field(writeTerm(next(), ctrl === 'p', spec.unicode), spec, true)
    case 'W': case 'P': { const t = next(); next(); return field(writeTerm(t, ctrl === 'P', spec.unicode), spec, true) }
    case 'd': return field(intBase(next(), 10, false), spec)
    case 'b': case 'B': return field(intBase(next(), spec.prec ?? 10, ctrl === 'B'), spec)
    case 'x': case 'X': { const v = next(); const prefix = stringArg(next()); return field(prefix + intBase(v, spec.prec ?? 10, ctrl === 'X'), spec) }
    case '#': case '+': {
      const base = spec.prec ?? 10
      const v = next()
      const digits = intBase(v, base, ctrl === '#')
      const sign = digits.startsWith('-') ? '-' : ''
      return field(`${sign}${base}#${digits.replace('-', '')}`, spec)
    }
    case 'f': return field(numberArg(next(), 'f').toFixed(spec.prec ?? 6), spec)
    case 'e': return field(exp(numberArg(next(), 'e'), spec.prec ?? 6), spec)
    case 'g': {
      const x = numberArg(next(), 'g')
      const p = spec.prec ?? 6
      const a = Math.abs(x)
      return field(a >= 0.1 && a < 10 ** p ? x.toFixed(Math.max(p - 1 - Math.floor(Math.log10(a || 1)), 0)) : exp(x, p), spec)
    }
    case 'i': next(); return ''
    default: return fail(`unknown control sequence ~${ctrl}`)
  }
}

/** `~e`: `[-]d.ddde+dd` with `prec` digits in all (Erlang's `~e`). */
function exp (x: number, prec: number): string {
  return x.toExponential(Math.max(prec - 1, 0))
}

/** Formats `format` with `args` as `io_lib:format/2` does; a mismatch fails with `badarg`. */
export function sprintf (format: string, args: unknown[]): string {
  let out = ''
  let argi = 0
  const next = (): unknown => {
    if (argi >= args.length) fail('too few arguments for the format')
    return args[argi++]
  }
  const numOrStar = (s: string | undefined): number | undefined => {
    if (s === undefined || s === '') return undefined
    if (s === '*') { const v = next(); if (!isInt(v)) fail('* needs an integer'); return v }
    return Number(s)
  }
  const re = /~(-?(?:\d+|\*))?(?:\.(\d+|\*)?)?(?:\.(.))?([tl]*)(.)/y
  let i = 0
  while (i < format.length) {
    const tilde = format.indexOf('~', i)
    if (tilde === -1) { out += format.slice(i); break }
    out += format.slice(i, tilde)
    re.lastIndex = tilde
    const m = re.exec(format)
    if (m === null) fail('format ends inside a control sequence')
    const w = numOrStar(m[1]?.replace('-', ''))
    const left = (m[1]?.startsWith('-') ?? false) || (w !== undefined && w < 0)
    const spec: Spec = { width: w === undefined ? undefined : Math.abs(w), left, prec: numOrStar(m[2]), pad: m[3] ?? ' ', unicode: m[4].includes('t'), ctrl: m[5] }
    out += formatOne(spec, next)
    i = re.lastIndex
  }
  if (argi !== args.length) fail('too many arguments for the format')
  return out
}

/** `sprintf` (varargs) and `sprintf_s` (arguments in one array). */
export const sprintfFunctions: RuleFunction[] = [
  { name: 'sprintf', minArgs: 1, maxArgs: Infinity, fn: (f: unknown, ...args: unknown[]) => sprintf(textOf(FN, f), args) },
  {
    name: 'sprintf_s',
    minArgs: 2,
    maxArgs: 2,
    fn: (f: unknown, args: unknown) => {
      if (!Array.isArray(args)) throw new ConversionError('sprintf_s', 'function_clause', 'the arguments must be an array')
      return sprintf(textOf('sprintf_s', f), args)
    }
  }
]
