import type { Logger } from '../logger.js'
import type { ConfigSchema } from '../config/index.js'
import type { StarlingNode } from '../node.js'
import type { CtlCommand } from '../control/index.js'

/**
 * What a plugin gets when it is loaded: the running node (broker, hooks bus, store,
 * metrics, control socket ...), its own configuration from `etc/plugins/<name>.conf`, a
 * logger tagged with its name, and `parts`: what the parts above the core let a plugin
 * extend (the rule engine's resource types and actions, the API's routes). The core does not
 * know their type `P`: the composition root gives the manager the value
 * (`NodeParts.pluginParts`), and the plugins room types it (plugins/kit/parts.ts).
 */
export interface PluginContext<P = unknown> {
  node: StarlingNode
  config: Record<string, any>
  logger: Logger
  parts: P
}

/** A loaded plugin: unloading undoes everything `load` did (hooks, providers, commands, timers). */
export interface PluginInstance {
  unload: () => Promise<void>
}

/** EMQ X 3.4's plugin types (`emqx_plugins:plugin_type/1`): anything else was `feature`. */
export type PluginType = 'auth' | 'protocol' | 'backend' | 'bridge' | 'feature'

/** Gateways of other protocols, as EMQ X typed emqx_coap, emqx_lwm2m, emqx_sn and emqx_stomp. */
const PROTOCOL_PLUGINS = new Set(['svc_coap', 'svc_lwm2m', 'svc_sn', 'svc_stomp'])

/**
 * The type of a plugin as EMQ X 3.4 gave it: `auth` for the `svc_auth_*` plugins, `protocol`
 * for the gateways, `bridge` for `svc_bridge_*`, `backend` for `svc_backend_*`, `feature` for
 * the rest (retainer, delayed publish, rule engine, management, web hook ...). A definition's
 * own `type` wins.
 */
export function pluginTypeOf (def: Pick<PluginDefinition, 'name' | 'type'>): PluginType {
  if (def.type !== undefined) return def.type
  if (def.name.startsWith('svc_auth_')) return 'auth'
  if (PROTOCOL_PLUGINS.has(def.name)) return 'protocol'
  if (def.name.startsWith('svc_bridge_')) return 'bridge'
  if (def.name.startsWith('svc_backend_')) return 'backend'
  return 'feature'
}

/**
 * A plugin as the code defines it. Every `svc_*` name the code implements is one of these
 * (spec: Plugin fields `name`, `version`, `description`, `active`).
 */
export interface PluginDefinition<P = any> {
  /** `svc_<name>`, e.g. `svc_retainer`. */
  name: string
  /** The plugin's version, e.g. `0.1.0`. */
  version: string
  description: string
  /**
   * EMQ X's plugin type (its `-emqx_plugin(Type)` attribute), shown as `type` in the plugin
   * lists. Default: {@link pluginTypeOf} infers it from the name.
   */
  type?: PluginType
  /** Keys of `etc/plugins/<name>.conf` (parsed with loadPluginConfig). */
  configSchema: ConfigSchema
  /**
   * Loaded at the first start of a node (before `data/loaded_plugins` exists), and when
   * `data/loaded_plugins` does not mention the plugin (a plugin newer than the file).
   */
  loadedByDefault: boolean
  /**
   * The `starling-ctl` commands the plugin serves, for the program's command list (the
   * composition root joins them into `ALL_CTL_COMMANDS`). The plugin registers their
   * handlers on `node.control` itself, in `attach` or `load`, and removes them again.
   */
  ctl?: ReadonlyArray<CtlCommand<any>>
  load: (ctx: PluginContext<P>) => Promise<PluginInstance>
  /**
   * Optional. Sets up what must hold whether or not the plugin is active, for a plugin
   * whose absence changes broker behaviour: while svc_retainer is unloaded, the retain
   * flag is not stored (EMQ X without emqx_retainer). The manager calls it once in
   * `start()`, before loading anything, and calls the returned function in `stop()`,
   * after unloading everything.
   */
  attach?: (node: StarlingNode, parts: P) => Promise<() => Promise<void>>
}
