/**
 * Brokers under test, each started as a child process on its own port: Mosquitto,
 * Starling (`node bin/starling`), plain aedes (the baseline), or any command given with
 * `--cmd name=command`. A broker is ready when its port accepts a TCP connection.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

/** Broker children still running; killed if the bench exits early (Ctrl-C, crash). */
const liveChildren = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL')
})

/** How to launch one broker. */
export interface BrokerTarget {
  /** Name shown in the table (`mosquitto`, `starling`, `aedes`, or the `--cmd` name). */
  name: string
  /** Why it cannot run here, or null when it can. */
  unavailable (): string | null
  /** Command, arguments and extra environment for a broker on `port`, with `dataDir` free to use. */
  command (port: number, dataDir: string): { file: string, args: string[], env: Record<string, string> }
  /** Optional set-up once the MQTT port accepts connections, before any load (e.g. creating rules). */
  ready?: () => Promise<void>
}

/** A broker child process. */
export interface RunningBroker {
  name: string
  pid: number
  port: number
  /** True once the process has exited. */
  exited (): boolean
  /** Last lines the broker wrote to stdout/stderr, for error messages. */
  output (): string
  /** SIGTERM, then SIGKILL after 5 s; removes the data directory. */
  stop (): Promise<void>
}

/** Finds an executable on PATH (plus the sbin directories, where Debian puts mosquitto). */
export function findOnPath (name: string): string | null {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).concat(['/usr/sbin', '/usr/local/sbin'])
  for (const dir of dirs) {
    const file = path.join(dir, name)
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {
      // not here
    }
  }
  return null
}

/**
 * Mosquitto with a generated config: loopback listener, anonymous, no persistence.
 * `maxQueuedMessages` (default 1000000) and `extraConf` (lines added at the end, e.g. a
 * bridge's `connection` block) adapt it for other benches.
 */
export function mosquittoTarget (opts: { maxQueuedMessages?: number, extraConf?: readonly string[] } = {}): BrokerTarget {
  return {
    name: 'mosquitto',
    unavailable: () => findOnPath('mosquitto') === null
      ? 'mosquitto is not on PATH: install it (e.g. `apt-get install mosquitto`) or leave it out of --broker'
      : null,
    command: (port, dataDir) => {
      const conf = path.join(dataDir, 'mosquitto.conf')
      writeFileSync(conf, [
        `listener ${port} 127.0.0.1`,
        'allow_anonymous true',
        'persistence false',
        // queue for slow QoS 1 subscribers instead of dropping (default 1000)
        `max_queued_messages ${opts.maxQueuedMessages ?? 1000000}`,
        // unacknowledged QoS 1 messages per client (default 20); 1000 keeps the
        // window from capping fan-in QoS 1 throughput, aedes has no such cap
        'max_inflight_messages 1000',
        'log_dest stderr',
        'log_type error',
        ...(opts.extraConf ?? []),
        ''
      ].join('\n'))
      return { file: findOnPath('mosquitto') as string, args: ['-c', conf], env: {} }
    }
  }
}

/**
 * Starling: `node bin/starling`, every listener but plain TCP on port 0; `env` adds or
 * overrides `STARLING_*` variables (the dashboard bench fixes its dashboard port and password).
 */
export function starlingTarget (repoRoot: string, env: Record<string, string> = {}): BrokerTarget {
  const bin = path.join(repoRoot, 'bin', 'starling')
  return {
    name: 'starling',
    unavailable: () => existsSync(bin) ? null : `${bin} does not exist yet (build the node first)`,
    command: (port, dataDir) => ({
      file: process.execPath,
      args: [bin],
      env: {
        STARLING_LISTENER__TCP__EXTERNAL: `127.0.0.1:${port}`,
        STARLING_LISTENER__SSL__EXTERNAL: '127.0.0.1:0',
        STARLING_LISTENER__WS__EXTERNAL: '127.0.0.1:0',
        STARLING_LISTENER__WSS__EXTERNAL: '127.0.0.1:0',
        STARLING_MANAGEMENT__LISTENER__HTTP: '127.0.0.1:0',
        STARLING_DASHBOARD__LISTENER__HTTP: '127.0.0.1:0',
        STARLING_CLUSTER__LISTEN: '127.0.0.1:0',
        STARLING_NODE__DATA_DIR: dataDir,
        STARLING_LOG__LEVEL: 'error',
        ...env
      }
    })
  }
}

/** aedes 2 with nothing added (`bench/brokers/plain-aedes.ts`). */
export function aedesTarget (benchDir: string): BrokerTarget {
  return scriptTarget('aedes', path.join(benchDir, 'brokers', 'plain-aedes.js'))
}

/** Not a broker: Node.js's own floor, a `net` server copying PUBLISH frames (`bench/brokers/bare-relay.ts`). */
export function relayTarget (benchDir: string): BrokerTarget {
  return scriptTarget('relay', path.join(benchDir, 'brokers', 'bare-relay.js'))
}

function scriptTarget (name: string, script: string): BrokerTarget {
  return {
    name,
    unavailable: () => existsSync(script) ? null : `${script} is missing: run \`npm run build\``,
    command: (port) => ({ file: process.execPath, args: [script, String(port), '127.0.0.1'], env: {} })
  }
}

/** Any command, run through /bin/sh; `{port}` and `{dataDir}` are substituted, and BENCH_PORT is set. */
export function commandTarget (name: string, commandLine: string): BrokerTarget {
  return {
    name,
    unavailable: () => null,
    command: (port, dataDir) => ({
      file: '/bin/sh',
      args: ['-c', 'exec ' + commandLine.replaceAll('{port}', String(port)).replaceAll('{dataDir}', dataDir)],
      env: { BENCH_PORT: String(port) }
    })
  }
}

/** A port the kernel just handed out on loopback (free unless someone races us). */
export async function freePort (): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Resolves once `port` accepts a TCP connection; rejects when `child` exits or `timeoutMs` passes. */
async function waitForPort (port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('exited during start-up')
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port })
      socket.once('connect', () => { socket.destroy(); resolve(true) })
      socket.once('error', () => resolve(false))
    })
    if (accepted) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`port ${port} did not accept connections within ${timeoutMs} ms`)
}

/**
 * Starts `target` on a fresh port and waits until it accepts connections. The child gets
 * `ulimit -n fdLimit` (as far as the hard limit allows) so it can hold the idle scenario's sockets.
 */
export async function startBroker (target: BrokerTarget, fdLimit: number, cwd: string): Promise<RunningBroker> {
  const port = await freePort()
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `starling-bench-${target.name}-`))
  const { file, args, env } = target.command(port, dataDir)
  // sh raises the soft fd limit, then exec keeps the broker at the same pid
  const child = spawn('/bin/sh', ['-c', `ulimit -n ${fdLimit} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$@"`, 'sh', file, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  liveChildren.add(child)
  child.once('exit', () => liveChildren.delete(child))
  let tail = ''
  const keep = (chunk: Buffer): void => { tail = (tail + chunk.toString()).slice(-4000) }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null
  const stop = async (): Promise<void> => {
    if (!exited()) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await gone
      clearTimeout(timer)
    }
    rmSync(dataDir, { recursive: true, force: true })
  }
  try {
    await waitForPort(port, child, 20_000)
    await target.ready?.()
  } catch (err) {
    await stop()
    throw new Error(`${target.name} (${file} ${args.join(' ')}) ${(err as Error).message}\n${tail}`)
  }
  return { name: target.name, pid: child.pid as number, port, exited, output: () => tail, stop }
}
