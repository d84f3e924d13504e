/**
 * `/api/v3/configs/`, `/nodes/:node/configs/`, `/configs/:app`, `/nodes/:node/configs/:app`
 * and `/nodes/:node/plugin_configs/:plugin` (spec: Index, the index-only endpoints): read and
 * change the node's settings (app `starling`) and a plugin's. Thin: node/ops/config-ops.ts
 * and node/ops/plugin-ops.ts do the work; docs/api.md (Configs) gives the shapes.
 */
import { clusterResult, defineRoutes, type JsonSchema, type RouteDef } from '../route-table.js'
import { changeClusterConfig, changeNodeConfig, getNodeConfigs, listConfigs } from '../../node/ops/config-ops.js'
import { WrongTypeError } from '../../node/errors.js'
import { pluginConfig, pluginConfigList, setPluginConfig } from '../../node/ops/plugin-ops.js'

/** `{key: value text, ...}`; numbers and booleans are taken as their text. */
const SETTINGS_BODY: JsonSchema = {
  type: 'object',
  minProperties: 1,
  additionalProperties: { type: ['string', 'number', 'boolean'] },
  description: 'keys and their values as written in the config file, e.g. {"mqtt.max_packet_size": "2MB"}'
}
/** An empty object is a missing parameter. */
const SETTINGS_CODES = { '': 107 }

/** The body as key -> text. */
function settingsOf (body: Record<string, string | number | boolean>): Record<string, string> {
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, String(v)]))
}

/** The config endpoints. */
export const CONFIG_ROUTES: RouteDef[] = defineRoutes([
  {
    name: 'get_all_configs',
    method: 'GET',
    path: '/configs/',
    descr: 'Get all configs of the nodes (key -> value text, and the keys applied at run time)',
    handler: async (req) => clusterResult(await listConfigs(req.node.rpc))
  },
  {
    name: 'get_configs',
    method: 'GET',
    path: '/nodes/:node/configs/',
    descr: 'Get all configs of a node',
    handler: async (req) => ({ data: await getNodeConfigs(req.node.rpc, req.params.node) })
  },
  {
    name: 'update_config',
    method: 'PUT',
    path: '/configs/:app',
    descr: 'Update configs of an app (starling: the node keys) on every node',
    body: SETTINGS_BODY,
    fieldCodes: SETTINGS_CODES,
    handler: async (req) => ({ data: await changeClusterConfig(req.node.rpc, req.params.app, settingsOf(req.body)) })
  },
  {
    name: 'update_node_config',
    method: 'PUT',
    path: '/nodes/:node/configs/:app',
    descr: 'Update configs of an app (starling: the node keys) on a node',
    body: SETTINGS_BODY,
    fieldCodes: SETTINGS_CODES,
    handler: async (req) => ({ data: await changeNodeConfig(req.node.rpc, req.params.node, req.params.app, settingsOf(req.body)) })
  },
  {
    name: 'get_plugin_configs',
    method: 'GET',
    path: '/nodes/:node/plugin_configs/:plugin',
    descr: 'Get the configs of a plugin: [{key, value, desc, required}] (?format=object: {key: value})',
    handler: async (req) => {
      const format = req.query.format
      if (format !== undefined && format !== 'list' && format !== 'object') throw new WrongTypeError(`format must be list (the default) or object, not ${JSON.stringify(format)}`)
      return { data: format === 'object' ? await pluginConfig(req.node.rpc, req.params.node, req.params.plugin) : await pluginConfigList(req.node.rpc, req.params.node, req.params.plugin) }
    }
  },
  {
    name: 'update_plugin_configs',
    method: 'PUT',
    path: '/nodes/:node/plugin_configs/:plugin',
    descr: 'Update the configs of a plugin (written to its file; a loaded plugin is reloaded)',
    body: SETTINGS_BODY,
    fieldCodes: SETTINGS_CODES,
    handler: async (req) => ({ data: await setPluginConfig(req.node.rpc, req.params.node, req.params.plugin, settingsOf(req.body)) })
  }
])
