/**
 * `starling-ctl plugins list|load|unload|reload`: the command table entries (printed as
 * EMQ X 4's emqx_ctl printed them) and the node-side handlers over the plugin manager.
 */
import { ControlError } from '../control/errors.js'
import { defineCommand, type CtlCommand } from '../control/commands.js'
import type { StarlingNode } from '../node.js'
import { PluginError, PluginNotFoundError } from './errors.js'
import type { PluginInfo, PluginManager } from './manager.js'

const PLUGIN_ARG = [{ name: 'Plugin', description: 'plugin name, e.g. svc_retainer' }]

/** `plugins list`: one `Plugin(<name>, description=<text>, active=<bool>)` line per plugin. */
export const pluginsListCommand = defineCommand<PluginInfo[]>({
  words: ['plugins', 'list'],
  description: 'List every plugin of the node and whether it is active',
  render: (plugins) => plugins.map((p) => `Plugin(${p.name}, description=${p.description}, active=${String(p.active)})\n`).join('')
})

/** `plugins load <Plugin>`: `Plugin <name> loaded successfully.` */
export const pluginsLoadCommand = defineCommand<PluginInfo>({
  words: ['plugins', 'load'],
  description: 'Load a plugin now and at every later start',
  args: PLUGIN_ARG,
  render: (p) => `Plugin ${p.name} loaded successfully.\n`
})

/** `plugins unload <Plugin>`: `Plugin <name> unloaded successfully.` */
export const pluginsUnloadCommand = defineCommand<PluginInfo>({
  words: ['plugins', 'unload'],
  description: 'Unload a plugin now and at every later start',
  args: PLUGIN_ARG,
  render: (p) => `Plugin ${p.name} unloaded successfully.\n`
})

/** `plugins reload <Plugin>`: re-reads the plugin's config file and loads it again. */
export const pluginsReloadCommand = defineCommand<PluginInfo>({
  words: ['plugins', 'reload'],
  description: "Re-read a plugin's config file and load it again",
  args: PLUGIN_ARG,
  render: (p) => `Plugin ${p.name} reloaded successfully.\n`
})

/** The `plugins` commands, for `CTL_COMMANDS`. */
export const PLUGIN_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  pluginsListCommand,
  pluginsLoadCommand,
  pluginsUnloadCommand,
  pluginsReloadCommand
]

/** Plugins the CLI refuses to unload (EMQ X: "Plugin emqx_management can not be unloaded."). */
const CLI_PINNED = new Set(['svc_management'])

/**
 * Registers the node-side handlers of {@link PLUGIN_CTL_COMMANDS} on the node's control
 * server; returns a function that unregisters them. A failure answers EMQ X's text
 * (`Load plugin svc_x error: already_started.`) with the spec's code (110, 111, 102).
 */
export function registerPluginControl (node: Pick<StarlingNode, 'control'>, manager: PluginManager): () => void {
  const handlers: Record<string, (name: string) => Promise<unknown> | unknown> = {
    'plugins load': (name) => failAs('Load', name, () => manager.load(name)),
    'plugins unload': (name) => {
      if (CLI_PINNED.has(name)) throw new ControlError(`Plugin ${name} can not be unloaded.`, 102)
      return failAs('Unload', name, () => manager.unload(name))
    },
    'plugins reload': (name) => failAs('Reload', name, () => manager.reload(name))
  }
  node.control.register('plugins list', () => manager.list())
  for (const [command, handle] of Object.entries(handlers)) {
    node.control.register(command, ({ args }) => {
      const name = args[0]
      if (name === undefined || name === '') throw new ControlError(`${command} needs a plugin name`, 107)
      return handle(name)
    })
  }
  return () => {
    for (const command of ['plugins list', ...Object.keys(handlers)]) node.control.unregister(command)
  }
}

/** Runs `op`, turning a plugin error into `<Verb> plugin <name> error: <reason>.` with its code. */
async function failAs (verb: string, name: string, op: () => Promise<PluginInfo>): Promise<PluginInfo> {
  try {
    return await op()
  } catch (err) {
    if (!(err instanceof Error)) throw err
    const own = (err as { code?: unknown }).code
    const code = typeof own === 'number' ? own : 102
    const reason = err instanceof PluginError && !(err instanceof PluginNotFoundError) ? err.reason : err.message
    throw new ControlError(`${verb} plugin ${name} error: ${reason.replace(/\.+$/, '')}.`, code)
  }
}
