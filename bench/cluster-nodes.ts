/**
 * Starling nodes for the cluster bench (`bench/cluster.ts`): each one a `node bin/starling`
 * child started through {@link startBroker} with the main bench's Starling environment,
 * plus a node name, a known cluster port, and optionally `--cpu-prof`. Nodes are joined
 * and inspected with the real `bin/starling-ctl`, as an operator would.
 */
import { execFile } from 'node:child_process'
import path from 'node:path'
import { freePort, startBroker, starlingTarget, type BrokerTarget, type RunningBroker } from './broker-process.js'

/** A running Starling node with its cluster identity. */
export interface ClusterNode extends RunningBroker {
  /** `node.name`, `<name>@127.0.0.1`. */
  nodeName: string
  /** The port its mesh listens on. */
  clusterPort: number
  /** Its `node.data_dir`, where `starling-ctl` finds its control socket. */
  dataDir: string
}

/** Options of {@link startClusterNode}. */
export interface ClusterNodeOptions {
  /** When set, the node runs with `--cpu-prof` and writes `<name>-<start ms>.cpuprofile` here on exit. */
  cpuProfDir?: string
  /** Soft open-files limit of the node. */
  fdLimit?: number
}

/** Starts node `<name>@127.0.0.1` on fresh loopback ports; resolves once its MQTT port accepts. */
export async function startClusterNode (repoRoot: string, name: string, opts: ClusterNodeOptions = {}): Promise<ClusterNode> {
  const base = starlingTarget(repoRoot)
  const clusterPort = await freePort()
  const nodeName = `${name}@127.0.0.1`
  let dataDir = ''
  const target: BrokerTarget = {
    name: `starling-${name}`,
    unavailable: base.unavailable,
    command: (port, dir) => {
      dataDir = dir
      const cmd = base.command(port, dir)
      const profile = opts.cpuProfDir === undefined
        ? []
        : ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`]
      return {
        file: cmd.file,
        args: [...profile, ...cmd.args],
        env: {
          ...cmd.env,
          STARLING_NODE__NAME: nodeName,
          STARLING_CLUSTER__LISTEN: `127.0.0.1:${clusterPort}`
        }
      }
    }
  }
  const reason = target.unavailable()
  if (reason !== null) throw new Error(reason)
  const broker = await startBroker(target, opts.fdLimit ?? 4096, repoRoot)
  return Object.assign(broker, { nodeName, clusterPort, dataDir })
}

/** What one `starling-ctl` run printed, its exit code and how long it took. */
export interface CtlRun { code: number, out: string, err: string, ms: number }

/** Runs `node bin/starling-ctl ...argv` against `node` (through its data directory). */
export async function runCtl (repoRoot: string, node: ClusterNode, argv: string[], timeoutMs = 60_000): Promise<CtlRun> {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('STARLING_')) env[k] = v
  env.STARLING_NODE__DATA_DIR = node.dataDir
  const started = performance.now()
  return await new Promise((resolve) => {
    execFile(process.execPath, [path.join(repoRoot, 'bin', 'starling-ctl'), ...argv],
      { cwd: repoRoot, env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1
        resolve({ code, out: stdout, err: stderr, ms: performance.now() - started })
      })
  })
}

/** `cluster join <target>` run on `joiner`; throws with the tool's output when it fails. */
export async function joinCluster (repoRoot: string, joiner: ClusterNode, target: ClusterNode): Promise<CtlRun> {
  const run = await runCtl(repoRoot, joiner, ['cluster', 'join', `${target.nodeName}:${target.clusterPort}`])
  if (run.code !== 0) throw new Error(`cluster join ${target.nodeName} from ${joiner.nodeName} failed (${run.code}): ${run.err || run.out}`)
  return run
}

/** Names of the nodes `node` reports running (`cluster status --json`). */
export async function runningNodes (repoRoot: string, node: ClusterNode): Promise<string[]> {
  const run = await runCtl(repoRoot, node, ['cluster', 'status', '--json'])
  if (run.code !== 0) throw new Error(`cluster status on ${node.nodeName} failed: ${run.err || run.out}`)
  const list = JSON.parse(run.out) as Array<{ name: string, status: string }>
  return list.filter((m) => m.status === 'running').map((m) => m.name).sort()
}

/** Resolves once every node in `nodes` reports all of them running. */
export async function waitForCluster (repoRoot: string, nodes: ClusterNode[], timeoutMs = 30_000): Promise<void> {
  const want = nodes.map((n) => n.nodeName).sort().join()
  const deadline = Date.now() + timeoutMs
  for (const node of nodes) {
    while ((await runningNodes(repoRoot, node)).join() !== want) {
      if (Date.now() > deadline) throw new Error(`${node.nodeName} does not see ${want} running after ${timeoutMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}
