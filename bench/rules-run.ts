/**
 * Rule-engine bench (issue 6, Speed): Starling's CPU per message under fan-in QoS 0 with
 * 0, 1 and 100 rules installed. The cases run interleaved, round by round, each on a fresh
 * broker; the rules are created through the management API (POST /api/v3/rules) as soon
 * as the broker is ready, before any load. Payloads are JSON `{"temp":35}` (padded), so
 * the one matching rule fires on every message. See docs/performance.md, "Rule engine".
 *
 *   npm run build && node dist/bench/rules-run.js --rounds 3 --duration 10
 */
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Table from 'cli-table3'
import { Command } from 'commander'
import { freePort, starlingTarget, type BrokerTarget } from './broker-process.js'
import { median } from './report.js'
import { runScenario, type RunResult } from './scenario-runner.js'
import { SCENARIOS, type BenchOptions, type Scenario } from './scenarios.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/rules-run.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')
const SECRET = 'bench'
const TEMP = 35

/** The matching rule: fires on every bench message and republishes it to `out/hot`. */
const MATCHING = {
  rawsql: 'SELECT payload.temp as temp FROM "message.publish" WHERE payload.temp > 30',
  actions: [{ name: 'republish', params: { target_topic: 'out/hot', target_qos: 0 } }]
}

/** Rule `i` of the 99 that never match: half on the payload, half on the topic. */
function nonMatching (i: number): typeof MATCHING {
  const where = i % 2 === 0 ? 'payload.temp > 1000' : `topic = 'other/${i}'`
  return {
    rawsql: `SELECT payload.temp as temp FROM "message.publish" WHERE ${where}`,
    actions: [{ name: 'republish', params: { target_topic: `out/never/${i}`, target_qos: 0 } }]
  }
}

interface RuleCase { name: string, rules: Array<typeof MATCHING> }

const CASES: RuleCase[] = [
  { name: '0 rules', rules: [] },
  { name: '1 rule', rules: [MATCHING] },
  { name: '100 rules', rules: [MATCHING, ...Array.from({ length: 99 }, (_, i) => nonMatching(i))] }
]

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** POSTs every rule, retrying the first request until the management listener answers. */
async function createRules (httpPort: number, rules: RuleCase['rules']): Promise<void> {
  const url = `http://127.0.0.1:${httpPort}/api/v3/rules`
  const headers = {
    authorization: 'Basic ' + Buffer.from(`admin:${SECRET}`).toString('base64'),
    'content-type': 'application/json'
  }
  const deadline = Date.now() + 20_000
  for (const [i, rule] of rules.entries()) {
    for (;;) {
      try {
        const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(rule) })
        const body = await res.json() as { code?: number, message?: string }
        if (!res.ok || body.code !== 0) throw new Error(`rule ${i}: HTTP ${res.status} ${JSON.stringify(body)}`)
        break
      } catch (err) {
        // Only connection errors before the first rule are retried (the listener may still be starting).
        if (i > 0 || (err as Error).message.startsWith('rule ') || Date.now() > deadline) throw err
        await sleep(100)
      }
    }
  }
}

/** Starling with the management API on `httpPort` (admin:bench) and `ruleCase`'s rules created when ready. */
function ruleTarget (repoRoot: string, ruleCase: RuleCase, httpPort: number): BrokerTarget {
  const base = starlingTarget(repoRoot)
  return {
    name: ruleCase.name,
    unavailable: base.unavailable,
    command: (port, dataDir) => {
      const cmd = base.command(port, dataDir)
      return {
        ...cmd,
        env: {
          ...cmd.env,
          STARLING_MANAGEMENT__LISTENER__HTTP: `127.0.0.1:${httpPort}`,
          STARLING_MANAGEMENT__DEFAULT_APPLICATION__SECRET: SECRET
        }
      }
    },
    ready: () => createRules(httpPort, ruleCase.rules)
  }
}

/** fanin-qos0 with JSON payloads `{"temp":35}`. */
function jsonFanin (): Scenario {
  const base = SCENARIOS.find((s) => s.name === 'fanin-qos0') as Scenario
  return {
    ...base,
    name: 'fanin-qos0-json',
    describe: (o) => `${base.describe(o)}, payload {"temp":${TEMP}} padded to ${o.payloadSize} bytes`,
    load: (o) => {
      const load = base.load(o)
      return { ...load, publisher: { ...load.publisher, jsonTemp: TEMP } }
    }
  }
}

function positive (name: string, value: string): number {
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${value}'`)
  return n
}

/** 'delivered N% of sent' when the broker fell behind (CPU/msg is then the cost at saturation). */
function behind (rs: RunResult[]): string {
  const share = median(rs.map((r) => r.sentPerS > 0 ? r.deliveredPerS / r.sentPerS : null))
  return share !== null && share < 0.98 ? `delivered ${Math.round(share * 100)}% of sent (saturated)` : ''
}

const program = new Command('rules-bench')
  .description('Starling CPU per message with 0, 1 and 100 rules, fan-in QoS 0 with JSON payloads.')
  .option('--rounds <n>', 'rounds; each runs every case once; the table shows medians', '3')
  .option('--duration <s>', 'measured window per run, seconds', '10')
  .option('--warmup <s>', 'traffic before the window opens, seconds', '2')
  .option('--workers <n>', 'load-generator worker threads', '2')
  .option('--payload <bytes>', 'PUBLISH payload size (JSON padded with spaces)', '64')
  .option('--rate <msg/s>', 'total publish rate over the 100 publishers', '10000')

async function main (): Promise<void> {
  const cli = program.parse().opts<Record<'rounds' | 'duration' | 'warmup' | 'workers' | 'payload' | 'rate', string>>()
  const rate = positive('rate', cli.rate)
  const opts: BenchOptions = {
    duration: positive('duration', cli.duration),
    warmup: Number(cli.warmup),
    workers: Math.max(1, Math.round(positive('workers', cli.workers))),
    payloadSize: positive('payload', cli.payload),
    faninRate: rate,
    faninQos1Rate: rate,
    fanoutRate: 1,
    latencyRate: 1,
    idleConnections: 0,
    floodPublishers: 1,
    maxRssMb: 4096
  }
  const rounds = Math.round(positive('rounds', cli.rounds))
  const reason = starlingTarget(repoRoot).unavailable()
  if (reason !== null) throw new Error(reason)
  const scenario = jsonFanin()
  console.log(`rules bench: ${CASES.map((c) => c.name).join(', ')} x ${rounds} rounds, ${opts.duration} s window + ` +
    `${opts.warmup} s warm-up, ${opts.workers} generator threads, ${os.cpus().length} cores, node ${process.version}`)
  console.log(`== ${scenario.describe(opts)}`)
  const runs = new Map<string, RunResult[]>(CASES.map((c) => [c.name, []]))
  for (let round = 1; round <= rounds; round++) {
    // Cases alternate within each round so drift in the machine hits all of them alike.
    for (const ruleCase of CASES) {
      console.log(`[${round}/${rounds}] ${ruleCase.name} ...`)
      try {
        const target = ruleTarget(repoRoot, ruleCase, await freePort())
        const r = await runScenario(scenario, target, round, opts, repoRoot, (line) => console.log(line))
        runs.get(ruleCase.name)?.push(r)
        console.log(`    ${Math.round(r.deliveredPerS)} msg/s delivered (sent ${Math.round(r.sentPerS)}/s), ` +
          `${r.cpuUsPerMsg?.toFixed(2) ?? '-'} µs CPU/msg, broker CPU ${r.cpuPercent.toFixed(0)}%, ` +
          `RSS ${r.rssMb.toFixed(1)} MiB, gen CPU ${r.generatorCpuPercent.toFixed(0)}%`)
      } catch (err) {
        console.log(`    FAILED: ${(err as Error).message}`)
      }
    }
  }
  const baseline = median((runs.get(CASES[0].name) ?? []).map((r) => r.cpuUsPerMsg))
  const table = new Table({
    head: ['case', 'CPU µs/msg', 'vs 0 rules', 'delivered msg/s', 'broker CPU %', 'RSS MiB', 'gen CPU %', 'runs', 'notes'],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    style: { head: [], border: [] }
  })
  for (const c of CASES) {
    const rs = runs.get(c.name) ?? []
    const cpu = median(rs.map((r) => r.cpuUsPerMsg))
    const overhead = cpu === null || baseline === null || c === CASES[0] ? null : (cpu / baseline - 1) * 100
    const fmt = (v: number | null, digits: number): string => v === null ? '-' : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    table.push([c.name, fmt(cpu, 2), overhead === null ? '-' : `${overhead >= 0 ? '+' : ''}${overhead.toFixed(1)}%`,
      fmt(median(rs.map((r) => r.deliveredPerS)), 0), fmt(median(rs.map((r) => r.cpuPercent)), 0),
      fmt(median(rs.map((r) => r.rssMb)), 1), fmt(median(rs.map((r) => r.generatorCpuPercent)), 0), String(rs.length), behind(rs)])
  }
  console.log('\nMedians over rounds (CPU = broker user+sys per delivered message; vs 0 rules = rule-engine overhead):')
  console.log(table.toString())
}

process.on('SIGINT', () => process.exit(130))
process.on('SIGTERM', () => process.exit(143))
main().catch((err: Error) => {
  console.error(`rules bench: ${err.message}`)
  process.exit(1)
})
