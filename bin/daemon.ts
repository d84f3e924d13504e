/**
 * `starling start | stop | restart | ping`: the node as a daemon, as EMQ X's `emqx` script
 * runs it (docs/operations.md).
 *
 * - `start` runs `bin/starling foreground` detached from the terminal, its output (the listener
 *   lines, a crash's trace) appended to `<log.dir>/console.log` and its log in the log file
 *   (`log.to = console` becomes `file`: no one reads a detached console), waits until the node
 *   has written its pid file and answers as started, and exits 0; a node that exits first has its last output printed, exit 1.
 * - `stop` sends SIGTERM to the pid in `<node.data_dir>/starling.pid` (written by the running
 *   node, 0600) and waits until that process has exited: the store is flushed when it returns.
 * - `ping` asks the node's control socket for its status: `pong`, else exit 1.
 *
 * Invariants: a command never signals a process that is not the node of this configuration
 * (the pid file's process must still run a starling program, checked in /proc where there is
 * one); `start` never starts a second node where one answers.
 */
import { spawn } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { CONFIG_FILE_ENV, ConfigError, ETC_DIR_ENV, resolvePath, type StarlingConfig } from '../node/config/index.js'
import { callControl } from '../node/control/client.js'
import { controlSocketPath } from '../node/control/protocol.js'
import type { StatusResult } from '../node/control/commands.js'
import { VERSION, packageRoot } from '../node/version.js'
import { loadLauncherConfig, pidFilePath, type LauncherOptions } from './launcher-config.js'

/** How long `start` waits for the node to run, and `stop` for it to exit (ms). */
const START_TIMEOUT_MS = 60_000
const STOP_TIMEOUT_MS = 60_000

/** `starling start`: see the module comment. Resolves with the exit code. */
export async function start (opts: LauncherOptions): Promise<number> {
  const cfg = configOrExit(opts)
  if (await status(cfg) !== undefined) {
    console.error(`starling: node '${cfg['node.name']}' is already running`)
    return 1
  }
  const logDir = resolvePath(cfg, 'log.dir')
  mkdirSync(logDir, { recursive: true, mode: 0o700 })
  const consoleFile = join(logDir, 'console.log')
  const out = openSync(consoleFile, 'a', 0o600)
  writeSync(out, `--- ${new Date().toISOString()} starling start\n`)
  const logTo = cfg['log.to'] === 'off' ? 'off' : 'file'
  // the same program, configuration and runtime, in the foreground of a process of its own,
  // run from the installation (a daemon keeps no user's directory busy): the paths given made absolute
  const abs = (path: string | undefined): string | undefined => path === undefined || path.trim() === '' ? undefined : resolve(path)
  const config = abs(opts.config)
  const etcDir = abs(opts.etcDir)
  const argv = [join(packageRoot(), 'bin', 'starling'), 'foreground',
    ...(config !== undefined ? ['--config', config] : []), ...(etcDir !== undefined ? ['--etc-dir', etcDir] : [])]
  const env: NodeJS.ProcessEnv = { ...process.env, STARLING_LOG__TO: logTo }
  for (const name of [CONFIG_FILE_ENV, ETC_DIR_ENV]) if (abs(env[name]) !== undefined) env[name] = abs(env[name])
  // the launcher's young-generation cap (bin/runtime.sh) goes on to the node; nothing else of this process's flags
  const v8Flags = process.execArgv.filter((a) => a.startsWith('--max-semi-space-size='))
  const child = spawn(process.execPath, [...v8Flags, ...argv], { cwd: packageRoot(), detached: true, stdio: ['ignore', out, out], env })
  closeSync(out)
  let exited: string | undefined
  child.once('exit', (code, signal) => { exited = signal ?? `exit code ${code}` })
  child.unref()
  const deadline = Date.now() + START_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (exited !== undefined) {
      console.error(`starling: the node stopped while starting (${exited}); its output (${consoleFile}):\n${lastRun(consoleFile)}`)
      return 1
    }
    // the node writes its pid file once every part and listener has started
    if (pidFileHolds(cfg, child.pid) && (await status(cfg))?.status === 'started') {
      console.log(`Starling ${VERSION} (${cfg['node.name']}) is started successfully!`)
      return 0
    }
    await sleep(100)
  }
  console.error(`starling: the node (pid ${child.pid}) did not answer as started within ${START_TIMEOUT_MS / 1000} s; see ${consoleFile}`)
  return 1
}

/** `starling stop`: see the module comment. Resolves with the exit code. */
export async function stop (opts: LauncherOptions): Promise<number> {
  const cfg = configOrExit(opts)
  const pid = runningPid(cfg)
  if (pid === undefined) {
    console.error(`starling: node '${cfg['node.name']}' is not running (no live pid in ${pidFilePath(cfg)})`)
    return 1
  }
  process.kill(pid, 'SIGTERM')
  const deadline = Date.now() + STOP_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (!alive(pid)) {
      console.log('ok')
      return 0
    }
    await sleep(100)
  }
  console.error(`starling: node '${cfg['node.name']}' (pid ${pid}) has not exited ${STOP_TIMEOUT_MS / 1000} s after SIGTERM`)
  return 1
}

/** `starling restart`: stop the daemon when it runs, then start it. */
export async function restart (opts: LauncherOptions): Promise<number> {
  const cfg = configOrExit(opts)
  if (runningPid(cfg) !== undefined) {
    const code = await stop(opts)
    if (code !== 0) return code
  }
  return await start(opts)
}

/** `starling ping`: `pong` when the node answers on its control socket. */
export async function ping (opts: LauncherOptions): Promise<number> {
  const cfg = configOrExit(opts)
  if (await status(cfg) === undefined) {
    console.error(`Node '${cfg['node.name']}' not responding to pings.`)
    return 1
  }
  console.log('pong')
  return 0
}

function configOrExit (opts: LauncherOptions): StarlingConfig {
  try {
    return loadLauncherConfig(opts)
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`starling: ${err.message}`)
      process.exit(1)
    }
    throw err
  }
}

/** The node's `status` over its control socket, or undefined when nothing answers. */
async function status (cfg: StarlingConfig): Promise<StatusResult | undefined> {
  try {
    const socket = controlSocketPath(resolvePath(cfg, 'node.data_dir'))
    return await callControl(socket, 'status', [], {}, { nodeName: cfg['node.name'], timeoutMs: 5000 }) as StatusResult
  } catch {
    return undefined
  }
}

/** The pid in the node's pid file when that process still runs a starling program. */
function runningPid (cfg: StarlingConfig): number | undefined {
  let pid: number
  try {
    pid = Number(readFileSync(pidFilePath(cfg), 'utf8').trim())
  } catch {
    return undefined
  }
  if (!Number.isInteger(pid) || pid <= 1 || !alive(pid)) return undefined
  // a pid file left by a crash may name a pid the system has since given to another program
  const cmdline = `/proc/${pid}/cmdline`
  if (existsSync('/proc/self') && !(existsSync(cmdline) && readFileSync(cmdline, 'utf8').includes('starling'))) return undefined
  return pid
}

/** Whether the node's pid file names `pid`. */
function pidFileHolds (cfg: StarlingConfig, pid: number | undefined): boolean {
  try {
    return Number(readFileSync(pidFilePath(cfg), 'utf8').trim()) === pid
  } catch {
    return false
  }
}

/** Whether `pid` runs (a zombie, exited but not yet reaped by its parent, has exited). */
function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (err: any) {
    return err.code === 'EPERM'
  }
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return true // no /proc: kill(0) is the answer
  }
}

/** What the last `start` appended to the console file (at most its last 40 lines). */
function lastRun (file: string): string {
  const text = readFileSync(file, 'utf8')
  const run = text.slice(text.lastIndexOf('--- '))
  return run.split('\n').slice(-41).join('\n')
}
