import { pino, type Logger, type LevelWithSilent, type DestinationStream } from 'pino'
import { openLogFile, type LogFile, type LogFileOptions } from './log-file.js'
import type { LogLevel, LogTarget } from './log-levels.js'

export type { Logger }
export type { LogFileOptions }

export { LOG_TARGETS, LOG_LEVELS, type LogTarget, type LogLevel } from './log-levels.js'

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

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  level: LogLevel | 'silent'
  /** The node's name, on every line. */
  node?: string
  /** Where lines go (default `console`); `off` writes nothing whatever the level. */
  to?: LogTarget
  /** The file of `to = file | both` (required for those). */
  file?: LogFileOptions
  /** With `to = console` (or `both`): a stream instead of standard output (tests). */
  destination?: NodeJS.WritableStream
}

/**
 * Creates the node's root logger. Components take a child of it
 * (`logger.child({ component: 'mqtt:listeners' })`), never a logger of their own.
 *
 * One root logger writes to every target, so its level (`log.level`, `starling-ctl log
 * set-level`) is the level of the console and of the file alike. The console keeps
 * pino's default destination (standard output through SonicBoom); the file is
 * asynchronous too (see `log-file.ts`): `logger.flush(cb)` calls `cb` once its lines are
 * written. Both are written out synchronously at exit by pino's exit handler. Throws when
 * the file cannot be opened.
 */
export function createLogger (opts: LoggerOptions): Logger {
  const to = opts.to ?? 'console'
  const options = {
    level: to === 'off' ? 'silent' : pinoLevel(opts.level),
    base: opts.node ? { node: opts.node } : undefined,
    timestamp: pino.stdTimeFunctions.isoTime
  }
  if (to === 'off') return pino(options)
  if (to === 'console') return pino(options, opts.destination as any)
  if (opts.file === undefined) throw new Error(`log.to = ${to} needs the log file's options`)
  const file = openLogFile(opts.file)
  if (to === 'file') return pino(options, file)
  const stdout = (opts.destination as DestinationStream | undefined) ?? pino.destination({ dest: process.stdout.fd ?? 1, sync: false, minLength: 0 })
  return pino(options, bothTargets(stdout, file))
}

/**
 * `log.to = both`: every line to the console and to the file (the root logger's level has
 * already filtered it). Not pino's multistream: that one has no `flush(cb)`, and the
 * shutdown path waits for the file through `logger.flush(cb)`.
 */
function bothTargets (stdout: DestinationStream, file: LogFile): DestinationStream & Pick<LogFile, 'flush' | 'flushSync'> {
  return {
    write (line: string): void {
      stdout.write(line)
      file.write(line)
    },
    flush: (cb) => file.flush(cb),
    flushSync: () => file.flushSync()
  }
}

/** A logger that drops everything: for tests and embedded use. */
export function silentLogger (): Logger {
  return pino({ level: 'silent' })
}
