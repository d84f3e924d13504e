/**
 * The rule engine's service layer (spec: Rule engine endpoints, CLI table), shared by the
 * `/api/v3/rules|actions|resource_types|resources` handlers and the `rules`, `rule-actions`,
 * `resources` and `resource-types` commands. Rules and resources are cluster-wide data;
 * counters (`metrics`) and resource health (`status`) are per node, asked of every running
 * node through the node's RPC: `rules.metrics` and `resources.status`.
 *
 * Every function is given the components it uses ({@link RuleOpsComponents}: the node's
 * engine, its RPC, its name), never the node. The node's rules part (rules/part.ts) creates
 * the engine and calls {@link registerRuleOperations}; the API part hands the same
 * components to its handlers.
 */
import { NotJsonError, RefusedError, SqlNotMatchError, WrongTypeError } from '../node/errors.js'
import { failedNode, type FailedNode, type NodeRpc } from '../node/rpc.js'
import { checkJsonDepth } from '../node/json-depth.js'
import type { RuleEngine } from './engine.js'
import { actionInfo, resourceTypeInfo, type ActionInfo, type ResourceTypeInfo } from './registry.js'
import { compileRuleSql, everyAction, type RuleInput, type RulePatch } from './rule-service.js'
import type { ResourceInput, ResourcePatch, ResourceStatus } from './resource-service.js'
import { resourceView, ruleView, type NodeRuleMetrics, type ResourceView, type RuleView } from './views.js'
import { loadSql } from './sql-loader.js'
import { ruleEvents, type RuleEventInfo } from './rule-events.js'
import { SqlError } from './sql/errors.js'
import { DeferredResult } from './funcs/errors.js'
import type { ControlHandlers, ControlServer } from '../node/control/index.js'
import type { ParamSpecs, Resource, Rule } from './types.js'

export type { RuleInput, RulePatch, ResourceInput, ResourcePatch }

/**
 * What the rule operations use; each function takes the part of it that it reads. The same
 * object serves the schema operations (rules/schemas/schema-ops.ts).
 */
export interface RuleOpsComponents {
  /** The node's rule engine: registry, rules, resources, counters, schemas. */
  readonly engine: RuleEngine
  /** Asks every running node for its counters (`rules.metrics`) and resource health (`resources.status`). */
  readonly rpc: Pick<NodeRpc, 'callAll'>
  /** This node's name: the `node` column of the SQL tester, the `node` of this node's counters. */
  readonly name: string
}

/** What {@link registerRuleOperations} uses beside the operations' components. */
export interface RuleOperationsComponents extends RuleOpsComponents {
  /** Where `rules.metrics` and `resources.status` are registered, and from where the counters are asked. */
  readonly rpc: Pick<NodeRpc, 'callAll' | 'register'>
  /** The control socket the rule-engine commands join. */
  readonly control: Pick<ControlServer, 'register'>
}

type Engine = Pick<RuleOpsComponents, 'engine'>
type EngineAndRpc = Pick<RuleOpsComponents, 'engine' | 'rpc'>

/** What `POST /rules?test=true` takes: the SQL and the event's columns to try it on. */
export interface SqlTestInput {
  rawsql: string
  ctx?: Record<string, unknown>
}

/** The counters of every node that answers (a node that fails is left out). */
async function metricsOfNodes (rpc: RuleOpsComponents['rpc']): Promise<NodeRuleMetrics[]> {
  const answers = await rpc.callAll<NodeRuleMetrics>('rules.metrics')
  return answers.flatMap(a => a.ok ? [a.result] : [])
}

/** The rule as shown: counters of every node, the actions' credentials masked. */
async function view ({ engine, rpc }: EngineAndRpc, rule: Rule): Promise<RuleView> {
  return ruleView(rule, await metricsOfNodes(rpc), actionSpecsOf(engine))
}

/** The params of an action by name (which of its params are secret), when it is known here. */
function actionSpecsOf (engine: RuleEngine): (name: string) => ParamSpecs | undefined {
  return (name) => engine.registry.findAction(name)?.params
}

/** `GET /rules`, `rules list`: every rule with its counters per node. */
export async function listRules ({ engine, rpc }: EngineAndRpc): Promise<RuleView[]> {
  const metrics = await metricsOfNodes(rpc)
  return engine.rules.list().map(r => ruleView(r, metrics, actionSpecsOf(engine)))
}

/** `GET /rules/:id`, `rules show`: 404 when unknown. */
export async function showRule (parts: EngineAndRpc, id: string): Promise<RuleView> {
  return await view(parts, parts.engine.rules.get(id))
}

/** `POST /rules`, `rules create`: checks everything first; nothing is stored on an error. */
export async function createRule (parts: EngineAndRpc, input: RuleInput): Promise<RuleView> {
  return await view(parts, await parts.engine.rules.create(input))
}

/**
 * `PUT /rules/:id`, `rules update`: changes rawsql, actions, description and/or enabled; an
 * action's credential sent back as shown (`******`) keeps its stored value.
 */
export async function updateRule (parts: EngineAndRpc, id: string, patch: RulePatch): Promise<RuleView> {
  return await view(parts, await parts.engine.rules.update(id, patch))
}

/**
 * `PUT /rules/:id/reset_metrics` (EMQ X 4.4's): the counters of the rule and of its actions
 * (fallbacks included) back to zero on every running node. 404 when unknown; a node that
 * does not answer keeps its counters (it is named in the answer's `meta.failed`).
 */
export async function resetRuleMetrics ({ engine, rpc }: EngineAndRpc, id: string): Promise<FailedNode[]> {
  engine.rules.get(id)
  const answers = await rpc.callAll<null>('rules.reset_metrics', { id })
  return answers.flatMap(a => a.ok ? [] : [failedNode(a.node, a.error)])
}

/** `DELETE /rules/:id`, `rules delete`: 404 when unknown. */
export async function deleteRule ({ engine }: Engine, id: string): Promise<void> {
  await engine.rules.delete(id)
}

/** How many times the tester waits for functions that fetch their answer (3rd-party codecs). */
const MAX_TEST_WAITS = 4

/**
 * `POST /rules?test=true` (EMQ X 4's SQL tester): runs `rawsql` on `ctx` (merged over
 * example columns of the event its FROM names) and answers the selected output. Nothing is
 * created. No match: code 404 `SQL Not Match` (EMQ X 4's answer), HTTP 404; an SQL that does
 * not compile or fails on `ctx`: code 102, HTTP 400, with the reason; an output nested deeper
 * than MAX_JSON_DEPTH (a deep payload decoded): JsonTooDeepError, code 102, HTTP 400.
 */
export async function testRuleSql ({ name }: Pick<RuleOpsComponents, 'name'>, input: SqlTestInput): Promise<unknown> {
  const { testSql } = await loadSql()
  compileRuleSql(input.rawsql)
  let result: ReturnType<typeof testSql> | undefined
  for (let waited = 0; result === undefined; waited++) {
    try {
      result = testSql({ rawsql: input.rawsql, ctx: input.ctx ?? {} }, { node: name })
    } catch (err) {
      // a 3rd-party codec is fetching its answer: test again once it is in
      if (err instanceof DeferredResult && waited < MAX_TEST_WAITS) { await err.ready.catch(() => {}); continue }
      if (err instanceof SqlError) throw new RefusedError(`invalid SQL: ${err.message}`)
      throw new RefusedError(`SQL test failed: ${(err as Error).message}`)
    }
  }
  // a payload decoded in the test may nest deeper than an answer can be written (JSON.stringify recurses)
  if (result.ok) return checkJsonDepth(result.output, 'the selected output')
  if (result.reason === 'nomatch') throw new SqlNotMatchError()
  throw new RefusedError(`SQL test failed: ${result.message ?? 'error'}`)
}

/** `GET /rule_events` (EMQ X 4.4's): the events a rule can hang on, with their columns (rules/rule-events.ts). */
export function listRuleEvents (): RuleEventInfo[] {
  return ruleEvents()
}

/** `GET /actions?for=`, `rule-actions list [-k]`: actions that can serve `hook` (all without). */
export function listActions ({ engine }: Engine, hook?: string): ActionInfo[] {
  return engine.registry.actions(hook).map(actionInfo)
}

/** `GET /actions/:name`, `rule-actions show`: either naming style; 404 when unknown. */
export function showAction ({ engine }: Engine, name: string): ActionInfo {
  return actionInfo(engine.registry.action(name))
}

/** `GET /resource_types`, `resource-types list`. */
export function listResourceTypes ({ engine }: Engine): ResourceTypeInfo[] {
  return engine.registry.resourceTypes().map(resourceTypeInfo)
}

/** `GET /resource_types/:type`, `resource-types show`: 404 when unknown. */
export function showResourceType ({ engine }: Engine, type: string): ResourceTypeInfo {
  return resourceTypeInfo(engine.registry.resourceType(type))
}

/** `GET /resource_types/:type/resources`: 404 for an unknown type. */
export function resourcesOfType ({ engine }: Engine, type: string): ResourceView[] {
  engine.registry.resourceType(type)
  return engine.resources.list(type).map(r => resourceView(r, undefined, specsOf(engine, r)))
}

/** `GET /resource_types/:type/actions`: 404 for an unknown type. */
export function actionsOfType ({ engine }: Engine, type: string): ActionInfo[] {
  engine.registry.resourceType(type)
  return engine.registry.actionsOfType(type).map(actionInfo)
}

/** `POST /resources`, `resources create`: config checked against the type; nothing stored on an error. */
export async function createResource ({ engine }: Engine, input: ResourceInput): Promise<ResourceView> {
  const resource = await engine.resources.create(input)
  return resourceView(resource, undefined, specsOf(engine, resource))
}

/**
 * `POST /resources?test=true`, `resources test` (EMQ X 4.4's dry run): the checks of a create,
 * the probe included; nothing is stored.
 */
export async function testResource ({ engine }: Engine, input: ResourceInput): Promise<void> {
  await engine.resources.test(input)
}

/**
 * `PUT /resources/:id`: a new config and/or description; a secret sent back as shown
 * (`******`, masked URL and header parts) keeps its stored value. 404 when unknown.
 */
export async function updateResource ({ engine }: Engine, id: string, patch: ResourcePatch): Promise<ResourceView> {
  const resource = await engine.resources.update(id, patch)
  return resourceView(resource, undefined, specsOf(engine, resource))
}

/** The params of `resource`'s type (which of its config keys are secret), when the type is known here. */
function specsOf (engine: RuleEngine, resource: Resource): ParamSpecs | undefined {
  return engine.registry.findResourceType(resource.type)?.params
}

/** `GET /resources`, `resources list [-t]`. */
export function listResources ({ engine }: Engine, type?: string): ResourceView[] {
  return engine.resources.list(type).map(r => resourceView(r, undefined, specsOf(engine, r)))
}

/** `GET /resources/:id`, `resources show`: with `status` (health checked now) per node. */
export async function showResource ({ engine, rpc }: EngineAndRpc, id: string): Promise<ResourceView> {
  const resource = engine.resources.get(id)
  const answers = await rpc.callAll<ResourceStatus>('resources.status', { id })
  return resourceView(resource, answers.map(a => ({ node: a.node, is_alive: a.ok && a.result.is_alive })), specsOf(engine, resource))
}

/**
 * `GET /resource_status/:id` (EMQ X 4.4's): the health of resource `id` on the node handling
 * the request, checked now. 404 when unknown.
 */
export async function resourceStatus ({ engine }: Engine, id: string): Promise<ResourceStatus> {
  return await engine.resources.status(id)
}

/**
 * `POST /resources/:id` (EMQ X 4.4's start_resource: reconnect): first the backend must be
 * reachable from this node (as at creation: 102 naming why, nothing restarted), then the
 * resource's instance is closed and opened again on every running node (each reconnects,
 * its buffer kept). Resolves with the nodes that could not restart theirs. 404 when unknown.
 */
export async function restartResource ({ engine, rpc }: EngineAndRpc, id: string): Promise<FailedNode[]> {
  await engine.resources.reachable(id)
  const answers = await rpc.callAll<null>('resources.restart', { id })
  return answers.flatMap(a => a.ok ? [] : [failedNode(a.node, a.error)])
}

/** `DELETE /resources/:id`, `resources delete`: 404 when unknown, refused while a rule uses it. */
export async function deleteResource ({ engine }: Engine, id: string): Promise<void> {
  await engine.resources.delete(id)
}

/** This node's counters of every rule and action instance. */
function nodeMetrics ({ engine, name }: Pick<RuleOpsComponents, 'engine' | 'name'>): NodeRuleMetrics {
  const out: NodeRuleMetrics = { node: name, rules: {}, actions: {} }
  for (const rule of engine.rules.list()) {
    out.rules[rule.id] = engine.ruleMetrics(rule.id)
    for (const a of everyAction(rule.actions)) out.actions[a.id] = engine.actionMetrics(a.id)
  }
  return out
}

/** Registers `rules.metrics` and `resources.status` on the node's RPC, and the rule-engine CLI handlers. */
export function registerRuleOperations (components: RuleOperationsComponents): void {
  const { engine, rpc, control } = components
  rpc.register('rules.metrics', () => nodeMetrics(components))
  rpc.register('rules.reset_metrics', (args: { id: string }) => {
    const rule = engine.rules.find(args.id)
    if (rule !== undefined) engine.metrics.reset(rule.id, everyAction(rule.actions).map(a => a.id))
    return null
  })
  rpc.register('resources.status', async (args: { id: string }) => await engine.resources.status(args.id))
  rpc.register('resources.restart', async (args: { id: string }) => { await engine.restartResource(args.id); return null })
  for (const [name, handler] of Object.entries(ruleControlHandlers(components))) control.register(name, handler)
}

/** A JSON argument of a command (109 when it is not JSON, JsonTooDeepError when it nests too deeply). */
function jsonArg (text: string | boolean | undefined, what: string): any {
  if (text === undefined || typeof text === 'boolean') return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new NotJsonError(`${what} is not JSON: ${(err as Error).message}`)
  }
  return checkJsonDepth(value, what)
}

/** `true` / `false` of an option (108 otherwise). */
function boolArg (text: string | boolean | undefined, what: string): boolean | undefined {
  if (text === undefined || typeof text === 'boolean') return text
  if (text === 'true' || text === 'false') return text === 'true'
  throw new WrongTypeError(`${what} must be true or false, got ${text}`)
}

const textArg = (value: string | boolean | undefined): string | undefined => typeof value === 'string' ? value : undefined

/** The node side of rules/ctl.ts, by command name. */
function ruleControlHandlers (ops: RuleOpsComponents): ControlHandlers {
  return {
    'rules list': async () => await listRules(ops),
    'rules show': async ({ args }) => await showRule(ops, args[0]),
    'rules create': async ({ args, options }) => await createRule(ops, {
      rawsql: args[0],
      actions: jsonArg(args[1], 'actions'),
      description: textArg(options.descr),
      name: textArg(options.name),
      enabled: boolArg(options.enabled, '--enabled'),
      on_action_failed: textArg(options.on_action_failed) as RuleInput['on_action_failed']
    }),
    'rules update': async ({ args, options }) => await updateRule(ops, args[0], {
      rawsql: textArg(options.sql),
      actions: jsonArg(options.actions, '--actions'),
      enabled: boolArg(options.enabled, '--enabled'),
      on_action_failed: textArg(options.on_action_failed) as RuleInput['on_action_failed'],
      description: textArg(options.descr)
    }),
    'rules delete': async ({ args }) => { await deleteRule(ops, args[0]); return 'ok' },
    'rule-actions list': ({ options }) => listActions(ops, textArg(options.eventtype)),
    'rule-actions show': ({ args }) => showAction(ops, args[0]),
    'resources create': async ({ args, options }) => await createResource(ops, {
      type: args[0],
      config: jsonArg(options.resourceConfig, '-c') ?? {},
      description: textArg(options.descr),
      name: textArg(options.name)
    }),
    'resources update': async ({ args, options }) => await updateResource(ops, args[0], {
      config: jsonArg(options.resourceConfig, '-c'),
      description: textArg(options.descr)
    }),
    'resources test': async ({ args, options }) => {
      await testResource(ops, { type: args[0], config: jsonArg(options.resourceConfig, '-c') ?? {}, description: textArg(options.descr) })
      return 'ok'
    },
    'resources list': ({ options }) => listResources(ops, textArg(options.type)),
    'resources show': async ({ args }) => await showResource(ops, args[0]),
    'resources delete': async ({ args }) => { await deleteResource(ops, args[0]); return 'ok' },
    'resource-types list': () => listResourceTypes(ops),
    'resource-types show': ({ args }) => showResourceType(ops, args[0])
  }
}
