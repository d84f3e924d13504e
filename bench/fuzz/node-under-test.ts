/**
 * The Starling process a long fuzz run attacks: `node bin/starling` with every listener on
 * a free loopback port (MQTT tcp, ssl, ws, wss, the management API, the cluster), its own
 * data directory, and its stderr watched for the whole run (not only its tail), so that one
 * uncaught error among millions of inputs is seen.
 *
 * `FUZZ_NODE_LOG=<dir>` keeps each node's whole output, at `info` level, in
 * `<dir>/<node.name>-<pid>.log` (by default the node logs errors only and the run keeps its
 * last 8 KB): for finding what a node did when a witness lost something.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { freePort } from '../broker-process.js'

/** Lines on stderr that mean an error escaped: uncaught exceptions, unhandled rejections, stack frames. */
export const UNCAUGHT = /Uncaught|uncaughtException|unhandledRejection|UnhandledPromiseRejection|^\s*at .+:\d+:\d+\)?$/m

/** A running node. */
export interface FuzzNode {
  pid: number
  /** Ports by listener: `mqtt:tcp`, `mqtt:ssl`, `mqtt:ws`, `mqtt:wss`, `api` (management HTTP), `cluster`. */
  ports: Record<'mqtt:tcp' | 'mqtt:ssl' | 'mqtt:ws' | 'mqtt:wss' | 'api' | 'cluster', number>
  /** `node.data_dir` (the control socket lives there). */
  dataDir: string
  /** The `STARLING_*` variables it was started with. */
  env: Record<string, string>
  exited: () => boolean
  /** stderr lines that matched {@link UNCAUGHT}, over the whole run. */
  uncaught: () => number
  /** The last 8 KB of stdout and stderr. */
  output: () => string
  /** SIGTERM, SIGKILL after 5 s; removes the data directory. */
  stop: () => Promise<void>
}

/** Makes the development certificates the ssl and wss listeners use, when they are missing. */
export function ensureDevCerts (repoRoot: string): void {
  if (existsSync(path.join(repoRoot, 'etc/certs/cert.pem'))) return
  const made = spawnSync('bash', [path.join(repoRoot, 'etc/certs/make-dev-certs.sh')], { stdio: 'inherit' })
  if (made.status !== 0) throw new Error('etc/certs/make-dev-certs.sh failed: the tls and wss doors need its certificates')
}

/** Starts a node from `repoRoot` (built: `dist/`) and resolves once its four MQTT listeners accept connections. */
export async function startFuzzNode (repoRoot: string, extraEnv: Record<string, string> = {}): Promise<FuzzNode> {
  ensureDevCerts(repoRoot)
  const ports = {
    'mqtt:tcp': await freePort(), 'mqtt:ssl': await freePort(), 'mqtt:ws': await freePort(), 'mqtt:wss': await freePort(), api: await freePort(), cluster: await freePort()
  }
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'stfz-'))
  const env: Record<string, string> = {
    STARLING_LISTENER__TCP__EXTERNAL: `127.0.0.1:${ports['mqtt:tcp']}`,
    STARLING_LISTENER__SSL__EXTERNAL: `127.0.0.1:${ports['mqtt:ssl']}`,
    STARLING_LISTENER__WS__EXTERNAL: `127.0.0.1:${ports['mqtt:ws']}`,
    STARLING_LISTENER__WSS__EXTERNAL: `127.0.0.1:${ports['mqtt:wss']}`,
    // the default 16 would refuse most of the fuzzer's connections before any MQTT
    STARLING_LISTENER__WSS__EXTERNAL__MAX_CONNS: '4096',
    STARLING_MANAGEMENT__LISTENER__HTTP: `127.0.0.1:${ports.api}`,
    STARLING_DASHBOARD__LISTENER__HTTP: '127.0.0.1:0',
    STARLING_CLUSTER__LISTEN: `127.0.0.1:${ports.cluster}`,
    STARLING_MANAGEMENT__DEFAULT_APPLICATION__SECRET: 'public',
    STARLING_NODE__DATA_DIR: dataDir,
    STARLING_LOG__LEVEL: process.env.FUZZ_NODE_LOG !== undefined ? 'info' : 'error',
    ...extraEnv
  }
  const childEnv: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('STARLING_') && k !== 'NODE_OPTIONS') childEnv[k] = v
  const child = spawn('/bin/sh', ['-c', 'ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$@"', 'sh', process.execPath, path.join(repoRoot, 'bin/starling')], {
    cwd: repoRoot,
    env: { ...childEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const kill = (): void => { child.kill('SIGKILL') }
  process.once('exit', kill)
  let tail = ''
  let uncaught = 0
  let partial = ''
  const logDir = process.env.FUZZ_NODE_LOG
  const logFile = logDir !== undefined && logDir !== ''
    ? createWriteStream(path.join(logDir, `${(env.STARLING_NODE__NAME ?? 'starling').replace(/[^\w.-]/g, '_')}-${child.pid ?? 0}.log`), { mode: 0o600 })
    : null
  const keep = (chunk: Buffer): void => {
    tail = (tail + chunk.toString()).slice(-8000)
    logFile?.write(chunk)
  }
  child.stdout.on('data', keep)
  child.stderr.on('data', (chunk: Buffer) => {
    keep(chunk)
    const lines = (partial + chunk.toString()).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) if (UNCAUGHT.test(line)) uncaught++
  })
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null
  const node: FuzzNode = {
    pid: child.pid!,
    ports,
    dataDir,
    env,
    exited,
    uncaught: () => uncaught + (UNCAUGHT.test(partial) ? 1 : 0),
    output: () => tail,
    stop: async () => {
      if (!exited()) {
        const gone = new Promise(resolve => child.once('exit', resolve))
        child.kill('SIGTERM')
        const timer = setTimeout(kill, 5000)
        await gone
        clearTimeout(timer)
      }
      process.off('exit', kill)
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
  const deadline = Date.now() + 30_000
  const mqttPorts = [ports['mqtt:tcp'], ports['mqtt:ssl'], ports['mqtt:ws'], ports['mqtt:wss']]
  while (!(await Promise.all(mqttPorts.map(accepts))).every(Boolean)) {
    if (exited() || Date.now() > deadline) {
      await node.stop()
      throw new Error(`the node did not start:\n${tail}`)
    }
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  return node
}

async function accepts (port: number): Promise<boolean> {
  return await new Promise(resolve => {
    const s = net.connect(port, '127.0.0.1')
    s.once('connect', () => { s.destroy(); resolve(true) })
    s.once('error', () => resolve(false))
  })
}
