/**
 * Plugins of each node (spec: Plugin, Endpoints/Plugins, States and transitions): the node
 * operations `plugins.list`, `plugins.load`, `plugins.unload`, `plugins.reload`,
 * `plugins.config.get`, `plugins.config.entries` and `plugins.config.put`, and the service
 * functions the `/api/v3/plugins/`,
 * `/nodes/:node/plugins/...` and `/nodes/:node/plugin_configs/:plugin` handlers call.
 * Plugins are per node: every call names its node (or asks them all, for the list).
 */
import type { StarlingNode } from '../node.js'
import type { ClusterList, FailedNode, NodeRpc } from '../rpc.js'
import { ApiError } from '../errors.js'
import type { PluginInfo, PluginManager } from '../plugins/index.js'
import { mapList, perNode } from './monitoring-service.js'
import { changePluginConfig, pluginConfigEntries, readPluginConfig, type PluginConfigChange, type PluginConfigEntry } from './plugin-config-ops.js'

export type { PluginConfigChange, PluginConfigEntry } from './plugin-config-ops.js'

/** One node's plugins, as `GET /plugins/` lists them. */
export interface NodePlugins {
  node: string
  plugins: PluginInfo[]
}

/** `GET /plugins/`: every running node's plugins, by node, and the nodes that failed. */
export async function listPlugins (rpc: NodeRpc): Promise<ClusterList<NodePlugins>> {
  return mapList(await perNode<PluginInfo[]>(rpc, 'plugins.list'), ({ node, result }) => ({ node, plugins: result }))
}

/** `GET /nodes/:node/plugins/`: that node's plugins, sorted by name. */
export async function nodePlugins (rpc: NodeRpc, node: string): Promise<PluginInfo[]> {
  return await rpc.call<PluginInfo[]>(node, 'plugins.list')
}

/** Loads `plugin` on `node`: 110 (`already_started`) when it is active, 404 when unknown. */
export async function loadPlugin (rpc: NodeRpc, node: string, plugin: string): Promise<void> {
  await rpc.call(node, 'plugins.load', { plugin })
}

/** Unloads `plugin` on `node`: 111 (`not_started`) when it is inactive, 404 when unknown. */
export async function unloadPlugin (rpc: NodeRpc, node: string, plugin: string): Promise<void> {
  await rpc.call(node, 'plugins.unload', { plugin })
}

/**
 * Reloads `plugin` on `node`: its config file is read again, then the plugin is unloaded and
 * loaded (an inactive one is loaded, as EMQ X 3.4's `reload_plugin` did); 404 when unknown,
 * 102 when the file or the load fails (a bad file leaves the running plugin as it was).
 */
export async function reloadPlugin (rpc: NodeRpc, node: string, plugin: string): Promise<void> {
  await rpc.call(node, 'plugins.reload', { plugin })
}

/**
 * `PUT /plugins/:plugin/reload`: reloads `plugin` on every running node. Succeeds when some
 * node reloaded it, answering the nodes that failed (with their error); when none did, fails
 * with the first node's error.
 */
export async function reloadPluginEverywhere (rpc: NodeRpc, plugin: string): Promise<FailedNode[]> {
  const answers = await rpc.callAll('plugins.reload', { plugin })
  const failed = answers.flatMap(a => a.ok ? [] : [{ node: a.node, code: a.error.code, message: a.error.message, status: a.error.status }])
  if (failed.length === answers.length && failed.length > 0) {
    const first = failed[0]
    // relays the first node's answer: its code and status are known only at run time
    throw new ApiError(first.code, first.message, first.status)
  }
  return failed.map(({ node, code, message }) => ({ node, code, message }))
}

/** `GET /nodes/:node/plugin_configs/:plugin?format=object`: the plugin's settings in force on `node`, as text. */
export async function pluginConfig (rpc: NodeRpc, node: string, plugin: string): Promise<Record<string, string>> {
  return await rpc.call<Record<string, string>>(node, 'plugins.config.get', { plugin })
}

/** `GET /nodes/:node/plugin_configs/:plugin`: EMQ X's list, `[{key, value, desc, required}]`. */
export async function pluginConfigList (rpc: NodeRpc, node: string, plugin: string): Promise<PluginConfigEntry[]> {
  return await rpc.call<PluginConfigEntry[]>(node, 'plugins.config.entries', { plugin })
}

/**
 * `PUT /nodes/:node/plugin_configs/:plugin`: writes `values` into the plugin's config file on
 * `node` and reloads the plugin when it is loaded (see plugin-config-ops.ts).
 */
export async function setPluginConfig (rpc: NodeRpc, node: string, plugin: string, values: Record<string, string>): Promise<PluginConfigChange> {
  return await rpc.call<PluginConfigChange>(node, 'plugins.config.put', { plugin, values })
}

/**
 * Registers the plugin operations on `node.rpc`. An unknown plugin is PluginNotFoundError
 * (HTTP 404, code 102, with the known names: node/errors.ts).
 */
export function registerPluginOperations (node: StarlingNode): void {
  const plugins = (): PluginManager => node.services.plugins
  node.rpc.register('plugins.list', () => plugins().list())
  node.rpc.register('plugins.load', async (args: { plugin: string }) => { await plugins().load(args.plugin) })
  node.rpc.register('plugins.unload', async (args: { plugin: string }) => { await plugins().unload(args.plugin) })
  node.rpc.register('plugins.reload', async (args: { plugin: string }) => { await plugins().reload(args.plugin) })
  node.rpc.register('plugins.config.get', async (args: { plugin: string }) => await readPluginConfig(plugins(), args.plugin))
  node.rpc.register('plugins.config.entries', async (args: { plugin: string }) => await pluginConfigEntries(plugins(), args.plugin))
  node.rpc.register('plugins.config.put', async (args: { plugin: string, values: Record<string, string> }) =>
    await changePluginConfig(plugins(), args.plugin, args.values))
}
