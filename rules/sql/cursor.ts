/**
 * A position in the token list with the look-ahead and "expected X, found Y" helpers the
 * statement and expression parsers share.
 */
import { SqlError } from './errors.js'
import type { Token } from './lexer.js'
import { MAX_SQL_NESTING, nestingError } from './limits.js'

/** How a token reads in an error message. */
export function describeToken (t: Token): string {
  switch (t.kind) {
    case 'eof': return 'end of input'
    case 'kw': return t.text.toUpperCase()
    case 'string': return `string ${t.raw}`
    case 'number': return `number ${t.raw}`
    default: return `'${t.raw}'`
  }
}

/** Walks the tokens of one statement. Invariant: the last token is `eof`, never passed. */
export class Cursor {
  private pos = 0
  /** Offset just past the last consumed token (for the source text of a field). */
  lastEnd = 0
  /** How many sub-expressions the parser is inside ({@link descend}); a field, WHERE ... itself is level 0. */
  private nesting = -1

  constructor (readonly sql: string, private readonly tokens: Token[]) {}

  /**
   * Called as the parser enters a nested expression (`ascend` as it leaves): fails with
   * {@link SqlError} beyond {@link MAX_SQL_NESTING} levels, before the parser's own
   * recursion could overflow the stack.
   */
  descend (): void {
    if (++this.nesting > MAX_SQL_NESTING) throw nestingError(this.sql, this.peek().offset)
  }

  /** Leaves a level entered with {@link descend}. */
  ascend (): void {
    this.nesting--
  }

  /** The token `k` places ahead (the `eof` token when past the end). */
  peek (k = 0): Token {
    return this.tokens[Math.min(this.pos + k, this.tokens.length - 1)]
  }

  /** Consumes and returns the current token. */
  next (): Token {
    const t = this.tokens[this.pos]
    if (t.kind !== 'eof') this.pos++
    this.lastEnd = t.end
    return t
  }

  /** True when the token `k` ahead is keyword `word` (lower case). */
  isKw (word: string, k = 0): boolean {
    const t = this.peek(k)
    return t.kind === 'kw' && t.text === word
  }

  /** True when the token `k` ahead is punctuation `p`. */
  isPunct (p: string, k = 0): boolean {
    const t = this.peek(k)
    return t.kind === 'punct' && t.text === p
  }

  /** Consumes keyword `word` when it is next. */
  acceptKw (word: string): boolean {
    if (!this.isKw(word)) return false
    this.next()
    return true
  }

  /** Consumes punctuation `p` when it is next. */
  acceptPunct (p: string): boolean {
    if (!this.isPunct(p)) return false
    this.next()
    return true
  }

  /** Consumes keyword `word` or fails with "expected WORD". */
  expectKw (word: string, what = word.toUpperCase()): Token {
    if (!this.isKw(word)) this.fail(what)
    return this.next()
  }

  /** Consumes punctuation `p` or fails with "expected 'p'". */
  expectPunct (p: string, what = `'${p}'`): Token {
    if (!this.isPunct(p)) this.fail(what)
    return this.next()
  }

  /** Throws "expected <what>, found <token>" at the token (default: the current one). */
  fail (what: string, t: Token = this.peek()): never {
    throw new SqlError(`expected ${what}, found ${describeToken(t)}`, this.sql, t.offset)
  }

  /** Throws `message` at offset `at`. */
  failAt (message: string, at: number): never {
    throw new SqlError(message, this.sql, at)
  }
}
