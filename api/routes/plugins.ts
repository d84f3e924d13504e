/**
 * `/api/v3/plugins/` and `/api/v3/nodes/:node/plugins/...` (spec: Plugins, States and
 * transitions): list the plugins of every node or one node, load, unload and reload one
 * (reload also cluster-wide, as EMQ X 3.4). Thin: the work is in node/ops/plugin-ops.ts.
 * Codes: 110 `already_started`, 111 `not_started`, HTTP 404 with code 102 for an unknown
 * plugin or node (docs/api.md).
 */
import { clusterResult, defineRoutes, type RouteDef } from '../route-table.js'
import { listPlugins, loadPlugin, nodePlugins, reloadPlugin, reloadPluginEverywhere, unloadPlugin } from '../../node/ops/plugin-ops.js'

/** The plugin endpoints. */
export const PLUGIN_ROUTES: RouteDef[] = defineRoutes([
  {
    name: 'list_all_plugins',
    method: 'GET',
    path: '/plugins/',
    descr: 'List all plugins in the cluster',
    handler: async (req) => clusterResult(await listPlugins(req.node.rpc))
  },
  {
    name: 'list_node_plugins',
    method: 'GET',
    path: '/nodes/:node/plugins/',
    descr: 'List all plugins on a node',
    handler: async (req) => ({ data: await nodePlugins(req.node.rpc, req.params.node) })
  },
  {
    name: 'load_plugin',
    method: 'PUT',
    path: '/nodes/:node/plugins/:plugin/load',
    descr: 'Load a plugin',
    handler: async (req) => { await loadPlugin(req.node.rpc, req.params.node, req.params.plugin); return undefined }
  },
  {
    name: 'unload_plugin',
    method: 'PUT',
    path: '/nodes/:node/plugins/:plugin/unload',
    descr: 'Unload a plugin',
    handler: async (req) => { await unloadPlugin(req.node.rpc, req.params.node, req.params.plugin); return undefined }
  },
  {
    name: 'reload_node_plugin',
    method: 'PUT',
    path: '/nodes/:node/plugins/:plugin/reload',
    descr: 'Reload a plugin (its config file read again)',
    handler: async (req) => { await reloadPlugin(req.node.rpc, req.params.node, req.params.plugin); return undefined }
  },
  {
    name: 'reload_plugin',
    method: 'PUT',
    path: '/plugins/:plugin/reload',
    descr: 'Reload a plugin in the cluster',
    // `{code: 0}`, with the nodes that failed in meta.failed
    handler: async (req) => ({ data: undefined, failed: await reloadPluginEverywhere(req.node.rpc, req.params.plugin) })
  }
])
