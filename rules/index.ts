/**
 * The rule engine (DESIGN rules/): SQL rules on the hooks bus, actions and resource types
 * registered by code, resources and rules kept in the store, per-rule and per-action
 * counters. Factories and types only; docs/rules.md is the user's guide. The composition
 * root builds one rules part per node ({@link createRulesPart}), which holds that node's engine.
 */
export { createRulesPart, type RulesPart } from './part.js'
export { createRuleEngine, createBuiltInRegistry, RULES_TABLE, RESOURCES_TABLE, type RuleEngine, type RuleEngineComponents } from './engine.js'
export { createRuleEnginePlugin } from './plugin.js'
export type { RuleOpsComponents, RuleOperationsComponents } from './rule-ops.js'
export type { RuleRuntimeComponents } from './runtime.js'
export { createActionRegistry, actionInfo, resourceTypeInfo, type ActionRegistry, type ActionInfo, type ResourceTypeInfo } from './registry.js'
export { RULE_CTL_COMMANDS } from './ctl.js'
export type { RuleInput, RulePatch, RuleEntry } from './rule-service.js'
export type { ResourceInput, ResourceStatus } from './resource-service.js'
export type { RuleView, ResourceView, NodeRuleMetrics } from './views.js'
export type {
  ActionContext, ActionDefinition, ActionNodeMetrics, ParamSpec, ParamSpecs, Resource, ResourceTypeDefinition,
  Rule, RuleAction, RuleNodeMetrics, RulePublish
} from './types.js'
