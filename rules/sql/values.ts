/**
 * The value semantics of the SQL operators, as EMQ X 4.4's `emqx_rule_runtime` and
 * `emqx_rule_funcs` define them on Erlang terms (see rules/funcs/value-model.ts for how
 * Erlang values map onto JavaScript):
 *
 * - `=` is Erlang `==` (deep; `1 = 1.0`), `!=`/`<>` its negation; `<` ... use Erlang's term
 *   order across types: number < atom (boolean, null) < map < list < binary.
 * - A number compared with a string converts the string (`'1'` -> 1; not a number -> error);
 *   a boolean or null compared with a string compares its name (`true = 'true'`).
 * - With one side undefined every comparison is false except `!=`/`<>` (true); with both
 *   undefined, `=`, `<=`, `>=` are true (cases t_sqlparse_compare_*).
 *
 * The arithmetic operators are the function library's (rules/funcs `lookupOperator`), as in
 * EMQ X where they live in `emqx_rule_funcs`; only unary minus is here.
 */
// the global `Buffer` is a getter in Node's ES modules: imported, it costs nothing per message
import { Buffer } from 'node:buffer'
import { SqlEvalError } from './errors.js'

/** A map (plain object): not null, not an array, not a Buffer or other class instance. */
export function isMap (v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/** A binary: a string or a Buffer. */
export function isBinary (v: unknown): v is string | Buffer {
  return typeof v === 'string' || Buffer.isBuffer(v)
}

function text (v: string | Buffer): string {
  return typeof v === 'string' ? v : v.toString('utf8')
}

/** Erlang's rank of a value's type in term order. */
function rank (v: unknown): number {
  if (typeof v === 'number') return 0
  if (typeof v === 'boolean' || v === null || v === undefined) return 1
  if (isBinary(v)) return 5
  if (Array.isArray(v)) return 4
  return 3 // maps and anything else
}

/** Erlang `==`: deep equality where numbers compare by value and strings equal Buffers of their bytes. */
export function termEqual (a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a === 'string' && typeof b === 'string') return false
  if (isBinary(a) && isBinary(b)) return Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!termEqual(a[i], b[i])) return false
    return true
  }
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a)
    if (ka.length !== Object.keys(b).length) return false
    for (const k of ka) if (!Object.hasOwn(b, k) || !termEqual(a[k], b[k])) return false
    return true
  }
  return false
}

/** Erlang term order: negative, zero or positive. */
export function termCompare (a: unknown, b: unknown): number {
  const ra = rank(a)
  const rb = rank(b)
  if (ra !== rb) return ra - rb
  switch (ra) {
    case 0: return (a as number) - (b as number)
    case 1: return cmp(String(a), String(b))
    case 5:
      if (typeof a === 'string' && typeof b === 'string') return cmp(a, b)
      return Buffer.compare(Buffer.from(a as string | Buffer), Buffer.from(b as string | Buffer))
    case 4: {
      const la = a as unknown[]
      const lb = b as unknown[]
      for (let i = 0; i < la.length && i < lb.length; i++) {
        const c = termCompare(la[i], lb[i])
        if (c !== 0) return c
      }
      return la.length - lb.length
    }
    default: {
      if (!isMap(a) || !isMap(b)) return 0
      const ka = Object.keys(a).sort()
      const kb = Object.keys(b).sort()
      if (ka.length !== kb.length) return ka.length - kb.length
      const byKeys = termCompare(ka, kb)
      if (byKeys !== 0) return byKeys
      for (const k of ka) {
        const c = termCompare(a[k], b[k])
        if (c !== 0) return c
      }
      return 0
    }
  }
}

function cmp (a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Erlang `binary_to_integer`, then `binary_to_float`; anything else is `badarg`. */
export function binaryToNumber (v: string | Buffer): number {
  const s = text(v)
  if (/^[+-]?\d+$/.test(s)) return Number(s)
  if (/^[+-]?\d+\.\d+(?:[eE][+-]?\d+)?$/.test(s)) return Number(s)
  throw new SqlEvalError('badarg', `cannot compare a number with the string ${JSON.stringify(s)}`)
}

/**
 * `L op R` for the comparison operators other than `=~` (see the module comment).
 * Throws {@link SqlEvalError} when a string compared with a number is not a number.
 */
export function compareValues (op: string, l: unknown, r: unknown): boolean {
  if (l === undefined || r === undefined) {
    if (l === undefined && r === undefined) return op === '=' || op === '<=' || op === '>='
    return op === '!=' || op === '<>'
  }
  if (typeof l === 'number' && isBinary(r)) r = binaryToNumber(r)
  else if (isBinary(l) && typeof r === 'number') l = binaryToNumber(l)
  else if ((typeof l === 'boolean' || l === null) && isBinary(r)) l = String(l)
  else if (isBinary(l) && (typeof r === 'boolean' || r === null)) r = String(r)
  switch (op) {
    case '=': return termEqual(l, r)
    case '!=':
    case '<>': return !termEqual(l, r)
    case '<': return termCompare(l, r) < 0
    case '<=': return termCompare(l, r) <= 0
    case '>': return termCompare(l, r) > 0
    default: return termCompare(l, r) >= 0
  }
}

/** A comparison of two values of one primitive kind (number or string), where JavaScript agrees with Erlang. */
type Fast = (l: number | string, r: number | string) => boolean

const FAST: Record<string, Fast> = {
  '=': (l, r) => l === r,
  '!=': (l, r) => l !== r,
  '<>': (l, r) => l !== r,
  '<': (l, r) => l < r,
  '<=': (l, r) => l <= r,
  '>': (l, r) => l > r,
  '>=': (l, r) => l >= r
}

/**
 * `op` as a function, for the compiler: two numbers or two strings are compared directly
 * (the common case), anything else by {@link compareValues}. One function per operator,
 * shared by every statement, so the optimiser sees one target where a statement calls it.
 */
export function comparator (op: string): (l: unknown, r: unknown) => boolean {
  const cmp = COMPARATORS.get(op)
  if (cmp === undefined) throw new Error(`no comparison operator '${op}'`)
  return cmp
}

const COMPARATORS = new Map(Object.entries(FAST).map(([op, fast]) => [op, (l: unknown, r: unknown): boolean => {
  const tl = typeof l
  if ((tl === 'number' || tl === 'string') && typeof r === tl) return fast(l as number | string, r as number | string)
  return compareValues(op, l, r)
}]))

/** Unary minus. */
export function negate (v: unknown): number {
  if (typeof v === 'number') return -v
  throw new SqlEvalError('badarith', `-${describe(v)}: not a number`)
}

/** A short description of a value for error messages. */
export function describe (v: unknown): string {
  if (v === undefined) return 'undefined'
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v)
  if (Buffer.isBuffer(v)) return `binary(${v.length} bytes)`
  if (Array.isArray(v)) return `array(${v.length})`
  if (isMap(v)) return 'map'
  return String(v)
}
