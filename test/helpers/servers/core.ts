/**
 * The shared core of the real-server harness: one server definition (how to prepare its data
 * directory, its command line, how a real client probes it) becomes a running process on
 * free ephemeral ports in a fresh temporary directory, waited for with a deadline, stopped by
 * PID, and restartable on the same ports and data.
 *
 * Invariants:
 * - A server never listens on its default port: every port comes from {@link freePort}.
 * - `start` returns only once a real client of the server has been answered; until then the
 *   process is polled, and a process that exits or a deadline that passes fails the start with
 *   the server's own output (the last lines) in the error, and nothing left running.
 * - After `stop()`, `kill()` or `close()` resolve, neither the server's PID nor any process it
 *   had forked (PostgreSQL's backends put themselves in their own process groups) is left.
 * - `restart()` reuses the ports and the directory: what a test wrote before is there after.
 * - A server never outlives the test process: each runs with a guard (below) that SIGKILLs it
 *   when the test process dies without stopping it (a crashed or killed jest worker), so no
 *   database is left behind. jest gives tests a copy of `process` whose `exit` event never
 *   fires, so an exit hook could not do this.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import { descendants, freePort, giveTo, pidAlive, runCommand, serverUser, type RunCommandOptions, type SystemUser } from './system.js'

/** Every server listens on loopback only. */
export const SERVER_HOST = '127.0.0.1'

/**
 * How long a start may take before it fails (`STARLING_TEST_SERVER_TIMEOUT_MS`, default 20 s:
 * under jest's 30 s hook timeout, so that the harness's error, with the server's output, is
 * the one a failing run shows).
 */
export function startTimeoutMs (): number {
  const value = Number(process.env.STARLING_TEST_SERVER_TIMEOUT_MS)
  return Number.isFinite(value) && value > 0 ? value : 20_000
}

/** What a definition's hooks are given: where the server lives and how to act as its user. */
export interface ServerContext {
  readonly host: string
  /** The first of {@link ports}. */
  readonly port: number
  readonly ports: readonly number[]
  /** The server's temporary directory (owned by {@link user}): data, config, sockets, pid files. */
  readonly dir: string
  /** The account the server runs as (only when the tests run as root). */
  readonly user: SystemUser | undefined
  /** Runs a one-shot command as the server's account, in {@link dir}. */
  run: (argv: readonly string[], opts?: Omit<RunCommandOptions, 'user'>) => Promise<string>
  /** Writes `name` in {@link dir}, owned by the server's account; returns its path. */
  writeFile: (name: string, content: string, mode?: number) => string
}

/**
 * How to run one kind of server. A new server (rabbitmq, influxdb, mosquitto) is one of
 * these plus a start function that adds its client to the handle.
 */
export interface ServerDefinition {
  /** As written in messages: `PostgreSQL`. */
  name: string
  /** The Debian package that provides it, named when something is missing. */
  debianPackage: string
  /** The system account to run as when the tests run as root (`postgres`, `mysql`); default root. */
  systemUser?: string
  /** How many ports it listens on (default 1); `ctx.ports` holds them. */
  portCount?: number
  /**
   * Prepares the data directory, once, before the first start (initdb, config files). It must
   * not depend on the ports: a first start that cannot bind is retried on new ones.
   */
  setup?: (ctx: ServerContext) => Promise<void>
  /** The server's command line, running in the foreground (it is stopped by its PID). */
  command: (ctx: ServerContext) => string[]
  /**
   * One readiness check with a real client: resolves when the server answered, throws while it
   * does not. It must close whatever it opened and give up within `timeoutMs`.
   */
  probe: (ctx: ServerContext, timeoutMs: number) => Promise<void>
  /** Runs once after the first successful probe (create the test user and database). */
  firstStart?: (ctx: ServerContext) => Promise<void>
  /** The signal of a clean stop (default SIGTERM; PostgreSQL's fast shutdown is SIGINT). */
  stopSignal?: NodeJS.Signals
}

/** A running (or stopped, restartable) server process. */
export interface ServerProcess {
  readonly name: string
  readonly host: string
  /** The first of {@link ports}. */
  readonly port: number
  readonly ports: readonly number[]
  /** The temporary directory holding its data (removed by {@link close}). */
  readonly dir: string
  /** The PID of the running process; undefined while stopped. */
  readonly pid: number | undefined
  /**
   * How long the last start took (ms): for the first, from the temporary directory to the end
   * of `firstStart` (initdb included); for a restart, from spawn to the first answered probe.
   */
  readonly startedInMs: number
  /** The server's stdout and stderr (the last 64 KB). */
  output: () => string
  /** Clean stop (the definition's signal, SIGKILL after `graceMs`); keeps the data. */
  stop: (graceMs?: number) => Promise<void>
  /** SIGKILL, as a crash would; keeps the data. */
  kill: () => Promise<void>
  /** Starts it again on the same ports and data (stopping it first if it runs). */
  restart: () => Promise<void>
  /** Stops it and removes its directory (unless `STARLING_TEST_KEEP_SERVER_DIRS` is set). */
  close: () => Promise<void>
}

const OUTPUT_KEEP = 64 * 1024
const POLL_INTERVAL_MS = 50
const PROBE_TIMEOUT_MS = 5000
const BIND_ATTEMPTS = 3
/** Output of a server that could not bind its port: the first start then retries on new ones. */
const PORT_IN_USE = /address already in use|EADDRINUSE|could not bind|bind.*(in use|errno 98)|errno: 98/i

/**
 * A watchdog for the server process `pid`: a shell (builtins only while it waits) reading a
 * pipe from this process. When this process dies, the pipe closes and the shell SIGKILLs the
 * server and removes its directory (`dir`, unless kept); {@link releaseGuard} tells it to exit
 * without. It does not keep this process's event loop alive.
 */
function guard (pid: number, dir: string): ChildProcess {
  const cleanup = process.env.STARLING_TEST_KEEP_SERVER_DIRS ? '' : `; sleep 1; rm -rf '${dir}'`
  const script = `read -r word; [ "$word" = release ] && exit 0; kill -KILL ${pid} 2>/dev/null${cleanup}`
  const watchdog = spawn('sh', ['-c', script], { stdio: ['pipe', 'ignore', 'ignore'] })
  watchdog.on('error', () => {}) // no sh: the server runs unguarded
  watchdog.unref()
  ;(watchdog.stdin as unknown as Socket).unref()
  return watchdog
}

function releaseGuard (watchdog: ChildProcess): void {
  watchdog.stdin?.on('error', () => {}).end('release\n')
}

function lastLines (text: string, count = 60): string {
  const lines = text.trimEnd().split('\n')
  return (lines.length > count ? ['...', ...lines.slice(-count)] : lines).join('\n')
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/** Waits up to `ms` for every PID in `pids` to be gone; true when they are. */
async function waitGone (pids: readonly number[], ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (pids.some(pidAlive)) {
    if (Date.now() >= deadline) return false
    await sleep(20)
  }
  return true
}

/**
 * Starts a server from its definition: a fresh temporary directory (given to the server's
 * account when root), free ports, `setup`, the process, polled with `probe` until it answers
 * (deadline {@link startTimeoutMs}), then `firstStart`. Throws {@link MissingServerError}
 * (from the definition's binary look-ups) or an error carrying the server's output.
 */
export async function spawnServer (def: ServerDefinition): Promise<ServerProcess> {
  const user = serverUser(def.systemUser, def.debianPackage)
  // a root's TMPDIR may sit under /root, which the server's account cannot enter: /tmp then
  const base = process.env.STARLING_TEST_SERVER_TMPDIR ?? (user !== undefined ? '/tmp' : tmpdir())
  const dir = mkdtempSync(join(base, `st-${def.name.toLowerCase().replace(/[^a-z]/g, '')}-`))
  giveTo(user, dir)
  let ports: number[] = []
  const ctx: ServerContext = {
    host: SERVER_HOST,
    get port () { return ports[0] },
    get ports () { return ports },
    dir,
    user,
    run: async (argv, opts = {}) => await runCommand(argv, { cwd: dir, ...opts, user }),
    writeFile: (name, content, mode = 0o600) => {
      const path = join(dir, name)
      writeFileSync(path, content, { mode })
      giveTo(user, path)
      return path
    }
  }
  const state: { child?: ChildProcess } = {}
  let output = ''
  let startedInMs = 0

  /** Spawns the process and polls it until it answers; on failure nothing is left running. */
  const launch = async (): Promise<void> => {
    const argv = def.command(ctx)
    const began = Date.now()
    const child = spawn(argv[0], argv.slice(1), { cwd: dir, uid: user?.uid, gid: user?.gid, stdio: ['ignore', 'pipe', 'pipe'] })
    state.child = child
    if (child.pid !== undefined) {
      // released as soon as the server exits, whatever the cause: its PID may then be reused
      const watchdog = guard(child.pid, dir)
      child.once('exit', () => releaseGuard(watchdog))
    }
    const keep = (chunk: string): void => {
      output += chunk
      if (output.length > 2 * OUTPUT_KEEP) output = output.slice(-OUTPUT_KEEP)
    }
    child.stdout?.setEncoding('utf8').on('data', keep)
    child.stderr?.setEncoding('utf8').on('data', keep)
    const exited = new Promise<string>((resolve) => {
      child.once('error', (err) => resolve(`could not be spawned: ${err.message}`))
      // 'close', not 'exit': its output is all read by then (a bind error printed just before
      // the exit was sometimes still unread, so the start was not retried on new ports)
      child.once('close', (code, signal) => resolve(`exited (${signal ?? `code ${String(code)}`})`))
    })
    let exit: string | undefined
    void exited.then((how) => { exit = how })
    const deadline = began + startTimeoutMs()
    let lastError = 'no probe yet'
    let probes = 0
    for (;;) {
      if (exit !== undefined) break
      const remaining = deadline - Date.now()
      // at least one probe, however slow the spawn was on a loaded machine
      if (remaining <= 0 && probes > 0) break
      probes++
      const timeout = Math.max(50, Math.min(remaining, PROBE_TIMEOUT_MS))
      let timer: NodeJS.Timeout | undefined
      const answered = await Promise.race([
        Promise.resolve().then(async () => await def.probe(ctx, timeout)).then(() => true, (err: Error) => { lastError = err.message; return false }),
        exited.then(() => false),
        new Promise<boolean>((resolve) => { timer = setTimeout(() => { lastError = `probe gave no answer in ${timeout} ms`; resolve(false) }, timeout) })
      ])
      clearTimeout(timer)
      if (answered && exit === undefined) {
        startedInMs = Date.now() - began
        return
      }
      await Promise.race([sleep(POLL_INTERVAL_MS), exited])
    }
    const why = exit ?? `did not answer within ${startTimeoutMs()} ms (STARLING_TEST_SERVER_TIMEOUT_MS); last probe: ${lastError}`
    await terminate('SIGKILL', 0)
    throw new Error(`${def.name} on ${SERVER_HOST}:${ports.join(',')} ${why}\n` +
      `command: ${argv.join(' ')}${user ? ` (as ${user.name})` : ''}\noutput:\n${lastLines(output)}`)
  }

  /** Signals the process, SIGKILLs it after `graceMs`, and waits for it and its descendants. */
  const terminate = async (signal: NodeJS.Signals, graceMs: number): Promise<void> => {
    const child = state.child
    if (child === undefined) return
    const pid = child.pid
    const family = pid === undefined ? [] : descendants(pid)
    if (child.exitCode === null && child.signalCode === null && pid !== undefined) {
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.kill(signal)
      if (signal !== 'SIGKILL') {
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
        await gone
        clearTimeout(timer)
      } else {
        await gone
      }
    }
    // the forked processes notice their parent's death on their own; those that do not, die
    if (!await waitGone(family, graceMs)) {
      for (const p of family) { try { process.kill(p, 'SIGKILL') } catch { /* gone */ } }
      await waitGone(family, 5000)
    }
    state.child = undefined
  }

  // first start: new ports while the server reports they were taken meanwhile
  const began = Date.now()
  try {
    await def.setup?.(ctx)
  } catch (err) {
    removeDir(dir)
    throw err
  }
  for (let attempt = 1; ; attempt++) {
    ports = await Promise.all(Array.from({ length: def.portCount ?? 1 }, freePort))
    try {
      await launch()
      break
    } catch (err) {
      if (attempt >= BIND_ATTEMPTS || !PORT_IN_USE.test(output)) {
        removeDir(dir)
        throw err
      }
      output = ''
    }
  }
  try {
    await def.firstStart?.(ctx)
  } catch (err) {
    await terminate('SIGKILL', 0)
    removeDir(dir)
    throw new Error(`${def.name}: first-start setup failed: ${(err as Error).message}\noutput:\n${lastLines(output)}`)
  }
  startedInMs = Date.now() - began

  const stop = async (graceMs = 10_000): Promise<void> => await terminate(def.stopSignal ?? 'SIGTERM', graceMs)
  return {
    name: def.name,
    host: SERVER_HOST,
    get port () { return ports[0] },
    get ports () { return ports },
    dir,
    get pid () { return state.child?.pid },
    get startedInMs () { return startedInMs },
    output: () => output,
    stop,
    kill: async () => await terminate('SIGKILL', 5000),
    restart: async () => {
      await stop()
      await launch()
    },
    close: async () => {
      await stop()
      removeDir(dir)
    }
  }
}

function removeDir (dir: string): void {
  if (process.env.STARLING_TEST_KEEP_SERVER_DIRS) return
  rmSync(dir, { recursive: true, force: true })
}
