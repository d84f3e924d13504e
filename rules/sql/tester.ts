/**
 * The SQL tester behind `POST /api/v3/rules?test=true` with `{rawsql, ctx}` (EMQ X 4.4
 * `emqx_rule_sqltester`): runs a statement against example columns without creating a rule.
 *
 * 1. When every FROM item is a topic filter and `ctx.topic` matches none (or is absent), the
 *    result is no match.
 * 2. `ctx` is merged over the example columns of the event the first FROM item names
 *    (event-examples.ts), in the statement's dialect; timestamps are now, `id` is fresh,
 *    `node` is the given node name, and `metadata.rule_id` names a throw-away test rule.
 * 3. A WHERE that is false is no match; a failure (payload not JSON, a conversion that
 *    fails ...) is an error with EMQ X's phase and reason; an invalid statement is an error
 *    with `error: 'invalid_sql'` and the parser's message.
 */
import { randomBytes } from 'node:crypto'
import { compileSql, type CompileOptions, type CompiledSql } from './compile.js'
import { SqlError } from './errors.js'
import { exampleColumns } from './event-examples.js'
import { topicMatch } from './topic-match.js'
import { isMap } from './values.js'

/** The tester's input, as the API receives it. */
export interface SqlTestRequest {
  rawsql: string
  /** Columns merged over the event's example columns (`topic`, `payload`, `clientid` ...). */
  ctx?: Record<string, unknown>
}

/** Options of {@link testSql}. */
export interface SqlTestOptions extends CompileOptions {
  /** The node name put in the `node` column (default `starling@127.0.0.1`). */
  node?: string
  /** The clock, in ms since the epoch (default `Date.now`). */
  now?: () => number
}

/**
 * The tester's answer: the selected output (an array for FOREACH), no match, or an error
 * with EMQ X's `phase` (`select_and_transform_error` ...) and `error` reason
 * (`decode_json_failed` ...; `invalid_sql` for a statement that does not compile).
 */
export type SqlTestResult =
  | { ok: true, output: Record<string, unknown> | Array<Record<string, unknown>> }
  | { ok: false, reason: 'nomatch' | 'error', message?: string, phase?: string, error?: string }

/**
 * Runs `rawsql` once against `ctx` merged over example columns (see the module comment).
 * `options` may be just the node name.
 */
export function testSql (request: SqlTestRequest, options: SqlTestOptions | string = {}): SqlTestResult {
  if (typeof options === 'string') options = { node: options }
  let compiled: CompiledSql
  try {
    compiled = compileSql(request.rawsql, options)
  } catch (err) {
    if (err instanceof SqlError) return { ok: false, reason: 'error', error: 'invalid_sql', message: err.message }
    throw err
  }
  const ctx = request.ctx ?? {}
  if (compiled.sources.every(s => s.topicFilter !== undefined)) {
    const topic = ctx.topic
    const text = typeof topic === 'string' ? topic : Buffer.isBuffer(topic) ? topic.toString('utf8') : ''
    if (!compiled.sources.some(s => topicMatch(text, s.topicFilter as string))) {
      return { ok: false, reason: 'nomatch', message: `the topic "${text}" matches no topic filter in FROM` }
    }
  }
  const now = (options.now ?? Date.now)()
  const examples = exampleColumns(compiled.sources[0], compiled.dialect, {
    node: options.node ?? 'starling@127.0.0.1',
    now,
    id: randomBytes(16).toString('hex').toUpperCase()
  })
  const columns: Record<string, unknown> = { ...examples, ...ctx }
  const metadata = isMap(columns.metadata) ? columns.metadata : {}
  columns.metadata = { ...metadata, rule_id: `test_rule:${randomBytes(4).toString('hex')}` }
  const outcome = compiled.evaluate(columns)
  if (outcome.matched) {
    return { ok: true, output: compiled.kind === 'select' ? outcome.outputs[0] : outcome.outputs }
  }
  if (outcome.failure === null) return { ok: false, reason: 'nomatch', message: 'the WHERE condition is false' }
  const f = outcome.failure
  return { ok: false, reason: 'error', phase: f.phase, error: f.reason, message: `${f.phase}: ${f.message}` }
}
