/**
 * Plugins: the manager (load/unload at run time, `data/loaded_plugins`), its errors, the
 * `starling-ctl plugins` commands. The plugins themselves live in plugins/ (plugins/index.ts).
 */
export type { PluginContext, PluginDefinition, PluginInstance, PluginType } from './types.js'
export { pluginTypeOf } from './types.js'
export { createPluginManager, type PluginInfo, type PluginManager, type PluginManagerInit } from './manager.js'
export {
  CODE_PLUGIN_ALREADY_STARTED, CODE_PLUGIN_ALREADY_STOPPED, CODE_UNKNOWN_ERROR, LoadedPluginsFileError,
  PluginAlreadyStartedError, PluginError, PluginLoadError, PluginNotFoundError, PluginNotStartedError
} from './errors.js'
export {
  LOADED_PLUGINS_FILE, formatLoadedPlugins, parseLoadedPlugins, readLoadedPlugins, writeLoadedPlugins,
  type LoadedPluginEntry
} from './loaded-plugins.js'
export {
  PLUGIN_CTL_COMMANDS, pluginsListCommand, pluginsLoadCommand, pluginsReloadCommand, pluginsUnloadCommand,
  registerPluginControl
} from './control.js'
