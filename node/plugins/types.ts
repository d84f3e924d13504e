import type { Logger } from '../logger.js'
import type { ConfigSchema } from '../config/index.js'
import type { StarlingNode } from '../node.js'

/**
 * What a plugin gets when it is loaded: the running node (broker, hooks bus, store,
 * metrics, control socket ...), its own configuration from `etc/plugins/<name>.conf`, and a
 * logger tagged with its name.
 */
export interface PluginContext {
  node: StarlingNode
  config: Record<string, any>
  logger: Logger
}

/** A loaded plugin: unloading undoes everything `load` did (hooks, providers, commands, timers). */
export interface PluginInstance {
  unload: () => Promise<void>
}

/**
 * A plugin as the code defines it. Every `svc_*` name the code implements is one of these
 * (spec: Plugin fields `name`, `version`, `description`, `active`).
 */
export interface PluginDefinition {
  /** `svc_<name>`, e.g. `svc_retainer`. */
  name: string
  /** The plugin's version, e.g. `0.1.0`. */
  version: string
  description: string
  /** Keys of `etc/plugins/<name>.conf` (parsed with loadPluginConfig). */
  configSchema: ConfigSchema
  /**
   * Loaded at the first start of a node (before `data/loaded_plugins` exists), and when
   * `data/loaded_plugins` does not mention the plugin (a plugin newer than the file).
   */
  loadedByDefault: boolean
  load: (ctx: PluginContext) => Promise<PluginInstance>
  /**
   * Optional. Sets up what must hold whether or not the plugin is active, for a plugin
   * whose absence changes broker behaviour: while svc_retainer is unloaded, the retain
   * flag is not stored (EMQ X without emqx_retainer). The manager calls it once in
   * `start()`, before loading anything, and calls the returned function in `stop()`,
   * after unloading everything.
   */
  attach?: (node: StarlingNode) => Promise<() => Promise<void>>
}
