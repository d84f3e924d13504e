/**
 * Rule-engine bench (issue 6, Speed): Starling's CPU per message under fan-in QoS 0 with
 * 0, 1 and 100 rules installed. The cases run interleaved, round by round, each on a fresh
 * broker; the rules are created through the management API (POST /api/v3/rules) as soon
 * as the broker is ready, before any load. Payloads are JSON `{"temp":35}` (padded), so
 * the one matching rule fires on every message. See docs/performance.md, "Rule engine".
 *
 * `--in-process` runs the same rule sets on the rule runtime alone, in this process, fed
 * with message.publish events as the broker builds them (no sockets, no aedes): the rule
 * engine's own CPU per message, without the noise of a whole broker, and a process to
 * profile (`node --cpu-prof dist/bench/rules-run.js --in-process --cases ...`).
 *
 *   npm run build && node dist/bench/rules-run.js --rounds 3 --duration 10
 */
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Table from 'cli-table3'
import { Command } from 'commander'
import { pino } from 'pino'
import { freePort, starlingTarget, type BrokerTarget } from './broker-process.js'
import { median } from './report.js'
import { runScenario, type RunResult } from './scenario-runner.js'
import { SCENARIOS, type BenchOptions, type Scenario } from './scenarios.js'
import { HooksBus } from '../node/hooks.js'
import { messageEvent } from '../node/mqtt/broker-events.js'
import { createBuiltInRegistry } from '../rules/engine.js'
import { EngineMetrics } from '../rules/metrics.js'
import { checkParams } from '../rules/params.js'
import { RepublishMarks } from '../rules/republish-marks.js'
import type { RuleEntry } from '../rules/rule-service.js'
import { RuleRuntime, type RuleRuntimeComponents } from '../rules/runtime.js'
import { compileSql } from '../rules/sql/index.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/rules-run.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')
const SECRET = 'bench'
const TEMP = 35

/** A rule as POST /api/v3/rules takes it. */
interface RuleSpec { rawsql: string, actions: Array<{ name: string, params: Record<string, unknown> }> }

const republish = (topic: string): RuleSpec['actions'] => [{ name: 'republish', params: { target_topic: topic, target_qos: 0 } }]

/** The matching rule: fires on every bench message and republishes it to `out/hot`. */
const MATCHING: RuleSpec = {
  rawsql: 'SELECT payload.temp as temp FROM "message.publish" WHERE payload.temp > 30',
  actions: republish('out/hot')
}

/** Rule `i` whose FROM topic filter matches no bench topic (`t/<n>`). */
const elsewhere = (i: number): RuleSpec => ({
  rawsql: `SELECT payload.temp as temp FROM "other/${i}/#" WHERE payload.temp > 30`,
  actions: republish(`out/never/${i}`)
})

/** Rule `i` whose FROM matches every bench topic and whose WHERE on the JSON payload is false. */
const whereFalse = (i: number): RuleSpec => ({
  rawsql: `SELECT payload.temp as temp FROM "t/#" WHERE payload.temp > ${1000 + i}`,
  actions: republish(`out/never/${i}`)
})

/**
 * Rule `i` of the first version of this bench: FROM names the event, so it also sees the
 * matching rule's republished messages (empty payload); half test the payload, half the topic.
 */
const specWhereFalse = (i: number): RuleSpec => ({
  rawsql: `SELECT payload.temp as temp FROM "message.publish" WHERE ${i % 2 === 0 ? 'payload.temp > 1000' : `topic = 'other/${i}'`}`,
  actions: republish(`out/never/${i}`)
})

/** A bench case: the rules installed. */
interface RuleCase { name: string, rules: RuleSpec[] }

const times = (n: number, rule: (i: number) => RuleSpec): RuleSpec[] => Array.from({ length: n }, (_, i) => rule(i))

/** Every case; `--cases` picks some by their number (1-based) in this list. */
const CASES: RuleCase[] = [
  { name: '0 rules', rules: [] },
  { name: '1 rule (matches)', rules: [MATCHING] },
  { name: '100 rules, FROM no match', rules: times(100, elsewhere) },
  { name: '100 rules, WHERE false', rules: times(100, whereFalse) },
  { name: '1 matching + 99 WHERE false (event FROM)', rules: [MATCHING, ...times(99, specWhereFalse)] }
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

/**
 * Starling with the management API on `httpPort` (admin:bench) and `ruleCase`'s rules created
 * when ready; with `profileDir`, it writes a CPU profile there when it stops.
 */
function ruleTarget (repoRoot: string, ruleCase: RuleCase, httpPort: number, profileDir: string | undefined): BrokerTarget {
  const base = starlingTarget(repoRoot)
  return {
    name: ruleCase.name,
    unavailable: base.unavailable,
    command: (port, dataDir) => {
      const cmd = base.command(port, dataDir)
      return {
        ...cmd,
        args: profileDir === undefined ? cmd.args : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, ...cmd.args],
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

const fmt = (v: number | null, digits: number): string => v === null ? '-' : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const percent = (v: number | null): string => v === null ? '-' : `${v >= 0 ? '+' : ''}${v.toFixed(1)}%`

/** The cases named by `--cases` (1-based numbers in {@link CASES}, comma separated), or all. */
function pickCases (list: string | undefined): RuleCase[] {
  if (list === undefined) return CASES
  return list.split(',').map((n) => {
    const c = CASES[Number(n) - 1]
    if (c === undefined) throw new Error(`--cases: no case ${n}; the cases are ${CASES.map((c, i) => `${i + 1} (${c.name})`).join(', ')}`)
    return c
  })
}

/** Runs every case against a fresh broker per round and prints the table. */
async function againstBroker (cases: RuleCase[], rounds: number, opts: BenchOptions, profileDir: string | undefined): Promise<void> {
  const reason = starlingTarget(repoRoot).unavailable()
  if (reason !== null) throw new Error(reason)
  const scenario = jsonFanin()
  console.log(`rules bench: ${cases.length} cases x ${rounds} rounds, ${opts.duration} s window + ` +
    `${opts.warmup} s warm-up, ${opts.workers} generator threads, ${os.cpus().length} cores, node ${process.version}`)
  console.log(`== ${scenario.describe(opts)}`)
  const runs = new Map<RuleCase, RunResult[]>(cases.map((c) => [c, []]))
  for (let round = 1; round <= rounds; round++) {
    // Cases alternate within each round so drift in the machine hits all of them alike.
    for (const ruleCase of cases) {
      console.log(`[${round}/${rounds}] ${ruleCase.name} ...`)
      try {
        const target = ruleTarget(repoRoot, ruleCase, await freePort(), profileDir)
        const r = await runScenario(scenario, target, round, opts, repoRoot, (line) => console.log(line))
        runs.get(ruleCase)?.push(r)
        console.log(`    ${Math.round(r.deliveredPerS)} msg/s delivered (sent ${Math.round(r.sentPerS)}/s), ` +
          `${r.cpuUsPerMsg?.toFixed(2) ?? '-'} µs CPU/msg, broker CPU ${r.cpuPercent.toFixed(0)}%, ` +
          `RSS ${r.rssMb.toFixed(1)} MiB, gen CPU ${r.generatorCpuPercent.toFixed(0)}%`)
      } catch (err) {
        console.log(`    FAILED: ${(err as Error).message}`)
      }
    }
  }
  const baseCase = cases.find((c) => c.rules.length === 0)
  const baseline = baseCase === undefined ? null : median((runs.get(baseCase) ?? []).map((r) => r.cpuUsPerMsg))
  const table = new Table({
    head: ['case', 'CPU µs/msg', 'vs 0 rules', 'delivered msg/s', 'broker CPU %', 'RSS MiB', 'gen CPU %', 'runs', 'notes'],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    style: { head: [], border: [] }
  })
  for (const c of cases) {
    const rs = runs.get(c) ?? []
    const cpu = median(rs.map((r) => r.cpuUsPerMsg))
    const overhead = cpu === null || baseline === null || c === baseCase ? null : (cpu / baseline - 1) * 100
    table.push([c.name, fmt(cpu, 2), percent(overhead),
      fmt(median(rs.map((r) => r.deliveredPerS)), 0), fmt(median(rs.map((r) => r.cpuPercent)), 0),
      fmt(median(rs.map((r) => r.rssMb)), 1), fmt(median(rs.map((r) => r.generatorCpuPercent)), 0), String(rs.length), behind(rs)])
  }
  console.log('\nMedians over rounds (CPU = broker user+sys per delivered message; vs 0 rules = rule-engine overhead):')
  console.log(table.toString())
}

/** A stored rule made from `spec`, as the rule service would store it (action params checked, defaults filled). */
function ruleEntry (spec: RuleSpec, n: number, registry: ReturnType<typeof createBuiltInRegistry>): RuleEntry {
  const id = `bench:${String(n).padStart(3, '0')}`
  const actions = spec.actions.map((a, i) => {
    const def = registry.findAction(a.name)
    if (def === undefined) throw new Error(`unknown action ${a.name}`)
    return { id: `${a.name}_${n}_${i}`, name: a.name, params: checkParams(def.params, a.params, a.name) }
  })
  const compiled = compileSql(spec.rawsql)
  return { rule: { id, for: compiled.events.join(','), rawsql: spec.rawsql, actions, enabled: true, description: '', created_at: 0 }, compiled }
}

/** Messages published between two turns of the event loop (when the queued actions run). */
const BATCH = 100

/**
 * One in-process run: `ruleCase`'s rules on a {@link RuleRuntime} whose node is a hooks bus
 * and a stand-in for the MQTT core (a republished message is emitted as message.publish at once, as the
 * broker does). Publishes `messages` events the way the broker builds them (a fresh payload
 * Buffer each, topics `t/0` ... `t/99`) and returns the process's CPU µs per message.
 */
async function inProcessRun (ruleCase: RuleCase, messages: number, payloadSize: number): Promise<number> {
  const logger = pino({ level: 'silent' })
  const hooks = new HooksBus(logger)
  const publish = (packet: { topic: string, payload: Buffer, qos: number, clientId?: string }): void => {
    if (hooks.has('message.publish')) hooks.emit('message.publish', messageEvent('message.publish', 'bench@127.0.0.1', packet, null))
  }
  // the MQTT core's publish, as the runtime republishes through it
  const core = { publish: async (packet: { topic: string, payload: Buffer, qos: number }) => { publish(packet) } }
  const node = { hooks, broker: { core } as unknown as RuleRuntimeComponents['broker'] } satisfies RuleRuntimeComponents
  const registry = createBuiltInRegistry()
  const runtime = new RuleRuntime({ node, logger, registry, metrics: new EngineMetrics(), marks: new RepublishMarks(), resource: () => undefined })
  runtime.load(ruleCase.rules.map((spec, n) => ruleEntry(spec, n, registry)))
  runtime.start()
  const json = Buffer.from(JSON.stringify({ temp: TEMP }).padEnd(payloadSize, ' '))
  const topics = Array.from({ length: 100 }, (_, i) => `t/${i}`)
  const send = async (count: number): Promise<void> => {
    for (let sent = 0; sent < count;) {
      for (let k = 0; k < BATCH && sent < count; k++, sent++) {
        publish({ topic: topics[sent % 100], payload: Buffer.from(json), qos: 0, clientId: `c${sent % 100}` })
      }
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  await send(Math.min(messages, 50_000)) // warm-up: optimised code, steady heap
  const before = process.cpuUsage()
  await send(messages)
  const cpu = process.cpuUsage(before)
  runtime.stop()
  return (cpu.user + cpu.system) / messages
}

/** Runs every case in this process, interleaved per round, and prints the table. */
async function inProcess (cases: RuleCase[], rounds: number, messages: number, payloadSize: number): Promise<void> {
  console.log(`rules bench, in process: ${cases.length} cases x ${rounds} rounds x ${messages} messages, node ${process.version}`)
  const runs = new Map<RuleCase, number[]>(cases.map((c) => [c, []]))
  for (let round = 1; round <= rounds; round++) {
    for (const ruleCase of cases) {
      const us = await inProcessRun(ruleCase, messages, payloadSize)
      runs.get(ruleCase)?.push(us)
      console.log(`[${round}/${rounds}] ${ruleCase.name}: ${us.toFixed(3)} µs CPU/msg`)
    }
  }
  const baseCase = cases.find((c) => c.rules.length === 0)
  const baseline = baseCase === undefined ? null : median(runs.get(baseCase) ?? [])
  const table = new Table({
    head: ['case', 'CPU µs/msg', 'rules µs/msg', 'runs'],
    colAligns: ['left', 'right', 'right', 'right'],
    style: { head: [], border: [] }
  })
  for (const c of cases) {
    const us = median(runs.get(c) ?? [])
    table.push([c.name, fmt(us, 3), us === null || baseline === null || c === baseCase ? '-' : fmt(us - baseline, 3), String(runs.get(c)?.length ?? 0)])
  }
  console.log('\nMedians over rounds (CPU = this process, user+sys, per published message; rules = minus the 0-rule case):')
  console.log(table.toString())
}

const program = new Command('rules-bench')
  .description('Starling CPU per message with 0, 1 and 100 rules, fan-in QoS 0 with JSON payloads.')
  .option('--rounds <n>', 'rounds; each runs every case once; the table shows medians', '3')
  .option('--cases <list>', `case numbers, comma separated (default all): ${CASES.map((c, i) => `${i + 1} ${c.name}`).join('; ')}`)
  .option('--duration <s>', 'measured window per run, seconds', '10')
  .option('--warmup <s>', 'traffic before the window opens, seconds', '2')
  .option('--workers <n>', 'load-generator worker threads', '2')
  .option('--payload <bytes>', 'PUBLISH payload size (JSON padded with spaces)', '64')
  .option('--rate <msg/s>', 'total publish rate over the 100 publishers', '10000')
  .option('--profile <dir>', 'the broker writes a CPU profile (node --cpu-prof) into <dir> per run')
  .option('--in-process', 'run the rule runtime alone in this process (no broker, no sockets)')
  .option('--messages <n>', 'with --in-process: messages per run', '200000')

async function main (): Promise<void> {
  type Options = Record<'rounds' | 'duration' | 'warmup' | 'workers' | 'payload' | 'rate' | 'messages', string> & { cases?: string, profile?: string, inProcess?: boolean }
  const cli = program.parse().opts<Options>()
  const cases = pickCases(cli.cases)
  const rounds = Math.round(positive('rounds', cli.rounds))
  const payloadSize = positive('payload', cli.payload)
  if (cli.inProcess === true) {
    await inProcess(cases, rounds, Math.round(positive('messages', cli.messages)), payloadSize)
    return
  }
  const rate = positive('rate', cli.rate)
  await againstBroker(cases, rounds, {
    duration: positive('duration', cli.duration),
    warmup: Number(cli.warmup),
    workers: Math.max(1, Math.round(positive('workers', cli.workers))),
    payloadSize,
    faninRate: rate,
    faninQos1Rate: rate,
    fanoutRate: 1,
    latencyRate: 1,
    idleConnections: 0,
    idleSettleMs: 2000,
    floodPublishers: 1,
    maxRssMb: 4096
  }, cli.profile === undefined ? undefined : path.resolve(cli.profile))
}

process.on('SIGINT', () => process.exit(130))
process.on('SIGTERM', () => process.exit(143))
main().catch((err: Error) => {
  console.error(`rules bench: ${err.message}`)
  process.exit(1)
})
