/**
 * How deep a rule SQL statement may nest. The parser, the compiler and the compiled closures
 * recurse once per level, so without a bound a statement nested a few thousand levels deep
 * overflowed the stack when a rule was created (an HTTP 500 from `POST /rules`). Both bounds
 * are checked once, when the statement is parsed: the per-message path (the compiled
 * closures) is unchanged.
 *
 * - {@link MAX_SQL_NESTING}: levels the parser descends into: parentheses, function
 *   arguments, CASE parts, list items, indexes `a[...]`, IN lists, `NOT` and unary minus
 *   (each costs the parser about ten stack frames).
 * - {@link MAX_SQL_EXPR_DEPTH}: the depth of the expression tree the compiler and the
 *   closures walk. Binary operators are left-associative, so `a OR b OR c ...` is a tree
 *   one level deeper per operator: a chain of more than about 1,000 operators is refused
 *   (`x IN (1, 2, 3 ...)` is flat, whatever its length). Also the keys and indexes of one
 *   path or AS target: the output a field writes is that deep.
 */
import type { AliasStep, Statement } from './ast.js'
import { SqlError } from './errors.js'

/** At most this many levels of parentheses, calls, CASE, lists, indexes, NOT and unary minus inside one another (SQLite: 1,000). */
export const MAX_SQL_NESTING = 100

/** At most this deep an expression tree (each operator of a chain is one level). */
export const MAX_SQL_EXPR_DEPTH = 1000

/** The message of a statement nested deeper than {@link MAX_SQL_NESTING} (the position is appended). */
export function nestingError (sql: string, at: number): SqlError {
  return new SqlError(`expression nested more than ${MAX_SQL_NESTING} levels deep (parentheses, function calls, CASE, ` +
    'lists, indexes, NOT and unary minus inside one another)', sql, at)
}

/**
 * Throws {@link SqlError} when an expression of `statement` is deeper than
 * {@link MAX_SQL_EXPR_DEPTH}. Walks with its own stack: it must not overflow on what it
 * refuses.
 */
export function checkExpressionDepth (statement: Statement, sql: string): void {
  const roots: unknown[] = [statement.incase, statement.where]
  for (const f of [...statement.fields, ...statement.doFields]) {
    if (f.kind !== 'expr') continue
    roots.push(f.expr)
    const alias: AliasStep[] = f.alias ?? []
    if (alias.length > MAX_SQL_EXPR_DEPTH) throw pathError(sql, f.at)
    for (const st of alias) if (st.kind === 'dynindex') roots.push(st.index)
  }
  // Every object with a `kind` below an expression is one level (an Expr, or a path step,
  // which the compiler also walks through); arrays and plain objects (CASE's `{when, then}`)
  // are not. Written without naming the kinds, so that a new kind of Expr is walked too.
  const stack: Array<{ node: unknown, depth: number, at: number }> = []
  for (const root of roots) if (root !== null && root !== undefined) stack.push({ node: root, depth: 0, at: 0 })
  while (stack.length > 0) {
    const { node, depth: parentDepth, at: parentAt } = stack.pop()!
    if (typeof node !== 'object' || node === null) continue
    const counted = !Array.isArray(node) && typeof (node as { kind?: unknown }).kind === 'string'
    const depth = counted ? parentDepth + 1 : parentDepth
    const own = (node as { at?: unknown }).at
    const at = typeof own === 'number' ? own : parentAt
    // a path is read in a loop, but written (an unaliased field `payload.a.b` is its own
    // target) one recursion per key: as deep as the output it builds
    const steps = (node as { kind?: unknown, steps?: unknown }).kind === 'path' ? (node as { steps?: unknown }).steps : undefined
    if (Array.isArray(steps) && steps.length + 1 > MAX_SQL_EXPR_DEPTH) throw pathError(sql, at)
    if (depth > MAX_SQL_EXPR_DEPTH) {
      throw new SqlError(`expression more than ${MAX_SQL_EXPR_DEPTH} levels deep (each operator of a chain such as ` +
        `a OR b OR c ... is one level; the limit is ${MAX_SQL_EXPR_DEPTH}): use IN (...) or split the condition`, sql, at)
    }
    for (const value of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof value === 'object' && value !== null) stack.push({ node: value, depth, at })
    }
  }
}

/** A path or AS target of more than {@link MAX_SQL_EXPR_DEPTH} names, keys and indexes (`a.b[1]` is three). */
function pathError (sql: string, at: number): SqlError {
  return new SqlError(`path of more than ${MAX_SQL_EXPR_DEPTH} keys and indexes (a.b.c ... or AS a.b.c ...); the limit is ${MAX_SQL_EXPR_DEPTH}`, sql, at)
}
