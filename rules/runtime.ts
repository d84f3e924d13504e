/**
 * The rule runtime (DESIGN rules/ runtime; spec: Rule-engine trigger events). While started,
 * it listens on the hooks bus to exactly the events some enabled rule's FROM names (none when
 * there are no rules, so the broker builds no event payloads for it). Per event:
 *
 * 1. The columns are built once per dialect (lazily: only when a rule of that dialect runs),
 *    never per rule.
 * 2. Each rule of the event runs its compiled SQL, unless the message was republished by that
 *    rule (see republish-marks.ts) or, for an EMQ X 4 topic rule, the topic matches none of
 *    its FROM filters. A run that fails (a non-JSON payload read as JSON, a conversion
 *    that fails, an exception) counts as `failed` and is not a match; it never stops the
 *    other rules.
 * 3. For a match, `matched` moves and the actions are queued: they run off the delivery
 *    path (setImmediate), each counted as success or failed; a failing or slow action is
 *    logged and never delays or breaks delivery.
 *
 * Messages on `$SYS/` topics never trigger rules (EMQ X's `ignore_sys_message`, on by default).
 */
import type { HookEventMap, HookName, MessageEvent } from '../node/hooks.js'
import type { StarlingNode } from '../node/node.js'
import type { Logger } from '../node/logger.js'
import { topicMatch, type CompiledSql } from './sql/index.js'
import { emqx4Columns, specColumns, type Columns } from './columns.js'
import type { ActionCounters, EngineMetrics, RuleCounters } from './metrics.js'
import type { RepublishMarks } from './republish-marks.js'
import type { ActionRegistry } from './registry.js'
import type { ActionContext, ActionDefinition, Resource, Rule, RulePublish } from './types.js'
import type { RuleEntry } from './rule-service.js'

/** A rule ready to run: its compiled SQL, its actions resolved, its counters. */
interface Runnable {
  id: string
  compiled: CompiledSql
  counters: RuleCounters
  actions: BoundAction[]
  lastError: number
  /** EMQ X 4's `metadata` column, made once per rule (never changed). */
  metadata: Readonly<{ rule_id: string }>
}

interface BoundAction {
  id: string
  def: ActionDefinition
  params: Record<string, unknown>
  resourceId: string | undefined
  counters: ActionCounters
  lastError: number
}

interface Job { rule: Runnable, selected: Record<string, unknown>, env: Columns, chain: readonly string[] | undefined }

/** At most one warning per rule or action in this period (a failing rule can fire per message). */
const LOG_EVERY_MS = 10_000

/** What the runtime needs. */
export interface RuntimeInit {
  node: StarlingNode
  logger: Logger
  registry: ActionRegistry
  metrics: EngineMetrics
  marks: RepublishMarks
  resource: (id: string) => Resource | undefined
}

/** Runs the rules of one node on its hooks bus. */
export class RuleRuntime {
  private byEvent = new Map<HookName, Runnable[]>()
  private readonly listening = new Map<HookName, () => void>()
  private running = false
  private entries: RuleEntry[] = []
  private queue: Job[] = []
  private scheduled = false

  constructor (private readonly init: RuntimeInit) {}

  /** Whether the runtime listens (svc_rule_engine is loaded). */
  get started (): boolean {
    return this.running
  }

  /** Starts listening for the events of the enabled rules. */
  start (): void {
    this.running = true
    this.reindex()
  }

  /** Stops listening; queued actions still run. */
  stop (): void {
    this.running = false
    this.reindex()
    this.init.marks.clear()
  }

  /** Replaces the rules (after any change); listeners follow the enabled rules' events. */
  load (entries: RuleEntry[]): void {
    this.entries = entries
    this.reindex()
  }

  /** The event names listened to now (for tests and logs). */
  events (): HookName[] {
    return [...this.listening.keys()]
  }

  private reindex (): void {
    const byEvent = new Map<HookName, Runnable[]>()
    if (this.running) {
      for (const entry of this.entries) {
        if (!entry.rule.enabled || entry.compiled === null) continue
        const runnable = this.runnable(entry.rule, entry.compiled)
        for (const event of entry.compiled.events as HookName[]) {
          const list = byEvent.get(event) ?? []
          list.push(runnable)
          byEvent.set(event, list)
        }
      }
    }
    this.byEvent = byEvent
    for (const [event, off] of this.listening) {
      if (!byEvent.has(event)) { off(); this.listening.delete(event) }
    }
    for (const event of byEvent.keys()) {
      if (!this.listening.has(event)) this.listening.set(event, this.init.node.hooks.on(event, (e) => this.dispatch(event, e)))
    }
    this.init.marks.rememberContent = byEvent.has('message.acked')
  }

  private runnable (rule: Rule, compiled: CompiledSql): Runnable {
    const { metrics, registry } = this.init
    return {
      id: rule.id,
      compiled,
      counters: metrics.rule(rule.id),
      lastError: 0,
      metadata: Object.freeze({ rule_id: rule.id }),
      actions: rule.actions.flatMap(a => {
        const def = registry.findAction(a.name)
        if (def === undefined) return []
        const resourceId = typeof a.params.$resource === 'string' ? a.params.$resource : undefined
        return [{ id: a.id, def, params: a.params, resourceId, counters: metrics.action(a.id), lastError: 0 }]
      })
    }
  }

  /** Runs the rules of `hook` on one event. */
  private dispatch<K extends HookName> (hook: K, event: HookEventMap[K]): void {
    const rules = this.byEvent.get(hook)
    if (rules === undefined) return
    let chain: readonly string[] | undefined
    let topic = ''
    if (hook.startsWith('message.')) {
      const m = event as MessageEvent
      topic = m.topic
      if (topic.startsWith('$SYS/')) return
      chain = hook === 'message.acked' ? this.init.marks.chainOfAcked(topic, m.payload) : this.init.marks.chainOf(m.payload)
    }
    let spec: Columns | undefined
    let emqx: Columns[] | undefined
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]
      if (chain !== undefined && chain.includes(rule.id)) continue
      const compiled = rule.compiled
      if (compiled.dialect === 'spec') {
        this.evaluate(rule, spec ??= specColumns(hook, event), chain)
        continue
      }
      const filters = compiled.topicFilters
      if (hook === 'message.publish' && filters !== null && !matchesAny(filters, topic)) continue
      emqx ??= emqx4Columns(hook, event)
      for (let j = 0; j < emqx.length; j++) {
        emqx[j].metadata = rule.metadata
        this.evaluate(rule, emqx[j], chain)
      }
    }
  }

  private evaluate (rule: Runnable, columns: Columns, chain: readonly string[] | undefined): void {
    let outputs: Array<Record<string, unknown>>
    try {
      const outcome = rule.compiled.evaluate(columns)
      if (!outcome.matched) {
        // a failure (non-JSON payload read as JSON, a conversion that failed ...) is no match
        if (outcome.failure !== null) this.ruleFailed(rule, outcome.failure.phase, outcome.failure.message, 'debug')
        return
      }
      outputs = outcome.outputs
    } catch (err) {
      this.ruleFailed(rule, 'internal_error', (err as Error)?.message ?? String(err), 'warn')
      return
    }
    rule.counters.matched++
    if (rule.actions.length === 0) return
    for (const out of outputs) {
      // a `SELECT *` may hand back the shared columns: copy them before the next rule runs
      this.queue.push({ rule, selected: out === columns ? { ...columns } : out, env: columns, chain })
    }
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(() => this.drain())
    }
  }

  /** Counts a failed evaluation; logs it at most once per {@link LOG_EVERY_MS} per rule. */
  private ruleFailed (rule: Runnable, phase: string, message: string, level: 'debug' | 'warn'): void {
    rule.counters.failed++
    if (Date.now() - rule.lastError < LOG_EVERY_MS) return
    rule.lastError = Date.now()
    this.init.logger[level]({ rule_id: rule.id, phase, err: message }, 'rule SQL failed on an event; counted as failed, not matched')
  }

  /** Runs the queued actions (off the delivery path). */
  private drain (): void {
    this.scheduled = false
    const jobs = this.queue
    this.queue = []
    for (const job of jobs) {
      for (const action of job.rule.actions) this.runAction(job, action)
    }
  }

  private runAction (job: Job, action: BoundAction): void {
    const { node, logger } = this.init
    action.counters.taken++
    const fail = (err: unknown): void => {
      action.counters.failed++
      if (Date.now() - action.lastError > LOG_EVERY_MS) {
        action.lastError = Date.now()
        logger.warn({ rule_id: job.rule.id, action: action.def.name, action_id: action.id, err: (err as Error)?.message ?? String(err) }, 'rule action failed')
      }
    }
    const ctx: ActionContext = {
      node,
      logger,
      ruleId: job.rule.id,
      actionId: action.id,
      params: action.params,
      resource: action.resourceId === undefined ? undefined : this.init.resource(action.resourceId),
      env: job.env,
      publish: async (message) => await this.publish(message, job.chain, job.rule.id)
    }
    try {
      const result = action.def.run(job.selected, ctx)
      if (result instanceof Promise) result.then(() => { action.counters.success++ }, fail)
      else action.counters.success++
    } catch (err) {
      fail(err)
    }
  }

  /** Publishes a message marked with the chain of rules it went through (the loop guard). */
  private async publish (message: RulePublish, chain: readonly string[] | undefined, ruleId: string): Promise<void> {
    this.init.marks.mark(message.topic, message.payload, chain === undefined ? [ruleId] : [...chain, ruleId])
    const packet = { cmd: 'publish', topic: message.topic, payload: message.payload, qos: message.qos, retain: message.retain, dup: false }
    await new Promise<void>((resolve, reject) => {
      this.init.node.broker.aedes.publish(packet, (err?: Error | null) => err ? reject(err) : resolve())
    })
  }
}

/** Whether `topic` matches one of `filters` (no allocation: topicMatch walks the strings). */
function matchesAny (filters: readonly string[], topic: string): boolean {
  for (let i = 0; i < filters.length; i++) if (topicMatch(topic, filters[i])) return true
  return false
}
