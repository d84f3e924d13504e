/**
 * Every case of test/rules/fixtures/emqx44-cases.json: the assertions of EMQ X 4.4's
 * emqx_rule_funcs_SUITE, emqx_rulesql_SUITE and emqx_rule_maps_SUITE that can be written as
 * data, and cases derived from its SQL grammar (provenance in fixtures/README.md). Functions
 * run as the compiler calls them, statements through the SQL tester (as EMQ X's sqltester ran
 * them), maps cases on the path code the compiled statements use (rules/sql/nested.ts).
 *
 * A case our value model cannot reproduce is listed in DEVIATIONS with what we answer and why
 * (docs/rule-sql.md, "What stays different"); it must answer exactly that.
 */
import { applyFunction, BitString, lookupFunction, lookupOperator, type RuleFunction } from '../../rules/funcs/index.js'
import { testSql } from '../../rules/sql/index.js'
import { getIndex, getKey, newScope, PayloadCache, putPath, type PutStep, type Scope } from '../../rules/sql/nested.js'
import { decodeMarkers, isErrorMarker, loadEmqx44Cases, matchExpectation, matchValue, type FuncCase, type MapsCase, type SqlCase } from './conformance.js'

const cases = loadEmqx44Cases()

/** Cases where we answer differently on purpose: what we answer, and why. */
const DEVIATIONS: Record<string, { ours: unknown, why: string }> = {
  't_str#6': { ours: '2', why: 'str(2.0): one number type, an integral float is an integer' },
  't_str#14': { ours: '2', why: 'str_utf8(2.0): one number type, an integral float is an integer' },
  't_is_float#2': { ours: false, why: 'is_float(2.0): one number type, an integral float is an integer' },
  't_is_str#5': { ours: true, why: 'is_str(a) on the atom a: atoms are strings here' },
  't_proc_dict_put_get_del#1': { ours: 'unknown function', why: 'proc_dict_* keep values in the Erlang process dictionary; not provided' },
  't_term_encode#1': { ours: 'unknown function', why: 'term_encode/term_decode are the Erlang external term format; not provided' },
  't_term_encode#2': { ours: 'unknown function', why: 'as t_term_encode#1' },
  't_term_encode#3': { ours: 'unknown function', why: 'as t_term_encode#1' }
}

function resolve (name: string): RuleFunction | undefined {
  return lookupFunction(name) ?? lookupOperator(name)
}

function call (name: string, args: unknown[], ctx: Record<string, unknown> = {}): unknown {
  const f = resolve(name)
  if (f === undefined) throw new Error(`unknown function ${name}`)
  if (args.length < f.minArgs || args.length > f.maxArgs) throw new Error(`${name} does not take ${args.length} arguments`)
  return applyFunction(f, args, ctx)
}

/** Arguments in our value model: markers decoded (`$bits` as a bitstring), JSON null as undefined. */
function toArgs (args: unknown[]): unknown[] {
  return args.map((a) => {
    if (a === null) return undefined
    if (typeof a === 'object' && a !== null && typeof (a as { $bits?: unknown }).$bits === 'string') {
      const bits = (a as { $bits: string }).$bits
      const bytes = Buffer.alloc(Math.ceil(bits.length / 8))
      for (let i = 0; i < bits.length; i++) if (bits[i] === '1') bytes[i >> 3] |= 0x80 >> (i & 7)
      return new BitString(bytes, bits.length)
    }
    return decodeMarkers(a)
  })
}

/**
 * A binary is a string or a Buffer here (printable UTF-8 results are strings): where the case
 * expects bytes, a string is compared by its UTF-8 bytes.
 */
function asExpectedBinaries (actual: unknown, expected: unknown): unknown {
  if (typeof expected !== 'object' || expected === null) return actual
  if (typeof (expected as { $bytes_hex?: unknown }).$bytes_hex === 'string' && typeof actual === 'string') return Buffer.from(actual, 'utf8')
  if (Array.isArray(expected) && Array.isArray(actual)) return actual.map((a, i) => asExpectedBinaries(a, expected[i]))
  return actual
}

/** The compositions (round trips) the file writes as `f(g(X))`. */
function runCompound (c: FuncCase, args: unknown[]): unknown {
  switch (c.fn) {
    case 'hexstr2bin(bin2hexstr(X))': return call('hexstr2bin', [call('bin2hexstr', args)])
    case 'gunzip(gzip(X))': return call('gunzip', [call('gzip', args)])
    case 'unzip(zip(X))': return call('unzip', [call('zip', args)])
    case 'zip_uncompress(zip_compress(X))': return call('zip_uncompress', [call('zip_compress', args)])
    case 'base64_decode(base64_encode(X))': return call('base64_decode', [call('base64_encode', args)])
    case 'concat(concat(A,B),C)': return call('concat', [call('concat', args.slice(0, 2)), args[2]])
    case 'term_decode(term_encode(X))': return call('term_decode', [call('term_encode', args)])
    case 'rfc3339_to_unix_ts(now_rfc3339())': return call('rfc3339_to_unix_ts', [call('now_rfc3339', [])])
    case 'rfc3339_to_unix_ts(now_rfc3339(U),U)': return call('rfc3339_to_unix_ts', [call('now_rfc3339', args), args[0]])
    case 'rfc3339_to_unix_ts(unix_ts_to_rfc3339(T,U),U)': {
      const t = call('now_timestamp', args)
      const back = call('rfc3339_to_unix_ts', [call('unix_ts_to_rfc3339', [t, args[0]]), args[0]])
      return back === t ? t : { t, back }
    }
    case 'date_to_unix_ts(format_date(...))': {
      const [unit, offset, fmt, ...parse] = args
      const s = call('now_timestamp', [unit])
      const back = call('date_to_unix_ts', [...parse, call('format_date', [unit, offset, fmt, s])])
      return back === s ? s : { s, back }
    }
    default: throw new Error(`unknown composition ${c.fn}`)
  }
}

/** What a function case answers: its value, `thrown` for an error, or `unknown function`. */
function answer (c: FuncCase): { value: unknown } | { thrown: unknown } {
  const args = toArgs(c.args)
  try {
    return { value: c.fn.includes('(') ? runCompound(c, args) : call(c.fn, args, c.ctx) }
  } catch (err) {
    return { thrown: err }
  }
}

function funcProblems (c: FuncCase): string[] {
  const r = answer(c)
  const deviation = DEVIATIONS[c.id]
  if (deviation !== undefined) {
    if ('thrown' in r) return String((r.thrown as Error).message).includes(String(deviation.ours)) ? [] : [`expected our deviation ${String(deviation.ours)}, got ${String(r.thrown)}`]
    return matchValue(r.value, deviation.ours)
  }
  if (isErrorMarker(c.expected)) return 'thrown' in r ? [] : [`expected an error, got ${JSON.stringify(r.value)}`]
  if ('thrown' in r) return [`threw ${String((r.thrown as Error).message)}`]
  return matchValue(asExpectedBinaries(r.value, c.expected), c.expected, { mode: 'exact', vars: {} })
}

function sqlProblems (c: SqlCase): string[] {
  const r = testSql({ rawsql: c.sql, ctx: c.ctx }, { node: 'test@127.0.0.1' })
  switch (c.expect.result) {
    case 'ok':
      return r.ok ? matchExpectation(r.output, c.expect, { vars: {} }) : [`expected output, got ${JSON.stringify(r)}`]
    case 'nomatch':
      return !r.ok && r.reason === 'nomatch' ? [] : [`expected no match, got ${JSON.stringify(r)}`]
    default:
      return !r.ok && r.reason === 'error' && r.phase === c.expect.phase && r.error === c.expect.error
        ? []
        : [`expected ${String(c.expect.phase)} ${String(c.expect.error)}, got ${JSON.stringify(r)}`]
  }
}

function steps (path: MapsCase['path']): PutStep[] {
  return path.map((st) => typeof st === 'string'
    ? (st === 'head' || st === 'tail' ? { index: st } : { key: st })
    : { index: st.i })
}

function mapsProblems (c: MapsCase): string[] {
  const s: Scope = newScope({}, new PayloadCache())
  const data = c.data === null ? undefined : c.data
  let actual: unknown
  if (c.op === 'get') {
    actual = data
    for (const st of c.path) {
      if (actual === undefined) break
      actual = typeof st === 'string' ? getKey(actual, st, s) : getIndex(actual, st.i, s)
    }
    if (actual === undefined && c.default !== undefined) actual = c.default
  } else {
    actual = putPath(data, steps(c.path), c.value === null ? undefined : c.value, s)
  }
  return matchValue(actual, c.expected, { mode: 'exact' })
}

describe('EMQ X 4.4 rule-engine cases (emqx44-cases.json)', () => {
  it('has the counts its _meta states', () => {
    expect(cases._meta.counts).toEqual({ func_cases: cases.func_cases.length, sql_cases: cases.sql_cases.length, maps_cases: cases.maps_cases.length })
  })

  describe('emqx_rule_funcs_SUITE', () => {
    it.each(cases.func_cases.map((c) => [`${c.id} ${c.fn}(${JSON.stringify(c.args).slice(1, -1).slice(0, 60)})`, c] as const))('%s', (_t, c) => {
      expect(funcProblems(c)).toEqual([])
    })
  })

  describe('emqx_rulesql_SUITE and the grammar', () => {
    it.each(cases.sql_cases.map((c) => [`${c.id}: ${c.sql.trim().slice(0, 90)}`, c] as const))('%s', (_t, c) => {
      expect(sqlProblems(c)).toEqual([])
    })
  })

  describe('emqx_rule_maps_SUITE', () => {
    it.each(cases.maps_cases.map((c) => [`${c.id} nested_${c.op} ${JSON.stringify(c.path)}`, c] as const))('%s', (_t, c) => {
      expect(mapsProblems(c)).toEqual([])
    })
  })

  it('lists only deviations that are cases of the file', () => {
    const ids = new Set(cases.func_cases.map((c) => c.id))
    expect(Object.keys(DEVIATIONS).filter((id) => !ids.has(id))).toEqual([])
  })
})
