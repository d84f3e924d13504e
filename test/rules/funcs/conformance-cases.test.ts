/**
 * Every `func_cases` entry of test/rules/fixtures/rule-cases.json (transcribed from EMQ X
 * 4.4's emqx_rule_funcs_SUITE), run against the function table with the shared loader and
 * marker matcher (test/rules/conformance.ts): `null` is EMQ X's `undefined`, `{$bytes_hex}` a
 * binary, `{$type}` any value of a type, `{$error: true}` a raising call, `{$var}` a round-trip
 * variable. Operators (`+`, `*`, `div`, `mod`) come from lookupOperator.
 */
import { applyFunction, lookupFunction, lookupOperator, type RuleFunction } from '../../../rules/funcs/index.js'
import { decodeMarkers, isErrorMarker, loadRuleCases, matchValue, type FuncCase } from '../conformance.js'

const cases = loadRuleCases().func_cases

/**
 * Cases our value model cannot reproduce, with what we return instead. JavaScript has one
 * number type and JSON.parse reads `2.0` as `2`, so an integral float is an integer here
 * (rules/funcs/value-model.ts).
 */
const DEVIATIONS: Record<string, { ours: unknown, why: string }> = {
  't_str#5': { ours: '2', why: 'str(2.0): an integral float is an integer here' },
  't_is_float#2': { ours: false, why: 'is_float(2.0): an integral float is an integer here' }
}

function resolve (name: string): RuleFunction {
  const f = lookupFunction(name) ?? lookupOperator(name)
  if (f === undefined) throw new Error(`no function ${name}`)
  return f
}

/** Calls as the compiler does: the argument count checked, the columns passed to event readers. */
function call (name: string, args: unknown[], ctx: Record<string, unknown> = {}): unknown {
  const f = resolve(name)
  expect(args.length).toBeGreaterThanOrEqual(f.minArgs)
  expect(args.length).toBeLessThanOrEqual(f.maxArgs)
  return applyFunction(f, args, ctx)
}

/** Case arguments in our value model: markers decoded, JSON null as EMQ X's undefined. */
function toArgs (args: unknown[]): unknown[] {
  return (decodeMarkers(args) as unknown[]).map((a) => (a === null ? undefined : a))
}

/** The round-trip cases written as nested calls over a `$var`. */
function runCompound (c: FuncCase): void {
  if (c.fn === 'rfc3339_to_unix_ts(unix_ts_to_rfc3339(T,u),u)') {
    const unit = c.args[1] as string
    const t = call('now_timestamp', [unit])
    expect(call('rfc3339_to_unix_ts', [call('unix_ts_to_rfc3339', [t, unit]), unit])).toBe(t)
    return
  }
  if (c.fn === 'date_to_unix_ts(format_date(...))') {
    const [unit, offset, fmt] = c.args as [string, string, string]
    const s = call('now_timestamp', [unit])
    const text = call('format_date', [unit, offset, fmt, s])
    // #1 parses with the same 4 arguments; #2 with date_to_unix_ts/3 (see the case's note)
    const back = c.id.endsWith('#1') ? call('date_to_unix_ts', [unit, offset, fmt, text]) : call('date_to_unix_ts', [unit, fmt, text])
    expect(back).toBe(s)
    return
  }
  throw new Error(`unknown compound case ${c.fn}`)
}

describe('EMQ X 4.4 func_cases', () => {
  it('has the 149 cases this suite was written for', () => {
    expect(cases).toHaveLength(149)
  })

  it.each(cases.map((c) => [c.id, c] as const))('%s', (_id, c) => {
    if (c.fn.includes('(')) {
      runCompound(c)
      return
    }
    const args = toArgs(c.args)
    if (isErrorMarker(c.expected)) {
      expect(() => call(c.fn, args, c.ctx)).toThrow()
      return
    }
    const actual = call(c.fn, args, c.ctx)
    const deviation = DEVIATIONS[c.id]
    if (deviation !== undefined) {
      expect(actual).toEqual(deviation.ours)
      return
    }
    expect(matchValue(actual, c.expected, { mode: 'exact' })).toEqual([])
  })
})
