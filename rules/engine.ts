/**
 * The rule engine of one node: the registry of actions and resource types (built_in and
 * web_hook registered here, provided by svc_rule_engine; plugins provide more while they are
 * loaded, through {@link RuleProviders}), the rules and resources kept in the store, their
 * counters, and the runtime on the hooks bus.
 *
 * Rules and resources can be managed whether or not `svc_rule_engine` is loaded (they are
 * stored data); rules run only while it is loaded (`start()` / `stop()`).
 *
 * One engine per node, created by the node's rules part (rules/part.ts) when the composition
 * root (bin/assemble.ts) registers the parts' operations, and held by that part: there is no
 * look-up from a node to its engine. It gets only the components it uses.
 */
import type { StarlingNode } from '../node/node.js'
import { resolvePath } from '../node/config/index.js'
import { createActionRegistry, type ActionRegistry } from './registry.js'
import { BUILT_IN_ACTIONS, builtInResourceType } from './actions/built-in.js'
import { WEB_HOOK_ACTIONS, webHookResourceType } from './actions/web-hook.js'
import { EngineMetrics } from './metrics.js'
import { RepublishMarks } from './republish-marks.js'
import { RuleService, everyAction } from './rule-service.js'
import { ResourceService } from './resource-service.js'
import { ResourceInstances } from './resource-instances.js'
import { RuleRuntime } from './runtime.js'
import { SerialQueue } from './serial-queue.js'
import { createNodeSchemaRegistry } from './schemas/service.js'
import { loadSql } from './sql-loader.js'
import type { SchemaRegistry } from './schemas/registry.js'
import type { ActionDefinition, ActionNodeMetrics, Resource, ResourceTypeDefinition, Rule, RuleNodeMetrics } from './types.js'

/** Store table of the rules (key: rule id). */
export const RULES_TABLE = 'rules'
/** Store table of the resources (key: resource id). */
export const RESOURCES_TABLE = 'resources'

/**
 * What a plugin may add to the rule engine while it is loaded (plugins/kit/parts.ts gives it
 * to every plugin as `parts.rules`).
 */
export interface RuleProviders {
  /**
   * Registers resource types and the actions bound to them (each says its `provider`, the
   * plugin's name); returns the function that removes them again. Stored rules and resources
   * stay: rules using a removed action skip it, resources of a removed type stop running here
   * (their buffers kept) and start again when the type is provided again. Throws when a name
   * is taken.
   */
  provide (types: readonly ResourceTypeDefinition[], actions: readonly ActionDefinition[]): () => void
}

/** One node's rule engine. */
export interface RuleEngine extends RuleProviders {
  readonly registry: ActionRegistry
  readonly rules: RuleService
  readonly resources: ResourceService
  /** The schema registry (docs/schema-registry.md): its data is stored whether or not rules run. */
  readonly schemas: SchemaRegistry
  readonly runtime: RuleRuntime
  readonly metrics: EngineMetrics
  /** Starts running the enabled rules and the resources' instances (svc_rule_engine loaded). */
  start (): void
  /** Stops running rules and closes the resources' instances; rules and resources stay stored. */
  stop (): Promise<void>
  /**
   * Closes resource `id`'s instance on this node and opens it again with the same config
   * (404 when unknown); resolves once it has opened. Types without instances: nothing to do.
   */
  restartResource (id: string): Promise<void>
  /** This node's counters of rule `id` (zeros when it never ran here). */
  ruleMetrics (id: string): RuleNodeMetrics
  /** This node's counters of action instance `id`. */
  actionMetrics (id: string): ActionNodeMetrics
}

/**
 * A registry with svc_rule_engine's own resource types and actions: built_in, and web_hook,
 * which stays here as in EMQ X 4.4 (the svc_web_hook plugin, plugins/web_hook/, sends hook
 * events through the same pool and never provides the type: docs/architecture.md).
 */
export function createBuiltInRegistry (): ActionRegistry {
  const registry = createActionRegistry()
  registry.registerResourceType(builtInResourceType)
  registry.registerResourceType(webHookResourceType)
  for (const action of [...BUILT_IN_ACTIONS, ...WEB_HOOK_ACTIONS]) registry.registerAction(action)
  return registry
}

/**
 * What the engine uses of its node: the name (counters, schema functions), the logger, the
 * cluster-wide tables (rules, resources, schemas), for the runtime the hooks bus and the
 * MQTT core (republish), and for resources that run on the node (bridges) the config (data
 * directory), the cluster part (the RPC bridge's transport) and the services (alarms).
 */
export type RuleEngineComponents = Pick<StarlingNode, 'name' | 'logger' | 'shared' | 'hooks' | 'broker' | 'config' | 'cluster' | 'services'>

/**
 * Creates the engine of a node: loads and compiles the stored rules and schemas; nothing runs
 * yet. The SQL compiler and the schema compilers are loaded only when something stored needs
 * them (rules/sql-loader.ts, schemas/codec-loader.ts): a node without rules or schemas loads
 * them with its first one.
 */
export async function createRuleEngine (components: RuleEngineComponents): Promise<RuleEngine> {
  const logger = components.logger.child({ component: 'rules' })
  const registry = createBuiltInRegistry()
  const metrics = new EngineMetrics()
  const marks = new RepublishMarks()
  const queue = new SerialQueue()
  // the services refer to each other through closures, called only after all three exist
  const schemas = await createNodeSchemaRegistry(components, { usedBy: (name) => rules.usingSchema(name).map(r => r.id), resource: (id) => resources.find(id) })
  const rulesTable = components.shared.table<Rule>(RULES_TABLE) // cluster-wide: other nodes' changes arrive here
  // the stored rules compile in RuleService's constructor: the compiler first (with schema_encode/schema_decode)
  if (rulesTable.count() > 0) await loadSql()
  const rules: RuleService = new RuleService({
    table: rulesTable,
    registry,
    logger,
    queue,
    resource: (id) => resources.find(id),
    changed: () => {
      const all = rules.all()
      metrics.retainOnly(new Set(all.map(e => e.rule.id)), new Set(all.flatMap(e => everyAction(e.rule.actions).map(a => a.id))))
      runtime.load(all)
    }
  })
  const resourceComponents = { ...components, dataDir: resolvePath(components.config, 'node.data_dir') }
  const instances = new ResourceInstances({ registry, logger, components: resourceComponents })
  const resources = new ResourceService({
    table: components.shared.table<Resource>(RESOURCES_TABLE),
    logger,
    registry,
    components: resourceComponents,
    queue,
    usedBy: (id) => rules.usingResource(id),
    changed: (id, resource) => {
      instances.sync(id, resource)
      // an action's holdsPublish reads its resource's config
      runtime.load(rules.all())
      return instances.get(id)
    },
    instanceAlive: async (resource) => await instances.alive(resource)
  })
  const runtime = new RuleRuntime({ node: components, logger, registry, metrics, marks, resource: (id) => resources.find(id), instance: async (id) => await instances.get(id), running: (id) => instances.opened(id) })
  runtime.load(rules.all())
  return {
    registry,
    rules,
    resources,
    schemas,
    runtime,
    metrics,
    start () {
      runtime.start()
      metrics.start()
      instances.start(resources.list())
      logger.info({ rules: rules.list().length, events: runtime.events() }, 'rule engine started')
    },
    async stop () {
      runtime.stop()
      metrics.stop()
      schemas.release()
      await instances.stop()
      logger.info('rule engine stopped')
    },
    provide (types, actions) {
      const added = { types: [] as string[], actions: [] as string[] }
      const withdraw = (): void => {
        for (const name of added.actions) registry.removeAction(name)
        for (const name of added.types) registry.removeResourceType(name)
      }
      try {
        for (const type of types) { registry.registerResourceType(type); added.types.push(type.name) }
        for (const action of actions) { registry.registerAction(action); added.actions.push(action.name) }
      } catch (err) {
        withdraw()
        throw err
      }
      const ofTypes = (): Resource[] => resources.list().filter(r => added.types.includes(r.type))
      // rules that name these actions run them from now on; resources of these types start here
      runtime.load(rules.all())
      for (const r of ofTypes()) instances.sync(r.id, r)
      let provided = true
      return () => {
        if (!provided) return
        provided = false
        const stopping = ofTypes()
        withdraw()
        runtime.load(rules.all())
        for (const r of stopping) instances.release(r.id)
      }
    },
    async restartResource (id) {
      const resource = resources.get(id)
      await instances.restart(resource)
      logger.info({ resource_id: id }, 'resource restarted on this node')
    },
    ruleMetrics (id) {
      const c = metrics.findRule(id)
      return { node: components.name, matched: c?.matched ?? 0, speed: c?.speed ?? 0, speed_max: c?.speedMax ?? 0, speed_last5m: c?.last5m() ?? 0, failed: c?.failed ?? 0 }
    },
    actionMetrics (id) {
      const c = metrics.findAction(id)
      return { node: components.name, taken: c?.taken ?? 0, success: c?.success ?? 0, failed: c?.failed ?? 0 }
    }
  }
}
