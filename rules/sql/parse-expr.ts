/**
 * Expressions of the rule SQL, by precedence from loosest to tightest:
 *
 * | level | forms |
 * |---|---|
 * | or | `a OR b` |
 * | and | `a AND b` |
 * | not | `NOT a` (binds looser than comparisons: `NOT x = 1` is `NOT (x = 1)`) |
 * | comparison | `= != <> < <= > >= =~`, `IN (...)`, `NOT IN (...)` |
 * | additive | `+ -` |
 * | multiplicative | `* / DIV MOD` |
 * | unary | `-a`, `+a` |
 * | postfix | `a.key`, `a.'key-with-dash'`, `a[1]`, `a[-1]`, `a[i]`, `a[2..4]` |
 * | primary | literals, names, `f(...)`, `( ... )`, `CASE ... END`, `[a, b]`, `[1..5]` |
 *
 * All binary operators are left-associative. A double-quoted token is a name (`"clientid"`),
 * and so is a single-quoted string directly followed by `.` (`'User-Property'.foo`), as in EMQ X 4.
 */
import type { ArithOp, CompareOp, Expr, PathStep } from './ast.js'
import type { Cursor } from './cursor.js'

const COMPARE_OPS: ReadonlySet<string> = new Set(['=', '!=', '<>', '<', '<=', '>', '>=', '=~'])

/**
 * Parses one expression at the cursor. Every nested expression (parentheses, arguments, CASE
 * parts, list items, indexes) is parsed by a call of this function, which counts the level
 * (limits.ts); so do the NOT and unary minus chains below, which recurse without it.
 */
export function parseExpr (c: Cursor): Expr {
  c.descend()
  let left = parseAnd(c)
  while (c.isKw('or')) {
    const at = c.next().offset
    left = { kind: 'logic', op: 'or', left, right: parseAnd(c), at }
  }
  c.ascend()
  return left
}

function parseAnd (c: Cursor): Expr {
  let left = parseNot(c)
  while (c.isKw('and')) {
    const at = c.next().offset
    left = { kind: 'logic', op: 'and', left, right: parseNot(c), at }
  }
  return left
}

function parseNot (c: Cursor): Expr {
  if (c.isKw('not')) {
    const at = c.next().offset
    c.descend()
    const arg = parseNot(c)
    c.ascend()
    return { kind: 'not', arg, at }
  }
  return parseComparison(c)
}

function parseComparison (c: Cursor): Expr {
  let left = parseAdditive(c)
  for (;;) {
    const t = c.peek()
    if (t.kind === 'punct' && COMPARE_OPS.has(t.text)) {
      c.next()
      left = { kind: 'compare', op: t.text as CompareOp, left, right: parseAdditive(c), at: t.offset }
    } else if (c.isKw('in') || (c.isKw('not') && c.isKw('in', 1))) {
      const negated = c.acceptKw('not')
      c.next()
      left = { kind: 'in', arg: left, items: parseParenList(c), negated, at: t.offset }
    } else {
      return left
    }
  }
}

function parseParenList (c: Cursor): Expr[] {
  c.expectPunct('(', "'(' after IN")
  const items: Expr[] = []
  if (!c.isPunct(')')) {
    do items.push(parseExpr(c)); while (c.acceptPunct(','))
  }
  c.expectPunct(')', "',' or ')'")
  return items
}

function parseAdditive (c: Cursor): Expr {
  let left = parseMultiplicative(c)
  while (c.isPunct('+') || c.isPunct('-')) {
    const t = c.next()
    left = { kind: 'arith', op: t.text as ArithOp, left, right: parseMultiplicative(c), at: t.offset }
  }
  return left
}

function parseMultiplicative (c: Cursor): Expr {
  let left = parseUnary(c)
  while (c.isPunct('*') || c.isPunct('/') || c.isKw('div') || c.isKw('mod')) {
    const t = c.next()
    left = { kind: 'arith', op: t.text as ArithOp, left, right: parseUnary(c), at: t.offset }
  }
  return left
}

function parseUnary (c: Cursor): Expr {
  if (c.isPunct('-')) {
    const at = c.next().offset
    c.descend()
    const arg = parseUnary(c)
    c.ascend()
    if (arg.kind === 'const' && typeof arg.value === 'number') return { kind: 'const', value: -arg.value, at }
    return { kind: 'neg', arg, at }
  }
  if (c.acceptPunct('+')) {
    c.descend()
    const arg = parseUnary(c)
    c.ascend()
    return arg
  }
  return parsePostfix(c)
}

function parsePostfix (c: Cursor): Expr {
  const root = parsePrimary(c)
  const steps: PathStep[] = []
  for (;;) {
    if (c.acceptPunct('.')) {
      steps.push({ kind: 'key', key: parseKey(c) })
    } else if (c.isPunct('[')) {
      c.next()
      steps.push(parseBracket(c))
    } else {
      break
    }
  }
  if (steps.length === 0) return root
  return { kind: 'path', root, steps, at: root.at }
}

/** A key after `.`: a name, a keyword used as a name, or a quoted string. */
export function parseKey (c: Cursor): string {
  const t = c.peek()
  if (t.kind === 'ident' || t.kind === 'kw' || t.kind === 'string') {
    c.next()
    return t.kind === 'string' ? t.text : t.raw
  }
  return c.fail('a key after \'.\'')
}

/** An integer literal with an optional minus, or null (cursor unchanged) when there is none. */
export function acceptSignedInt (c: Cursor): { value: number, negative: boolean } | null {
  const negative = c.isPunct('-')
  const t = c.peek(negative ? 1 : 0)
  if (t.kind !== 'number' || !/^\d+$/.test(t.text)) return null
  if (negative) c.next()
  c.next()
  return { value: negative ? -(t.value as number) : (t.value as number), negative }
}

/** After `[`: `n]`, `-n]`, `a..b]` or `<expr>]`. */
function parseBracket (c: Cursor): PathStep {
  if (rangeAhead(c)) {
    const from = acceptSignedInt(c) as { value: number }
    c.expectPunct('..')
    const to = acceptSignedInt(c) ?? c.fail('an integer after \'..\'')
    c.expectPunct(']')
    return { kind: 'range', from: from.value, to: to.value }
  }
  const k = c.isPunct('-') ? 1 : 0
  if (c.peek(k).kind === 'number' && c.isPunct(']', k + 1)) {
    const n = acceptSignedInt(c)
    if (n !== null) {
      const at = c.next().offset
      return { kind: 'index', index: { kind: 'const', value: n.value, at }, negZero: n.negative && n.value === 0 }
    }
  }
  const index = parseExpr(c)
  c.expectPunct(']')
  return { kind: 'index', index, negZero: false }
}

function parsePrimary (c: Cursor): Expr {
  const t = c.peek()
  switch (t.kind) {
    case 'number':
      c.next()
      return { kind: 'const', value: t.value, at: t.offset }
    case 'string':
      c.next()
      // "name" in double quotes is a name, as in EMQ X 4 (rulesql lexes it as NAME); so is
      // 'User-Property' directly followed by '.' (a quoted name starting a path)
      if (t.quote === '"' || c.isPunct('.')) return { kind: 'var', name: t.text, at: t.offset }
      return { kind: 'const', value: t.text, at: t.offset }
    case 'ident':
      c.next()
      if (c.isPunct('(')) return parseCall(c, t.text, t.offset)
      return { kind: 'var', name: t.text, at: t.offset }
    case 'kw':
      if (t.text === 'true' || t.text === 'false') {
        c.next()
        return { kind: 'const', value: t.text === 'true', at: t.offset }
      }
      if (t.text === 'case') return parseCase(c)
      // mod(X, Y): EMQ X 4 has no `mod` operator, only the function (we have both)
      if (t.text === 'mod' && c.isPunct('(', 1)) {
        c.next()
        return parseCall(c, 'mod', t.offset)
      }
      return c.fail('an expression')
    case 'punct':
      if (t.text === '(') {
        c.next()
        const e = parseExpr(c)
        c.expectPunct(')')
        return e
      }
      if (t.text === '[') return parseListLiteral(c)
      return c.fail('an expression')
    default:
      return c.fail('an expression')
  }
}

function parseCall (c: Cursor, name: string, at: number): Expr {
  c.expectPunct('(')
  const args: Expr[] = []
  if (!c.isPunct(')')) {
    do args.push(parseExpr(c)); while (c.acceptPunct(','))
  }
  c.expectPunct(')', `',' or ')' in the arguments of ${name}`)
  return { kind: 'call', name, args, at }
}

function parseListLiteral (c: Cursor): Expr {
  const at = c.expectPunct('[').offset
  if (rangeAhead(c)) {
    const from = acceptSignedInt(c) as { value: number }
    c.expectPunct('..')
    const to = acceptSignedInt(c) ?? c.fail('an integer after \'..\'')
    c.expectPunct(']')
    return { kind: 'seq', from: from.value, to: to.value, at }
  }
  const items: Expr[] = []
  if (!c.isPunct(']')) {
    do items.push(parseExpr(c)); while (c.acceptPunct(','))
  }
  c.expectPunct(']', "',' or ']'")
  return { kind: 'list', items, at }
}

/** True when the next tokens are `n ..` or `- n ..` (a range, not an expression). */
function rangeAhead (c: Cursor): boolean {
  const k = c.isPunct('-') ? 1 : 0
  return c.peek(k).kind === 'number' && c.isPunct('..', k + 1)
}

function parseCase (c: Cursor): Expr {
  const at = c.expectKw('case').offset
  const subject = c.isKw('when') ? null : parseExpr(c)
  const whens: Array<{ when: Expr, then: Expr }> = []
  while (c.acceptKw('when')) {
    const when = parseExpr(c)
    c.expectKw('then')
    whens.push({ when, then: parseExpr(c) })
  }
  if (whens.length === 0) c.fail('WHEN')
  const otherwise = c.acceptKw('else') ? parseExpr(c) : null
  c.expectKw('end', whens.length > 0 ? 'WHEN, ELSE or END' : 'END')
  return { kind: 'case', subject, whens, otherwise, at }
}
