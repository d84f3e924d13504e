/**
 * The operations behind the API's actions and settings (issue 4): publish, subscribe and
 * unsubscribe on behalf of clients, plugins and their settings, the banned list and the
 * node's settings. Each group lives in its own module. (The credential tables' operations are
 * their plugins': plugins/auth/ops.ts.)
 */
import type { StarlingNode } from '../node.js'
import { registerMqttOperations } from './mqtt-ops.js'
import { registerPluginOperations } from './plugin-ops.js'
import { registerBannedOperations } from './banned-ops.js'
import { registerConfigOperations } from './config-ops.js'

/** Registers the action operations (`mqtt.*`, `plugins.*`, `banned.*`, `configs.*`) on `node.rpc`. */
export function registerActionOperations (node: StarlingNode): void {
  registerMqttOperations(node)
  registerPluginOperations(node)
  registerBannedOperations(node)
  registerConfigOperations(node)
}
