/**
 * Helpers for black-box tests of the real programs: `node bin/starling` and
 * `node bin/starling-ctl` run as child processes (they need `dist/`, built by `npm run build`).
 *
 * Every node a test spawns is recorded; call {@link killAllNodes} in `afterAll` so that a
 * failing test never leaves a broker behind. Clients opened with {@link connectTo} are
 * closed by {@link closeProcessClients}.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { envVarName } from '../../node/config/index.js'
import { EPHEMERAL } from './node.js'

/** The checkout's root: the programs run from here, so `etc/starling.conf` is their default config. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** Listener protocols and the config keys that enable them. */
const LISTENER_KEYS = {
  'mqtt:tcp': 'STARLING_LISTENER__TCP__EXTERNAL',
  'mqtt:ssl': 'STARLING_LISTENER__SSL__EXTERNAL',
  'mqtt:ws': 'STARLING_LISTENER__WS__EXTERNAL',
  'mqtt:wss': 'STARLING_LISTENER__WSS__EXTERNAL'
} as const

/** A listener protocol as the node logs it. */
export type ListenerProtocol = keyof typeof LISTENER_KEYS

/**
 * `STARLING_*` variables every spawned node gets: the in-process test nodes' overrides (every
 * listener on loopback port 0, the API secret `public`) as environment variables, and info
 * logs (the 'listener started' lines are at info). `node.data_dir` is added per node.
 */
export const EPHEMERAL_ENV: Readonly<Record<string, string>> = {
  // the in-process nodes' overrides, as the environment variables a process reads
  ...Object.fromEntries(Object.entries(EPHEMERAL).map(([key, value]) => [envVarName(key), value])),
  STARLING_LOG__LEVEL: 'info'
}

/** How a process ended. */
export interface Exit { code: number | null, signal: NodeJS.Signals | null }

/** A `bin/starling` child process whose listeners have all been reported. */
export interface NodeProcess {
  readonly child: ChildProcess
  readonly pid: number
  /** `node.data_dir` of the node (kept when the node stops; removed by {@link killAllNodes}). */
  readonly dataDir: string
  /** The `STARLING_*` variables the node was started with (give them to `starling-ctl`). */
  readonly env: Readonly<Record<string, string>>
  /** Bound port by listener protocol, from the 'listener started' log lines. */
  readonly ports: Readonly<Partial<Record<ListenerProtocol, number>>>
  /** The bound port of `protocol`; throws when the node did not report that listener. */
  port: (protocol: ListenerProtocol) => number
  /** Everything written to stdout / stderr so far. */
  stdout: () => string
  stderr: () => string
  /** The JSON log lines from stdout so far (lines that are not JSON are skipped). */
  logLines: () => Array<Record<string, any>>
  /** Sends `signal` to the process (no-op once it has exited). */
  kill: (signal: NodeJS.Signals) => void
  /** Settles when the process has exited. */
  readonly exited: Promise<Exit>
}

/**
 * Asserts that `node` came through what a test threw at it: it has not exited, wrote nothing
 * like an uncaught error on stderr and logged nothing at error level or above (the fuzzer's
 * node doors hold every node to this).
 */
export function expectNodeUnharmed (node: NodeProcess): void {
  expect(node.child.exitCode).toBeNull()
  expect(node.child.signalCode).toBeNull()
  expect(node.stderr()).not.toMatch(/Error|Uncaught|unhandled/)
  expect(node.logLines().filter(l => l.level >= 50)).toEqual([])
}

/** Options of {@link spawnNode}. */
export interface SpawnNodeOptions {
  /** Extra `STARLING_*` variables, over {@link EPHEMERAL_ENV} (all four MQTT listeners stay enabled). */
  env?: Record<string, string>
  /** Reuse a data directory (restart tests); default a fresh temporary one. */
  dataDir?: string
  /** Arguments after `bin/starling`, e.g. `['--config', file]`. */
  args?: string[]
  /** Give up waiting for the listeners after this long (the process is killed). */
  timeoutMs?: number
  /** A command the node runs under, e.g. `['ip', 'netns', 'exec', 'ns1']`. */
  wrap?: string[]
  /** Working directory of the process (default the project root). */
  cwd?: string
  /** The `bin/starling` to run: another installation's (an earlier release's, for upgrade tests); default this checkout's. */
  program?: string
}

const spawned = new Set<ChildProcess>()
const dataDirs = new Set<string>()

/** A fresh temporary directory, removed by {@link killAllNodes}. Short, so the control socket path fits. */
export function tempDir (prefix = 'stp-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  dataDirs.add(dir)
  return dir
}

/**
 * The environment a child gets: this process's, without any `STARLING_*` variable (so the
 * test runner's own environment cannot leak config in) and without `NODE_OPTIONS` (jest's
 * `--experimental-vm-modules` prints a warning on stderr), plus `vars`.
 */
export function childEnv (vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('STARLING_') || k === 'NODE_OPTIONS') continue
    env[k] = v
  }
  return { ...env, ...vars }
}

/**
 * Starts `node bin/starling` and resolves once every enabled listener has logged
 * 'listener started' (so its port is known). Rejects, with the process's output, when the
 * process exits first or the listeners are not all up within `timeoutMs`.
 */
export async function spawnNode (opts: SpawnNodeOptions = {}): Promise<NodeProcess> {
  const dataDir = opts.dataDir ?? tempDir()
  const vars: Record<string, string> = { ...EPHEMERAL_ENV, STARLING_NODE__DATA_DIR: dataDir, ...opts.env }
  const expected = (Object.keys(LISTENER_KEYS) as ListenerProtocol[]).filter(p => !['', 'off'].includes((vars[LISTENER_KEYS[p]] ?? '').trim()))
  const argv = [process.execPath, opts.program ?? join(PROJECT_ROOT, 'bin/starling'), ...(opts.args ?? [])]
  const wrapped = [...(opts.wrap ?? []), ...argv]
  const child = spawn(wrapped[0], wrapped.slice(1), {
    cwd: opts.cwd ?? PROJECT_ROOT,
    env: childEnv(vars),
    stdio: ['ignore', 'pipe', 'pipe']
  })
  spawned.add(child)
  let out = ''
  let err = ''
  const lines: Array<Record<string, any>> = []
  const ports: Partial<Record<ListenerProtocol, number>> = {}
  let partial = ''
  let onLine: () => void = () => {}
  child.stdout!.setEncoding('utf8')
  child.stderr!.setEncoding('utf8')
  child.stdout!.on('data', (chunk: string) => {
    out += chunk
    partial += chunk
    let nl: number
    while ((nl = partial.indexOf('\n')) !== -1) {
      const line = partial.slice(0, nl)
      partial = partial.slice(nl + 1)
      let entry: Record<string, any>
      try { entry = JSON.parse(line) } catch { continue }
      lines.push(entry)
      if (entry.msg === 'listener started' && typeof entry.protocol === 'string') ports[entry.protocol as ListenerProtocol] = entry.port
      onLine()
    }
  })
  child.stderr!.on('data', (chunk: string) => { err += chunk })
  const exited = new Promise<Exit>(resolve => {
    child.once('exit', (code, signal) => { spawned.delete(child); resolve({ code, signal }) })
  })
  const proc: NodeProcess = {
    child,
    pid: child.pid!,
    dataDir,
    env: vars,
    ports,
    port: (protocol) => {
      const p = ports[protocol]
      if (p === undefined) throw new Error(`the node reported no ${protocol} listener`)
      return p
    },
    stdout: () => out,
    stderr: () => err,
    logLines: () => lines,
    kill: (signal) => { if (child.exitCode === null && child.signalCode === null) child.kill(signal) },
    exited
  }
  const describe = (): string => `\n--- stdout:\n${out}\n--- stderr:\n${err}`
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL')
      reject(new Error(`node did not report its listeners (${expected.join(', ')}) in ${opts.timeoutMs ?? 20000} ms${describe()}`))
    }, opts.timeoutMs ?? 20000)
    const check = (): void => {
      if (expected.every(p => ports[p] !== undefined)) { clearTimeout(timer); resolve() }
    }
    onLine = check
    check()
    void exited.then(e => {
      clearTimeout(timer)
      reject(new Error(`node exited (code ${e.code}, signal ${e.signal}) before its listeners started${describe()}`))
    })
  })
  onLine = () => {}
  return proc
}

/** Stops a node with SIGTERM and resolves with how it exited. */
export async function stopNode (node: NodeProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<Exit> {
  node.kill(signal)
  return await node.exited
}

/** Kills (SIGKILL) every node still running and removes the temporary directories. For `afterAll`. */
export async function killAllNodes (): Promise<void> {
  await Promise.all([...spawned].map(child => new Promise<void>(resolve => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once('exit', () => resolve())
    child.kill('SIGKILL')
  })))
  spawned.clear()
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
  dataDirs.clear()
}

/** The result of running a program to completion. */
export interface RunResult extends Exit { stdout: string, stderr: string }

/**
 * Runs `node <script> ...args` from the project root with `vars` as its `STARLING_*`
 * environment and resolves when it exits. Kills it after `timeoutMs`.
 */
export async function runProgram (script: string, args: string[], vars: Record<string, string>, timeoutMs = 20000): Promise<RunResult> {
  const child = spawn(process.execPath, [script, ...args], { cwd: PROJECT_ROOT, env: childEnv(vars), stdio: ['ignore', 'pipe', 'pipe'] })
  spawned.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  // 'close' (not 'exit'): all output has been read
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>(resolve => child.once('close', (c, s) => resolve([c, s])))
  clearTimeout(timer)
  spawned.delete(child)
  return { code, signal, stdout, stderr }
}

/** Runs `node bin/starling-ctl ...args` with the node's `STARLING_*` environment. */
export async function runCtl (args: string[], vars: Record<string, string>): Promise<RunResult> {
  return await runProgram('bin/starling-ctl', args, vars)
}

const clients = new Set<MqttClient>()

/**
 * Connects an mqtt.js client to `port` on 127.0.0.1 and resolves after CONNACK.
 * `before` runs on the client before it connects (attach 'message' listeners there: a
 * persistent session's queued messages can arrive right behind the CONNACK).
 */
export async function connectTo (port: number, opts: IClientOptions = {}, before?: (client: MqttClient) => void): Promise<MqttClient> {
  const client = mqtt.connect({ host: '127.0.0.1', port, reconnectPeriod: 0, connectTimeout: 5000, ...opts })
  clients.add(client)
  before?.(client)
  await new Promise<void>((resolve, reject) => {
    const onError = (e: Error): void => reject(e)
    const onClose = (): void => reject(new Error('connection closed before CONNACK'))
    client.once('error', onError)
    client.once('close', onClose)
    client.once('connect', () => { client.off('error', onError); client.off('close', onClose); resolve() })
  })
  // a node killed under a connected client must not throw an unhandled 'error' event
  client.on('error', () => {})
  return client
}

/**
 * Publishes `<n>` (0, 1, 2 ...) on `topic` at QoS 1 with `inflight` unacknowledged, until the
 * connection closes (the node was killed under it); resolves with the numbers acknowledged
 * (PUBACK), in the order their PUBACKs came. `onAck` sees each, with the count so far (kill the
 * node there). Crash tests of "nothing acknowledged is lost" use it.
 */
export async function publishUntilClosed (pub: MqttClient, topic: string, inflight: number, onAck: (n: number, acked: number) => void): Promise<{ acked: number[], sent: number }> {
  const acked: number[] = []
  let sent = 0
  await new Promise<void>((resolve) => {
    let open = 0
    let closed = false
    pub.on('close', () => { closed = true; resolve() })
    const next = (): void => {
      while (!closed && open < inflight) {
        const n = sent++
        open++
        pub.publish(topic, String(n), { qos: 1 }, (err) => {
          open--
          if (err == null) { acked.push(n); onAck(n, acked.length) }
          next()
        })
      }
    }
    next()
  })
  return { acked, sent }
}

/** Ends every client opened by {@link connectTo}, forcefully. For `afterEach`. */
export async function closeProcessClients (): Promise<void> {
  await Promise.all([...clients].map(c => new Promise<void>(resolve => c.end(true, {}, () => resolve()))))
  clients.clear()
}

/** Reads the resident set size of a process in bytes from `/proc/<pid>/status` (Linux). */
export async function residentBytes (pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)
  if (m === null) throw new Error(`no VmRSS in /proc/${pid}/status`)
  return Number(m[1]) * 1024
}

/**
 * Resolves like `promise`, or rejects with "`what` did not happen within `ms` ms" so that a
 * hang fails with a message saying what was awaited (rather than jest's test timeout).
 */
export async function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}
