/**
 * The plugins of the node's own code, in the order the manager loads them after
 * svc_management (api/plugin.ts) and before svc_rule_engine (rules/plugin.ts), which live beside
 * the code they start.
 */
import { svcBridgeMqtt } from '../../plugins/bridge_mqtt/plugin.js'
import { delayedPublishPlugin } from '../../plugins/delayed_publish/plugin.js'
import { retainerPlugin } from '../../plugins/retainer/plugin.js'
import type { PluginDefinition } from './types.js'

/** svc_retainer, svc_delayed_publish and svc_bridge_mqtt (not loaded by default). */
export const CORE_PLUGINS: readonly PluginDefinition[] = [
  retainerPlugin,
  delayedPublishPlugin,
  svcBridgeMqtt
]
