/**
 * Errors of the plugin manager: kinds of the node's error catalogue (`node/errors.ts`, which
 * gives each its stable name, code and HTTP status: 110 and 111 for the plugin state table,
 * 102 "unknown error" otherwise). Each also has `reason`, the word EMQ X 4 returned
 * (`already_started`, `not_started`, `not_found`) or the failure text, which the CLI prints as
 * `Load plugin <name> error: <reason>.`.
 */
import { ApiError, ERRORS, type ErrorKind } from '../errors.js'

/** Spec code 102: unknown error (no better code exists for these cases). */
export const CODE_UNKNOWN_ERROR = 102
/** Spec code 110: plugin already started; cannot repeat. */
export const CODE_PLUGIN_ALREADY_STARTED = 110
/** Spec code 111: plugin already stopped; cannot repeat. */
export const CODE_PLUGIN_ALREADY_STOPPED = 111

/** Any error of the plugin manager. */
export class PluginError extends ApiError {
  /** The plugin the operation was for. */
  readonly plugin: string
  /** EMQ X's short reason (`already_started` ...) or the failure text. */
  readonly reason: string

  constructor (init: { kind: ErrorKind, message: string, plugin: string, reason: string, cause?: unknown }) {
    super(init.kind, init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.name = init.kind.name
    this.plugin = init.plugin
    this.reason = init.reason
  }
}

/** No plugin of that name is defined on this node (code 102, HTTP 404). */
export class PluginNotFoundError extends PluginError {
  constructor (plugin: string, known: readonly string[]) {
    super({
      message: `unknown plugin ${JSON.stringify(plugin)}; known plugins: ${[...known].sort().join(', ') || '(none)'}`,
      kind: ERRORS.PluginNotFoundError,
      plugin,
      reason: 'not_found'
    })
  }
}

/**
 * Load of an active plugin (spec: code 110; the message is EMQ X's `already_started`,
 * as in the spec's error example).
 */
export class PluginAlreadyStartedError extends PluginError {
  constructor (plugin: string) {
    super({ kind: ERRORS.PluginAlreadyStartedError, message: 'already_started', plugin, reason: 'already_started' })
  }
}

/** Unload of an inactive plugin (spec: code 111; EMQ X 4's reason `not_started`). */
export class PluginNotStartedError extends PluginError {
  constructor (plugin: string) {
    super({ kind: ERRORS.PluginNotStartedError, message: 'not_started', plugin, reason: 'not_started' })
  }
}

/**
 * A plugin could not be loaded: its config file is wrong or its `load` threw. The plugin
 * stays inactive; `cause` is the original error.
 */
export class PluginLoadError extends PluginError {
  constructor (plugin: string, cause: unknown) {
    const text = cause instanceof Error ? cause.message : String(cause)
    super({ kind: ERRORS.PluginLoadError, message: `cannot load plugin ${plugin}: ${text}`, plugin, reason: text, cause })
  }
}

/** `data/loaded_plugins` cannot be read or written. */
export class LoadedPluginsFileError extends ApiError {
  constructor (message: string, cause?: unknown) {
    super(ERRORS.LoadedPluginsFileError, message, cause === undefined ? undefined : { cause })
    this.name = 'LoadedPluginsFileError'
  }
}
