/**
 * `npm run bench`: runs the scenarios against each selected broker, interleaved round
 * by round in the same process and on the same machine, then prints the medians.
 * See docs/performance.md.
 */
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Command } from 'commander'
import { aedesTarget, commandTarget, mosquittoTarget, relayTarget, starlingTarget, type BrokerTarget } from './broker-process.js'
import { openFileLimits } from './proc-stats.js'
import { renderTable, summarize } from './report.js'
import { runScenario, type RunResult } from './scenario-runner.js'
import { SCENARIOS, selectScenarios, type BenchOptions } from './scenarios.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/run.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')
const REEXEC_ENV = 'STARLING_BENCH_REEXEC'

const program = new Command('bench')
  .description('Compare Starling, Mosquitto and plain aedes under the same load, in the same run.')
  .option('--broker <list>', 'brokers: starling,mosquitto,aedes,relay or all (all three brokers, not the relay)', 'all')
  .option('--cmd <name=command>', 'extra broker run through sh; {port} and {dataDir} are substituted (repeatable)',
    (value: string, previous: string[]) => previous.concat([value]), [] as string[])
  .option('--scenarios <list>', `scenarios: ${SCENARIOS.map((s) => s.name).join(',')}`, SCENARIOS.map((s) => s.name).join(','))
  .option('--rounds <n>', 'rounds per scenario and broker; the table shows medians', '3')
  .option('--duration <s>', 'measured window per run, seconds', '10')
  .option('--warmup <s>', 'traffic before the window opens, seconds', '2')
  .option('--workers <n>', 'load-generator worker threads', '2')
  .option('--payload <bytes>', 'PUBLISH payload size', '64')
  .option('--fanin-rate <msg/s>', 'fanin-qos0 total publish rate', '20000')
  .option('--fanin-qos1-rate <msg/s>', 'fanin-qos1 total publish rate', '5000')
  .option('--fanout-rate <msg/s>', 'fanout publisher rate (x1000 deliveries)', '20')
  .option('--latency-rate <msg/s>', 'latency scenario publish rate', '1000')
  .option('--idle-connections <n>', 'idle scenario connections', '10000')
  .option('--idle-settle <s>', 'idle: seconds from the last CONNACK to the RSS reading', '2')
  .option('--flood-publishers <n>', 'flood scenario publishers', '20')
  .option('--max-rss-mb <MiB>', 'flood: cut the window when broker RSS passes this', '4096')
  .option('--json <file>', 'also write every run and the summary as JSON')

interface CliOptions {
  broker: string
  cmd: string[]
  scenarios: string
  rounds: string
  duration: string
  warmup: string
  workers: string
  payload: string
  faninRate: string
  faninQos1Rate: string
  fanoutRate: string
  latencyRate: string
  idleConnections: string
  idleSettle: string
  floodPublishers: string
  maxRssMb: string
  json?: string
}

function positive (name: string, value: string): number {
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${value}'`)
  return n
}

function selectBrokers (list: string, commands: string[]): BrokerTarget[] {
  const builtin: Record<string, BrokerTarget> = {
    mosquitto: mosquittoTarget(),
    starling: starlingTarget(repoRoot),
    aedes: aedesTarget(benchDir),
    relay: relayTarget(benchDir)
  }
  const names = list.split(',').map((s) => s.trim()).filter((s) => s !== '')
  const expanded = names.flatMap((n) => n === 'all' ? ['mosquitto', 'starling', 'aedes'] : [n])
  const targets: BrokerTarget[] = []
  for (const name of expanded) {
    const target = builtin[name]
    if (target === undefined) throw new Error(`unknown broker '${name}'; choose from starling, mosquitto, aedes, relay, all (or use --cmd)`)
    targets.push(target)
  }
  for (const spec of commands) {
    const eq = spec.indexOf('=')
    if (eq <= 0) throw new Error(`--cmd expects name=command, got '${spec}'`)
    targets.push(commandTarget(spec.slice(0, eq), spec.slice(eq + 1)))
  }
  return targets.filter((t) => {
    const reason = t.unavailable()
    if (reason !== null) console.log(`skipping ${t.name}: ${reason}`)
    return reason === null
  })
}

/**
 * The idle scenario needs one descriptor per connection in this process and in the
 * broker. Re-runs the bench under `ulimit -n` when the limit is too low (works up to the
 * hard limit, or beyond it as root); if that fails, lowers the connection count and says so.
 */
function ensureFileLimit (opts: BenchOptions, wantIdle: boolean): void {
  if (!wantIdle) return
  const needed = opts.idleConnections + 2048
  const { soft, hard } = openFileLimits()
  if (soft >= needed) return
  if (process.env[REEXEC_ENV] === undefined) {
    // Node already lifts its soft limit to the hard one; only root can go past that.
    console.log(`open-file limit ${soft} < ${needed} needed by idle; trying to re-run under ulimit -n ${needed}`)
    const child = spawnSync('/bin/sh', ['-c', `ulimit -n ${needed} 2>/dev/null || exit 97; exec "$@"`, 'sh',
      process.execPath, ...process.execArgv, ...process.argv.slice(1)],
    { stdio: 'inherit', env: { ...process.env, [REEXEC_ENV]: '1' } })
    if (child.status !== 97) process.exit(child.status ?? 1)
  }
  const fits = Math.max(0, Math.min(soft, hard) - 2048)
  console.log(`WARNING: open-file limit is ${soft} (hard ${hard}); idle needs ~${needed}. ` +
    `Raise it (as root: ulimit -n ${needed}) for the full test; running idle with ${fits} connections.`)
  opts.idleConnections = fits
}

async function main (): Promise<void> {
  const cli = program.parse().opts<CliOptions>()
  const opts: BenchOptions = {
    duration: positive('duration', cli.duration),
    warmup: Number(cli.warmup),
    workers: Math.max(1, Math.round(positive('workers', cli.workers))),
    payloadSize: positive('payload', cli.payload),
    faninRate: positive('fanin-rate', cli.faninRate),
    faninQos1Rate: positive('fanin-qos1-rate', cli.faninQos1Rate),
    fanoutRate: positive('fanout-rate', cli.fanoutRate),
    latencyRate: positive('latency-rate', cli.latencyRate),
    idleConnections: Math.round(positive('idle-connections', cli.idleConnections)),
    idleSettleMs: positive('idle-settle', cli.idleSettle) * 1000,
    floodPublishers: Math.round(positive('flood-publishers', cli.floodPublishers)),
    maxRssMb: positive('max-rss-mb', cli.maxRssMb)
  }
  const rounds = Math.round(positive('rounds', cli.rounds))
  const scenarios = selectScenarios(cli.scenarios.split(',').map((s) => s.trim()).filter((s) => s !== ''))
  ensureFileLimit(opts, scenarios.some((s) => s.kind === 'idle'))
  const brokers = selectBrokers(cli.broker, cli.cmd)
  if (brokers.length === 0) throw new Error('no broker to run (see the skipping lines above)')

  console.log(`bench: ${brokers.map((b) => b.name).join(', ')} x ${scenarios.length} scenarios x ${rounds} rounds, ` +
    `${opts.duration} s window + ${opts.warmup} s warm-up, ${opts.workers} generator threads, ` +
    `${os.cpus().length} cores, node ${process.version}`)
  const runs: RunResult[] = []
  for (const scenario of scenarios) {
    console.log(`\n== ${scenario.name}: ${scenario.describe(opts)}`)
    for (let round = 1; round <= rounds; round++) {
      // Brokers alternate within each round so drift in the machine hits all of them alike.
      for (const broker of brokers) {
        console.log(`[${scenario.name} ${round}/${rounds}] ${broker.name} ...`)
        try {
          const result = await runScenario(scenario, broker, round, opts, repoRoot, (line) => console.log(line))
          runs.push(result)
          console.log(`    ${describeRun(result)}`)
        } catch (err) {
          console.log(`    FAILED: ${(err as Error).message}`)
        }
      }
    }
  }
  const summary = summarize(runs)
  console.log('\nMedians over rounds (CPU = broker user+sys; vs mosq = CPU µs/msg, or KiB/conn for idle, over Mosquitto\'s):')
  console.log(renderTable(summary))
  if (cli.json !== undefined) {
    const report = { date: new Date().toISOString(), host: { cores: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version }, options: opts, rounds, runs, summary }
    writeFileSync(cli.json, JSON.stringify(report, null, 2))
    console.log(`wrote ${cli.json}`)
  }
}

function describeRun (r: RunResult): string {
  if (r.kbPerConn !== undefined) {
    return `${r.kbPerConn.toFixed(1)} KiB/conn, ${(r.cpuUsPerConn ?? 0).toFixed(0)} µs CPU/conn, RSS ${r.rssMb.toFixed(1)} MiB`
  }
  const parts = [
    `${Math.round(r.deliveredPerS)} msg/s delivered (sent ${Math.round(r.sentPerS)}/s)`,
    `${r.cpuUsPerMsg === null ? '-' : r.cpuUsPerMsg.toFixed(2)} µs CPU/msg`,
    `broker CPU ${r.cpuPercent.toFixed(0)}%`,
    `RSS ${r.rssMb.toFixed(1)} MiB (peak ${r.peakRssMb.toFixed(1)})`,
    `p50/p99/p99.9 ${r.p50Ms?.toFixed(2) ?? '-'}/${r.p99Ms?.toFixed(2) ?? '-'}/${r.p999Ms?.toFixed(2) ?? '-'} ms`,
    `gen CPU ${r.generatorCpuPercent.toFixed(0)}%`
  ]
  if (r.survived !== undefined) parts.push(`survived ${r.survived ? 'yes' : 'NO'}, new CONNECT ${r.answersConnect === true ? 'ok' : 'FAILED'}`)
  if (r.dropped > 0) parts.push(`${r.dropped} connections dropped by broker`)
  if (r.note !== undefined) parts.push(r.note)
  return parts.join(', ')
}

process.on('SIGINT', () => process.exit(130))
process.on('SIGTERM', () => process.exit(143))
main().catch((err: Error) => {
  console.error(`bench: ${err.message}`)
  process.exit(1)
})
