/**
 * The shape of a rule SQL function as the SQL compiler sees it (spec: Rule SQL, functions
 * table; EMQ X 4.4 `emqx_rule_funcs`).
 */
import type { Columns } from './value-model.js'

/**
 * One SQL function. The compiler resolves the name and checks the argument count against
 * `minArgs`..`maxArgs` when the rule is created (an unknown name or a wrong count is an SQL
 * error naming the function); at run time it calls `fn` with the evaluated arguments.
 *
 * Invariants: `name` is lower case; `fn` never mutates its arguments (maps and arrays in the
 * columns are shared); a failure throws {@link ConversionError} (the statement does not match).
 */
export interface RuleFunction {
  /** The SQL name, lower case (`map_get`, `str_utf8`). */
  name: string
  /** The fewest arguments accepted. */
  minArgs: number
  /** The most arguments accepted; `Infinity` for varargs (`sprintf`). */
  maxArgs: number
  /**
   * The implementation. When {@link RuleFunction.contextual} is set the compiler passes the
   * event's columns as one extra, last argument after the SQL arguments.
   */
  fn: (...args: unknown[]) => unknown
  /**
   * Set for the functions that read the triggering event rather than their arguments
   * (`qos()`, `topic(2)`, `clientid()` ... EMQ X returns a closure over the columns for them).
   */
  contextual?: true
}

export type { Columns }
