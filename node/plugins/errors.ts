/**
 * Errors of the plugin manager. Each has a stable `name`, the spec's API `code` (110 and
 * 111 for the plugin state table, 102 "unknown error" otherwise) and `reason`, the word
 * EMQ X 4 returned (`already_started`, `not_started`, `not_found`) or the failure text,
 * which the CLI prints as `Load plugin <name> error: <reason>.`. They live here until the
 * node's catalogue (`node/errors.ts`) exists; their names and codes are stable either way.
 */

/** Spec code 102: unknown error (no better code exists for these cases). */
export const CODE_UNKNOWN_ERROR = 102
/** Spec code 110: plugin already started; cannot repeat. */
export const CODE_PLUGIN_ALREADY_STARTED = 110
/** Spec code 111: plugin already stopped; cannot repeat. */
export const CODE_PLUGIN_ALREADY_STOPPED = 111

/** Any error of the plugin manager. */
export class PluginError extends Error {
  /** The spec's API code. */
  readonly code: number
  /** The plugin the operation was for. */
  readonly plugin: string
  /** EMQ X's short reason (`already_started` ...) or the failure text. */
  readonly reason: string

  constructor (init: { message: string, code: number, plugin: string, reason: string, cause?: unknown }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.name = 'PluginError'
    this.code = init.code
    this.plugin = init.plugin
    this.reason = init.reason
  }
}

/** No plugin of that name is defined on this node. */
export class PluginNotFoundError extends PluginError {
  constructor (plugin: string, known: readonly string[]) {
    super({
      message: `unknown plugin ${JSON.stringify(plugin)}; known plugins: ${[...known].sort().join(', ') || '(none)'}`,
      code: CODE_UNKNOWN_ERROR,
      plugin,
      reason: 'not_found'
    })
    this.name = 'PluginNotFoundError'
  }
}

/**
 * Load of an active plugin (spec: code 110; the message is EMQ X's `already_started`,
 * as in the spec's error example).
 */
export class PluginAlreadyStartedError extends PluginError {
  constructor (plugin: string) {
    super({ message: 'already_started', code: CODE_PLUGIN_ALREADY_STARTED, plugin, reason: 'already_started' })
    this.name = 'PluginAlreadyStartedError'
  }
}

/** Unload of an inactive plugin (spec: code 111; EMQ X 4's reason `not_started`). */
export class PluginNotStartedError extends PluginError {
  constructor (plugin: string) {
    super({ message: 'not_started', code: CODE_PLUGIN_ALREADY_STOPPED, plugin, reason: 'not_started' })
    this.name = 'PluginNotStartedError'
  }
}

/**
 * A plugin could not be loaded: its config file is wrong or its `load` threw. The plugin
 * stays inactive; `cause` is the original error.
 */
export class PluginLoadError extends PluginError {
  constructor (plugin: string, cause: unknown) {
    const text = cause instanceof Error ? cause.message : String(cause)
    super({ message: `cannot load plugin ${plugin}: ${text}`, code: CODE_UNKNOWN_ERROR, plugin, reason: text, cause })
    this.name = 'PluginLoadError'
  }
}

/** `data/loaded_plugins` cannot be read or written. */
export class LoadedPluginsFileError extends Error {
  readonly code = CODE_UNKNOWN_ERROR

  constructor (message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'LoadedPluginsFileError'
  }
}
