/**
 * `npm run bench:cluster`: the cluster's speed (issue 5, Speed) with real node processes
 * and real MQTT clients. Per round:
 * 1. two fresh nodes A and B, B joined to A with `starling-ctl cluster join`; a steady
 *    QoS 0 (then QoS 1) stream published on A to a subscriber on B (forwarded), on A
 *    (local), and on a fresh Mosquitto (the reference), interleaved; broker CPU per
 *    delivered message over the window;
 * 2. route propagation: a client on B subscribes to 10 000 new topics (all SUBSCRIBEs in
 *    one write, then one SUBSCRIBE at a time), timed until a message published on A to the
 *    last one arrives;
 * 3. join: a fresh node joins a fresh node whose clients hold 100 000 subscriptions.
 * Prints medians over rounds and the targets. See docs/performance.md, "Cluster".
 * BENCH_CPU_PROF=<dir> runs every node with `--cpu-prof` (profiles written when it stops).
 */
import { mkdirSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Table from 'cli-table3'
import { Command } from 'commander'
import { mosquittoTarget, startBroker } from './broker-process.js'
import { joinCluster, runCtl, startClusterNode, waitForCluster, type ClusterNode, type ClusterNodeOptions } from './cluster-nodes.js'
import { runFlow, type FlowPlan, type FlowResult } from './cluster-flow.js'
import { runJoin, runPropagation, PROBE_EVERY_MS, type JoinResult, type PropagationResult } from './cluster-routes.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/cluster.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')

/** Issue 5's targets. */
const TARGET_CPU_RATIO = 2
const TARGET_PROPAGATION_MS = 2000
const TARGET_JOIN_MS = 10_000

const PARTS = ['qos0', 'qos1', 'mosquitto', 'propagation', 'join', 'flood'] as const

const program = new Command('bench:cluster')
  .description('Forwarding throughput and CPU, route propagation and join time of a two-node Starling cluster.')
  .option('--rounds <n>', 'rounds; the tables show medians', '2')
  .option('--duration <s>', 'measured window of each stream, seconds', '10')
  .option('--warmup <s>', 'stream before the window opens, seconds', '2')
  .option('--rate <msg/s>', 'QoS 0 publish rate, total', '10000')
  .option('--qos1-rate <msg/s>', 'QoS 1 publish rate, total', '5000')
  .option('--publishers <n>', 'publishers sharing the rate (topics bench/<case>/<i>)', '10')
  .option('--payload <bytes>', 'payload size', '64')
  .option('--routes <n>', 'propagation: new subscriptions', '10000')
  .option('--join-routes <n>', 'join: subscriptions held on the existing node', '100000')
  .option('--join-clients <n>', 'join: clients holding them', '10')
  .option('--per-packet <n>', 'filters per SUBSCRIBE', '100')
  .option('--flood-rates <list>', 'flood: QoS 0 forwarded rates to try, msg/s (a fresh pair of nodes each)', '20000,40000,60000,100000')
  .option('--flood-publishers <n>', 'flood: publishers sharing the rate', '100')
  .option('--only <list>', `parts to run: ${PARTS.join(',')} (flood only when named)`, PARTS.filter((p) => p !== 'flood').join(','))

function positive (name: string, value: string): number {
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${value}'`)
  return n
}

const log = (line: string): void => { console.log(line) }
const load = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ')

function median (values: number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

function fmt (value: number | null | undefined, digits: number): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '-'
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

/** `a / b` as `1.23x`, or '-' when either is missing. */
function ratio (a: number, b: number): string {
  const r = a / b
  return Number.isFinite(r) ? `${fmt(r, 2)}x` : '-'
}

function table (head: string[]): Table.Table {
  return new Table({ head, style: { head: [], border: [], compact: true } })
}

function describeWindow (window: number): string {
  return window === Infinity ? 'all SUBSCRIBEs in one write' : `${window} SUBSCRIBE${window === 1 ? '' : 's'} at a time`
}

function describeFlow (r: FlowResult): string {
  const by = Object.entries(r.cpuUsPerMsgBy).map(([label, us]) => `${label} ${fmt(us, 2)}`).join(' + ')
  const pct = Object.entries(r.cpuPercentBy).map(([label, p]) => `${label} ${fmt(p, 0)}%`).join(', ')
  const calls = Object.entries(r.syscallsPerMsgBy).map(([label, n]) => `${label} ${fmt(n, 2)}`).join(', ')
  const sys = Object.entries(r.sysUsPerMsgBy).map(([label, n]) => `${label} ${fmt(n, 2)}`).join(', ')
  return `${fmt(r.deliveredPerS, 0)} msg/s delivered (sent ${fmt(r.sentPerS, 0)}), CPU µs/msg ${fmt(r.cpuUsPerMsg, 2)} (${by}; ` +
    `of which kernel ${sys}), CPU ${pct}, syscalls/msg ${calls}, p50/p99 ${fmt(r.p50Ms, 2)}/${fmt(r.p99Ms, 2)} ms, gen CPU ${fmt(r.generatorCpuPercent, 0)}%, load ${fmt(r.load, 2)}`
}

/** The forwarding table: medians per QoS and case, with the ratios the targets are about. */
function flowTable (flows: FlowResult[]): string {
  const t = table(['QoS', 'case', 'CPU µs/msg', 'A µs/msg', 'B µs/msg', 'vs local', 'vs mosq', 'kernel µs/msg', 'syscalls/msg',
    'delivered msg/s', 'sent msg/s', 'p50 ms', 'p99 ms', 'gen CPU %', 'load', 'runs'])
  for (const qos of [0, 1] as const) {
    const of = (kind: FlowResult['kind']): FlowResult[] => flows.filter((f) => f.qos === qos && f.kind === kind)
    const local = median(of('local').map((f) => f.cpuUsPerMsg))
    const mosq = median(of('mosquitto').map((f) => f.cpuUsPerMsg))
    for (const kind of ['mosquitto', 'local', 'forwarded'] as const) {
      const runs = of(kind)
      if (runs.length === 0) continue
      const cpu = median(runs.map((f) => f.cpuUsPerMsg))
      const part = (label: string): number => median(runs.map((f) => f.cpuUsPerMsgBy[label] ?? NaN))
      t.push([qos, kind === 'local' ? 'local (A→A)' : kind === 'forwarded' ? 'forwarded (A→B)' : 'mosquitto (local)',
        fmt(cpu, 2), fmt(part('A'), 2), fmt(part('B'), 2),
        kind === 'forwarded' ? ratio(cpu, local) : '-',
        kind === 'mosquitto' ? '-' : ratio(cpu, mosq),
        fmt(median(runs.map((f) => Object.values(f.sysUsPerMsgBy).reduce((x, y) => x + y, 0))), 2),
        fmt(median(runs.map((f) => Object.values(f.syscallsPerMsgBy).reduce((x, y) => x + y, 0))), 2),
        fmt(median(runs.map((f) => f.deliveredPerS)), 0), fmt(median(runs.map((f) => f.sentPerS)), 0),
        fmt(median(runs.map((f) => f.p50Ms ?? NaN)), 2), fmt(median(runs.map((f) => f.p99Ms ?? NaN)), 2),
        fmt(median(runs.map((f) => f.generatorCpuPercent)), 0), fmt(median(runs.map((f) => f.load)), 2), runs.length])
    }
  }
  return t.toString()
}

function targetsTable (flows: FlowResult[], props: PropagationResult[], joins: JoinResult[]): string {
  const t = table(['target (issue 5)', 'result (median)', 'per round', 'met'])
  for (const qos of [0, 1] as const) {
    const ratios = flows.filter((f) => f.qos === qos && f.kind === 'forwarded').map((f) => {
      const local = flows.find((l) => l.qos === qos && l.kind === 'local' && l.round === f.round)
      return local === undefined ? NaN : f.cpuUsPerMsg / local.cpuUsPerMsg
    })
    if (ratios.length === 0) continue
    const m = median(ratios)
    t.push([`QoS ${qos}: CPU per forwarded msg (A+B) <= ${TARGET_CPU_RATIO}x local`, ratio(m, 1),
      ratios.map((r) => ratio(r, 1)).join(', '), m <= TARGET_CPU_RATIO ? 'yes' : 'NO'])
  }
  for (const window of [...new Set(props.map((p) => p.window))]) {
    const runs = props.filter((p) => p.window === window)
    const m = median(runs.map((p) => p.routedMs))
    t.push([`${runs[0].routes} new subscriptions routed < ${TARGET_PROPAGATION_MS / 1000} s (${describeWindow(window)})`, `${fmt(m / 1000, 2)} s`,
      runs.map((p) => `${fmt(p.routedMs / 1000, 2)} s (SUBACKs ${fmt(p.subackMs / 1000, 2)} s)`).join(', '), m < TARGET_PROPAGATION_MS ? 'yes' : 'NO'])
  }
  if (joins.length > 0) {
    const m = median(joins.map((j) => j.routedMs))
    t.push([`join with ${joins[0].routes} routes < ${TARGET_JOIN_MS / 1000} s`, `${fmt(m / 1000, 2)} s`,
      joins.map((j) => `${fmt(j.routedMs / 1000, 2)} s (join cmd ${fmt(j.joinCommandMs / 1000, 2)} s, status cmd ${fmt(j.statusCommandMs / 1000, 2)} s)`).join(', '),
      m < TARGET_JOIN_MS ? 'yes' : 'NO'])
  }
  return t.toString()
}

/** One flood run: the stream's totals and the two nodes' message metrics over it. */
interface FloodResult {
  rate: number
  flow: FlowResult
  /** Deltas of A's and B's metrics over the run. */
  a: Record<string, number>
  b: Record<string, number>
  /** A still running after the run. */
  aliveA: boolean
}

async function nodeMetrics (node: ClusterNode): Promise<Record<string, number>> {
  const run = await runCtl(repoRoot, node, ['broker', 'metrics', '--json'], 15_000)
  try { return JSON.parse(run.out) } catch { return {} }
}

function delta (after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {}
  for (const key of ['messages/received', 'messages/forward', 'messages/dropped']) out[key] = (after[key] ?? NaN) - (before[key] ?? NaN)
  return out
}

/** A forwarded QoS 0 stream at `rate` between two fresh nodes, with the drops each counted. */
async function runFlood (nodeOpts: ClusterNodeOptions, stream: { publishers: number, payloadSize: number, warmupS: number, durationS: number }, rate: number): Promise<FloodResult> {
  const nodes: ClusterNode[] = []
  try {
    const a = await startClusterNode(repoRoot, 'flood-a', nodeOpts)
    nodes.push(a)
    const b = await startClusterNode(repoRoot, 'flood-b', nodeOpts)
    nodes.push(b)
    await joinCluster(repoRoot, b, a)
    await waitForCluster(repoRoot, [a, b])
    const [a0, b0] = [await nodeMetrics(a), await nodeMetrics(b)]
    const flow = await runFlow({ ...stream, qos: 0, round: 1, rate, kind: 'forwarded', pubPort: a.port, subPort: b.port, pids: { A: a.pid, B: b.pid }, drainMaxMs: 30_000, drainQuietMs: 3000 })
    const aliveA = isAlive(a.pid)
    const [a1, b1] = [aliveA ? await nodeMetrics(a) : {}, await nodeMetrics(b)]
    return { rate, flow, a: delta(a1, a0), b: delta(b1, b0), aliveA }
  } finally {
    for (const node of nodes.reverse()) await node.stop()
  }
}

function isAlive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch { return false }
}

function describeFlood (f: FloodResult): string {
  const lost = f.flow.sentTotal - f.flow.receivedTotal
  return `published ${fmt(f.flow.sentTotal, 0)}, received ${fmt(f.flow.receivedTotal, 0)} (lost ${fmt(lost, 0)}), window ${fmt(f.flow.deliveredPerS, 0)} msg/s delivered of ${fmt(f.flow.sentPerS, 0)} sent; ` +
    `A received ${fmt(f.a['messages/received'], 0)} forwarded ${fmt(f.a['messages/forward'], 0)} dropped ${fmt(f.a['messages/dropped'], 0)}; B dropped ${fmt(f.b['messages/dropped'], 0)}; ` +
    `A ${f.aliveA ? 'alive' : 'DEAD'}; CPU A ${fmt(f.flow.cpuPercentBy.A, 0)}% B ${fmt(f.flow.cpuPercentBy.B, 0)}%; load ${fmt(f.flow.load, 2)}`
}

function floodTable (floods: FloodResult[]): string {
  const t = table(['rate msg/s', 'published', 'received', 'lost', 'dropped on A', 'dropped on B', 'uncounted', 'window delivered msg/s', 'p99 ms', 'A alive', 'load'])
  for (const f of floods) {
    const lost = f.flow.sentTotal - f.flow.receivedTotal
    t.push([fmt(f.rate, 0), fmt(f.flow.sentTotal, 0), fmt(f.flow.receivedTotal, 0), fmt(lost, 0), fmt(f.a['messages/dropped'], 0), fmt(f.b['messages/dropped'], 0),
      fmt(lost - (f.a['messages/dropped'] + f.b['messages/dropped']), 0), fmt(f.flow.deliveredPerS, 0), fmt(f.flow.p99Ms, 2), f.aliveA ? 'yes' : 'NO', fmt(f.flow.load, 2)])
  }
  return t.toString()
}

async function main (): Promise<void> {
  const cli = program.parse().opts<Record<string, string>>()
  const rounds = Math.round(positive('rounds', cli.rounds))
  const only = new Set(cli.only.split(',').map((s) => s.trim()).filter((s) => s !== ''))
  for (const part of only) if (!(PARTS as readonly string[]).includes(part)) throw new Error(`unknown part '${part}'; choose from ${PARTS.join(', ')}`)
  const stream = {
    publishers: Math.round(positive('publishers', cli.publishers)),
    payloadSize: positive('payload', cli.payload),
    warmupS: Number(cli.warmup),
    durationS: positive('duration', cli.duration)
  }
  const rates = { 0: positive('rate', cli.rate), 1: positive('qos1-rate', cli.qos1Rate) } as const
  const routes = Math.round(positive('routes', cli.routes))
  const joinRoutes = Math.round(positive('join-routes', cli.joinRoutes))
  const perPacket = Math.round(positive('per-packet', cli.perPacket))
  const nodeOpts: ClusterNodeOptions = { fdLimit: 4096 }
  const profDir = process.env.BENCH_CPU_PROF
  if (profDir !== undefined && profDir !== '') {
    nodeOpts.cpuProfDir = path.resolve(profDir)
    mkdirSync(nodeOpts.cpuProfDir, { recursive: true })
    log(`CPU profiles of every node go to ${nodeOpts.cpuProfDir}`)
  }
  const mosquitto = mosquittoTarget()
  const mosquittoMissing = mosquitto.unavailable()
  if (only.has('mosquitto') && mosquittoMissing !== null) log(`skipping mosquitto: ${mosquittoMissing}`)

  log(`bench:cluster: ${rounds} rounds, ${stream.durationS} s window + ${stream.warmupS} s warm-up, QoS 0 ${rates[0]} msg/s, ` +
    `QoS 1 ${rates[1]} msg/s over ${stream.publishers} publishers, ${stream.payloadSize}-byte payloads; ${os.cpus().length} cores, ` +
    `node ${process.version}; load average ${load()}`)
  const flows: FlowResult[] = []
  const props: PropagationResult[] = []
  const joins: JoinResult[] = []
  for (let round = 1; round <= rounds; round++) {
    const qosList = ([0, 1] as const).filter((q) => only.has(`qos${q}`))
    if (qosList.length > 0 || only.has('propagation')) {
      const nodes: ClusterNode[] = []
      try {
        const a = await startClusterNode(repoRoot, `bench-a${round}`, nodeOpts)
        nodes.push(a)
        const b = await startClusterNode(repoRoot, `bench-b${round}`, nodeOpts)
        nodes.push(b)
        await joinCluster(repoRoot, b, a)
        await waitForCluster(repoRoot, [a, b])
        log(`\n[round ${round}] ${b.nodeName} joined ${a.nodeName}; load ${load()}`)
        for (const qos of qosList) {
          const base = { qos, round, rate: rates[qos], ...stream }
          const plans: FlowPlan[] = [
            { ...base, kind: 'local', pubPort: a.port, subPort: a.port, pids: { A: a.pid } },
            { ...base, kind: 'forwarded', pubPort: a.port, subPort: b.port, pids: { A: a.pid, B: b.pid } }
          ]
          for (const plan of plans) {
            const result = await runFlow(plan)
            flows.push(result)
            log(`[round ${round}] QoS ${qos} ${plan.kind}: ${describeFlow(result)}`)
          }
          if (only.has('mosquitto') && mosquittoMissing === null) {
            const broker = await startBroker(mosquitto, 4096, repoRoot)
            try {
              const result = await runFlow({ ...base, kind: 'mosquitto', pubPort: broker.port, subPort: broker.port, pids: { mosquitto: broker.pid } })
              flows.push(result)
              log(`[round ${round}] QoS ${qos} mosquitto: ${describeFlow(result)}`)
            } finally {
              await broker.stop()
            }
          }
        }
        if (only.has('propagation')) {
          for (const window of [Infinity, 1]) {
            const result = await runPropagation(a, b, routes, perPacket, window, round)
            props.push(result)
            log(`[round ${round}] propagation (${describeWindow(window)}): ${routes} subscriptions on B, SUBACKs after ` +
              `${fmt(result.subackMs, 0)} ms, routed from A after ${fmt(result.routedMs, 0)} ms; load ${load()}`)
          }
        }
      } finally {
        for (const node of nodes.reverse()) await node.stop()
      }
    }
    if (only.has('join')) {
      const result = await runJoin(repoRoot, joinRoutes, Math.round(positive('join-clients', cli.joinClients)), perPacket, round, nodeOpts)
      joins.push(result)
      log(`[round ${round}] join: ${joinRoutes} subscriptions set up in ${fmt(result.setupMs, 0)} ms; join command ${fmt(result.joinCommandMs, 0)} ms ` +
        `(status command ${fmt(result.statusCommandMs, 0)} ms); routed after ${fmt(result.routedMs, 0)} ms; load ${load()}`)
    }
  }

  const floods: FloodResult[] = []
  if (only.has('flood')) {
    for (const rate of cli.floodRates.split(',').map((r) => positive('flood-rates', r.trim()))) {
      floods.push(await runFlood(nodeOpts, { ...stream, publishers: Math.round(positive('flood-publishers', cli.floodPublishers)) }, rate))
      const f = floods[floods.length - 1]
      log(`[flood ${fmt(rate, 0)} msg/s] ${describeFlood(f)}`)
    }
  }

  log('\nForwarding, medians over rounds (CPU = broker user+sys per delivered message, forwarded counts A + B; ' +
    'kernel = the part of CPU spent in the kernel (stime); syscalls = read + write system calls of the same processes ' +
    'per delivered message; load = 1-min load average):')
  if (flows.length > 0) log(flowTable(flows))
  if (floods.length > 0) {
    log('\nFlood (issue 13): QoS 0 forwarded A→B at each rate; lost = published - received by the subscriber after it drained; ' +
      'every lost message must be counted in messages/dropped on A or B, and A must stay alive:')
    log(floodTable(floods))
  }
  log(`\nTargets (timings resolve to ${PROBE_EVERY_MS} ms, the probe's publish period); load average at the end ${load()}:`)
  log(targetsTable(flows, props, joins))
}

process.on('SIGINT', () => process.exit(130))
process.on('SIGTERM', () => process.exit(143))
main().catch((err: Error) => {
  console.error(`bench:cluster: ${err.message}`)
  process.exit(1)
})
