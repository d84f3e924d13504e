/**
 * The rule SQL (spec: Rule SQL): parse, compile to closures, run, and the SQL tester.
 *
 * ```ts
 * const rule = compileSql('SELECT payload.x AS x FROM "t/#" WHERE payload.temp > 30')
 * rule.events        // ['message.publish']
 * rule.topicFilters  // ['t/#']
 * rule.run({ topic: 't/1', payload: '{"x":1,"temp":31}', ... })  // [{ x: 1 }]
 * ```
 */
export { compileSql, type CompileOptions, type CompiledSql, type SqlFailure, type SqlOutcome, type SqlPhase } from './compile.js'
export type { FunctionLookup, SqlFunction } from './compile-expr.js'
export { SqlError, SqlEvalError } from './errors.js'
export { EMQX_EVENT_TOPICS, HOOK_EVENTS, type HookEvent, type SqlDialect, type SqlSource } from './sources.js'
export { parseStatement } from './parser.js'
export type { Statement } from './ast.js'
export { topicMatch } from './topic-match.js'
export { TopicIndex } from './topic-index.js'
export { PayloadCache } from './nested.js'
export { testSql, type SqlTestOptions, type SqlTestRequest, type SqlTestResult } from './tester.js'
export { exampleColumns } from './event-examples.js'
