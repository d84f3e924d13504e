/**
 * The rule runtime (DESIGN rules/ runtime; spec: Rule-engine trigger events). While started,
 * it listens on the hooks bus to exactly the events some enabled rule's FROM names (none when
 * there are no rules, so the broker builds no event payloads for it). Per event:
 *
 * 1. The columns are built once per dialect (lazily: only when a rule of that dialect runs),
 *    never per rule.
 * 2. Each rule of the event runs its compiled SQL, unless the message was republished by that
 *    rule (see republish-marks.ts) or, for an EMQ X 4 topic rule, the topic matches none of
 *    its FROM filters (found in one index of every rule's filters; when no rule is left,
 *    no columns are built). The payload is decoded as JSON once per event, shared by the
 *    rules. A run that fails (a non-JSON payload read as JSON, a conversion that fails, an
 *    exception) counts as `failed` and is not a match; it never stops the other rules.
 * 3. For a match, `matched` moves and the actions are queued: they run off the delivery
 *    path (setImmediate), each counted as success or failed; a failing or slow action is
 *    logged and never delays or breaks delivery. An action that fails runs its `fallbacks`
 *    (EMQ X 4.4) with the same selected data. With the rule's `on_action_failed` `continue`
 *    (the default) the actions of one event all start at once; with `stop` each waits for the
 *    outcome of the one before it and none runs after one that failed.
 *    An action that holds the publish (`holdsPublish`: a data action with its local buffer or
 *    in sync mode, data_to_mqtt_broker with a disk cache)
 *    keeps a QoS 1/2 publisher's PUBACK/PUBREC back until its run settles
 *    (node/mqtt/publish-hold.ts); subscribers have the message already, and other publishers
 *    and QoS 0 never wait. Fallbacks do not hold; with `stop`, the holds of the actions that
 *    will not run are released at the failure.
 *
 * Messages on `$SYS/` topics never trigger rules (EMQ X's `ignore_sys_message`, on by default).
 */
import type { HookEventMap, HookName, MessageEvent } from '../node/hooks.js'
import type { StarlingNode } from '../node/node.js'
import type { Logger } from '../node/logger.js'
// the two pieces of rules/sql/ every node needs, from their own modules: the compiler loads with the first rule (sql-loader.ts)
import type { CompiledSql } from './sql/index.js'
import { TopicIndex } from './sql/topic-index.js'
import { PayloadCache } from './sql/nested.js'
import { emqx4Columns, specColumns, type Columns } from './columns.js'
import type { ActionCounters, EngineMetrics, RuleCounters } from './metrics.js'
import type { RepublishMarks } from './republish-marks.js'
import type { ActionRegistry } from './registry.js'
import type { ActionContext, ActionDefinition, Resource, ResourceInstance, RowSettle, RowWriter, Rule, RuleAction, RulePublish } from './types.js'
import type { RuleEntry } from './rule-service.js'
import { DeferredResult } from './funcs/errors.js'
import type { PublishHold } from '../node/mqtt/publish-hold.js'

/** A rule ready to run: its compiled SQL, its actions resolved, its counters. */
interface Runnable {
  id: string
  /** Position in rule-id order: the rules of an event run in this order. */
  order: number
  compiled: CompiledSql
  counters: RuleCounters
  actions: BoundAction[]
  /** `on_action_failed` is `stop`: the actions run one after another, up to the first that fails. */
  stopOnFailure: boolean
  /** How many of its actions hold the publish that triggered them (ActionDefinition.holdsPublish). */
  holding: number
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
  /** Run when this action fails (empty: none). */
  fallbacks: BoundAction[]
  /** Its run holds the triggering QoS 1/2 publish until it settles (a rule's own actions only, not fallbacks). */
  holds: boolean
  /** The row path's writer ({@link ActionDefinition.rowWriter}) and the instance it was made for; null: that instance has none. */
  writer: RowWriter | null | undefined
  writerOf: ResourceInstance | undefined
  /** The outcome every row-path run of this action shares (counts and logs; nothing waits on it). */
  outcome: ActionOutcome
}

/** What an action's failure log says of its rule. */
interface RuleOfAction { id: string, stopOnFailure: boolean }

/**
 * The outcome of an action's row-path runs ({@link ActionDefinition.rowWriter}): one object per
 * bound action, shared by all its runs, that only counts (and logs a failure): a run on the
 * row path has no hold, no fallbacks and no next action waiting on it.
 */
class ActionOutcome implements RowSettle {
  constructor (private readonly runtime: RuleRuntime, private readonly rule: RuleOfAction, private readonly action: BoundAction) {}

  resolve (): void {
    this.action.counters.success++
  }

  reject (err: Error): void {
    this.runtime.actionFailed(this.rule, this.action, err)
  }
}

/** One match to act on; `hold`, taken once per holding action, is released as each settles. */
interface Job { rule: Runnable, selected: Record<string, unknown>, env: Columns, chain: readonly string[] | undefined, hold: PublishHold | undefined }

/** Topics whose rules {@link EventRules} remembers, at most; past it the memo starts again empty. */
const TOPIC_MEMO_MAX = 4096
/** Topics longer than this are looked up in the index every time (a long key costs its hash per lookup anyway). */
const TOPIC_MEMO_MAX_LENGTH = 256

/**
 * The rules of one hook event. For message.publish, the EMQ X 4 rules whose FROM names topic
 * filters are indexed by those filters; every other rule runs on every event. The rules of a
 * topic are remembered (up to {@link TOPIC_MEMO_MAX} topics): a busy topic, selected by a rule
 * or not, costs one map lookup per message instead of a walk of the index. The set is
 * immutable once built (the runtime builds a new one whenever the rules change), so the memo
 * never outlives the rules it was made of.
 */
class EventRules {
  /** The rules for every event, in rule order. */
  readonly everyTopic: Runnable[] = []
  /** message.publish: the rules restricted to their FROM topic filters. */
  private readonly byTopic = new TopicIndex<Runnable>()
  private memo = new Map<string, readonly Runnable[]>()

  constructor (private readonly hook: HookName) {}

  /** Adds a rule; rules are added in rule order. */
  add (rule: Runnable): void {
    const filters = rule.compiled.topicFilters
    if (this.hook !== 'message.publish' || filters === null) this.everyTopic.push(rule)
    else for (const filter of new Set(filters)) this.byTopic.add(filter, rule) // FROM "t/#", "t/#" runs once
  }

  /** The rules to run on a message on `topic`: each once, in rule order. */
  forTopic (topic: string): readonly Runnable[] {
    if (this.byTopic.empty) return this.everyTopic
    if (topic.length > TOPIC_MEMO_MAX_LENGTH) return this.lookUp(topic)
    let rules = this.memo.get(topic)
    if (rules === undefined) {
      if (this.memo.size >= TOPIC_MEMO_MAX) this.memo = new Map()
      this.memo.set(topic, rules = this.lookUp(topic))
    }
    return rules
  }

  /** {@link forTopic} from the index. */
  private lookUp (topic: string): readonly Runnable[] {
    const found = this.byTopic.match(topic, [])
    if (found.length === 0) return this.everyTopic
    if (found.length === 1 && this.everyTopic.length === 0) return found[0]
    const rules = this.everyTopic.concat(...found).sort((a, b) => a.order - b.order)
    // a rule whose FROM names several filters matching the topic was found once per filter
    let n = 1
    for (let i = 1; i < rules.length; i++) if (rules[i] !== rules[n - 1]) rules[n++] = rules[i]
    rules.length = n
    return rules
  }
}

/** At most one warning per rule or action in this period (a failing rule can fire per message). */
const LOG_EVERY_MS = 10_000
/** How many times one evaluation may wait for a function's answer (see {@link RuleRuntime.defer}). */
const MAX_DEFERRALS = 4

/**
 * What the runtime uses of its node: the hooks bus it listens on, the MQTT core it republishes
 * through, and the configuration (`mqtt.max_inflight`, for EMQ X 4's `receive_maximum` column).
 */
export type RuleRuntimeComponents = Pick<StarlingNode, 'hooks' | 'broker'> & Partial<Pick<StarlingNode, 'config'>>

/** What the runtime needs. */
export interface RuntimeInit {
  node: RuleRuntimeComponents
  logger: Logger
  registry: ActionRegistry
  metrics: EngineMetrics
  marks: RepublishMarks
  resource: (id: string) => Resource | undefined
  /** The running part of resource `id` on this node (resource-instances.ts); absent: none. */
  instance?: (id: string) => Promise<ResourceInstance | undefined>
  /** The same once it has opened, without waiting (undefined while it opens); absent: no row path. */
  running?: (id: string) => ResourceInstance | undefined
}

/** Runs the rules of one node on its hooks bus. */
export class RuleRuntime {
  private byEvent = new Map<HookName, EventRules>()
  private readonly listening = new Map<HookName, () => void>()
  private running = false
  private entries: RuleEntry[] = []
  private queue: Job[] = []
  private scheduled = false
  /** The QoS 1/2 message.publish event being dispatched: a holding rule's match holds it. */
  private holdable: MessageEvent | undefined

  constructor (private readonly init: RuntimeInit) {}

  /** `mqtt.max_inflight` now (a live key), read only when a client.connected column set is built. */
  private readonly maxInflight = (): number => {
    const v = (this.init.node.config as Record<string, unknown> | undefined)?.['mqtt.max_inflight']
    return typeof v === 'number' ? v : 32
  }

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
    const byEvent = new Map<HookName, EventRules>()
    if (this.running) {
      let order = 0
      for (const entry of this.entries) {
        if (!entry.rule.enabled || entry.compiled === null) continue
        const runnable = this.runnable(entry.rule, entry.compiled, order++)
        for (const event of entry.compiled.events as HookName[]) {
          let rules = byEvent.get(event)
          if (rules === undefined) byEvent.set(event, rules = new EventRules(event))
          rules.add(runnable)
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

  private runnable (rule: Rule, compiled: CompiledSql, order: number): Runnable {
    const { metrics } = this.init
    const actions = this.bind(rule, rule.actions, true)
    return {
      id: rule.id,
      order,
      compiled,
      counters: metrics.rule(rule.id),
      lastError: 0,
      metadata: Object.freeze({ rule_id: rule.id }),
      actions,
      stopOnFailure: rule.on_action_failed === 'stop',
      holding: actions.filter(a => a.holds).length
    }
  }

  /** The actions (and their fallbacks) whose definitions are known here; others are skipped. */
  private bind (rule: Rule, actions: readonly RuleAction[], own: boolean): BoundAction[] {
    const { metrics, registry } = this.init
    return actions.flatMap(a => {
      const def = registry.findAction(a.name)
      if (def === undefined) return []
      const resourceId = typeof a.params.$resource === 'string' ? a.params.$resource : undefined
      const holds = own && def.holdsPublish?.(a.params, resourceId === undefined ? undefined : this.init.resource(resourceId)) === true
      const bound: BoundAction = { id: a.id, def, params: a.params, resourceId, counters: metrics.action(a.id), lastError: 0, fallbacks: this.bind(rule, a.fallbacks ?? [], false), holds, writer: undefined, writerOf: undefined, outcome: undefined as unknown as ActionOutcome }
      bound.outcome = new ActionOutcome(this, { id: rule.id, stopOnFailure: rule.on_action_failed === 'stop' }, bound)
      return [bound]
    })
  }

  /** Runs the rules of `hook` on one event. */
  private dispatch<K extends HookName> (hook: K, event: HookEventMap[K]): void {
    const rules = this.byEvent.get(hook)
    if (rules === undefined) return
    if (!hook.startsWith('message.')) {
      this.run(rules.everyTopic, hook, event, undefined)
      return
    }
    const m = event as MessageEvent
    if (m.topic.startsWith('$SYS/')) return
    const run = rules.forTopic(m.topic)
    if (run.length === 0) return
    const chain = hook === 'message.acked' ? this.init.marks.chainOfAcked(m.topic, m.payload) : this.init.marks.chainOf(m.payload)
    if (hook !== 'message.publish' || m.qos === 0) return this.run(run, hook, event, chain)
    const outer = this.holdable
    this.holdable = m
    this.run(run, hook, event, chain)
    this.holdable = outer
  }

  /** Holds the publish being dispatched for a rule with holding actions (one take, the evaluation's). */
  private holdFor (rule: Runnable): PublishHold | undefined {
    return rule.holding > 0 && this.holdable !== undefined ? this.init.node.broker.core.holdPublish(this.holdable) : undefined
  }

  /** Runs `rules` on one event; the columns are built once per dialect, when a rule of it runs. */
  private run<K extends HookName> (rules: readonly Runnable[], hook: K, event: HookEventMap[K], chain: readonly string[] | undefined): void {
    const payloads = new PayloadCache()
    let spec: Columns | undefined
    let emqx: Columns[] | undefined
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]
      if (chain !== undefined && chain.includes(rule.id)) continue
      if (rule.compiled.dialect === 'spec') {
        this.evaluate(rule, spec ??= specColumns(hook, event), chain, payloads)
        continue
      }
      emqx ??= emqx4Columns(hook, event, this.maxInflight)
      for (let j = 0; j < emqx.length; j++) {
        emqx[j].metadata = rule.metadata
        this.evaluate(rule, emqx[j], chain, payloads)
      }
    }
  }

  /**
   * Evaluates `rule` on one event and queues its actions. `held`: the hold a deferred
   * evaluation carries (one take, released here).
   */
  private evaluate (rule: Runnable, columns: Columns, chain: readonly string[] | undefined, payloads: PayloadCache, deferrals = 0, held?: PublishHold): void {
    let outputs: Array<Record<string, unknown>>
    try {
      const outcome = rule.compiled.evaluate(columns, payloads)
      if (!outcome.matched) {
        // a failure (non-JSON payload read as JSON, a conversion that failed ...) is no match
        if (outcome.failure !== null) this.ruleFailed(rule, outcome.failure.phase, outcome.failure.message, 'debug')
        held?.release()
        return
      }
      outputs = outcome.outputs
    } catch (err) {
      if (err instanceof DeferredResult) return this.defer(rule, columns, chain, payloads, err, deferrals, held ?? this.holdFor(rule))
      this.ruleFailed(rule, 'internal_error', (err as Error)?.message ?? String(err), 'warn')
      held?.release()
      return
    }
    rule.counters.matched++
    if (rule.actions.length === 0) { held?.release(); return }
    const hold = held ?? this.holdFor(rule)
    for (const out of outputs) {
      // a `SELECT *` may hand back the shared columns: copy them before the next rule runs
      this.queue.push({ rule, selected: out === columns ? { ...columns } : out, env: columns, chain, hold })
      if (hold !== undefined) for (let i = 0; i < rule.holding; i++) hold.take()
    }
    hold?.release()
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(() => this.drain())
    }
  }

  /**
   * A function is fetching its answer (a 3rd-party codec): evaluate the rule again for this
   * event once it is in, off the delivery path. A statement may wait a few times (one per
   * such call it makes); more is a failure.
   */
  private defer (rule: Runnable, columns: Columns, chain: readonly string[] | undefined, payloads: PayloadCache, deferred: DeferredResult, deferrals: number, hold: PublishHold | undefined): void {
    if (deferrals >= MAX_DEFERRALS) {
      this.ruleFailed(rule, 'select_and_transform_error', `${deferred.fn}: more than ${MAX_DEFERRALS} calls waiting for an answer in one statement`, 'warn')
      hold?.release()
      return
    }
    const again = (): void => {
      if (!this.running) { hold?.release(); return }
      // the columns are shared by the event's rules: give them this rule's metadata back
      if (rule.compiled.dialect !== 'spec') columns.metadata = rule.metadata
      this.evaluate(rule, columns, chain, payloads, deferrals + 1, hold)
    }
    deferred.ready.then(again, again)
  }

  /** Counts a failed evaluation; logs it at most once per {@link LOG_EVERY_MS} per rule. */
  private ruleFailed (rule: Runnable, phase: string, message: string, level: 'debug' | 'warn'): void {
    rule.counters.failed++
    // checked first: rules failing on every message of a busy topic are the common case
    if (!this.init.logger.isLevelEnabled(level)) return
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
      if (job.rule.stopOnFailure) this.runInOrder(job, 0)
      else for (const action of job.rule.actions) this.runAction(job, action, undefined)
    }
  }

  /** `on_action_failed = stop`: action `i` of the job's rule, then the next once it succeeded. */
  private runInOrder (job: Job, i: number): void {
    const actions = job.rule.actions
    if (i >= actions.length) return
    this.runAction(job, actions[i], (ok) => {
      if (ok) { this.runInOrder(job, i + 1); return }
      // the actions after a failure do not run: the holds taken for them are given back
      for (let j = i + 1; j < actions.length; j++) if (actions[j].holds) job.hold?.release()
    })
  }

  /**
   * Runs one action (counted `taken`, then `success` or `failed`); when it fails, its
   * fallbacks run (each on its own, as with `continue`). `settled` hears the outcome.
   */
  private runAction (job: Job, action: BoundAction, settled: ((ok: boolean) => void) | undefined): void {
    if (settled === undefined && !action.holds && action.fallbacks.length === 0 && this.writeRow(job, action)) return
    action.counters.taken++
    // a holding action's publish goes on once the run settled, whichever way
    const release = action.holds ? job.hold?.release : undefined
    // the job (the selected data, the event's columns) stays reachable while the run is out only for fallbacks
    const fail = this.failure(job.rule, action, release, settled, action.fallbacks.length > 0 ? job : undefined)
    let result: Promise<void> | void
    try {
      result = action.def.run(job.selected, new JobContext(this.init, this.publisher, job, action))
    } catch (err) {
      fail(err)
      return
    }
    if (result instanceof Promise) {
      result.then(settled === undefined && release === undefined ? () => { action.counters.success++ } : () => { action.counters.success++; release?.(); settled?.(true) }, fail)
    } else {
      action.counters.success++
      release?.()
      settled?.(true)
    }
  }

  /**
   * The row path: `action`'s run handed to its instance's writer, with the action's shared
   * outcome (no promise, context or closure per run). False when the action has no writer for
   * its resource's instance now (none, or not opened yet): the caller runs it as usual.
   */
  private writeRow (job: Job, action: BoundAction): boolean {
    if (action.def.rowWriter === undefined || action.resourceId === undefined) return false
    const instance = this.init.running?.(action.resourceId)
    if (instance === undefined) return false
    if (action.writerOf !== instance) {
      action.writerOf = instance
      action.writer = action.def.rowWriter(action.params, instance, action.id) ?? null
    }
    const write = action.writer
    if (write == null) return false
    action.counters.taken++
    try {
      write(job.selected, action.outcome)
    } catch (err) {
      this.actionFailed(job.rule, action, err)
    }
    return true
  }

  /** What runs when `action` failed: the count, a log line at most every {@link LOG_EVERY_MS}, its fallbacks (on `job`), `settled`. */
  private failure (rule: Runnable, action: BoundAction, release: (() => void) | undefined, settled: ((ok: boolean) => void) | undefined, job: Job | undefined): (err: unknown) => void {
    return (err) => {
      release?.()
      this.actionFailed(rule, action, err)
      if (job !== undefined) for (const fallback of action.fallbacks) this.runAction(job, fallback, undefined)
      settled?.(false)
    }
  }

  /** Counts a failed run of `action` (of `rule`); logs it at most every {@link LOG_EVERY_MS}. */
  actionFailed (rule: RuleOfAction, action: BoundAction, err: unknown): void {
    action.counters.failed++
    if (Date.now() - action.lastError > LOG_EVERY_MS) {
      action.lastError = Date.now()
      this.init.logger.warn({
        rule_id: rule.id,
        action: action.def.name,
        action_id: action.id,
        fallbacks: action.fallbacks.length,
        on_action_failed: rule.stopOnFailure ? 'stop' : 'continue',
        err: (err as Error)?.message ?? String(err)
      }, 'rule action failed')
    }
  }

  /** Publishes a message marked with the chain of rules it went through (the loop guard). */
  private readonly publisher = async (message: RulePublish, chain: readonly string[] | undefined, ruleId: string): Promise<void> => {
    this.init.marks.mark(message.topic, message.payload, chain === undefined ? [ruleId] : [...chain, ruleId])
    await this.init.node.broker.core.publish({ cmd: 'publish', topic: message.topic, payload: message.payload, qos: message.qos, retain: message.retain, dup: false })
  }
}

/**
 * One action run's {@link ActionContext}: its methods on the prototype and the bound resource
 * looked up when asked, so a run (one per action per match) makes one object.
 */
class JobContext implements ActionContext {
  readonly logger: Logger
  readonly ruleId: string
  readonly actionId: string
  readonly params: Record<string, unknown>
  readonly env: Record<string, unknown>

  constructor (
    private readonly init: RuntimeInit,
    private readonly publisher: (message: RulePublish, chain: readonly string[] | undefined, ruleId: string) => Promise<void>,
    private readonly job: Job,
    private readonly action: BoundAction
  ) {
    this.logger = init.logger
    this.ruleId = job.rule.id
    this.actionId = action.id
    this.params = action.params
    this.env = job.env
  }

  get resource (): Resource | undefined {
    return this.action.resourceId === undefined ? undefined : this.init.resource(this.action.resourceId)
  }

  async instance (): Promise<ResourceInstance | undefined> {
    const id = this.action.resourceId
    return id === undefined ? undefined : await this.init.instance?.(id)
  }

  async publish (message: RulePublish): Promise<void> {
    await this.publisher(message, this.job.chain, this.job.rule.id)
  }
}
