/**
 * Errors of the rule SQL: {@link SqlError} when a statement is created (syntax, unknown
 * function, wrong arity, bad FROM), {@link SqlEvalError} while a compiled statement runs.
 */

/** Line and column (both 1-based) of an offset in the SQL text. */
export function lineColumn (sql: string, offset: number): { line: number, column: number } {
  let line = 1
  let lineStart = 0
  const end = Math.min(offset, sql.length)
  for (let i = 0; i < end; i++) {
    if (sql.charCodeAt(i) === 10) { line++; lineStart = i + 1 }
  }
  return { line, column: end - lineStart + 1 }
}

/**
 * A statement that cannot be created. The message says what was expected or what is wrong
 * and where (`line:column`), e.g. `expected FROM at 1:23, found end of input`. The API
 * answers it as a bad request; the rule is not created.
 */
export class SqlError extends Error {
  override readonly name = 'SqlError'
  /** 1-based line of the offending token. */
  readonly line: number
  /** 1-based column of the offending token. */
  readonly column: number

  /**
   * @param message what is wrong, without the position (it is appended)
   * @param sql the whole statement
   * @param offset where in `sql` the problem is (0-based)
   */
  constructor (message: string, sql: string, readonly offset: number) {
    const { line, column } = lineColumn(sql, offset)
    super(`${message} at ${line}:${column}`)
    this.line = line
    this.column = column
  }
}

/**
 * A failure while a compiled statement runs: the statement does not match (spec Rule SQL
 * points 3 and 5). `reason` is EMQ X's crash reason where one applies: `decode_json_failed`,
 * `badarith`, `badarg`, `invalid_index`, `range_get_non_list` ...
 */
export class SqlEvalError extends Error {
  override readonly name = 'SqlEvalError'

  constructor (readonly reason: string, message: string) {
    super(message)
  }

  /**
   * An evaluation failure without a stack trace. Failures on the per-message path (a payload
   * that is not JSON, met by every rule that reads it) are counted and rarely logged; capturing
   * a stack for each was most of the cost of 100 rules on such a message.
   */
  static cheap (reason: string, message: string): SqlEvalError {
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    try {
      return new SqlEvalError(reason, message)
    } finally {
      Error.stackTraceLimit = limit
    }
  }
}
