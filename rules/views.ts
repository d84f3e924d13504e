/**
 * Rules and resources as the API and the CLI show them: the stored record plus, per node,
 * the counters (`metrics`, EMQ X 4's shape) or the health (`status`).
 */
import type { ActionNodeMetrics, ParamSpecs, Resource, Rule, RuleNodeMetrics } from './types.js'

/** Every node's counters, as the `rules.metrics` node operation answers them. */
export interface NodeRuleMetrics {
  node: string
  rules: Record<string, RuleNodeMetrics>
  actions: Record<string, ActionNodeMetrics>
}

/** An action of a rule as shown: its counters on every node added. */
export interface RuleActionView {
  id: string
  name: string
  params: Record<string, unknown>
  metrics: ActionNodeMetrics[]
}

/** A rule as shown (spec: Rule, plus `metrics` per node). */
export interface RuleView {
  id: string
  name?: string
  for: string
  rawsql: string
  actions: RuleActionView[]
  enabled: boolean
  description: string
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

/** `rule` with the counters of every node that answered. */
export function ruleView (rule: Rule, perNode: NodeRuleMetrics[]): RuleView {
  const zero = (node: string): RuleNodeMetrics => ({ node, matched: 0, speed: 0, speed_max: 0, speed_last5m: 0, failed: 0 })
  return {
    id: rule.id,
    ...(rule.name !== undefined ? { name: rule.name } : {}),
    for: rule.for,
    rawsql: rule.rawsql,
    actions: rule.actions.map(a => ({
      id: a.id,
      name: a.name,
      params: a.params,
      metrics: perNode.flatMap(m => m.actions[a.id] ?? [])
    })),
    enabled: rule.enabled,
    description: rule.description,
    metrics: perNode.map(m => m.rules[rule.id] ?? zero(m.node))
  }
}

/** What a secret config value (a `secret` param, e.g. a bridge's password) is shown as. */
export const REDACTED = '******'

/**
 * `resource` as shown, with `status` when given; the values of its type's `secret` params
 * (`specs`) are shown as {@link REDACTED} when set.
 */
export function resourceView (resource: Resource, status?: ResourceView['status'], specs?: ParamSpecs): ResourceView {
  let config = resource.config
  for (const [key, spec] of Object.entries(specs ?? {})) {
    if (spec.secret === true && config[key] !== undefined && config[key] !== '') config = { ...config, [key]: REDACTED }
  }
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
