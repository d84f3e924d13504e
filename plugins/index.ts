/**
 * The plugins room's one list: every plugin a node offers, in load order, written once. The
 * composition root (bin/assemble.ts) calls {@link pluginList} with the plugins of the parts
 * above the core (svc_management of the API part, svc_rule_engine of the rules part) and
 * gives the result to the node; the `starling-ctl` program lists each plugin's `ctl` commands.
 *
 * A new plugin is a folder beside these (`plugins/<name>/`) exporting a `StarlingPlugin`
 * (plugins/kit/parts.ts), and one line here. docs/architecture.md, "Where a new part goes".
 */
import type { PluginDefinition } from '../node/plugins/types.js'
import { createRetainerPlugin } from './retainer/plugin.js'
import { createDelayedPublishPlugin } from './delayed_publish/plugin.js'
import { svcBridgeMqtt } from './bridge_mqtt/plugin.js'
import { svcAuthClientid, svcAuthUsername } from './auth/index.js'
import { AUTH_BACKEND_PLUGINS } from './auth/backends.js'
import { createDashboardPlugin } from './dashboard/index.js'
import { svcBackendPgsql } from './backend_pgsql/index.js'
import { svcBackendMysql } from './backend_mysql/index.js'
import { svcBackendRedis } from './backend_redis/index.js'
import { svcBackendInfluxdb } from './backend_influxdb/index.js'
import { svcBridgeRabbit } from './bridge_rabbit/index.js'
import { svcBackendClickhouse } from './backend_clickhouse/index.js'
import { svcBackendDynamo } from './backend_dynamo/index.js'
import { svcBackendOpentsdb } from './backend_opentsdb/index.js'
import { svcBridgeKafka } from './bridge_kafka/index.js'
import { svcBackendMongo } from './backend_mongo/index.js'
import { svcBackendCassa } from './backend_cassa/index.js'
import { svcWebHook } from './web_hook/index.js'
import type { StarlingPlugin } from './kit/parts.js'

/** The plugins of the parts above the core, which the root creates per node. */
export interface PartPlugins {
  /** svc_management (api/plugin.ts): loaded first, so the API answers while the others load. */
  management: PluginDefinition
  /** svc_rule_engine (rules/plugin.ts). */
  ruleEngine: PluginDefinition
}

/**
 * The plugins of this room, before the rule engine and after it, in load order. A plugin that
 * keeps per-node state is a factory, called once per node; the others hold none and are shared.
 */
const BEFORE_RULES: ReadonlyArray<() => StarlingPlugin> = [createRetainerPlugin, createDelayedPublishPlugin, () => svcBridgeMqtt]
const AFTER_RULES: ReadonlyArray<() => StarlingPlugin> = [() => svcAuthClientid, () => svcAuthUsername, ...AUTH_BACKEND_PLUGINS.map((p) => () => p), () => svcBackendPgsql, () => svcBackendMysql, () => svcBackendRedis, () => svcBackendInfluxdb, () => svcBridgeRabbit, () => svcBackendClickhouse, () => svcBackendDynamo, () => svcBackendOpentsdb, () => svcBridgeKafka, () => svcBackendMongo, () => svcBackendCassa, () => svcWebHook, createDashboardPlugin]

/**
 * Every plugin of one node, in load order (`data/loaded_plugins` and the plugin lists show
 * this order): call it once per node.
 */
export function pluginList (parts: PartPlugins): PluginDefinition[] {
  return [parts.management, ...BEFORE_RULES.map((make) => make()), parts.ruleEngine, ...AFTER_RULES.map((make) => make())]
}

/** The plugins of this room (without the parts' own), for their `ctl` commands: definitions only, never attached. */
export const ROOM_PLUGINS: readonly StarlingPlugin[] = [...BEFORE_RULES, ...AFTER_RULES].map((make) => make())
