/**
 * Parameter specs as the rule engine's API gives them (an action's `params`, a resource
 * type's `params`: `{type, required, title, description, default, enum, format, secret}`)
 * and what ParamsForm.vue needs around them: the starting values and the value sent. Kept
 * generic so that an action or resource type added later is drawn with no dashboard change.
 */

/** One parameter's spec (unknown types are edited as JSON). */
export interface ParamSpec {
  type: string
  required?: boolean
  title?: string
  description?: string
  default?: unknown
  enum?: unknown[]
  /** `topic`, `url`, `template` (a multi-line text) ... */
  format?: string
  /** A credential: typed in a password field. */
  secret?: boolean
  [key: string]: unknown
}

/** Specs by parameter name. */
export type ParamSpecs = Record<string, ParamSpec>

/** The form's starting values: `given` where present, else each spec's default (a copy: specs may be reactive proxies, which structuredClone refuses). */
export function paramValues (specs: ParamSpecs, given: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = { ...given }
  for (const [name, spec] of Object.entries(specs)) {
    if (out[name] === undefined && spec.default !== undefined) out[name] = JSON.parse(JSON.stringify(spec.default))
  }
  return out
}

/** Whether a value is edited as JSON text (objects, arrays, types the form does not know). */
export function editedAsJson (spec: ParamSpec): boolean {
  if (spec.enum !== undefined) return false
  return !['string', 'number', 'integer', 'boolean', 'file'].includes(spec.type)
}

/** The parameters a form leaves out: those it does not draw (`$resource` has its own picker). */
export function withoutKeys (specs: ParamSpecs, keys: string[]): ParamSpecs {
  return Object.fromEntries(Object.entries(specs).filter(([k]) => !keys.includes(k)))
}

/** A resource type as `GET /resource_types` answers. */
export interface ResourceType { name: string, provider: string, title?: string, description: string, params: ParamSpecs }

/** A resource as `GET /resources` answers (`status` per node from `GET /resources/:id`). */
export interface Resource {
  id: string
  name?: string
  type: string
  config: Record<string, unknown>
  description: string
  status?: Array<{ node: string, is_alive: boolean }>
}

/** An action as `GET /actions` answers: `types` are the resource types it binds to (none: no resource). */
export interface ActionInfo {
  name: string
  aliases?: string[]
  for: string
  types: string[]
  title?: string
  description: string
  params: ParamSpecs
}

/** A rule's action as the rule holds it, with the actions run when it fails (EMQ X 4.4's `fallbacks`). */
export interface RuleAction { id?: string, name: string, params: Record<string, unknown>, fallbacks?: RuleAction[] }
