/**
 * Rules and resources as the API and the CLI show them: the stored record plus, per node,
 * the counters (`metrics`, EMQ X 4's shape) or the health (`status`).
 */
import { isCredentialName, maskHeaderList, maskHeaders, maskUrl, REDACTED as CONFIG_REDACTED, restoreHeaderList, restoreHeaders, restoreUrl } from '../node/config/index.js'
import type { ActionNodeMetrics, OnActionFailed, ParamSpecs, Resource, Rule, RuleAction, RuleNodeMetrics } from './types.js'

/** Every node's counters, as the `rules.metrics` node operation answers them. */
export interface NodeRuleMetrics {
  node: string
  rules: Record<string, RuleNodeMetrics>
  actions: Record<string, ActionNodeMetrics>
}

/** An action of a rule as shown: its counters on every node added, its fallbacks shown alike. */
export interface RuleActionView {
  id: string
  name: string
  params: Record<string, unknown>
  metrics: ActionNodeMetrics[]
  /** EMQ X 4.4's: the actions run when this one fails (`[]` when none). */
  fallbacks: RuleActionView[]
}

/** A rule as shown (spec: Rule, plus `metrics` per node). */
export interface RuleView {
  id: string
  name?: string
  for: string
  rawsql: string
  actions: RuleActionView[]
  on_action_failed: OnActionFailed
  enabled: boolean
  description: string
  /** When it was created, ms since epoch (EMQ X 4.4 shows it). */
  created_at: number
  metrics: RuleNodeMetrics[]
}

/** A resource as shown (spec: Resource); `status` per node in `show`. */
export interface ResourceView {
  id: string
  name?: string
  type: string
  config: Record<string, unknown>
  description: string
  attrs: 'undefined'
  status?: Array<{ node: string, is_alive: boolean }>
}

/**
 * `rule` with the counters of every node that answered; each action's params as
 * {@link maskParams} shows them with the action's specs (`specsOf`: a web_hook action's
 * header values), or guessed from their names when the action is unknown here.
 */
export function ruleView (rule: Rule, perNode: NodeRuleMetrics[], specsOf: (action: string) => ParamSpecs | undefined = () => undefined): RuleView {
  const zero = (node: string): RuleNodeMetrics => ({ node, matched: 0, speed: 0, speed_max: 0, speed_last5m: 0, failed: 0 })
  const shown = (actions: readonly RuleAction[]): RuleActionView[] => actions.map(a => ({
    id: a.id,
    name: a.name,
    params: maskParams(a.params, specsOf(a.name)),
    metrics: perNode.flatMap(m => m.actions[a.id] ?? []),
    fallbacks: shown(a.fallbacks ?? [])
  }))
  return {
    id: rule.id,
    ...(rule.name !== undefined ? { name: rule.name } : {}),
    for: rule.for,
    rawsql: rule.rawsql,
    actions: shown(rule.actions),
    on_action_failed: rule.on_action_failed ?? 'continue',
    enabled: rule.enabled,
    description: rule.description,
    created_at: rule.created_at,
    metrics: perNode.map(m => m.rules[rule.id] ?? zero(m.node))
  }
}

/** What a secret config value (a `secret` param, e.g. a bridge's password) is shown as. */
export const REDACTED = CONFIG_REDACTED

/**
 * `config` (a resource's, or an action's params) as shown: the values of `secret` params as
 * {@link REDACTED} when set, the credential parts of `secretParts` params masked (a URL's
 * `?token=`, header values).
 */
export function maskParams (config: Record<string, unknown>, specs: ParamSpecs | undefined): Record<string, unknown> {
  let out = config
  for (const [key, spec] of Object.entries(specs ?? guessedSpecs(config))) {
    const value = config[key]
    if (value === undefined || value === '') continue
    let shown = value
    if (spec.secret === true) shown = REDACTED
    else if (spec.secretParts === 'url' && typeof value === 'string') shown = maskUrl(value)
    else if (spec.secretParts === 'headers' && Array.isArray(value)) shown = maskHeaderList(value)
    else if (spec.secretParts === 'headers' && typeof value === 'object' && value !== null) shown = maskHeaders(value as Record<string, unknown>)
    if (shown !== value) out = { ...out, [key]: shown }
  }
  return out
}

/**
 * `config` to store when a change sends `sent` for a resource (or an action) that holds `stored`: a secret
 * param sent as {@link REDACTED} keeps its value, and the masked parts of a `secretParts`
 * param (a URL's `token=******`, a header's `******`) keep theirs.
 */
export function restoreParams (sent: Record<string, unknown>, stored: Record<string, unknown>, specs: ParamSpecs | undefined): Record<string, unknown> {
  let out = sent
  for (const [key, spec] of Object.entries(specs ?? {})) {
    const value = sent[key]
    const before = stored[key]
    let kept = value
    if (spec.secret === true && value === REDACTED && before !== undefined) kept = before
    else if (spec.secretParts === 'url' && typeof value === 'string' && typeof before === 'string') kept = restoreUrl(value, before)
    else if (spec.secretParts === 'headers' && Array.isArray(value) && Array.isArray(before)) kept = restoreHeaderList(value, before)
    else if (spec.secretParts === 'headers' && isRecord(value) && isRecord(before)) kept = restoreHeaders(value, before)
    if (kept !== value) out = { ...out, [key]: kept }
  }
  return out
}

/**
 * The specs of a config whose type is unknown here (a resource another node created with a
 * type of its own): credentials are guessed from the keys' names, so that they are not shown.
 */
function guessedSpecs (config: Record<string, unknown>): ParamSpecs {
  const out: ParamSpecs = {}
  for (const key of Object.keys(config)) {
    const base = { type: 'string' as const, required: false, title: key, description: '' }
    if (key === 'url') out[key] = { ...base, secretParts: 'url' }
    else if (key === 'headers') out[key] = { ...base, type: 'object', secretParts: 'headers' }
    else if (isCredentialName(key) && !/file$/.test(key)) out[key] = { ...base, secret: true }
  }
  return out
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * `resource` as shown, with `status` when given; its config as {@link maskParams} shows it
 * with its type's params (`specs`).
 */
export function resourceView (resource: Resource, status?: ResourceView['status'], specs?: ParamSpecs): ResourceView {
  const config = maskParams(resource.config, specs)
  return {
    id: resource.id,
    ...(resource.name !== undefined ? { name: resource.name } : {}),
    type: resource.type,
    config,
    description: resource.description,
    attrs: resource.attrs,
    ...(status !== undefined ? { status } : {})
  }
}
