/**
 * Rules: create, update, delete, list (spec: Rule, Endpoints/Rule engine: rules). A rule is
 * checked whole before anything is stored: its SQL compiles, every action exists and can serve
 * the rule's events, its params match the action's specs and its `$resource` is an existing
 * resource of a type the action binds to. A rule that fails any check is refused with a clear
 * error and nothing changes. Rules live in the store table `rules` and are compiled again
 * when the node starts.
 *
 * Invariant: writes are serialised (one at a time), and the in-memory map changes only after
 * the store has committed, so a failed write leaves both as they were.
 *
 * Rules are cluster-wide (docs/cluster-data.md): given a shared table, a rule created,
 * changed or deleted on another node is compiled and started, or stopped and removed, here
 * too, in the same queue as local writes (see `followRemote`).
 */
import { randomBytes } from 'node:crypto'
import type { StoreTable } from '../node/store/index.js'
import type { SharedTable } from '../node/store/shared.js'
import type { SerialQueue } from './serial-queue.js'
import type { Logger } from '../node/logger.js'
import { MissingParameterError, RefusedError, WrongTypeError, notFound } from '../node/errors.js'
import type { CompiledSql } from './sql/index.js'
import { SqlError } from './sql/errors.js'
import { loadSql, loadedSql } from './sql-loader.js'
import { actionServes, type ActionRegistry } from './registry.js'
import { checkParams } from './params.js'
import type { OnActionFailed, Resource, Rule, RuleAction } from './types.js'
import { restoreParams } from './views.js'

/** An action as given to create or change a rule, with its fallbacks (EMQ X 4.4's shape). */
export interface RuleActionInput {
  name: string
  params?: Record<string, unknown>
  fallbacks?: RuleActionInput[]
}

/** What creating a rule takes (spec: named variant with `name` and `for`, or the short one). */
export interface RuleInput {
  name?: string
  for?: string
  rawsql: string
  actions: RuleActionInput[]
  /** EMQ X 4.4's: `continue` (default) or `stop`. */
  on_action_failed?: OnActionFailed
  description?: string
  enabled?: boolean
}

/** What `PUT /rules/:id` and `rules update` may change. */
export interface RulePatch {
  rawsql?: string
  actions?: RuleInput['actions']
  on_action_failed?: OnActionFailed
  description?: string
  enabled?: boolean
}

/** Every action of `actions` with every fallback (theirs too), depth first. */
export function everyAction (actions: readonly RuleAction[]): RuleAction[] {
  const out: RuleAction[] = []
  const walk = (list: readonly RuleAction[]): void => {
    for (const a of list) { out.push(a); if (a.fallbacks !== undefined) walk(a.fallbacks) }
  }
  walk(actions)
  return out
}

/** `on_action_failed` checked: `continue`, `stop`, or absent (108 otherwise). */
function onActionFailedOf (value: unknown): OnActionFailed | undefined {
  if (value === undefined || value === 'continue' || value === 'stop') return value
  throw new WrongTypeError(`parameter on_action_failed must be continue or stop, got ${JSON.stringify(value)}`)
}

/** A stored rule with its compiled SQL (null when the SQL no longer compiles). */
export interface RuleEntry {
  rule: Rule
  compiled: CompiledSql | null
}

/** Names of rules and resources: no spaces, `/` or `:` (ids are `<name>:<...>`). */
export const NAME_PATTERN = /^[^\s/:]{1,128}$/

/**
 * Compiles `rawsql`: an invalid statement is error 102 (HTTP 400) with the SQL error's message.
 * The SQL compiler must be loaded (`loadSql()`, rules/sql-loader.ts): it is not part of an idle node.
 */
export function compileRuleSql (rawsql: string): CompiledSql {
  if (typeof rawsql !== 'string' || rawsql.trim() === '') throw new MissingParameterError('missing parameter rawsql (the rule SQL)')
  try {
    return loadedSql().compileSql(rawsql)
  } catch (err) {
    if (err instanceof SqlError || (err as Error)?.name === 'SqlError') throw new RefusedError(`invalid SQL: ${(err as Error).message}`)
    throw err
  }
}

/** What the rule service needs. */
export interface RuleServiceInit {
  /** The rules; a shared table (`node.shared`) also brings other nodes' changes. */
  table: StoreTable<Rule> & Partial<Pick<SharedTable<Rule>, 'onRemoteChange'>>
  registry: ActionRegistry
  logger: Logger
  /** The resource `id`, or undefined. */
  resource: (id: string) => Resource | undefined
  /** Called after every change (the runtime re-indexes). */
  changed: () => void
  /** Shared with the resource service: writes run one at a time. */
  queue: SerialQueue
}

/** The rules of one node. */
export class RuleService {
  private readonly entries = new Map<string, RuleEntry>()
  private readonly unfollow: () => void

  /**
   * Compiles the stored rules: when there are any, the SQL compiler must be loaded first
   * (`createRuleEngine` awaits `loadSql()` when the table is not empty).
   */
  constructor (private readonly init: RuleServiceInit) {
    for (const [id, rule] of init.table.entries()) {
      let compiled: CompiledSql | null = null
      try {
        compiled = compileRuleSql(rule.rawsql)
      } catch (err) {
        init.logger.error({ rule_id: id, err: (err as Error).message }, 'a stored rule no longer compiles; it stays stored but does not run')
      }
      this.entries.set(id, { rule, compiled })
    }
    this.unfollow = init.table.onRemoteChange?.((id) => { this.followRemote(id) }) ?? (() => {})
  }

  /** Stops following other nodes' changes (the engine keeps following while it exists). */
  close (): void {
    this.unfollow()
  }

  /** Every rule with its compiled SQL, in id order. */
  all (): RuleEntry[] {
    return [...this.entries.values()].sort((a, b) => a.rule.id < b.rule.id ? -1 : a.rule.id > b.rule.id ? 1 : 0)
  }

  /** Every rule, in id order. */
  list (): Rule[] {
    return this.all().map(e => e.rule)
  }

  /** The rule `id`, or undefined. */
  find (id: string): Rule | undefined {
    return this.entries.get(id)?.rule
  }

  /** The rule `id`; throws a not-found (404). */
  get (id: string): Rule {
    const entry = this.entries.get(id)
    if (entry === undefined) throw notFound(`rule ${id}`)
    return entry.rule
  }

  /** The rules whose actions (or their fallbacks) are bound to resource `resourceId`. */
  usingResource (resourceId: string): Rule[] {
    return this.list().filter(r => everyAction(r.actions).some(a => a.params.$resource === resourceId))
  }

  /** The rules whose SQL calls schema_encode/schema_decode with schema `name` written as a literal. */
  usingSchema (name: string): Rule[] {
    const literal = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    const call = new RegExp(`schema_(?:en|de)code\\s*\\(\\s*(['"])${literal}\\1`, 'i')
    return this.list().filter(r => call.test(r.rawsql))
  }

  /** Checks and stores a new rule; resolves with it. */
  async create (input: RuleInput): Promise<Rule> {
    return await this.serial(async () => {
      await loadSql()
      const name = input.name
      if (name !== undefined && (typeof name !== 'string' || !NAME_PATTERN.test(name))) {
        throw new WrongTypeError(`rule name must be 1 to 128 characters without spaces, '/' or ':', got ${JSON.stringify(name)}`)
      }
      const compiled = compileRuleSql(input.rawsql)
      const hook = this.forOf(compiled, input.for)
      const actions = this.checkActions(input.actions, compiled.events)
      const onFailed = onActionFailedOf(input.on_action_failed) ?? 'continue'
      const rule: Rule = {
        id: this.newId(name),
        ...(name !== undefined ? { name } : {}),
        for: hook,
        rawsql: input.rawsql,
        actions,
        on_action_failed: onFailed,
        enabled: input.enabled ?? true,
        description: input.description ?? '',
        created_at: Date.now()
      }
      await this.init.table.put(rule.id, rule)
      this.entries.set(rule.id, { rule, compiled })
      this.init.changed()
      return rule
    })
  }

  /**
   * Checks a rule of a data import, its id kept, as `create` checks one, without storing it;
   * `resource` finds the resources its actions name (those of the same import included).
   * Throws as `create` does.
   */
  async checkImported (input: RuleInput & { id: string, created_at?: number }, resource: (id: string) => Resource | undefined): Promise<RuleEntry> {
    await loadSql()
    const compiled = compileRuleSql(input.rawsql)
    // credentials the export masked keep the values of a stored rule of the same id
    const stored = this.entries.get(input.id)?.rule.actions
    const actions = this.checkActions(stored === undefined ? input.actions : this.restoreSecrets(input.actions, stored), compiled.events, resource)
    const rule: Rule = {
      id: input.id,
      ...(input.name !== undefined ? { name: input.name } : {}),
      for: this.forOf(compiled, undefined),
      rawsql: input.rawsql,
      actions,
      on_action_failed: onActionFailedOf(input.on_action_failed) ?? 'continue',
      enabled: input.enabled ?? true,
      description: input.description ?? '',
      created_at: input.created_at ?? Date.now()
    }
    return { rule, compiled }
  }

  /** Stores a rule {@link checkImported} made, replacing one of the same id. */
  async putImported (entry: RuleEntry): Promise<void> {
    await this.serial(async () => {
      await this.init.table.put(entry.rule.id, entry.rule)
      this.entries.set(entry.rule.id, entry)
      this.init.changed()
    })
  }

  /** Checks and applies a change to rule `id`; resolves with the changed rule. */
  async update (id: string, patch: RulePatch): Promise<Rule> {
    return await this.serial(async () => {
      const entry = this.entries.get(id)
      if (entry === undefined) throw notFound(`rule ${id}`)
      if (patch.rawsql !== undefined) await loadSql()
      const compiled = patch.rawsql !== undefined ? compileRuleSql(patch.rawsql) : entry.compiled
      if (compiled === null) throw new RefusedError(`rule ${id}: its SQL does not compile; give a new rawsql`)
      const onFailed = onActionFailedOf(patch.on_action_failed) ?? entry.rule.on_action_failed ?? 'continue'
      const actions = patch.actions !== undefined
        ? this.checkActions(this.restoreSecrets(patch.actions, entry.rule.actions), compiled.events)
        : this.recheck(entry.rule.actions, compiled.events)
      const rule: Rule = {
        ...entry.rule,
        for: patch.rawsql !== undefined ? this.forOf(compiled, undefined) : entry.rule.for,
        rawsql: patch.rawsql ?? entry.rule.rawsql,
        actions,
        on_action_failed: onFailed,
        enabled: patch.enabled ?? entry.rule.enabled,
        description: patch.description ?? entry.rule.description
      }
      await this.init.table.put(id, rule)
      this.entries.set(id, { rule, compiled })
      this.init.changed()
      return rule
    })
  }

  /** Deletes rule `id` (404 when unknown); resolves with the deleted rule. */
  async delete (id: string): Promise<Rule> {
    return await this.serial(async () => {
      const entry = this.entries.get(id)
      if (entry === undefined) throw notFound(`rule ${id}`)
      await this.init.table.del(id)
      this.entries.delete(id)
      this.init.changed()
      return entry.rule
    })
  }

  private async serial<T> (fn: () => Promise<T>): Promise<T> {
    return await this.init.queue.run(fn)
  }

  /**
   * Brings rule `id` in line with the table after another node changed it: compiled and
   * (re)started, or stopped and removed. Queued behind local writes, and it reads the table
   * rather than the change, so what runs is whichever write won. A rule whose SQL does not
   * compile here is kept but does not run (as at start-up); a value that is not a rule is
   * left out. Either is logged; neither stops anything else.
   */
  private followRemote (id: string): void {
    const { logger } = this.init
    this.serial(async () => {
      const rule = this.init.table.get(id)
      const known = this.entries.has(id)
      if (rule === undefined) {
        if (!known) return
        this.entries.delete(id)
        logger.info({ rule_id: id }, 'rule deleted on another node')
      } else if (!isStoredRule(id, rule)) {
        this.entries.delete(id)
        logger.error({ rule_id: id }, 'a rule from another node is not a valid rule; it is not loaded')
      } else {
        await loadSql()
        let compiled: CompiledSql | null = null
        try {
          compiled = compileRuleSql(rule.rawsql)
        } catch (err) {
          logger.error({ rule_id: id, err: (err as Error).message }, 'a rule from another node does not compile; it stays stored but does not run')
        }
        this.entries.set(id, { rule, compiled })
        logger.info({ rule_id: id, enabled: rule.enabled }, known ? 'rule updated on another node' : 'rule created on another node')
      }
      this.init.changed()
    }).catch((err) => logger.error({ rule_id: id, err }, 'could not apply a rule change from another node'))
  }

  /** `<name>:<ms>` (the next free number) or `rule:<8 hex>`. */
  private newId (name: string | undefined): string {
    if (name === undefined) {
      let id: string
      do id = `rule:${randomBytes(4).toString('hex')}`; while (this.entries.has(id))
      return id
    }
    let n = Date.now()
    while (this.entries.has(`${name}:${n}`)) n++
    return `${name}:${n}`
  }

  /** The rule's `for`: the given one (which must be an event of the SQL) or the SQL's events. */
  private forOf (compiled: CompiledSql, given: string | undefined): string {
    if (given === undefined || given === '') return compiled.events.join(',')
    if (typeof given !== 'string') throw new WrongTypeError('parameter for must be a string')
    if (!(compiled.events as readonly string[]).includes(given)) {
      throw new RefusedError(`for is ${given} but the SQL's FROM names ${compiled.events.join(', ')}; give one of those or leave for out`)
    }
    return given
  }

  /**
   * Checks every action of a rule hanging on `events`, and their `fallbacks` (EMQ X 4.4's
   * shape: an array of actions, each of which may have fallbacks too); returns the stored
   * form. `resource` finds the resources the actions name (a data import's own included);
   * `at` names the list in error messages (`actions`, `actions[0].fallbacks`).
   */
  private checkActions (given: unknown, events: readonly string[], resource = this.init.resource, at = 'actions', stamp = Date.now().toString(36), idSuffix = ''): RuleAction[] {
    if (!Array.isArray(given)) throw new WrongTypeError(`parameter ${at} must be an array of {name, params, fallbacks?}`)
    return given.map((a: unknown, i: number) => {
      if (typeof a !== 'object' || a === null || Array.isArray(a)) throw new WrongTypeError(`${at}[${i}] must be an object {name, params, fallbacks?}`)
      const { name, params, fallbacks } = a as { name?: unknown, params?: unknown, fallbacks?: unknown }
      if (name === undefined) throw new MissingParameterError(`missing parameter ${at}[${i}].name`)
      if (typeof name !== 'string') throw new WrongTypeError(`parameter ${at}[${i}].name must be a string`)
      const checked = this.checkAction(name, params, events, resource)
      const suffix = `${idSuffix}_${i}`
      const action: RuleAction = { id: `${name.replace(/^.*:/, '')}_${stamp}${suffix}`, name, params: checked }
      if (fallbacks !== undefined && !(Array.isArray(fallbacks) && fallbacks.length === 0)) {
        action.fallbacks = this.checkActions(fallbacks, events, resource, `${at}[${i}].fallbacks`, stamp, `${suffix}_f`)
      }
      return action
    })
  }

  /**
   * `given` actions with what was shown masked (`******`, a header's value) put back from
   * `stored`: an action keeps the stored values of the action at its position when both have
   * the same name (the rule as shown, sent back with other changes); so do its fallbacks.
   */
  private restoreSecrets (given: unknown, stored: readonly RuleAction[]): unknown {
    if (!Array.isArray(given)) return given
    return given.map((a: unknown, i: number) => {
      const before = stored[i]
      if (before === undefined || typeof a !== 'object' || a === null || Array.isArray(a)) return a
      const { name, params, fallbacks } = a as { name?: unknown, params?: unknown, fallbacks?: unknown }
      if (name !== before.name) return a
      let out = a as Record<string, unknown>
      if (typeof params === 'object' && params !== null && !Array.isArray(params)) {
        out = { ...out, params: restoreParams(params as Record<string, unknown>, before.params, this.init.registry.findAction(before.name)?.params) }
      }
      if (Array.isArray(fallbacks) && before.fallbacks !== undefined) out = { ...out, fallbacks: this.restoreSecrets(fallbacks, before.fallbacks) }
      return out
    })
  }

  /** Checks stored actions and their fallbacks again (the SQL changed, or a resource may be gone). */
  private recheck (actions: RuleAction[], events: readonly string[]): RuleAction[] {
    for (const a of everyAction(actions)) this.checkAction(a.name, a.params, events)
    return actions
  }

  private checkAction (name: string, params: unknown, events: readonly string[], resource = this.init.resource): Record<string, unknown> {
    const def = this.init.registry.findAction(name)
    if (def === undefined) {
      const known = this.init.registry.actions().map(d => d.name).join(', ')
      throw new RefusedError(`unknown action ${name}; known actions: ${known} (GET /api/v3/actions)`)
    }
    for (const event of events) {
      if (!actionServes(def.for, event)) throw new RefusedError(`action ${name} is for ${def.for}; it cannot run on ${event}`)
    }
    const checked = checkParams(def.params, params, `action ${name}`)
    def.check?.(checked)
    if (def.types.length > 0) {
      const id = checked.$resource as string
      const bound = resource(id)
      if (bound === undefined) throw new RefusedError(`action ${name}: resource ${id} does not exist; create it first (POST /api/v3/resources)`)
      if (!def.types.includes(bound.type)) {
        throw new RefusedError(`action ${name}: resource ${id} is of type ${bound.type}; the action needs one of type ${def.types.join(' or ')}`)
      }
    }
    return checked
  }
}

/** Whether `value`, stored at `id`, has the shape of a {@link Rule} (another node wrote it). */
function isStoredRule (id: string, value: unknown): value is Rule {
  const r = value as Partial<Rule> | null
  return typeof r === 'object' && r !== null && r.id === id && typeof r.rawsql === 'string' &&
    typeof r.for === 'string' && typeof r.enabled === 'boolean' && typeof r.description === 'string' &&
    typeof r.created_at === 'number' && (r.name === undefined || typeof r.name === 'string') &&
    (r.on_action_failed === undefined || r.on_action_failed === 'continue' || r.on_action_failed === 'stop') &&
    areStoredActions(r.actions)
}

/** Whether `actions` are stored rule actions, fallbacks included. */
function areStoredActions (actions: unknown): actions is RuleAction[] {
  return Array.isArray(actions) && actions.every((a: Partial<RuleAction> | null) =>
    typeof a === 'object' && a !== null && typeof a.id === 'string' && typeof a.name === 'string' &&
    typeof a.params === 'object' && a.params !== null && !Array.isArray(a.params) &&
    (a.fallbacks === undefined || areStoredActions(a.fallbacks)))
}
