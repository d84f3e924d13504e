/**
 * The rule-engine behaviour cases (`test/rules/fixtures/rule-cases.json`, transcribed from
 * EMQ X 4.4's own tests) and a matcher for their expectations, shared by the SQL and the
 * function tests.
 *
 * Expected values may hold markers (see the file's `_meta.markers`):
 *
 * | marker | matches |
 * |---|---|
 * | `{"$type": T}` | any value of type T: `string`, `integer`, `float`, `number`, `boolean`, `map`, `list`/`array`, `binary`, `any` |
 * | `{"$one_of": [...]}` | a value matching one of the list |
 * | `{"$any_value": V}` | a map with some value matching V |
 * | `{"$bytes_hex": "0a0b"}` | a Buffer (or Uint8Array) with these bytes |
 * | `{"$bits": "1011"}` | a bitstring with these bits: an object `{bytes, bitLength}` (rules/funcs BitString) or a string of 0/1 |
 * | `{"$error": true}` | never a value: the call must throw (use {@link isErrorMarker} before calling) |
 * | `{"$var": "T"}` | binds T on first sight, then must equal it ({@link MatchOptions.vars}) |
 *
 * `null` matches `null` or `undefined` (EMQ X's `undefined` is JSON null in the file).
 */
import { readFileSync } from 'node:fs'

/** One SQL case (`sql_cases`). */
export interface SqlCase {
  id: string
  test: string
  origin: 'test' | 'test-property' | 'derived'
  sql: string
  ctx: Record<string, unknown>
  expect: {
    result: 'ok' | 'nomatch' | 'error'
    output?: unknown
    match?: 'subset' | 'exact'
    same_values?: string[][]
    absent_keys?: string[]
    phase?: string
    error?: string
  }
  payload_is_decoded_map?: boolean
  note?: string
  unsure?: boolean
}

/** One function case (`func_cases`). */
export interface FuncCase {
  id: string
  test: string
  origin: 'test' | 'test-property' | 'derived'
  fn: string
  args: unknown[]
  expected: unknown
  ctx?: Record<string, unknown>
  note?: string
  unsure?: boolean
}

/** The whole cases file. */
export interface RuleCases {
  _meta: Record<string, unknown>
  sql_cases: SqlCase[]
  func_cases: FuncCase[]
  template_cases: unknown[]
}

/** Where the cases file is: a copy kept in the repository (provenance in fixtures/README.md). */
export const RULE_CASES_URL = new URL('./fixtures/rule-cases.json', import.meta.url)

/** One `maps_cases` entry of emqx44-cases.json: `emqx_rule_maps:nested_get/3` or `nested_put/3`. */
export interface MapsCase {
  id: string
  test: string
  origin: 'test' | 'test-property' | 'derived'
  op: 'get' | 'put'
  /** Steps: a string is a key, `{i: N}` an index, `'head'`/`'tail'` the `[0]`/`[-0]` positions. */
  path: Array<string | { i: number }>
  value?: unknown
  data: unknown
  default?: unknown
  expected: unknown
}

/** The second cases file: every transcribable assertion of EMQ X 4.4's function, SQL and maps suites. */
export interface Emqx44Cases {
  _meta: Record<string, unknown>
  func_cases: FuncCase[]
  sql_cases: SqlCase[]
  maps_cases: MapsCase[]
}

/** Where it is (provenance in fixtures/README.md). */
export const EMQX44_CASES_URL = new URL('./fixtures/emqx44-cases.json', import.meta.url)

/** Reads and parses emqx44-cases.json. */
export function loadEmqx44Cases (): Emqx44Cases {
  return JSON.parse(readFileSync(EMQX44_CASES_URL, 'utf8')) as Emqx44Cases
}

/** Reads and parses the cases file. */
export function loadRuleCases (): RuleCases {
  return JSON.parse(readFileSync(RULE_CASES_URL, 'utf8')) as RuleCases
}

/** True for `{"$error": true}`: the expectation is that the call throws. */
export function isErrorMarker (v: unknown): boolean {
  return isObject(v) && v.$error === true
}

/** Turns input markers into values: `$bytes_hex` into a Buffer, recursively in arrays and maps. */
export function decodeMarkers (v: unknown): unknown {
  if (Array.isArray(v)) return v.map(decodeMarkers)
  if (!isObject(v)) return v
  if (typeof v.$bytes_hex === 'string') return Buffer.from(v.$bytes_hex, 'hex')
  const out: Record<string, unknown> = {}
  for (const [k, x] of Object.entries(v)) out[k] = decodeMarkers(x)
  return out
}

/** How {@link matchValue} compares. */
export interface MatchOptions {
  /** `subset`: expected map keys must be present and match, extra keys allowed; `exact`: deep equality. */
  mode?: 'subset' | 'exact'
  /** Bindings of `$var` markers, filled on first sight. */
  vars?: Record<string, unknown>
}

/**
 * Compares `actual` with `expected` (markers allowed). Returns the problems found, each
 * with the path where it is (`$.payload.x[0]`); an empty list is a match.
 */
export function matchValue (actual: unknown, expected: unknown, options: MatchOptions = {}, path = '$'): string[] {
  const mode = options.mode ?? 'exact'
  if (expected === null) return actual === null || actual === undefined ? [] : [`${path}: expected null, got ${show(actual)}`]
  if (isObject(expected)) {
    const marker = matchMarker(actual, expected, options, path)
    if (marker !== null) return marker
    if (!isObject(actual)) return [`${path}: expected a map, got ${show(actual)}`]
    const problems: string[] = []
    for (const [k, x] of Object.entries(expected)) {
      const a = Object.hasOwn(actual, k) ? actual[k] : undefined
      if (a === undefined && x !== null) problems.push(`${path}.${k}: missing`)
      else problems.push(...matchValue(a, x, options, `${path}.${k}`))
    }
    if (mode === 'exact') {
      for (const k of Object.keys(actual)) {
        if (!Object.hasOwn(expected, k) && actual[k] !== undefined) problems.push(`${path}.${k}: not expected`)
      }
    }
    return problems
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${path}: expected an array, got ${show(actual)}`]
    if (actual.length !== expected.length) return [`${path}: expected ${expected.length} elements, got ${actual.length}: ${show(actual)}`]
    return expected.flatMap((x, i) => matchValue(actual[i], x, options, `${path}[${i}]`))
  }
  return Object.is(actual, expected) || actual === expected ? [] : [`${path}: expected ${show(expected)}, got ${show(actual)}`]
}

/** A marker's verdict, or null when `expected` is a plain map. */
function matchMarker (actual: unknown, expected: Record<string, unknown>, options: MatchOptions, path: string): string[] | null {
  const keys = Object.keys(expected)
  if (keys.length !== 1 || !keys[0].startsWith('$')) return null
  const [key] = keys
  const arg = expected[key]
  const fail = (what: string): string[] => [`${path}: expected ${what}, got ${show(actual)}`]
  switch (key) {
    case '$type': return hasType(actual, String(arg)) ? [] : fail(`a value of type ${String(arg)}`)
    case '$one_of': {
      const options1 = arg as unknown[]
      return options1.some(o => matchValue(actual, o, options, path).length === 0) ? [] : fail(`one of ${show(arg)}`)
    }
    case '$any_value':
      return isObject(actual) && Object.values(actual).some(v => matchValue(v, arg, options, path).length === 0)
        ? []
        : fail(`a map with a value ${show(arg)}`)
    case '$bytes_hex': {
      const bytes = actual instanceof Uint8Array ? Buffer.from(actual).toString('hex') : null
      return bytes === String(arg).toLowerCase() ? [] : fail(`bytes ${String(arg)}`)
    }
    case '$bits': return bitsOf(actual) === arg ? [] : fail(`bits ${String(arg)}`)
    case '$error': return fail('the call to throw')
    case '$var': {
      const vars = options.vars ?? {}
      const name = String(arg)
      if (!Object.hasOwn(vars, name)) { vars[name] = actual; return [] }
      return matchValue(actual, vars[name], { ...options, mode: 'exact' }, path)
    }
    default: return null
  }
}

function hasType (v: unknown, type: string): boolean {
  switch (type) {
    case 'any': return v !== undefined
    case 'string': return typeof v === 'string'
    case 'binary': return typeof v === 'string' || v instanceof Uint8Array
    case 'integer': return Number.isInteger(v)
    case 'float':
    case 'number': return typeof v === 'number' && Number.isFinite(v)
    case 'boolean': return typeof v === 'boolean'
    case 'map': return isObject(v)
    case 'list':
    case 'array': return Array.isArray(v)
    default: throw new Error(`unknown $type marker '${type}'`)
  }
}

function bitsOf (v: unknown): string | undefined {
  if (typeof v === 'string' && /^[01]*$/.test(v)) return v
  if (typeof v === 'object' && v !== null && 'bytes' in v && 'bitLength' in v) {
    const { bytes, bitLength } = v as { bytes: Uint8Array, bitLength: number }
    let bits = ''
    for (const b of bytes) bits += b.toString(2).padStart(8, '0')
    return bits.slice(0, bitLength)
  }
  return undefined
}

/**
 * Checks a case's whole expectation on an output: the output itself (`match` mode), then
 * `same_values` (each group of top-level or dotted keys holds one value) and `absent_keys`.
 */
export function matchExpectation (
  actual: unknown,
  expect: { output?: unknown, match?: 'subset' | 'exact', same_values?: string[][], absent_keys?: string[] },
  options: MatchOptions = {}
): string[] {
  const problems = matchValue(actual, expect.output, { ...options, mode: expect.match ?? 'exact' })
  for (const group of expect.same_values ?? []) {
    const values = group.map(k => dig(actual, k))
    if (values.some(v => v === undefined || !Object.is(v, values[0]))) {
      problems.push(`$: expected ${group.join(', ')} to hold the same value, got ${show(values)}`)
    }
  }
  for (const k of expect.absent_keys ?? []) {
    if (dig(actual, k) !== undefined) problems.push(`$.${k}: expected absent, got ${show(dig(actual, k))}`)
  }
  return problems
}

function dig (v: unknown, dotted: string): unknown {
  let cur = v
  for (const k of dotted.split('.')) cur = isObject(cur) && Object.hasOwn(cur, k) ? cur[k] : undefined
  return cur
}

function isObject (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array)
}

function show (v: unknown): string {
  if (v === undefined) return 'undefined'
  if (v instanceof Uint8Array) return `<bytes ${Buffer.from(v).toString('hex')}>`
  try {
    return JSON.stringify(v) ?? String(v)
  } catch {
    return String(v)
  }
}
