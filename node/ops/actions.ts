/**
 * The operations behind the API's actions and settings (issue 4): publish, subscribe and
 * unsubscribe on behalf of clients, plugins and their settings, the banned list, the
 * built-in credential tables and the node's settings. Each group lives in its own module.
 */
import type { StarlingNode } from '../node.js'
import { registerMqttOperations } from './mqtt-ops.js'
import { registerPluginOperations } from './plugin-ops.js'
import { registerBannedOperations } from './banned-ops.js'
import { registerAuthOperations } from '../../plugins/auth/ops.js'
import { registerConfigOperations } from './config-ops.js'

/** Registers the action operations (`mqtt.*`, `plugins.*`, `banned.*`, `auth.*`, `configs.*`) on `node.rpc`. */
export function registerActionOperations (node: StarlingNode): void {
  registerMqttOperations(node)
  registerPluginOperations(node)
  registerBannedOperations(node)
  registerAuthOperations(node)
  registerConfigOperations(node)
}
