/**
 * The log level at run time (`starling-ctl log primary-level [Level]`, `log set-level
 * <Level>`): EMQ X's level names, mapped to pino's as `log.level` is (notice -> info,
 * critical/alert/emergency -> fatal). Components log through children of the root
 * logger, which follow the root's level unless they set their own, so changing the root
 * changes them all. The root logger writes every target of `log.to` (the console and
 * the log file), so the level is the file's too. The change lasts until the node restarts
 * (then `log.level` applies).
 */
import { LOG_LEVELS, pinoLevel, type LogLevel, type Logger } from '../logger.js'
import type { ControlServer } from '../control/server.js'
import { RefusedError } from '../errors.js'
import type { LogLevelResult } from './trace-ctl.js'

/** What the log service uses from the node. */
export interface LogNode {
  readonly config: { readonly 'log.level': LogLevel, readonly 'log.to': string }
  readonly logger: Logger
  readonly control: Pick<ControlServer, 'register' | 'unregister'>
}

/** The log service: the current level, and the `log` control commands while started. */
export interface LogService {
  start(): void
  stop(): void
  /** The EMQ X level in force. */
  level(): LogLevel
  /** Sets the level of the root logger; throws for an unknown level name. */
  setLevel(level: string): LogLevel
}

/** Creates the log service of a node. */
export function createLogService (node: LogNode): LogService {
  let current: LogLevel = node.config['log.level']
  let registered = false

  function setLevel (level: string): LogLevel {
    const lvl = level.toLowerCase() as LogLevel
    if (!LOG_LEVELS.includes(lvl)) throw new RefusedError(`unknown log level ${level}: use one of ${LOG_LEVELS.join(', ')}`)
    // with log.to = off nothing is written whatever the level: the level is only recorded
    if (node.config['log.to'] !== 'off') node.logger.level = pinoLevel(lvl)
    current = lvl
    // not `level`: pino's own field of every line carries that name
    node.logger.info({ log_level: lvl }, 'log level changed')
    return lvl
  }

  const show = (): LogLevelResult => ({ level: current })
  return {
    level: () => current,
    setLevel,
    start () {
      if (registered) return
      registered = true
      node.control.register('log primary-level', (req) => req.args[0] === undefined ? show() : { level: setLevel(req.args[0]) })
      node.control.register('log set-level', (req) => ({ level: setLevel(req.args[0] ?? '') }))
    },
    stop () {
      if (!registered) return
      registered = false
      node.control.unregister('log primary-level')
      node.control.unregister('log set-level')
    }
  }
}
