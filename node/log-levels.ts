/**
 * The `log.level` and `log.to` values, apart from the logger itself so that the configuration
 * schema (which `starling-ctl` loads to find the node) does not load pino.
 */

/** Where the log goes (`log.to`, EMQ X 4's values): nowhere, the file, standard output, or both. */
export const LOG_TARGETS = ['off', 'file', 'console', 'both'] as const
export type LogTarget = typeof LOG_TARGETS[number]

/** Log levels accepted by `log.level` (EMQ X names; `warning` maps to pino's `warn`). */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const
export type LogLevel = typeof LOG_LEVELS[number]
