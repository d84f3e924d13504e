/**
 * The syntax tree of a rule SQL statement. Every node keeps the offset of its first token
 * (`at`) so the compiler can report problems (unknown function, wrong arity) where they are.
 */

/** Arithmetic operators. `/` divides as floats, `div` is integer division, `mod` the remainder. */
export type ArithOp = '+' | '-' | '*' | '/' | 'div' | 'mod'

/** Comparison operators; `=~` matches a topic (left) against a topic filter (right). */
export type CompareOp = '=' | '!=' | '<>' | '<' | '<=' | '>' | '>=' | '=~'

/** One step of a path: a map key, an array index (1-based, negative from the end) or a range. */
export type PathStep =
  | { kind: 'key', key: string }
  | { kind: 'index', index: Expr, negZero: boolean }
  | { kind: 'range', from: number, to: number }

/** An expression. */
export type Expr =
  | { kind: 'const', value: unknown, at: number }
  /** A bare name: a column, an alias selected before, or a FOREACH element name. */
  | { kind: 'var', name: string, at: number }
  /** `root.key[1].x` and `root[2..4]`; `root` is usually a `var`. */
  | { kind: 'path', root: Expr, steps: PathStep[], at: number }
  /** `[a, b, c]` */
  | { kind: 'list', items: Expr[], at: number }
  /** `[1..5]`: the integers from `from` to `to`. */
  | { kind: 'seq', from: number, to: number, at: number }
  | { kind: 'neg', arg: Expr, at: number }
  | { kind: 'not', arg: Expr, at: number }
  | { kind: 'arith', op: ArithOp, left: Expr, right: Expr, at: number }
  | { kind: 'compare', op: CompareOp, left: Expr, right: Expr, at: number }
  | { kind: 'logic', op: 'and' | 'or', left: Expr, right: Expr, at: number }
  | { kind: 'in', arg: Expr, items: Expr[], negated: boolean, at: number }
  /** `CASE [subject] WHEN w THEN t ... [ELSE e] END`; without subject each `when` is a condition. */
  | { kind: 'case', subject: Expr | null, whens: Array<{ when: Expr, then: Expr }>, otherwise: Expr | null, at: number }
  | { kind: 'call', name: string, args: Expr[], at: number }

/** One step of an `AS` target: a key, or an index where `head` prepends (`[0]`) and `tail` appends (`[-0]`). */
export type AliasStep =
  | { kind: 'key', key: string }
  | { kind: 'index', index: number | 'head' | 'tail' }
  | { kind: 'dynindex', index: Expr }

/** One item of a SELECT, FOREACH or DO list. */
export type Field =
  | { kind: 'star', at: number }
  | {
    kind: 'expr'
    expr: Expr
    /** The `AS` target; null when the field has none. */
    alias: AliasStep[] | null
    /** The expression as written (used as the output key of an unaliased computed field). */
    text: string
    at: number
  }

/** One quoted name after FROM. */
export interface FromItem {
  text: string
  at: number
}

/** A whole statement. */
export interface Statement {
  kind: 'select' | 'foreach'
  /** SELECT fields, or the FOREACH list (the last item is the collection). */
  fields: Field[]
  /** FOREACH ... DO fields (empty: each element's output is the columns plus the element). */
  doFields: Field[]
  /** FOREACH ... INCASE condition. */
  incase: Expr | null
  from: FromItem[]
  where: Expr | null
}
