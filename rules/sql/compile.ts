/**
 * A rule SQL statement compiled once into closures (spec: Rule SQL; EMQ X 4.4
 * `emqx_rule_runtime` semantics):
 *
 * - SELECT: fields are evaluated in order into the output; later fields and WHERE see the
 *   aliases of earlier ones (`SELECT payload.cmd AS cmd ... WHERE cmd.info = 'tt'`). `*`
 *   copies every column. A field whose value is undefined is left out of the output.
 * - FOREACH: the list's last item is the collection (non-arrays give no items) and is
 *   named by its alias or `item`; WHERE sees the columns and the list's aliases; then per
 *   element, INCASE filters, and DO selects (without DO the output is every column, the
 *   aliases and the element).
 * - A run fails (no match) on a payload that is not JSON where a path reads it, on a
 *   function that cannot convert its input and on bad operands; {@link CompiledSql.evaluate}
 *   tells which phase failed, with EMQ X's phase names.
 */
import { lookupFunction, lookupOperator } from '../funcs/index.js'
import type { AliasStep, Expr, Field, Statement } from './ast.js'
import { compileExpr, compileVar, type CompileEnv, type Ev, type FunctionLookup } from './compile-expr.js'
import { SqlError, SqlEvalError } from './errors.js'
import { DeferredResult } from '../funcs/errors.js'
import { decodePayload, ensureList, mergeInto, nestedPut, newScope, NOT_JSON, payloadCacheOf, type PayloadCache, setOwn, type PutStep, type Scope } from './nested.js'
import { parseStatement } from './parser.js'
import { resolveFrom, type SqlDialect, type SqlSource } from './sources.js'
import { topicMatch } from './topic-match.js'
import { isBinary } from './values.js'

/** EMQ X's names of the phase a run failed in. */
export type SqlPhase =
  | 'select_and_transform_error' | 'select_and_collect_error' | 'match_conditions_error'
  | 'match_incase_error' | 'doeach_error'

/** Why a run did not produce output. */
export interface SqlFailure {
  phase: SqlPhase
  /** EMQ X's reason: `decode_json_failed`, `badarith`, `badarg`, a function's reason ... */
  reason: string
  message: string
}

/** The result of {@link CompiledSql.evaluate}. */
export type SqlOutcome =
  | { matched: true, outputs: Array<Record<string, unknown>> }
  | { matched: false, failure: SqlFailure | null }

/** A compiled statement. Safe to share: a run keeps its state in its own scope. */
export interface CompiledSql {
  readonly sql: string
  readonly kind: 'select' | 'foreach'
  /** `spec` (FROM names hook events) or `emqx4` (topic filters and `$events/...`). */
  readonly dialect: SqlDialect
  readonly sources: readonly SqlSource[]
  /** The hook events the statement listens to (`message.publish`, `client.connected` ...; {@link HookEvent}s). */
  readonly events: readonly string[]
  /** Topic filters a publish must match (EMQ X 4 dialect); null: publishes are not filtered. */
  readonly topicFilters: readonly string[] | null
  /** True when a publish on `topic` is for this statement (always, when `topicFilters` is null). */
  matchesTopic: (topic: string) => boolean
  /**
   * Runs the statement on an event's columns: one output for SELECT, one per element for
   * FOREACH (possibly none), or null when it does not match or fails. `payloads` shares
   * decoded payloads between the statements run on one event (default: the cache of the
   * `columns` object, see payloadCacheOf in nested.ts).
   */
  run: (columns: Record<string, unknown>, payloads?: PayloadCache) => Array<Record<string, unknown>> | null
  /** As {@link CompiledSql.run}, telling a failure (with its phase) from a WHERE that is false. */
  evaluate: (columns: Record<string, unknown>, payloads?: PayloadCache) => SqlOutcome
}

/** {@link CompiledSql.evaluate}. */
type Evaluate = (cols: Record<string, unknown>, payloads?: PayloadCache) => SqlOutcome

/** Writes one field into `s.sel`. */
type FieldFn = (s: Scope) => void

const NOMATCH: SqlOutcome = { matched: false, failure: null }

function failure (phase: SqlPhase, err: unknown): SqlOutcome {
  // not a failure: the caller evaluates the statement again once the answer is in
  if (err instanceof DeferredResult) throw err
  if (err instanceof SqlEvalError) return { matched: false, failure: { phase, reason: err.reason, message: err.message } }
  const message = err instanceof Error ? err.message : String(err)
  return { matched: false, failure: { phase, reason: 'internal_error', message } }
}

/** Options of {@link compileSql}. */
export interface CompileOptions {
  /** The SQL functions (default: the library in rules/funcs). */
  lookupFunction?: FunctionLookup
  /** The arithmetic operators `+ - * / div mod` (default: the library's). */
  lookupOperator?: FunctionLookup
}

/**
 * Compiles a statement once, when a rule is created. Throws {@link SqlError} (with
 * `line:column`) for a syntax error, an unknown function or a wrong argument count, or a
 * FROM that names neither events nor valid topic filters.
 */
export function compileSql (sql: string, options: CompileOptions = {}): CompiledSql {
  return compileStatement(sql, options.lookupFunction ?? lookupFunction, options.lookupOperator ?? lookupOperator)
}

/** Compiles `sql` with the given functions and operators; throws {@link SqlError}. */
export function compileStatement (sql: string, lookupFunction: FunctionLookup, lookupOperator: FunctionLookup): CompiledSql {
  const ast = parseStatement(sql)
  const from = resolveFrom(sql, ast.from)
  const env: CompileEnv = { sql, lookupFunction, lookupOperator }
  const evaluate = ast.kind === 'select' ? compileSelect(ast, env) : compileForeach(ast, env)
  const filters = from.topicFilters
  return {
    sql,
    kind: ast.kind,
    dialect: from.dialect,
    sources: from.sources,
    events: from.events,
    topicFilters: filters,
    matchesTopic: filters === null ? () => true : topic => filters.some(f => topicMatch(topic, f)),
    evaluate,
    run: (columns, payloads) => {
      const r = evaluate(columns, payloads)
      return r.matched ? r.outputs : null
    }
  }
}

function compileSelect (ast: Statement, env: CompileEnv): Evaluate {
  const fields = ast.fields.map(f => compileField(f, env))
  const where = ast.where === null ? null : compileExpr(ast.where, env)
  // WHERE reads names from the selection built so far, then from the columns. When it names
  // nothing a field writes (`*` only copies columns), it sees the same values before the fields
  // run: test it first, so a rule that does not match costs no SELECT work (most rules on a busy
  // event do not match).
  const written = fieldNames(ast.fields)
  const whereFirst = where !== null && !namesUsed(ast.where!).some(n => written.has(n))
  const first = whereFirst ? ast.where : ast.fields[0].kind === 'expr' ? ast.fields[0].expr : null
  const payloadFirst = first !== null && decodesPayloadFirst(first)
  const phase: SqlPhase = whereFirst ? 'match_conditions_error' : 'select_and_transform_error'
  return (cols, payloads = payloadCacheOf(cols)) => {
    if (payloadFirst && isNotJson(cols.payload, payloads)) return failure(phase, payloads.notJsonError(cols.payload as string | Buffer))
    const s = newScope(cols, payloads)
    if (whereFirst) {
      try {
        if (where!(s) !== true) return NOMATCH
      } catch (err) {
        return failure('match_conditions_error', err)
      }
    }
    try {
      for (let i = 0; i < fields.length; i++) fields[i](s)
    } catch (err) {
      return failure('select_and_transform_error', err)
    }
    if (where !== null && !whereFirst) {
      try {
        if (where(s) !== true) return NOMATCH
      } catch (err) {
        return failure('match_conditions_error', err)
      }
    }
    return { matched: true, outputs: [s.sel] }
  }
}

function compileForeach (ast: Statement, env: CompileEnv): Evaluate {
  const helpers = ast.fields.slice(0, -1).map(f => compileField(f, env))
  const last = ast.fields[ast.fields.length - 1] as Extract<Field, { kind: 'expr' }>
  const collection = compileCollection(last.expr, env)
  const first = helpers.length === 0 ? last.expr : ast.fields[0].kind === 'expr' ? ast.fields[0].expr : null
  const payloadFirst = first !== null && (isPayload(first) || decodesPayloadFirst(first))
  let itemKey = 'item'
  let lastPut: PutStep[]
  if (last.alias !== null) {
    if (last.alias.length !== 1 || last.alias[0].kind !== 'key') {
      throw new SqlError("the FOREACH collection's alias must be a plain name", env.sql, last.at)
    }
    itemKey = (last.alias[0] as { key: string }).key
    lastPut = [{ key: itemKey }]
  } else {
    lastPut = compileTarget(inferAlias(last), env)
  }
  const where = ast.where === null ? null : compileExpr(ast.where, env)
  const incase = ast.incase === null ? null : compileExpr(ast.incase, env)
  const doFields = ast.doFields.map(f => compileField(f, env))
  return (cols, payloads = payloadCacheOf(cols)) => {
    if (payloadFirst && isNotJson(cols.payload, payloads)) return failure('select_and_collect_error', payloads.notJsonError(cols.payload as string | Buffer))
    const s = newScope(cols, payloads)
    let items: unknown[]
    try {
      for (let i = 0; i < helpers.length; i++) helpers[i](s)
      const value = collection(s)
      nestedPut(s.sel, lastPut, value, s)
      items = ensureList(value)
    } catch (err) {
      return failure('select_and_collect_error', err)
    }
    if (where !== null) {
      try {
        if (where(s) !== true) return NOMATCH
      } catch (err) {
        return failure('match_conditions_error', err)
      }
    }
    const base = mergeInto(mergeInto({}, cols), s.sel)
    const outputs: Array<Record<string, unknown>> = []
    for (const item of items) {
      // without DO each element's output is its own copy of the row; with DO the row is
      // only read, so one row (ours) serves every element
      const row = doFields.length === 0 ? mergeInto({}, base) : base
      setOwn(row, itemKey, item)
      s.cols = row
      s.sel = {}
      try {
        if (incase !== null && incase(s) !== true) continue
      } catch (err) {
        return failure('match_incase_error', err)
      }
      if (doFields.length === 0) { outputs.push(row); continue }
      try {
        for (let i = 0; i < doFields.length; i++) doFields[i](s)
      } catch (err) {
        return failure('doeach_error', err)
      }
      outputs.push(s.sel)
    }
    return { matched: true, outputs }
  }
}

/** FOREACH over the bare `payload` decodes it (EMQ X `ensure_list`). */
function compileCollection (e: Expr, env: CompileEnv): Ev {
  if (isPayload(e)) {
    const v = compileVar('payload')
    return s => decodePayload(v(s), s)
  }
  return compileExpr(e, env)
}

const isPayload = (e: Expr): boolean => e.kind === 'var' && e.name === 'payload'

/**
 * Whether evaluating `e` starts by decoding the payload column as JSON (`payload.x > 1`,
 * `payload.a = 1 and ...`, `lower(payload.s)`): the leftmost operand, which the compiled
 * closures evaluate first, is a path on `payload`. Evaluated with an empty selection (WHERE
 * tested first, the first field), such a statement fails on a payload that is not JSON
 * before doing anything else, so that is decided from the event's {@link PayloadCache},
 * without running the closures to the error and throwing it: a republished message whose
 * payload is not JSON then costs every rule reading it one cache lookup.
 */
function decodesPayloadFirst (e: Expr): boolean {
  switch (e.kind) {
    case 'path': return isPayload(e.root) || decodesPayloadFirst(e.root)
    case 'compare': case 'arith': case 'logic': return decodesPayloadFirst(e.left)
    case 'neg': case 'not': case 'in': return decodesPayloadFirst(e.arg)
    case 'call': case 'list': {
      const args = e.kind === 'call' ? e.args : e.items
      return args.length > 0 && decodesPayloadFirst(args[0])
    }
    case 'case': {
      const head = e.subject ?? e.whens[0]?.when
      return head !== undefined && decodesPayloadFirst(head)
    }
    default: return false
  }
}

/** Whether `payload` (a column) is a text that is not JSON, decided once per event by `payloads`. */
function isNotJson (payload: unknown, payloads: PayloadCache): boolean {
  return isBinary(payload) && payloads.decode(payload) === NOT_JSON
}

function compileField (f: Field, env: CompileEnv): FieldFn {
  if (f.kind === 'star') return s => { mergeInto(s.sel, s.cols) }
  const value = compileExpr(f.expr, env)
  const target = compileTarget(f.alias ?? inferAlias(f), env)
  if (target.length === 1) {
    const key = (target[0] as { key: string }).key
    return s => {
      const v = value(s)
      if (v !== undefined) setOwn(s.sel, key, v)
    }
  }
  return s => nestedPut(s.sel, target, value(s), s)
}

function compileTarget (steps: AliasStep[], env: CompileEnv): PutStep[] {
  return steps.map(st => {
    if (st.kind === 'key') return { key: st.key }
    if (st.kind === 'index') return { index: st.index }
    return { dyn: compileExpr(st.index, env) }
  })
}

/**
 * The output key of a field without AS (EMQ X `alias/1`): a name is itself, a path is the
 * same path (`payload.x[2]` writes `{payload: {x: [..]}}`), a trailing range is dropped, a
 * string constant is its text; anything else is keyed by the expression as written.
 */
/** The top-level output names the fields write (explicit aliases and inferred ones). */
function fieldNames (fields: Field[]): Set<string> {
  const names = new Set<string>()
  for (const f of fields) {
    if (f.kind !== 'expr') continue
    const target = f.alias ?? inferAlias(f)
    const first = target[0]
    if (first !== undefined && first.kind === 'key') names.add(first.key)
    else names.add(f.text)
  }
  return names
}

/** The names an expression looks up (roots of paths included). */
function namesUsed (e: Expr, out: string[] = []): string[] {
  switch (e.kind) {
    case 'var': out.push(e.name); break
    case 'path':
      namesUsed(e.root, out)
      for (const st of e.steps) if (st.kind === 'index') namesUsed(st.index, out)
      break
    case 'list': for (const x of e.items) namesUsed(x, out); break
    case 'neg': case 'not': namesUsed(e.arg, out); break
    case 'arith': case 'compare': case 'logic': namesUsed(e.left, out); namesUsed(e.right, out); break
    case 'in': namesUsed(e.arg, out); for (const x of e.items) namesUsed(x, out); break
    case 'case':
      if (e.subject !== null) namesUsed(e.subject, out)
      for (const w of e.whens) { namesUsed(w.when, out); namesUsed(w.then, out) }
      if (e.otherwise !== null) namesUsed(e.otherwise, out)
      break
    case 'call': for (const x of e.args) namesUsed(x, out); break
    default: break
  }
  return out
}

function inferAlias (f: Extract<Field, { kind: 'expr' }>): AliasStep[] {
  const e = f.expr
  if (e.kind === 'var') return [{ kind: 'key', key: e.name }]
  if (e.kind === 'const' && typeof e.value === 'string') return [{ kind: 'key', key: e.value }]
  if (e.kind === 'path' && e.root.kind === 'var') {
    const steps = e.steps[e.steps.length - 1].kind === 'range' ? e.steps.slice(0, -1) : e.steps
    if (steps.every(st => st.kind !== 'range')) {
      const out: AliasStep[] = [{ kind: 'key', key: e.root.name }]
      for (const st of steps) {
        if (st.kind === 'key') out.push({ kind: 'key', key: st.key })
        else if (st.kind === 'index') {
          out.push(st.index.kind === 'const' && typeof st.index.value === 'number'
            ? { kind: 'index', index: st.index.value }
            : { kind: 'dynindex', index: st.index })
        }
      }
      return out
    }
  }
  return [{ kind: 'key', key: f.text }]
}
