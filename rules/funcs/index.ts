/**
 * The rule SQL function table (spec: Rule SQL, functions; EMQ X 4.4 `emqx_rule_funcs`). The
 * SQL compiler resolves every call here when a rule is created ({@link lookupFunction}, then
 * checks the argument count) and calls `fn` per message. Services add functions at start-up
 * with {@link registerFunction} (the schema registry provides `schema_encode`/`schema_decode`).
 *
 * Invariant: the table is keyed by lower-case name; a name maps to one {@link RuleFunction}
 * covering all its arities (`substr/2` and `substr/3` are one entry with minArgs 2, maxArgs 3).
 */
import { FunctionUnavailableError } from './errors.js'
import { arithmeticOperators, bitwiseFunctions, mathFunctions } from './math.js'
import { conversionFunctions, typeTestFunctions } from './conversion.js'
import { stringFunctions } from './string.js'
import { sprintfFunctions } from './sprintf.js'
import { arrayFunctions, mapFunctions } from './map-array.js'
import { codecFunctions, randomFunctions } from './codec.js'
import { bitFunctions } from './bits.js'
import { timeFunctions } from './time.js'
import { dateFormatFunctions } from './date-format.js'
import { contextFunctions } from './context.js'
import type { Columns, RuleFunction } from './types.js'

export type { Columns, RuleFunction } from './types.js'
export { ConversionError, FunctionUnavailableError } from './errors.js'
export { BitString } from './value-model.js'

/** `schema_decode(SchemaId, Data[, MessageType])`, `schema_encode(SchemaId, Map[, MessageType])`. */
const schemaPlaceholders: RuleFunction[] = ['schema_encode', 'schema_decode'].map((name) => ({
  name,
  minArgs: 2,
  maxArgs: 3,
  fn: () => { throw new FunctionUnavailableError(name, 'schema registry') }
}))

const builtins: RuleFunction[] = [
  ...mathFunctions, ...bitwiseFunctions, ...conversionFunctions, ...typeTestFunctions,
  ...stringFunctions, ...sprintfFunctions, ...mapFunctions, ...arrayFunctions,
  ...codecFunctions, ...randomFunctions, ...bitFunctions, ...timeFunctions,
  ...dateFormatFunctions, ...contextFunctions, ...schemaPlaceholders
]

const table = new Map<string, RuleFunction>()
for (const f of builtins) {
  if (table.has(f.name)) throw new Error(`rule function ${f.name} defined twice`)
  table.set(f.name, f)
}

const operators = new Map<string, RuleFunction>(arithmeticOperators.map((f) => [f.name, f]))
// EMQ X 4.4's SQL has no `mod` operator, only `mod(X, Y)` (emqx_rule_funcs:mod/2); ours has both
table.set('mod', operators.get('mod') as RuleFunction)

/** The function SQL calls `name` (case-insensitive), or undefined for an unknown name. */
export function lookupFunction (name: string): RuleFunction | undefined {
  return table.get(name.toLowerCase())
}

/** Every function in the table, sorted by name (for the API, CLI and docs). */
export function listFunctions (): RuleFunction[] {
  return [...table.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/**
 * Adds `fn` to the table, or replaces the entry of the same name (the schema registry replaces
 * the `schema_encode`/`schema_decode` placeholders). Returns a function that restores what
 * was there before, for a service's `stop()`.
 */
export function registerFunction (fn: RuleFunction): () => void {
  const name = fn.name.toLowerCase()
  if (name !== fn.name) fn = { ...fn, name }
  const previous = table.get(name)
  table.set(name, fn)
  return () => {
    if (table.get(name) !== fn) return
    if (previous === undefined) table.delete(name)
    else table.set(name, previous)
  }
}

/**
 * The arithmetic operator `op` (`+ - * / div mod`) as EMQ X evaluates it, for the compiler:
 * `+` also concatenates strings, `div`/`mod` need integers. Of these only `mod` is also a
 * function of the table (`mod(7, 2)`, as in EMQ X 4.4, whose SQL has no `mod` operator).
 */
export function lookupOperator (op: string): RuleFunction | undefined {
  return operators.get(op.toLowerCase())
}

/**
 * Calls `f` with evaluated `args` for an event with `columns`, passing the columns to the
 * functions that read the event ({@link RuleFunction.contextual}). A compiler may specialise
 * this per call site instead; the result is the same.
 */
export function applyFunction (f: RuleFunction, args: unknown[], columns: Columns): unknown {
  return f.contextual === true ? f.fn(...args, columns) : f.fn(...args)
}
