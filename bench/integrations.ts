/**
 * `npm run bench:integrations`: data integration throughput (issue 23, "Bench"; numbers in
 * docs/performance.md, "Data integration"). Run by hand, not in CI.
 *
 * 1. For each backend (PostgreSQL, MariaDB, Redis, InfluxDB 1.x over HTTP, RabbitMQ: the
 *    tests' real servers, test/helpers/servers), with batching on (`batch_size` 100) and off:
 *    - **ceiling**: a plain loop in this process writing the same rows with the plugin's own
 *      client (its `DataClient`, the one the rule's resource uses) and the same batch size,
 *      one write in flight, as fast as the server takes them;
 *    - **through one rule**: a node (`bin/starling`) with the plugin loaded, one resource and
 *      one rule (`SELECT clientid, topic, payload.seq as seq, payload.temp as temp FROM
 *      "bench/#"`), fed QoS 0 messages (each its own JSON, `{"seq":N,"temp":T}`) by a
 *      raw-socket publisher (integrations-feeder.ts) kept a backlog ahead of the action's
 *      `success + failed` count (polled over the HTTP API): rows written per second;
 *    - their ratio (the target is at least 0.8).
 *    Rounds alternate ceiling and rule runs; the table shows medians and the spread. Before
 *    them, the node's **ingest floor**: the same feeder with no rule (its CPU per message).
 *    Every window reports each process's CPU and how long it waited on a run queue (the
 *    machine's other work), so a CPU-bound node tells itself apart from one waiting on I/O.
 * 2. Plain subscribers beside 100 rules: one publisher (QoS 1, a window of 100) and one
 *    subscriber on `plain/#` on the same node, messages delivered per second, alone and while
 *    100 rules (each `FROM "data/<i>"` with a data_to_redis action on one Redis resource) are fed
 *    `--rules-rate` messages per second; the ratio (the target is at least 0.9).
 *
 * `--nodes base=<root>,now=<root>` runs several builds of the node side by side (each its own
 * process), taking turns in every round, for A/B comparisons against one ceiling.
 */
import { writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import Table from 'cli-table3'
import { Command } from 'commander'
import mqtt, { type MqttClient } from 'mqtt'
import { loadConfig } from '../node/config/index.js'
import { silentLogger } from '../node/logger.js'
import type { ParamSpecs, ResourceComponents } from '../rules/types.js'
import { freePort } from '../test/helpers/servers/system.js'
import { clockTicksPerSecond, readProcessTree, readSched } from './proc-stats.js'
import { RawPublisher } from './integrations-feeder.js'
import { startBroker, starlingTarget, type BrokerTarget, type RunningBroker } from './broker-process.js'
import { BACKENDS, BENCH_SQL, benchSelection, benchTemp, type Backend, type BackendServer } from './integrations-backends.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/integrations.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')

const program = new Command('bench:integrations')
  .description('Rows per second through one rule beside the backend\'s own ceiling, and plain subscribers beside 100 rules.')
  .option('--backends <list>', `backends: ${Object.keys(BACKENDS).join(',')} or all`, 'all')
  .option('--batch-size <n>', 'batch_size with batching on', '100')
  .option('--duration <s>', 'measured window per run, seconds', '5')
  .option('--warmup <s>', 'load before the window opens, seconds', '1')
  .option('--rounds <n>', 'runs per backend and mode, ceiling and rule alternating; the table shows medians', '3')
  .option('--rules <n>', 'rules running beside the plain subscribers', '100')
  .option('--rules-rate <msg/s>', 'messages per second fed to those rules (all of them together; 0: none, the rules only listen)', '1000')
  .option('--backlog <n>', 'messages the rule\'s publisher keeps ahead of the action\'s outcomes (default max(100000, 64 x batch size))')
  .option('--nodes <list>', 'node builds to compare, name=repository root (built), comma-separated; rounds interleave them', 'now=.')
  .option('--batching <modes>', 'batching modes to run: on, off or on,off', 'on,off')
  .option('--no-subscribers', 'skip the plain-subscriber part')
  .option('--no-throughput', 'skip the rule-versus-ceiling part (the subscriber part still starts Redis)')
  .option('--json <file>', 'also write every run and the summary as JSON')
  .parse(process.argv)

const cli = program.opts<{ nodes: string, batching: string, throughput: boolean, backlog?: string, backends: string, batchSize: string, duration: string, warmup: string, rounds: string, rules: string, rulesRate: string, subscribers: boolean, json?: string }>()
const num = (name: string, value: string): number => {
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, not ${value}`)
  return n
}
const BATCH_SIZE = num('batch-size', cli.batchSize)
const DURATION_MS = num('duration', cli.duration) * 1000
const WARMUP_MS = num('warmup', cli.warmup) * 1000
const ROUNDS = num('rounds', cli.rounds)
const RULES = num('rules', cli.rules)
const RULES_RATE = Number(cli.rulesRate) === 0 ? 0 : num('rules-rate', cli.rulesRate)
const BACKLOG = cli.backlog === undefined ? undefined : num('backlog', cli.backlog)
const names = cli.backends === 'all' ? Object.keys(BACKENDS) : cli.backends.split(',').map((s) => s.trim())
const BUILDS = cli.nodes.split(',').map((spec) => {
  const eq = spec.indexOf('=')
  if (eq <= 0) throw new Error(`--nodes takes name=root,..., not ${spec}`)
  return { name: spec.slice(0, eq).trim(), root: path.resolve(spec.slice(eq + 1).trim() === '.' ? repoRoot : spec.slice(eq + 1).trim()) }
})
const MODES = cli.batching.split(',').map((m) => m.trim())
if (MODES.length === 0 || MODES.some((m) => m !== 'on' && m !== 'off')) throw new Error(`--batching takes on, off or on,off, not ${cli.batching}`)
for (const n of names) if (BACKENDS[n] === undefined) throw new Error(`unknown backend ${n}: ${Object.keys(BACKENDS).join(', ')}`)

const API_USER = 'admin'
const API_SECRET = 'public'

/** A param set's defaults. */
function defaults (params: ParamSpecs): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([, p]) => p.default !== undefined).map(([k, p]) => [k, p.default]))
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

function median (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

/** A node under test: every backend's plugin loaded, its management API on a known port; `name` its build's. */
interface Node { name: string, broker: RunningBroker, api: (method: string, p: string, body?: unknown) => Promise<any> }

async function startNode (build: { name: string, root: string }, backends: Backend[]): Promise<Node> {
  const plugins = [...new Set(backends.map((b) => b.plugin))]
  const apiPort = await freePort()
  const base = starlingTarget(build.root, {
    STARLING_MANAGEMENT__LISTENER__HTTP: `127.0.0.1:${apiPort}`,
    STARLING_MANAGEMENT__DEFAULT_APPLICATION__SECRET: API_SECRET,
    STARLING_BROKER__SYS_INTERVAL: '0'
  })
  const target: BrokerTarget = {
    ...base,
    command: (port, dataDir) => {
      writeFileSync(path.join(dataDir, 'loaded_plugins'), ['svc_rule_engine', ...plugins].map((p) => `{${p}, true}.\n`).join(''))
      return base.command(port, dataDir)
    }
  }
  const why = target.unavailable()
  if (why !== null) throw new Error(why)
  const broker = await startBroker(target, 65_536, build.root)
  const auth = 'Basic ' + Buffer.from(`${API_USER}:${API_SECRET}`).toString('base64')
  const api = async (method: string, p: string, body?: unknown): Promise<any> => {
    const res = await fetch(`http://127.0.0.1:${apiPort}/api/v3${p}`, {
      method, headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body)
    })
    const answer = await res.json() as { code: number, message?: string, data?: unknown }
    if (answer.code !== 0) throw new Error(`${method} ${p}: ${answer.code} ${answer.message ?? ''}`)
    return answer.data
  }
  // the plugins load after the listeners: wait for their resource types
  const deadline = Date.now() + 30_000
  for (;;) {
    const types = await api('GET', '/resource_types').catch(() => []) as Array<{ name: string }>
    if (backends.every((b) => types.some((t) => t.name === b.type.name))) break
    if (Date.now() > deadline) throw new Error(`the plugins ${plugins.join(', ')} did not load:\n${broker.output()}`)
    await sleep(100)
  }
  return { name: build.name, broker, api }
}

async function connectMqtt (port: number, clientId: string): Promise<MqttClient> {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId, reconnectPeriod: 0, protocolVersion: 4 })
  client.on('error', () => {})
  return client
}

/** The plain client's rows per second: `batch` rows per write, one write in flight. */
async function ceiling (backend: Backend, server: BackendServer, batch: number, nodePid: number): Promise<{ rate: number, cpu: CpuShare }> {
  const components = { name: 'bench', config: loadConfig({ env: {} }), logger: silentLogger() } as unknown as ResourceComponents
  const client = await backend.type.dataClient({ ...defaults(backend.type.params), ...server.config }, components)
  try {
    await client.connect()
    const row = backend.action.rowOf({ ...defaults(backend.action.params), ...server.params })
    let seq = 0
    const writeBatch = async (): Promise<void> => {
      const rows = []
      for (let i = 0; i < batch; i++) rows.push(row(benchSelection(seq++)))
      await client.write([client.merge(rows)])
    }
    const warm = performance.now() + WARMUP_MS
    while (performance.now() < warm) await writeBatch()
    const t0 = performance.now()
    const cpu = cpuWindow(nodePid, server.pid())
    let rows = 0
    while (performance.now() - t0 < DURATION_MS) { await writeBatch(); rows += batch }
    return { rate: rows / ((performance.now() - t0) / 1000), cpu: cpu() }
  } finally {
    await client.close()
  }
}

/**
 * CPU % (of one core) of the node, the server and this process over a window, and the % of
 * the window they waited on a run queue (runnable, the CPUs busy with others: the machine, not
 * the process, was the bound then): the main thread of the node and of this process, every
 * thread of the server's processes. `load`: the 1-minute load average at the end.
 */
interface CpuShare { node: number, server: number, bench: number, nodeWait: number, serverWait: number, benchWait: number, load: number }

/** Starts measuring the CPU of the node, the server and this process; the result is read at the window's end. */
function cpuWindow (nodePid: number, serverPid: number | undefined): () => CpuShare {
  const ticks = clockTicksPerSecond()
  // this process's tree holds the node and the servers it started: its own threads only
  const self = (): number => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6 * ticks }
  const cpuOf = (pid: number | undefined): number => pid === undefined ? NaN : pid === process.pid ? self() : readProcessTree(pid).cpuTicks
  // a Node.js process's JavaScript is its main thread; a server may be many processes
  const waitOf = (pid: number | undefined): number => pid === undefined ? NaN : readSched(pid, pid === serverPid ? 'tree' : 'main').waitNs
  const pids = [nodePid, serverPid, process.pid]
  const cpu0 = pids.map(cpuOf)
  const wait0 = pids.map(waitOf)
  const t0 = performance.now()
  return () => {
    const seconds = (performance.now() - t0) / 1000
    const [node, server, bench] = pids.map((pid, i) => (cpuOf(pid) - cpu0[i]) / ticks / seconds * 100)
    const [nodeWait, serverWait, benchWait] = pids.map((pid, i) => (waitOf(pid) - wait0[i]) / 1e9 / seconds * 100)
    return { node, server, bench, nodeWait, serverWait, benchWait, load: os.loadavg()[0] }
  }
}

/** A window's CPU shares for the progress lines. */
function describeCpu (c: CpuShare): string {
  const one = (cpu: number, wait: number): string => Number.isNaN(cpu) ? '-' : `${cpu.toFixed(0)}% (waited ${wait.toFixed(0)}%)`
  return `CPU of one core: node ${one(c.node, c.nodeWait)}, server ${one(c.server, c.serverWait)}, bench ${one(c.bench, c.benchWait)}; load ${c.load.toFixed(1)}`
}

/** Message `seq`'s payload: the JSON the rule's SELECT reads (the ceiling's rows are made of the same). */
function benchPayload (seq: number): string {
  return JSON.stringify({ seq, temp: benchTemp(seq) })
}

/** How often the feeder asks the node how far it got (each ask costs the node an HTTP request). */
const POLL_MS = 100

/** What a fed window measured: items done per second (by the node's count), failures, the CPU shares. */
interface FedRun { rate: number, failed: number, cpu: CpuShare }

/**
 * Feeds `bench/a` with the bench's per-message JSON from a raw-socket publisher, kept `backlog`
 * messages ahead of `progress` (the node's count of items done, asked every {@link POLL_MS}),
 * for the warm-up and the window; the rate is the count's rise between two answers over the
 * time between them.
 */
async function fed (node: Node, serverPid: number | undefined, backlog: number, progress: () => Promise<{ done: number, failed: number }>): Promise<FedRun> {
  const pub = await RawPublisher.connect(node.broker.port, 'bench-pub')
  let last = { ...await progress(), at: performance.now() }
  let running = true
  const poll = async (): Promise<void> => {
    while (running) {
      await sleep(POLL_MS)
      last = { ...await progress(), at: performance.now() }
    }
  }
  let sent = last.done
  const feed = async (): Promise<void> => {
    while (running) {
      const room = Math.min(backlog - (sent - last.done), 4096)
      const payloads: string[] = []
      for (let i = 0; i < room; i++) payloads.push(benchPayload(sent++))
      await pub.publish('bench/a', payloads)
      await (room < 4096 ? sleep(5) : new Promise((resolve) => setImmediate(resolve)))
    }
  }
  const polling = poll()
  const feeding = feed()
  try {
    await sleep(WARMUP_MS)
    const first = last
    const cpu = cpuWindow(node.broker.pid, serverPid)
    await sleep(DURATION_MS)
    const end = last
    const share = cpu()
    return { rate: (end.done - end.failed - first.done + first.failed) / ((end.at - first.at) / 1000), failed: end.failed, cpu: share }
  } finally {
    running = false
    await Promise.all([polling, feeding])
    await pub.close()
  }
}

/** Rows per second written through one rule, the publisher kept `backlog` messages ahead of the action's outcomes. */
async function throughRule (node: Node, backend: Backend, server: BackendServer, batching: boolean): Promise<FedRun> {
  const resource = await node.api('POST', '/resources', { name: `bench_${backend.name}`, type: backend.type.name, config: server.config })
  const rule = await node.api('POST', '/rules', {
    rawsql: BENCH_SQL,
    actions: [{ name: backend.action.name, params: { $resource: resource.id, ...server.params, enable_batch: batching, batch_size: BATCH_SIZE } }]
  })
  // enough that the action's pump (16 buffer entries of up to batch_size rows per write) never
  // waits for the publisher between polls: the publisher learns of outcomes once per POLL_MS,
  // so the backlog caps the rate at about backlog / POLL_MS less what is in the pipeline (20,000
  // capped it near 150,000 rows/s, under what PostgreSQL takes in bulk)
  const backlog = BACKLOG ?? Math.max(100_000, 4 * 16 * (batching ? BATCH_SIZE : 1))
  try {
    return await fed(node, server.pid(), backlog, async () => {
      const data = await node.api('GET', `/rules/${rule.id as string}`)
      const m = (data.actions[0].metrics as Array<{ success: number, failed: number }>).reduce((a, x) => ({ success: a.success + x.success, failed: a.failed + x.failed }), { success: 0, failed: 0 })
      return { done: m.success + m.failed, failed: m.failed }
    })
  } finally {
    await node.api('DELETE', `/rules/${rule.id as string}`)
    await node.api('DELETE', `/resources/${resource.id as string}`)
    await server.reset()
  }
}

/**
 * The node's own floor: messages per second it takes from the same feeder with no rule at all
 * (nobody subscribes; the count is its `messages.received`), and its CPU per message.
 */
async function ingestFloor (node: Node): Promise<FedRun> {
  return await fed(node, undefined, 20_000, async () => {
    const nodes = await node.api('GET', '/metrics/') as Array<{ metrics: Record<string, number> }>
    return { done: nodes.reduce((a, n) => a + (n.metrics['messages.received'] ?? n.metrics['messages/received']), 0), failed: 0 }
  })
}

/** What one plain publisher-subscriber window measured: messages per second, and the node's CPU per message. */
interface PlainRate { rate: number, nodeUsPerMsg: number, cpu: CpuShare }

/** Messages per second one QoS 1 publisher (a window of 100) gets to one subscriber on `plain/#`. */
async function plainRate (node: Node, serverPid: number | undefined): Promise<PlainRate> {
  const port = node.broker.port
  const sub = await connectMqtt(port, 'plain-sub')
  await sub.subscribeAsync('plain/#', { qos: 0 })
  let got = 0
  sub.on('message', () => { got++ })
  const pub = await connectMqtt(port, 'plain-pub')
  let running = true
  const payload = Buffer.alloc(64, 'x')
  const window = async (): Promise<void> => {
    while (running) await pub.publishAsync('plain/a', payload, { qos: 1 })
  }
  const publishers = Array.from({ length: 100 }, window)
  try {
    await sleep(WARMUP_MS)
    const g0 = got
    const t0 = performance.now()
    const cpu = cpuWindow(node.broker.pid, serverPid)
    await sleep(DURATION_MS)
    const rate = (got - g0) / ((performance.now() - t0) / 1000)
    const share = cpu()
    return { rate, nodeUsPerMsg: share.node / 100 * 1e6 / rate, cpu: share }
  } finally {
    running = false
    await Promise.all(publishers)
    await pub.endAsync()
    await sub.endAsync()
  }
}

/** `count` rules on `data/<i>` writing into Redis, fed `rate` messages per second while `during` runs. */
async function besideRules<T> (node: Node, server: BackendServer, count: number, rate: number, during: () => Promise<T>): Promise<T> {
  const redis = BACKENDS.redis
  const resource = await node.api('POST', '/resources', { name: 'bench_rules', type: redis.type.name, config: server.config })
  const rules: string[] = []
  try {
    for (let i = 0; i < count; i++) {
      const rule = await node.api('POST', '/rules', {
        rawsql: `SELECT clientid, topic, payload.seq as seq, payload.temp as temp FROM "data/${i}"`,
        actions: [{ name: redis.action.name, params: { $resource: resource.id, ...server.params } }]
      })
      rules.push(rule.id as string)
    }
    const pub = await RawPublisher.connect(node.broker.port, 'rules-pub')
    let seq = 0
    // every 10 ms, rate/100 messages, round robin over the rules' topics
    const timer = rate === 0 ? undefined : setInterval(() => {
      for (let i = 0; i < rate / 100; i++, seq++) void pub.publish(`data/${seq % count}`, [benchPayload(seq)])
    }, 10)
    try {
      return await during()
    } finally {
      clearInterval(timer)
      await pub.close()
    }
  } finally {
    for (const id of rules) await node.api('DELETE', `/rules/${id}`)
    await node.api('DELETE', `/resources/${resource.id as string}`)
    await server.reset()
  }
}

interface ModeResult { backend: string, batching: boolean, node: string, ceilings: number[], rules: number[], failed: number, nodeUsPerRow: number[], ceilingCpu: CpuShare[], ruleCpu: CpuShare[], error?: string }

async function main (): Promise<void> {
  const runnable: Backend[] = []
  for (const n of names) {
    const why = BACKENDS[n].missing()
    if (why !== undefined) console.warn(`skipping ${n}: ${why}`)
    else runnable.push(BACKENDS[n])
  }
  if (!cli.subscribers && runnable.length === 0) throw new Error('no backend can run here')
  const servers = new Map<string, BackendServer>()
  const results: ModeResult[] = []
  const subscribers = new Map<string, { alone: PlainRate[], beside: PlainRate[], rulesOnly: CpuShare[] }>()
  const floors = new Map<string, FedRun[]>()
  const nodes: Node[] = []
  const tag = (n: Node): string => BUILDS.length > 1 ? ` ${n.name}` : ''
  try {
    for (const b of runnable) {
      process.stdout.write(`starting ${b.name} ...\n`)
      servers.set(b.name, await b.start())
    }
    for (const build of BUILDS) nodes.push(await startNode(build, runnable))
    for (let round = 1; round <= (cli.throughput ? ROUNDS : 0); round++) {
      for (const node of nodes) {
        const f = await ingestFloor(node)
        floors.set(node.name, [...floors.get(node.name) ?? [], f])
        process.stdout.write(`[ingest floor${tag(node)} ${round}/${ROUNDS}] no rule: ${f.rate.toFixed(0)} msg/s, node ${(f.cpu.node / 100 * 1e6 / f.rate).toFixed(1)} µs/msg; ${describeCpu(f.cpu)}\n`)
      }
    }
    for (const b of cli.throughput ? runnable : []) {
      const server = servers.get(b.name)!
      for (const batching of MODES.map((m) => m === 'on')) {
        const mode = `${b.name} batch ${batching ? 'on' : 'off'}`
        const rs = nodes.map((n): ModeResult => ({ backend: b.name, batching, node: n.name, ceilings: [], rules: [], failed: 0, nodeUsPerRow: [], ceilingCpu: [], ruleCpu: [] }))
        results.push(...rs)
        for (let round = 1; round <= ROUNDS && rs[0].error === undefined; round++) {
          let c: number
          try {
            const plain = await ceiling(b, server, batching ? BATCH_SIZE : 1, nodes[0].broker.pid)
            c = plain.rate
            for (const r of rs) r.ceilingCpu.push(plain.cpu)
            process.stdout.write(`[${mode} ${round}/${ROUNDS}] ceiling ${c.toFixed(0)} rows/s; ${describeCpu(plain.cpu)}\n`)
          } catch (err) {
            for (const r of rs) r.error = (err as Error).message
            process.stdout.write(`[${b.name}] the ceiling failed: ${(err as Error).message}\n`)
            break
          }
          await server.reset()
          // the builds take turns, the first one first in odd rounds and last in even ones
          const order = round % 2 === 1 ? nodes.map((_, i) => i) : nodes.map((_, i) => nodes.length - 1 - i)
          for (const i of order) {
            const t = await throughRule(nodes[i], b, server, batching)
            const r = rs[i]
            r.ceilings.push(c)
            r.rules.push(t.rate)
            r.failed += t.failed
            r.nodeUsPerRow.push(t.cpu.node / 100 * 1e6 / t.rate)
            r.ruleCpu.push(t.cpu)
            process.stdout.write(`[${mode}${tag(nodes[i])} ${round}/${ROUNDS}] through the rule ${t.rate.toFixed(0)} rows/s (${(t.rate / c).toFixed(2)}x), node ${(t.cpu.node / 100 * 1e6 / t.rate).toFixed(1)} µs/row${t.failed > 0 ? `, ${t.failed} failed` : ''}; ${describeCpu(t.cpu)}\n`)
          }
        }
      }
    }
    const redisServer = servers.get('redis')
    if (cli.subscribers && redisServer !== undefined) {
      for (let round = 1; round <= ROUNDS; round++) {
        const order = round % 2 === 1 ? nodes : [...nodes].reverse()
        for (const node of order) {
          const alone = await plainRate(node, undefined)
          const beside = await besideRules(node, redisServer, RULES, RULES_RATE, async () => await plainRate(node, redisServer.pid()))
          // what the rules' own work costs the node, without the pair
          const rulesOnly = RULES_RATE === 0
            ? undefined
            : await besideRules(node, redisServer, RULES, RULES_RATE, async () => {
              const cpu = cpuWindow(node.broker.pid, redisServer.pid())
              await sleep(DURATION_MS)
              return cpu()
            })
          const mine = subscribers.get(node.name) ?? { alone: [], beside: [], rulesOnly: [] }
          subscribers.set(node.name, mine)
          mine.alone.push(alone)
          mine.beside.push(beside)
          if (rulesOnly !== undefined) {
            mine.rulesOnly.push(rulesOnly)
            process.stdout.write(`[subscribers${tag(node)} ${round}/${ROUNDS}] the ${RULES} rules alone, fed ${RULES_RATE} msg/s: node ${(rulesOnly.node / 100 * 1e6 / RULES_RATE).toFixed(0)} µs per rule message; ${describeCpu(rulesOnly)}\n`)
          }
          process.stdout.write(`[subscribers${tag(node)} ${round}/${ROUNDS}] alone ${alone.rate.toFixed(0)} msg/s (node ${alone.nodeUsPerMsg.toFixed(1)} µs/msg; ${describeCpu(alone.cpu)})\n`)
          process.stdout.write(`[subscribers${tag(node)} ${round}/${ROUNDS}] beside ${RULES} rules fed ${RULES_RATE} msg/s: ${beside.rate.toFixed(0)} msg/s (${beside.nodeUsPerMsg.toFixed(1)} µs/msg; ${describeCpu(beside.cpu)}): ${(beside.rate / alone.rate).toFixed(2)}x\n`)
        }
      }
    } else if (cli.subscribers) {
      console.warn('skipping the plain-subscriber part: it needs Redis')
    }
  } finally {
    for (const node of nodes) await node.broker.stop()
    for (const s of servers.values()) await s.stop()
  }

  const cpuCell = (xs: CpuShare[]): string => {
    const m = (f: (c: CpuShare) => number): string => median(xs.map(f)).toFixed(0)
    return `${m((c) => c.node)}+${m((c) => c.nodeWait)} / ${m((c) => c.server)}+${m((c) => c.serverWait)} / ${m((c) => c.bench)}+${m((c) => c.benchWait)}`
  }
  const table = new Table({ head: ['backend', 'batching', ...(BUILDS.length > 1 ? ['node'] : []), 'ceiling rows/s (min-max)', 'through one rule rows/s (min-max)', 'ratio (median)', 'node CPU µs/row', 'rule run CPU %, run+waited: node / server / bench', 'failed'] })
  const range = (xs: number[]): string => `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`
  for (const r of results) {
    const ratios = r.rules.map((x, i) => x / r.ceilings[i])
    const head = [r.backend, r.batching ? `on (${BATCH_SIZE})` : 'off', ...(BUILDS.length > 1 ? [r.node] : [])]
    if (r.error !== undefined && r.rules.length === 0) table.push([...head, { colSpan: 6, content: `failed: ${r.error}` }])
    else table.push([...head, range(r.ceilings), range(r.rules), `${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`, median(r.nodeUsPerRow).toFixed(1), cpuCell(r.ruleCpu), r.failed])
  }
  process.stdout.write(table.toString() + '\n')
  for (const [name, fs] of floors) {
    const us = fs.map((f) => f.cpu.node / 100 * 1e6 / f.rate)
    process.stdout.write(`ingest floor${BUILDS.length > 1 ? ` ${name}` : ''} (the feeder, no rule): ${range(fs.map((f) => f.rate))} msg/s, node ${median(us).toFixed(1)} µs/msg (${Math.min(...us).toFixed(1)}-${Math.max(...us).toFixed(1)})\n`)
  }
  for (const [name, { alone, beside, rulesOnly }] of subscribers) {
    const ratios = beside.map((x, i) => x.rate / alone[i].rate)
    const us = (xs: PlainRate[]): string => median(xs.map((x) => x.nodeUsPerMsg)).toFixed(1)
    process.stdout.write(`plain subscribers${BUILDS.length > 1 ? ` ${name}` : ''}: alone ${range(alone.map((x) => x.rate))} msg/s (node ${us(alone)} µs/msg), beside ${RULES} rules (${RULES_RATE} msg/s into them) ` +
      `${range(beside.map((x) => x.rate))} msg/s (node ${us(beside)} µs/msg, the rules' work included): ${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})` +
      (rulesOnly.length === 0 ? '' : `; the rules alone: node ${range(rulesOnly.map((c) => c.node / 100 * 1e6 / RULES_RATE))} µs per rule message`) + '\n')
  }
  if (cli.json !== undefined) {
    writeFileSync(cli.json, JSON.stringify({ date: new Date().toISOString(), loadAverage: os.loadavg(), builds: BUILDS, batchSize: BATCH_SIZE, durationMs: DURATION_MS, rounds: ROUNDS, results, floors: Object.fromEntries(floors), subscribers: Object.fromEntries(subscribers), rules: RULES, rulesRate: RULES_RATE }, null, 2))
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err)
  process.exit(1)
})
