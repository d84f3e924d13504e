/**
 * The actions and resource types the code provides (spec: Action and Resource type are
 * read-only). Both naming styles resolve: an action is found by its primary name
 * (`inspect`) or any alias (`built_in:inspect_action`).
 */
import { NotFoundError } from '../node/errors.js'
import type { ActionDefinition, ParamSpecs, ResourceTypeDefinition } from './types.js'

/** An action as the API and the CLI show it (spec: Action). */
export interface ActionInfo {
  name: string
  aliases: string[]
  app: string
  for: string
  types: string[]
  title: string
  description: string
  params: ParamSpecs
}

/** A resource type as the API and the CLI show it (spec: Resource type). */
export interface ResourceTypeInfo {
  name: string
  provider: string
  title: string
  description: string
  params: ParamSpecs
}

/** The rule-engine trigger events an action with `for: $events` can serve (all of them). */
const EVENTS_FOR = new Set(['$any', '$events'])

/** The registry of one rule engine. */
export interface ActionRegistry {
  /** Adds a resource type; throws when its name is taken. */
  registerResourceType (def: ResourceTypeDefinition): void
  /** Adds an action; throws when one of its names is taken or its resource type is unknown. */
  registerAction (def: ActionDefinition): void
  /** The action called `name` (either style), or undefined. */
  findAction (name: string): ActionDefinition | undefined
  /** The action called `name`; throws a not-found (404) naming the known actions. */
  action (name: string): ActionDefinition
  /** Actions that can serve `hook` (its own and `$any` / `$events` ones), or all. */
  actions (hook?: string): ActionDefinition[]
  /** Actions bound to resources of `type`. */
  actionsOfType (type: string): ActionDefinition[]
  findResourceType (name: string): ResourceTypeDefinition | undefined
  /** The resource type `name`; throws a not-found (404) naming the known types. */
  resourceType (name: string): ResourceTypeDefinition
  resourceTypes (): ResourceTypeDefinition[]
  /** Removes an action by its primary name (a plugin that provided it unloads); false when unknown. */
  removeAction (name: string): boolean
  /** Removes a resource type; its actions must be removed first. False when unknown. */
  removeResourceType (name: string): boolean
}

/** Whether an action declared `for` can be bound to a rule hanging on `hook`. */
export function actionServes (actionFor: string, hook: string): boolean {
  return actionFor === hook || EVENTS_FOR.has(actionFor) || hook === '$any'
}

/** The API/CLI view of an action (without its `run`). */
export function actionInfo (def: ActionDefinition): ActionInfo {
  const { name, aliases, app, types, title, description, params } = def
  return { name, aliases, app, for: def.for, types, title, description, params }
}

/** The API/CLI view of a resource type (without its health check). */
export function resourceTypeInfo (def: ResourceTypeDefinition): ResourceTypeInfo {
  const { name, provider, title, description, params } = def
  return { name, provider, title, description, params }
}

/** Creates an empty registry. */
export function createActionRegistry (): ActionRegistry {
  const actions: ActionDefinition[] = []
  const byName = new Map<string, ActionDefinition>()
  const types = new Map<string, ResourceTypeDefinition>()
  const registry: ActionRegistry = {
    registerResourceType (def) {
      if (types.has(def.name)) throw new Error(`resource type ${def.name} is registered twice`)
      types.set(def.name, def)
    },
    registerAction (def) {
      for (const name of [def.name, ...def.aliases]) {
        if (byName.has(name)) throw new Error(`action ${name} is registered twice`)
      }
      for (const type of def.types) {
        if (!types.has(type)) throw new Error(`action ${def.name} binds to unknown resource type ${type}`)
      }
      actions.push(def)
      for (const name of [def.name, ...def.aliases]) byName.set(name, def)
    },
    findAction: (name) => byName.get(name),
    action (name) {
      const def = byName.get(name)
      if (def === undefined) throw new NotFoundError(`action ${name}`, `known actions: ${actions.map(a => a.name).join(', ')}`)
      return def
    },
    actions: (hook) => hook === undefined || hook === '' ? [...actions] : actions.filter(a => actionServes(a.for, hook)),
    actionsOfType: (type) => actions.filter(a => a.types.includes(type)),
    findResourceType: (name) => types.get(name),
    resourceType (name) {
      const def = types.get(name)
      if (def === undefined) throw new NotFoundError(`resource type ${name}`, `known types: ${[...types.keys()].join(', ')}`)
      return def
    },
    resourceTypes: () => [...types.values()],
    removeAction (name) {
      const def = byName.get(name)
      if (def === undefined || def.name !== name) return false
      actions.splice(actions.indexOf(def), 1)
      for (const n of [def.name, ...def.aliases]) byName.delete(n)
      return true
    },
    removeResourceType (name) {
      const bound = actions.find(a => a.types.includes(name))
      if (bound !== undefined) throw new Error(`resource type ${name} still has action ${bound.name}`)
      return types.delete(name)
    }
  }
  return registry
}
