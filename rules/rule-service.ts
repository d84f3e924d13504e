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
 */
import { randomBytes } from 'node:crypto'
import type { StoreTable } from '../node/store/index.js'
import type { SerialQueue } from './serial-queue.js'
import type { Logger } from '../node/logger.js'
import { ApiError, CODES, notFound } from '../node/errors.js'
import { compileSql, type CompiledSql } from './sql/index.js'
import { SqlError } from './sql/errors.js'
import { actionServes, type ActionRegistry } from './registry.js'
import { checkParams } from './params.js'
import type { Resource, Rule, RuleAction } from './types.js'

/** What creating a rule takes (spec: named variant with `name` and `for`, or the short one). */
export interface RuleInput {
  name?: string
  for?: string
  rawsql: string
  actions: Array<{ name: string, params?: Record<string, unknown> }>
  description?: string
  enabled?: boolean
}

/** What `PUT /rules/:id` and `rules update` may change. */
export interface RulePatch {
  rawsql?: string
  actions?: RuleInput['actions']
  description?: string
  enabled?: boolean
}

/** A stored rule with its compiled SQL (null when the SQL no longer compiles). */
export interface RuleEntry {
  rule: Rule
  compiled: CompiledSql | null
}

/** Names of rules and resources: no spaces, `/` or `:` (ids are `<name>:<...>`). */
export const NAME_PATTERN = /^[^\s/:]{1,128}$/

/** Compiles `rawsql`: an invalid statement is error 102 (HTTP 400) with the SQL error's message. */
export function compileRuleSql (rawsql: string): CompiledSql {
  if (typeof rawsql !== 'string' || rawsql.trim() === '') throw new ApiError(CODES.MISSING_PARAMETER, 'missing parameter rawsql (the rule SQL)')
  try {
    return compileSql(rawsql)
  } catch (err) {
    if (err instanceof SqlError || (err as Error)?.name === 'SqlError') throw new ApiError(CODES.UNKNOWN, `invalid SQL: ${(err as Error).message}`, 400)
    throw err
  }
}

/** What the rule service needs. */
export interface RuleServiceInit {
  table: StoreTable<Rule>
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
  }

  /** Every rule with its compiled SQL, in id order. */
  all (): RuleEntry[] {
    return [...this.entries.values()].sort((a, b) => a.rule.id < b.rule.id ? -1 : a.rule.id > b.rule.id ? 1 : 0)
  }

  /** Every rule, in id order. */
  list (): Rule[] {
    return this.all().map(e => e.rule)
  }

  /** The rule `id`; throws a not-found (404). */
  get (id: string): Rule {
    const entry = this.entries.get(id)
    if (entry === undefined) throw notFound(`rule ${id}`)
    return entry.rule
  }

  /** The rules whose actions are bound to resource `resourceId`. */
  usingResource (resourceId: string): Rule[] {
    return this.list().filter(r => r.actions.some(a => a.params.$resource === resourceId))
  }

  /** Checks and stores a new rule; resolves with it. */
  async create (input: RuleInput): Promise<Rule> {
    return await this.serial(async () => {
      const name = input.name
      if (name !== undefined && (typeof name !== 'string' || !NAME_PATTERN.test(name))) {
        throw new ApiError(CODES.WRONG_TYPE, `rule name must be 1 to 128 characters without spaces, '/' or ':', got ${JSON.stringify(name)}`)
      }
      const compiled = compileRuleSql(input.rawsql)
      const hook = this.forOf(compiled, input.for)
      const actions = this.checkActions(input.actions, compiled.events)
      const rule: Rule = {
        id: this.newId(name),
        ...(name !== undefined ? { name } : {}),
        for: hook,
        rawsql: input.rawsql,
        actions,
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

  /** Checks and applies a change to rule `id`; resolves with the changed rule. */
  async update (id: string, patch: RulePatch): Promise<Rule> {
    return await this.serial(async () => {
      const entry = this.entries.get(id)
      if (entry === undefined) throw notFound(`rule ${id}`)
      const compiled = patch.rawsql !== undefined ? compileRuleSql(patch.rawsql) : entry.compiled
      if (compiled === null) throw new ApiError(CODES.UNKNOWN, `rule ${id}: its SQL does not compile; give a new rawsql`, 400)
      const actions = patch.actions !== undefined
        ? this.checkActions(patch.actions, compiled.events)
        : this.recheck(entry.rule.actions, compiled.events)
      const rule: Rule = {
        ...entry.rule,
        for: patch.rawsql !== undefined ? this.forOf(compiled, undefined) : entry.rule.for,
        rawsql: patch.rawsql ?? entry.rule.rawsql,
        actions,
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
    if (typeof given !== 'string') throw new ApiError(CODES.WRONG_TYPE, 'parameter for must be a string')
    if (!(compiled.events as readonly string[]).includes(given)) {
      throw new ApiError(CODES.UNKNOWN, `for is ${given} but the SQL's FROM names ${compiled.events.join(', ')}; give one of those or leave for out`, 400)
    }
    return given
  }

  /** Checks every action of a rule hanging on `events`; returns the stored form. */
  private checkActions (given: unknown, events: readonly string[]): RuleAction[] {
    if (!Array.isArray(given)) throw new ApiError(CODES.WRONG_TYPE, 'parameter actions must be an array of {name, params}')
    const stamp = Date.now().toString(36)
    return given.map((a: unknown, i: number) => {
      if (typeof a !== 'object' || a === null || Array.isArray(a)) throw new ApiError(CODES.WRONG_TYPE, `actions[${i}] must be an object {name, params}`)
      const { name, params } = a as { name?: unknown, params?: unknown }
      if (name === undefined) throw new ApiError(CODES.MISSING_PARAMETER, `missing parameter actions[${i}].name`)
      if (typeof name !== 'string') throw new ApiError(CODES.WRONG_TYPE, `parameter actions[${i}].name must be a string`)
      const checked = this.checkAction(name, params, events)
      return { id: `${name.replace(/^.*:/, '')}_${stamp}_${i}`, name, params: checked }
    })
  }

  /** Checks stored actions again (the SQL changed, or a resource may be gone). */
  private recheck (actions: RuleAction[], events: readonly string[]): RuleAction[] {
    for (const a of actions) this.checkAction(a.name, a.params, events)
    return actions
  }

  private checkAction (name: string, params: unknown, events: readonly string[]): Record<string, unknown> {
    const def = this.init.registry.findAction(name)
    if (def === undefined) {
      const known = this.init.registry.actions().map(d => d.name).join(', ')
      throw new ApiError(CODES.UNKNOWN, `unknown action ${name}; known actions: ${known} (GET /api/v3/actions)`, 400)
    }
    for (const event of events) {
      if (!actionServes(def.for, event)) throw new ApiError(CODES.UNKNOWN, `action ${name} is for ${def.for}; it cannot run on ${event}`, 400)
    }
    const checked = checkParams(def.params, params, `action ${name}`)
    if (def.types.length > 0) {
      const id = checked.$resource as string
      const resource = this.init.resource(id)
      if (resource === undefined) throw new ApiError(CODES.UNKNOWN, `action ${name}: resource ${id} does not exist; create it first (POST /api/v3/resources)`, 400)
      if (!def.types.includes(resource.type)) {
        throw new ApiError(CODES.UNKNOWN, `action ${name}: resource ${id} is of type ${resource.type}; the action needs one of type ${def.types.join(' or ')}`, 400)
      }
    }
    return checked
  }
}
