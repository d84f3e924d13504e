/**
 * The log file of `log.to = file | both`: JSON lines appended to `<log.dir>/<log.file>`
 * through pino's asynchronous destination (SonicBoom), rotated by size as EMQ X 4 did.
 *
 * Rotation (EMQ X 4: `log.rotation.size`, `log.rotation.count`, files `emqx.log.1..N`):
 * when a line would take the file past `size` bytes, `starling.log` is renamed
 * `starling.log.1`, the older `starling.log.<i>` become `starling.log.<i+1>`, and a fresh
 * `starling.log` is opened. `count` is the number of files kept in all, the current one
 * included (as EMQ X's `log.rotation.count` is), so the log never takes more than about
 * `count` x `size` on disk; the oldest archive, `starling.log.<count-1>`, is overwritten.
 * With `count = 1` the file is simply started afresh.
 *
 * Invariants:
 * - `written` is the byte count of the current file (its size at open, plus every line
 *   handed to its stream since), so a file never grows past `size` (unless one line is
 *   longer than `size`).
 * - Rotation happens synchronously between two lines, so a line is never split across
 *   two files, and lines are never reordered: each file has its own stream, whose
 *   descriptor follows the file through the rename; a rotated file's stream writes what
 *   it still queues into that (archived) file, then closes.
 * - The directory is created 0700 when missing (an existing one is left as it is: it may be
 *   a shared directory such as /var/log); every file this module creates or rotates to is
 *   0600, the log may carry client ids and usernames.
 */
import { closeSync, existsSync, fchmodSync, mkdirSync, openSync, renameSync, statSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { pino } from 'pino'

/** Where and how the log file is written. */
export interface LogFileOptions {
  /** Directory of the file (absolute, or relative to the process's working directory). */
  readonly dir: string
  /** File name inside `dir`, such as `starling.log`. */
  readonly file: string
  /** Rotate when the file would grow past this many bytes. */
  readonly rotationSize: number
  /** Files kept in all, the current one included (at least 1). */
  readonly rotationCount: number
}

/** A pino destination that appends to the log file and rotates it. */
export interface LogFile {
  /** Absolute or `dir`-joined path of the current file. */
  readonly path: string
  /** Appends one log line (pino calls this). */
  write: (line: string) => boolean
  /** Calls `cb` once every line written so far is on disk (pino's `logger.flush(cb)`). */
  flush: (cb?: (err?: Error) => void) => void
  /** Writes what is buffered synchronously (pino's exit handler calls this). */
  flushSync: () => void
  /** Flushes and closes the file; `cb` once closed. */
  end: (cb?: () => void) => void
}

/** SonicBoom's fields this module reads, to know whether a write is still under way. */
interface SonicState {
  _writing: boolean
  _len: number
}

type Destination = ReturnType<typeof pino.destination>

/**
 * Opens (creating the directory and the file as needed) the log file. Throws, with the
 * path in the message, when the directory cannot be created or the file opened.
 */
export function openLogFile (opts: LogFileOptions): LogFile {
  const path = join(opts.dir, opts.file)
  if (!existsSync(opts.dir)) mkdirSync(opts.dir, { recursive: true, mode: 0o700 })
  let stream = openDestination(path)
  let written = statSync(path).size
  /** Streams of rotated files still writing what they queued before their rotation. */
  const closing = new Set<Destination>()

  function rotate (): void {
    const archive = (i: number): string => `${path}.${i}`
    if (opts.rotationCount <= 1) {
      unlinkIfPresent(path)
    } else {
      for (let i = opts.rotationCount - 2; i >= 1; i--) {
        if (existsSync(archive(i))) renameSync(archive(i), archive(i + 1))
      }
      // removed under us: nothing to archive
      if (existsSync(path)) renameSync(path, archive(1))
    }
    // the old stream's descriptor now names the archive: what it still queues goes there
    // (where it was counted), then it closes; the new file is opened here, synchronously,
    // so a second rotation in the same burst finds it
    const old = stream
    stream = openDestination(path)
    written = 0
    closing.add(old)
    old.once('close', () => closing.delete(old))
    old.end()
  }

  return {
    path,
    write (line: string): boolean {
      const bytes = Buffer.byteLength(line)
      if (written > 0 && written + bytes > opts.rotationSize) {
        try {
          rotate()
        } catch (err: any) {
          // a failed rename or open (disk trouble, permissions changed under us) must not
          // take the node down: keep appending where we are and try again at the next line
          process.stderr.write(`starling: cannot rotate the log file ${path}: ${err?.message ?? err}\n`)
        }
      }
      written += bytes
      return stream.write(line)
    },
    flush (cb?: (err?: Error) => void): void {
      const waits = [...closing].map(s => new Promise<void>(resolve => s.once('close', () => resolve())))
      const state = stream as unknown as SonicState
      // an asynchronous write under way: SonicBoom emits 'drain' once its queue is empty
      if (state._writing || state._len > 0) waits.push(new Promise<void>(resolve => stream.once('drain', () => resolve())))
      void Promise.all(waits).then(() => cb?.())
    },
    flushSync (): void {
      stream.flushSync()
    },
    end (cb?: () => void): void {
      if (cb !== undefined) stream.once('close', () => cb())
      stream.end()
    }
  }
}

/**
 * An asynchronous pino destination on `path`, opened (created 0600) synchronously here so
 * that a file that cannot be written fails the start, not a later line. pino registers an
 * exit handler that writes what is still queued synchronously.
 */
function openDestination (path: string): Destination {
  const fd = openSync(path, 'a', 0o600)
  try {
    // an existing file (from an older run or another umask) gets the mode of a new one
    fchmodSync(fd, 0o600)
  } catch (err) {
    closeSync(fd)
    throw err
  }
  const stream = pino.destination({ fd, sync: false, minLength: 0 })
  // a write error (disk full) is reported, never thrown at the node (an unhandled 'error' would)
  stream.on('error', (err: Error) => process.stderr.write(`starling: cannot write the log file ${path}: ${err.message}\n`))
  return stream
}

function unlinkIfPresent (path: string): void {
  try {
    unlinkSync(path)
  } catch (err: any) {
    if (err?.code !== 'ENOENT') throw err
  }
}
