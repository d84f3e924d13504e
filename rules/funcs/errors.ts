/**
 * Errors a rule SQL function raises. EMQ X 4 lets a function crash (`function_clause`,
 * `badarg`, `badarith` ...) and the rule engine catches the crash per rule: the statement
 * does not match and the rule's `failed` counter moves (spec Rule SQL point 5). Here every
 * such crash is a {@link ConversionError}, so the compiler has one class to catch.
 */

/**
 * An argument a function cannot work with: a value of the wrong type, a text that does not
 * parse as the number, boolean, JSON or date asked for, an index out of range, a math domain
 * error. The statement that called the function does not match; other rules are unaffected.
 */
export class ConversionError extends Error {
  override readonly name = 'ConversionError'

  /**
   * @param fn the SQL function that failed (lower case, as in SQL)
   * @param reason EMQ X's crash reason where one applies: `function_clause`, `badarg`,
   *   `badarith`, `invalid_number`, `invalid_boolean`, `invalid_map` ...
   * @param detail what was wrong, for logs and the SQL tester
   */
  constructor (readonly fn: string, readonly reason: string, detail: string) {
    super(`${fn}: ${detail} (${reason})`)
  }
}

/**
 * A function the table knows but whose implementation is provided by a service that has not
 * registered it yet: `schema_encode`/`schema_decode` before the schema registry starts. The
 * rule is created (the name and arity are known) and fails at run time until registration.
 */
export class FunctionUnavailableError extends Error {
  override readonly name = 'FunctionUnavailableError'
  /** The failure reason shown by the SQL tester and in logs. */
  readonly reason = 'function_unavailable'

  constructor (readonly fn: string, what: string) {
    super(`${fn}: ${what} not available; start it before running rules that call ${fn}`)
  }
}

/**
 * Not a failure: a function whose answer comes from elsewhere (a `3rd-party` codec service)
 * started fetching it and cannot return it in this call. The statement's evaluation stops
 * and the rule engine evaluates the rule again for the same event once `ready` settles;
 * by then the function answers at once (it keeps the result for a while).
 */
export class DeferredResult extends Error {
  override readonly name = 'DeferredResult'

  constructor (readonly fn: string, readonly ready: Promise<unknown>) {
    super(`${fn}: waiting for an answer`)
  }
}

/** Shorthand for the common crash: `fn` got an argument of a type it has no clause for. */
export function badArg (fn: string, value: unknown, expected: string): ConversionError {
  return new ConversionError(fn, 'function_clause', `expected ${expected}, got ${describe(value)}`)
}

/** A short description of a value for error messages (type and a clipped rendering). */
export function describe (value: unknown): string {
  if (value === undefined) return 'undefined'
  if (value === null) return 'null'
  if (Buffer.isBuffer(value)) return `binary(${value.length} bytes)`
  if (Array.isArray(value)) return `array(${value.length})`
  if (typeof value === 'string') return `string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '...' : value)}`
  if (typeof value === 'object') return 'map'
  return `${typeof value} ${String(value)}`
}
