/**
 * `/api/v3/rules` (spec: Rule engine: rules): create (named or short variant), list, show,
 * update (`PUT`, EMQ X 4.4's: rawsql, actions with their fallbacks, on_action_failed,
 * description, enabled), reset the counters (`PUT /rules/:id/reset_metrics`), delete, and the
 * SQL tester `POST /rules?test=true` with `{rawsql, ctx}`. Thin: the checks and the work are
 * in rules/rule-ops.ts. Bad input: 107 missing, 108 wrong type, 102 (HTTP 400) invalid
 * SQL / unknown action / unknown resource, 404 unknown id; nothing changes (docs/rules.md).
 */
import { defineRoutes, type JsonSchema, type RouteDef } from '../route-table.js'
import { MissingParameterError } from '../../node/errors.js'
import { RULE_ENGINE_ROUTES } from './rule-resources.js'
import {
  createRule, deleteRule, listRules, resetRuleMetrics, showRule, testRuleSql, updateRule, type RuleInput, type RulePatch
} from '../../rules/rule-ops.js'

const ACTIONS: JsonSchema = {
  type: 'array',
  description: 'the actions: [{name, params, fallbacks?}]; a bound resource is params.$resource',
  items: {
    type: 'object',
    properties: {
      name: { type: 'string', description: 'e.g. inspect or built_in:inspect_action' },
      params: { type: 'object' },
      fallbacks: { type: 'array', description: 'actions run with the same data when this one fails: [{name, params, fallbacks?}]', items: { type: 'object' } }
    },
    required: ['name']
  }
}

const ON_ACTION_FAILED: JsonSchema = {
  type: 'string',
  enum: ['continue', 'stop'],
  description: 'after a failed action (and its fallbacks): continue with the other actions (default) or stop (skip the actions after it)'
}

const CREATE_BODY: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'named variant: the id becomes <name>:<number>' },
    for: { type: 'string', description: 'named variant: the event (must be one the FROM names); derived from FROM when absent' },
    rawsql: { type: 'string', description: 'the rule SQL' },
    actions: ACTIONS,
    on_action_failed: ON_ACTION_FAILED,
    description: { type: 'string' },
    enabled: { type: 'boolean', description: 'default true' },
    ctx: { type: 'object', description: 'with ?test=true: the event columns to test the SQL on' }
  },
  required: ['rawsql']
}

const UPDATE_BODY: JsonSchema = {
  type: 'object',
  properties: {
    rawsql: { type: 'string' },
    actions: ACTIONS,
    on_action_failed: ON_ACTION_FAILED,
    description: { type: 'string' },
    enabled: { type: 'boolean' }
  }
}

/** The rule endpoints and the other rule-engine endpoints (actions, resource types, resources). */
export const RULE_ROUTES: RouteDef[] = defineRoutes([
  {
    name: 'create_rule',
    method: 'POST',
    path: '/rules',
    descr: 'Create a rule (with ?test=true: test its SQL on {rawsql, ctx} without creating anything)',
    body: CREATE_BODY,
    handler: async (req) => {
      if (req.query.test === 'true') return { data: await testRuleSql(req.rules, { rawsql: req.body.rawsql, ctx: req.body.ctx }) }
      if (req.body.actions === undefined) throw new MissingParameterError('missing parameter actions (an array of {name, params}, may be empty)')
      const { name, for: hook, rawsql, actions, on_action_failed: onFailed, description, enabled } = req.body as RuleInput
      return { data: await createRule(req.rules, { name, for: hook, rawsql, actions, on_action_failed: onFailed, description, enabled }) }
    }
  },
  {
    name: 'list_rules',
    method: 'GET',
    path: '/rules',
    descr: 'List all rules with their metrics',
    handler: async (req) => ({ data: await listRules(req.rules) })
  },
  {
    name: 'show_rule',
    method: 'GET',
    path: '/rules/:id',
    descr: 'Show a rule',
    handler: async (req) => ({ data: await showRule(req.rules, req.params.id) })
  },
  {
    name: 'update_rule',
    method: 'PUT',
    path: '/rules/:id',
    descr: 'Update a rule (rawsql, actions, on_action_failed, description, enabled)',
    body: UPDATE_BODY,
    handler: async (req) => {
      const { rawsql, actions, on_action_failed: onFailed, description, enabled } = req.body as RulePatch
      return { data: await updateRule(req.rules, req.params.id, { rawsql, actions, on_action_failed: onFailed, description, enabled }) }
    }
  },
  {
    name: 'reset_metrics',
    method: 'PUT',
    path: '/rules/:id/reset_metrics',
    descr: 'Reset the metrics of a rule and its actions on every node',
    handler: async (req) => {
      const failed = await resetRuleMetrics(req.rules, req.params.id)
      return failed.length === 0 ? undefined : { data: null, failed }
    }
  },
  {
    name: 'delete_rule',
    method: 'DELETE',
    path: '/rules/:id',
    descr: 'Delete a rule',
    handler: async (req) => { await deleteRule(req.rules, req.params.id); return undefined }
  },
  ...RULE_ENGINE_ROUTES
])
