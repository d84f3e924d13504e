import { pino, type Logger, type LevelWithSilent } from 'pino'

export type { Logger }

/** Log levels accepted by `log.level` (EMQ X names; `warning` maps to pino's `warn`). */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const
export type LogLevel = typeof LOG_LEVELS[number]

/** Maps an EMQ X level name to the pino level that carries it. */
export function pinoLevel (level: LogLevel | 'silent'): LevelWithSilent {
  switch (level) {
    case 'debug': return 'debug'
    case 'info':
    case 'notice': return 'info'
    case 'warning': return 'warn'
    case 'error': return 'error'
    case 'silent': return 'silent'
    default: return 'fatal'
  }
}

/**
 * Creates the node's root logger. Components take a child of it
 * (`logger.child({ component: 'mqtt:listeners' })`), never a logger of their own.
 */
export function createLogger (opts: { level: LogLevel | 'silent', node?: string, destination?: NodeJS.WritableStream }): Logger {
  return pino({
    level: pinoLevel(opts.level),
    base: opts.node ? { node: opts.node } : undefined,
    timestamp: pino.stdTimeFunctions.isoTime
  }, opts.destination as any)
}

/** A logger that drops everything: for tests and embedded use. */
export function silentLogger (): Logger {
  return pino({ level: 'silent' })
}
