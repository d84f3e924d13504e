/**
 * Expressions compiled to closures `(scope) => value`, once, when the rule is created:
 * per message nothing is parsed or walked. Function names are resolved and their argument
 * counts checked here (an unknown name or a wrong count is an {@link SqlError}); operators
 * over constants are folded.
 */
// the global `Buffer` is a getter in Node's ES modules: imported, it costs nothing per message
import { Buffer } from 'node:buffer'
import type { Expr, PathStep } from './ast.js'
import { SqlError, SqlEvalError } from './errors.js'
import { DeferredResult } from '../funcs/errors.js'
import { decodePayload, getIndex, getKey, getRange, type Scope } from './nested.js'
import { topicMatch } from './topic-match.js'
import { comparator, describe, negate, termEqual } from './values.js'

/** A compiled expression. */
export type Ev = (s: Scope) => unknown

/** One SQL function as the compiler needs it (the contract of rules/funcs/index.ts). */
export interface SqlFunction {
  name: string
  minArgs: number
  maxArgs: number
  fn: (...args: unknown[]) => unknown
  /** When set, the event's columns are passed as one extra, last argument. */
  contextual?: true
}

/** Resolves a function name (lower case) to its definition. */
export type FunctionLookup = (name: string) => SqlFunction | undefined

/** What compiling needs: the statement (for error positions), the functions and the operators. */
export interface CompileEnv {
  sql: string
  lookupFunction: FunctionLookup
  /** The arithmetic operators `+ - * / div mod` as two-argument functions. */
  lookupOperator: FunctionLookup
}

/** Reads `name` from the output so far, then from the columns (own keys only). */
export function compileVar (name: string): Ev {
  if (name in Object.prototype) {
    return s => {
      const v = Object.hasOwn(s.sel, name) ? s.sel[name] : undefined
      return v !== undefined ? v : Object.hasOwn(s.cols, name) ? s.cols[name] : undefined
    }
  }
  return s => {
    const v = s.sel[name]
    return v !== undefined ? v : s.cols[name]
  }
}

function constant (e: Ev): { value: unknown } | null {
  return (e as { constValue?: { value: unknown } }).constValue ?? null
}

function makeConst (value: unknown): Ev {
  const f: Ev = () => value
  ;(f as { constValue?: { value: unknown } }).constValue = { value }
  return f
}

/** Folds `f` over constant arguments at compile time when it does not throw. */
function fold (args: Ev[], f: Ev): Ev {
  if (!args.every(a => constant(a) !== null)) return f
  try {
    const v = f(null as unknown as Scope)
    return typeof v === 'object' && v !== null ? f : makeConst(v)
  } catch {
    return f // fails at run time, as EMQ X does
  }
}

/** Compiles an expression. */
export function compileExpr (e: Expr, env: CompileEnv): Ev {
  switch (e.kind) {
    case 'const': return makeConst(e.value)
    case 'var': return compileVar(e.name)
    case 'path': return compilePath(e.root, e.steps, e.at, env)
    case 'list': {
      const items = e.items.map(i => compileExpr(i, env))
      return s => items.map(f => f(s))
    }
    case 'seq': {
      if (e.to < e.from - 1) throw new SqlError(`empty range [${e.from}..${e.to}]`, env.sql, e.at)
      const seq = Array.from({ length: e.to - e.from + 1 }, (_, i) => e.from + i)
      return () => seq.slice()
    }
    case 'neg': {
      const a = compileExpr(e.arg, env)
      return fold([a], s => negate(a(s)))
    }
    case 'not': {
      const a = compileExpr(e.arg, env)
      return fold([a], s => {
        const v = a(s)
        return typeof v === 'boolean' ? !v : false
      })
    }
    case 'arith': {
      const l = compileExpr(e.left, env)
      const r = compileExpr(e.right, env)
      const op = env.lookupOperator(e.op)
      if (op === undefined) throw new SqlError(`operator '${e.op}' is not available`, env.sql, e.at)
      const fn = op.fn
      const name = e.op
      return fold([l, r], s => {
        const a = l(s)
        const b = r(s)
        try { return fn(a, b) } catch (err) { throw asEvalError(name, err) }
      })
    }
    case 'compare': return compileCompare(e.op, compileExpr(e.left, env), compileExpr(e.right, env))
    case 'logic': {
      const l = compileExpr(e.left, env)
      const r = compileExpr(e.right, env)
      return e.op === 'and'
        ? fold([l, r], s => l(s) === true && r(s) === true)
        : fold([l, r], s => l(s) === true || r(s) === true)
    }
    case 'in': {
      const a = compileExpr(e.arg, env)
      const items = e.items.map(i => compileExpr(i, env))
      const negated = e.negated
      return s => {
        const v = a(s)
        for (const item of items) if (termEqual(v, item(s))) return !negated
        return negated
      }
    }
    case 'case': return compileCase(e, env)
    case 'call': return compileCall(e.name, e.args, e.at, env)
  }
}

function compileCompare (op: string, l: Ev, r: Ev): Ev {
  if (op !== '=~') {
    const cmp = comparator(op)
    return fold([l, r], s => cmp(l(s), r(s)))
  }
  const filter = constant(r)
  if (filter !== null && typeof filter.value === 'string') {
    const f = filter.value
    return s => {
      const t = l(s)
      if (typeof t === 'string') return topicMatch(t, f)
      return t === undefined ? false : topicMatch(topicText(t), f)
    }
  }
  return s => {
    const t = l(s)
    const f = r(s)
    if (t === undefined || f === undefined) return false
    return topicMatch(topicText(t), topicText(f))
  }
}

function topicText (v: unknown): string {
  if (typeof v === 'string') return v
  if (Buffer.isBuffer(v)) return v.toString('utf8')
  throw new SqlEvalError('badarg', `=~ needs a topic and a topic filter, got ${describe(v)}`)
}

/** A path: the root, then each step; a root named `payload` is decoded as JSON first. */
function compilePath (root: Expr, steps: PathStep[], at: number, env: CompileEnv): Ev {
  const last = steps[steps.length - 1]
  if (last !== undefined && last.kind === 'range') {
    // EMQ X `{get_range, Range, Path}`: the range applies to what the path gives, undefined
    // included (a missing key is `range_get non_list_data`, an error, not undefined)
    if (last.from === 0 || last.to === 0) throw new SqlError('index 0 in a range (indexes start at 1; -1 is the last)', env.sql, at)
    const base = compilePath(root, steps.slice(0, -1), at, env)
    const { from, to } = last
    return s => getRange(base(s), from, to)
  }
  if (root.kind !== 'var') {
    const walk = compileWalk(steps, at, env)
    const r = compileExpr(root, env)
    return s => walk(r(s), s)
  }
  const name = root.name
  const payload = name === 'payload'
  const safe = !(name in Object.prototype)
  // The common path `payload.x.y` is walked by plain functions (readName, walkKeys), not by
  // closures made per rule: the optimiser inlines those; a call to one of many closures of
  // the same shape (one per rule) it cannot.
  const keys = steps.every(st => st.kind === 'key') ? steps.map(st => (st as { key: string }).key) : null
  const walk = keys === null ? compileWalk(steps, at, env) : null
  // EMQ X tries the path on the output so far, then on the columns
  return s => {
    let v = readName(s.sel, name, safe)
    if (v !== undefined) {
      if (payload) v = decodePayload(v, s)
      const r = keys !== null ? walkKeys(v, keys, s) : walk!(v, s)
      if (r !== undefined) return r
    }
    v = readName(s.cols, name, safe)
    if (v === undefined) return undefined
    if (payload) v = decodePayload(v, s)
    return keys !== null ? walkKeys(v, keys, s) : walk!(v, s)
  }
}

/** `o[name]`, own keys only (`safe`: `name` is not a key of Object.prototype, so any key found is own). */
function readName (o: Record<string, unknown>, name: string, safe: boolean): unknown {
  return safe ? o[name] : Object.hasOwn(o, name) ? o[name] : undefined
}

/** `v.k1.k2...`; undefined as soon as a step finds nothing. */
function walkKeys (v: unknown, keys: readonly string[], s: Scope): unknown {
  for (let i = 0; i < keys.length && v !== undefined; i++) v = getKey(v, keys[i], s)
  return v
}

type Walk = (v: unknown, s: Scope) => unknown

function compileWalk (steps: PathStep[], at: number, env: CompileEnv): Walk {
  if (steps.every(st => st.kind === 'key')) {
    const keys = steps.map(st => (st as { key: string }).key)
    if (keys.length === 1) {
      const k = keys[0]
      return (v, s) => getKey(v, k, s)
    }
    const n = keys.length
    return (v, s) => {
      for (let i = 0; i < n && v !== undefined; i++) v = getKey(v, keys[i], s)
      return v
    }
  }
  const fns: Walk[] = steps.map(st => {
    if (st.kind === 'key') return (v, s) => getKey(v, st.key, s)
    if (st.kind === 'range') {
      if (st.from === 0 || st.to === 0) throw new SqlError('index 0 in a range (indexes start at 1; -1 is the last)', env.sql, at)
      return v => getRange(v, st.from, st.to)
    }
    const i = compileExpr(st.index, env)
    return (v, s) => getIndex(v, i(s), s)
  })
  return (v, s) => {
    for (let i = 0; i < fns.length && v !== undefined; i++) v = fns[i](v, s)
    return v
  }
}

function compileCase (e: Extract<Expr, { kind: 'case' }>, env: CompileEnv): Ev {
  const whens = e.whens.map(w => ({ when: compileExpr(w.when, env), then: compileExpr(w.then, env) }))
  const otherwise = e.otherwise === null ? null : compileExpr(e.otherwise, env)
  const rest = (s: Scope): unknown => otherwise === null ? undefined : otherwise(s)
  if (e.subject === null) {
    return s => {
      for (const w of whens) if (w.when(s) === true) return w.then(s)
      return rest(s)
    }
  }
  const subject = compileExpr(e.subject, env)
  return s => {
    const v = subject(s)
    for (const w of whens) if (termEqual(w.when(s), v)) return w.then(s)
    return rest(s)
  }
}

function compileCall (written: string, argExprs: Expr[], at: number, env: CompileEnv): Ev {
  const name = written.toLowerCase()
  const f = env.lookupFunction(name)
  if (f === undefined) throw new SqlError(`unknown function '${written}'`, env.sql, at)
  const n = argExprs.length
  if (n < f.minArgs || n > f.maxArgs) {
    const takes = f.minArgs === f.maxArgs
      ? `${f.minArgs}`
      : f.maxArgs === Infinity ? `at least ${f.minArgs}` : `${f.minArgs} to ${f.maxArgs}`
    throw new SqlError(`function '${name}' takes ${takes} argument${takes === '1' ? '' : 's'}, got ${n}`, env.sql, at)
  }
  const args = argExprs.map(a => compileExpr(a, env))
  const fn = f.fn
  const fail = (err: unknown): never => { throw asEvalError(name, err) }
  if (f.contextual === true) {
    return s => {
      const values = args.map(a => a(s))
      values.push(s.cols)
      try { return fn(...values) } catch (err) { return fail(err) }
    }
  }
  // fixed arities are called without building an argument array
  switch (n) {
    case 0: return () => { try { return fn() } catch (err) { return fail(err) } }
    case 1: {
      const [a0] = args
      return s => { const v0 = a0(s); try { return fn(v0) } catch (err) { return fail(err) } }
    }
    case 2: {
      const [a0, a1] = args
      return s => { const v0 = a0(s); const v1 = a1(s); try { return fn(v0, v1) } catch (err) { return fail(err) } }
    }
    case 3: {
      const [a0, a1, a2] = args
      return s => {
        const v0 = a0(s); const v1 = a1(s); const v2 = a2(s)
        try { return fn(v0, v1, v2) } catch (err) { return fail(err) }
      }
    }
    default:
      return s => { const values = args.map(a => a(s)); try { return fn(...values) } catch (err) { return fail(err) } }
  }
}

/** A function's failure as a run-time error of the statement (its reason kept when it has one). */
function asEvalError (name: string, err: unknown): SqlEvalError {
  if (err instanceof SqlEvalError) return err
  // not a failure: the engine evaluates the statement again when the answer is in
  if (err instanceof DeferredResult) throw err
  const reason = typeof (err as { reason?: unknown })?.reason === 'string' ? (err as { reason: string }).reason : 'function_failed'
  const message = err instanceof Error ? err.message : String(err)
  const e = new SqlEvalError(reason, message.startsWith(name) ? message : `${name}: ${message}`)
  ;(e as { cause?: unknown }).cause = err
  return e
}
