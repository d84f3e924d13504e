/**
 * `npm run bench:auth`: CONNECTs per second, CONNACK latency and the node's CPU per CONNECT
 * through each authentication backend against its real server, with the built-in
 * `svc_auth_username` as the reference; then a slow HTTP backend (1 s per answer) while a
 * publisher and a subscriber already connected keep their QoS 1 stream. See
 * docs/performance.md, "Authentication backends". Run by hand, not in CI.
 *
 * For each backend (and each pool size where it has a pool key): the server is started once
 * (test/helpers/servers, or in this process for HTTP) and seeded with the same users; then for
 * each pool size a fresh node (`bin/starling`, as bench/broker-process.ts starts it) with
 * `allow_anonymous = false`, the plugin listed in `<data_dir>/loaded_plugins` and its keys as
 * `STARLING_` variables. A right and a wrong password are checked first (CONNACK 0 and 4), so
 * the numbers are the plugin's. Then C raw-socket clients loop CONNECT → CONNACK → DISCONNECT:
 * after a warm-up, a window of D seconds counts CONNACKs, their latency (CONNECT written →
 * CONNACK read) and the node's CPU from /proc (and the backend server's, where it is a
 * process of its own).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import Table from 'cli-table3'
import { Command } from 'commander'
import { AUTH_BACKEND_PLUGINS } from '../plugins/auth/backends.js'
import { backendFor, BACKEND_NAMES, envName, makeUsers, type Backend } from './auth-backends.js'
import { ConnectLoop, probeConnect, PubSubPair, type ConnectCounts, type Credentials } from './auth-clients.js'
import { HttpAuthService } from './auth-http-service.js'
import { startBroker, starlingTarget, type BrokerTarget, type RunningBroker } from './broker-process.js'
import type { LatencyHistogram } from './latency-histogram.js'
import { clockTicksPerSecond, readProcessTree } from './proc-stats.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/auth.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')

const program = new Command('bench:auth')
  .description('CONNECTs per second and CONNACK latency through each authentication backend, and a slow backend beside connected clients.')
  .option('--backends <list>', `backends: ${BACKEND_NAMES.join(',')} or all`, 'all')
  .option('--pools <list>', 'pool sizes, for backends with a pool key', '1,8')
  .option('--users <n>', 'users seeded in every backend', '1000')
  .option('--clients <n>', 'concurrent clients looping CONNECT → CONNACK → DISCONNECT', '50')
  .option('--duration <s>', 'measured window per run, seconds', '5')
  .option('--warmup <s>', 'CONNECT loop before the window opens, seconds', '1')
  .option('--rounds <n>', 'runs per backend and pool size, interleaved; the table shows medians', '3')
  .option('--slow-clients <n>', 'slow part: clients connecting through the slow HTTP service', '100')
  .option('--slow-delay <ms>', 'slow part: the HTTP service answers after this long', '1000')
  .option('--slower-delay <ms>', 'slow part: then after this long, more than --slow-timeout', '5000')
  .option('--slow-timeout <s>', 'slow part: auth.http.timeout of the node', '2')
  .option('--window <n>', 'slow part: QoS 1 PUBLISHes the publisher keeps unacknowledged', '100')
  .option('--no-slow', 'skip the slow-backend part')
  .option('--json <file>', 'where to write the JSON report (default bench/results/auth-<date>.json)')
  .parse(process.argv)

const cli = program.opts<{
  backends: string, pools: string, users: string, clients: string, duration: string, warmup: string, rounds: string,
  slowClients: string, slowDelay: string, slowerDelay: string, slowTimeout: string, window: string, slow: boolean, json?: string
}>()
const positive = (name: string, value: string): number => {
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`--${name} must be a positive number (got ${value})`)
    process.exit(2)
  }
  return n
}
const opts = {
  backends: cli.backends === 'all' ? [...BACKEND_NAMES] : cli.backends.split(',').map((s) => s.trim()).filter((s) => s !== ''),
  pools: cli.pools.split(',').map((s) => positive('pools', s.trim())),
  users: positive('users', cli.users),
  clients: positive('clients', cli.clients),
  durationS: positive('duration', cli.duration),
  warmupS: positive('warmup', cli.warmup),
  rounds: positive('rounds', cli.rounds),
  slowClients: positive('slow-clients', cli.slowClients),
  slowDelayMs: positive('slow-delay', cli.slowDelay),
  slowerDelayMs: positive('slower-delay', cli.slowerDelay),
  slowTimeoutS: positive('slow-timeout', cli.slowTimeout),
  window: positive('window', cli.window),
  slow: cli.slow
}
for (const name of opts.backends) {
  if (!(BACKEND_NAMES as readonly string[]).includes(name)) {
    console.error(`unknown backend ${name}; known: ${BACKEND_NAMES.join(', ')}`)
    process.exit(2)
  }
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))
const log = (line: string): void => console.log(`[auth] ${line}`)
const fmt = (value: number | null | undefined, digits: number): string =>
  value === null || value === undefined || !Number.isFinite(value) ? '-' : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

/** One row of the table: one backend at one pool size. */
interface Row {
  backend: string
  pool: number | null
  /** Runs this row is the median of. */
  rounds: number
  connectsPerS: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  nodeCpuUsPerConnect: number
  /** This row's node CPU per CONNECT ÷ svc_auth_username's. */
  cpuVsUsername: number | null
  nodeCpuPercent: number
  serverCpuUsPerConnect: number | null
  benchCpuPercent: number
  refused: number
  errors: number
  loadAverage: number
  notes: string[]
}

/** A node with `plugin` loaded at start, anonymous clients refused, and `env` added. */
async function startNode (plugin: string, env: Record<string, string>): Promise<RunningBroker> {
  const base = starlingTarget(repoRoot)
  const target: BrokerTarget = {
    name: 'starling',
    unavailable: base.unavailable,
    command: (port, dataDir) => {
      const command = base.command(port, dataDir)
      writeFileSync(path.join(dataDir, 'loaded_plugins'), `{${plugin}, true}.\n`)
      return { ...command, env: { ...command.env, [envName('allow_anonymous')]: 'false', ...env } }
    }
  }
  const why = target.unavailable()
  if (why !== null) throw new Error(why)
  return await startBroker(target, 65_536, repoRoot)
}

/**
 * The plugin decides: the right password is accepted (retried while the plugin loads) and a
 * wrong one refused with 4 (bad user name or password), not 5 (nobody decided).
 */
async function checkPluginDecides (node: RunningBroker, user: Credentials, wrongPassword: string): Promise<void> {
  const deadline = Date.now() + 15_000
  let code: number | null = null
  while (Date.now() < deadline) {
    code = await probeConnect(node.port, user)
    if (code === 0) break
    await sleep(200)
  }
  if (code !== 0) throw new Error(`the right password of ${user.username} got CONNACK ${String(code)}, not 0: did the plugin load?\n${node.output()}`)
  const refused = await probeConnect(node.port, { username: user.username, password: wrongPassword })
  if (refused !== 4) throw new Error(`a wrong password got CONNACK ${String(refused)}, not 4\n${node.output()}`)
}

/** CPU and counters at one instant. */
interface Mark { at: number, nodeTicks: number, serverTicks: number | null, benchUs: number, counts: ConnectCounts }

function mark (node: RunningBroker, serverPid: number | undefined, loop: { snapshot: () => ConnectCounts }): Mark {
  const usage = process.cpuUsage()
  return {
    at: performance.now(),
    nodeTicks: readProcessTree(node.pid).cpuTicks,
    serverTicks: serverPid === undefined ? null : readProcessTree(serverPid).cpuTicks,
    benchUs: usage.user + usage.system,
    counts: loop.snapshot()
  }
}

/** The `p`-th percentile in ms, never above the largest sample (a bucket's middle can be). */
const ms = (h: LatencyHistogram, p: number): number => Math.min(h.percentile(p), h.max) / 1000

/** One backend at one pool size: a fresh node, the CONNECT loop, one row. */
async function measure (backend: Backend, users: Credentials[], pool: number | undefined, runIndex: number): Promise<Row> {
  const label = `${backend.plugin}${pool === undefined ? '' : ` pool ${pool}`}`
  const loadAverage = os.loadavg()[0]
  const node = await startNode(backend.plugin, backend.env(pool))
  try {
    await checkPluginDecides(node, users[0], await backend.wrongPassword(users[0]))
    log(`${label}: node ${node.pid} on port ${node.port} accepts the right password and refuses a wrong one (4); ${opts.clients} clients for ${opts.warmupS} + ${opts.durationS} s`)
    const loop = new ConnectLoop(node.port, opts.clients, users, `r${runIndex}-`)
    loop.start()
    await sleep(opts.warmupS * 1000)
    const first = mark(node, backend.serverPid(), loop)
    loop.resetLatency()
    let last = first
    const ticker = setInterval(() => {
      const now = mark(node, backend.serverPid(), loop)
      const rate = (now.counts.accepted - last.counts.accepted) / ((now.at - last.at) / 1000)
      const cpu = ((now.nodeTicks - last.nodeTicks) / clockTicksPerSecond()) / ((now.at - last.at) / 1000) * 100
      log(`  ${label}: ${fmt(rate, 0)} CONNECT/s, node CPU ${fmt(cpu, 0)}%, p99 so far ${fmt(ms(loop.latency, 99), 2)} ms`)
      last = now
    }, 1000)
    await sleep(opts.durationS * 1000)
    clearInterval(ticker)
    const end = mark(node, backend.serverPid(), loop)
    const p50 = ms(loop.latency, 50)
    const p99 = ms(loop.latency, 99)
    const max = loop.latency.max / 1000
    await loop.stop()
    const seconds = (end.at - first.at) / 1000
    const accepted = end.counts.accepted - first.counts.accepted
    const tickUs = 1e6 / clockTicksPerSecond()
    const notes: string[] = []
    const refused = end.counts.refused - first.counts.refused
    const errors = end.counts.errors - first.counts.errors
    if (refused > 0) notes.push(`refused ${refused} (codes ${JSON.stringify(end.counts.codes)})`)
    if (errors > 0) notes.push(`${errors} connections failed`)
    if (node.exited()) notes.push('node exited')
    const row: Row = {
      backend: backend.plugin,
      pool: pool ?? null,
      rounds: 1,
      connectsPerS: accepted / seconds,
      p50Ms: p50,
      p99Ms: p99,
      maxMs: max,
      nodeCpuUsPerConnect: accepted === 0 ? NaN : (end.nodeTicks - first.nodeTicks) * tickUs / accepted,
      cpuVsUsername: null,
      nodeCpuPercent: (end.nodeTicks - first.nodeTicks) * tickUs / 1e6 / seconds * 100,
      serverCpuUsPerConnect: end.serverTicks === null || first.serverTicks === null || accepted === 0 ? null : (end.serverTicks - first.serverTicks) * tickUs / accepted,
      benchCpuPercent: (end.benchUs - first.benchUs) / 1e6 / seconds * 100,
      refused,
      errors,
      loadAverage,
      notes
    }
    log(`${label}: ${fmt(row.connectsPerS, 0)} CONNECT/s, p50 ${fmt(p50, 2)} ms, p99 ${fmt(p99, 2)} ms, node ${fmt(row.nodeCpuUsPerConnect, 0)} µs CPU/CONNECT`)
    return row
  } finally {
    await node.stop()
  }
}

/** The pair's (and the flood's) numbers over one window. */
interface SlowPhase {
  phase: string
  pairMsgPerS: number
  pairP50Ms: number
  pairP99Ms: number
  nodeCpuPercent: number
  floodConnacksPerS: number | null
  floodP50Ms: number | null
  floodP99Ms: number | null
  floodMaxMs: number | null
  floodCodes: Record<number, number> | null
  floodErrors: number | null
}

/** Slow backend: the pair's stream before and during a CONNECT flood through a slow HTTP service. */
async function slowBackend (users: Credentials[]): Promise<{ phases: SlowPhase[], timeoutMs: number, answeredWithinTimeout: boolean, notes: string[] }> {
  const service = new HttpAuthService()
  const seeded = makeUsers(users.length)
  for (const u of seeded) service.addUser(u.username, u.password, u.salt)
  const pubCred = { username: 'bench-pub', password: 'pub-secret' }
  const subCred = { username: 'bench-sub', password: 'sub-secret' }
  service.addUser(pubCred.username, pubCred.password, 'p')
  service.addUser(subCred.username, subCred.password, 's')
  await service.start()
  const timeoutMs = opts.slowTimeoutS * 1000
  const node = await startNode('svc_auth_http', {
    [envName('auth.http.auth_req.url')]: service.url('/mqtt/auth'),
    [envName('auth.http.acl_req.url')]: service.url('/mqtt/acl'),
    [envName('auth.http.timeout')]: `${opts.slowTimeoutS}s`
  })
  const phases: SlowPhase[] = []
  const notes: string[] = []
  const pair = new PubSubPair(node.port, opts.window)
  let flood: ConnectLoop | null = null
  try {
    await checkPluginDecides(node, seeded[0], 'not-the-password')
    await pair.connect(pubCred, subCred)
    pair.start()
    log(`slow backend: publisher and subscriber connected through svc_auth_http (auth.http.timeout ${opts.slowTimeoutS}s), QoS 1 window ${opts.window}`)
    await sleep(opts.warmupS * 1000)
    const window = async (phase: string): Promise<SlowPhase> => {
      const before = pair.snapshot()
      const floodBefore = flood?.snapshot()
      const ticks = readProcessTree(node.pid).cpuTicks
      const at = performance.now()
      pair.resetLatency()
      flood?.resetLatency()
      const ticker = setInterval(() => log(`  ${phase}: ${fmt(pair.snapshot().delivered - before.delivered, 0)} delivered so far, p99 ${fmt(ms(pair.latency, 99), 2)} ms`), 1000)
      await sleep(opts.durationS * 1000)
      clearInterval(ticker)
      const seconds = (performance.now() - at) / 1000
      const after = pair.snapshot()
      const floodAfter = flood?.snapshot()
      const codes: Record<number, number> = {}
      if (floodBefore !== undefined && floodAfter !== undefined) {
        for (const [code, n] of Object.entries(floodAfter.codes)) {
          const d = n - (floodBefore.codes[Number(code)] ?? 0)
          if (d > 0) codes[Number(code)] = d
        }
      }
      const result: SlowPhase = {
        phase,
        pairMsgPerS: (after.delivered - before.delivered) / seconds,
        pairP50Ms: ms(pair.latency, 50),
        pairP99Ms: ms(pair.latency, 99),
        nodeCpuPercent: (readProcessTree(node.pid).cpuTicks - ticks) / clockTicksPerSecond() / seconds * 100,
        floodConnacksPerS: floodAfter === undefined || floodBefore === undefined ? null : (floodAfter.accepted + floodAfter.refused - floodBefore.accepted - floodBefore.refused) / seconds,
        floodP50Ms: flood === null ? null : ms(flood.latency, 50),
        floodP99Ms: flood === null ? null : ms(flood.latency, 99),
        floodMaxMs: flood === null ? null : flood.latency.max / 1000,
        floodCodes: flood === null ? null : codes,
        floodErrors: floodAfter === undefined || floodBefore === undefined ? null : floodAfter.errors - floodBefore.errors
      }
      log(`${phase}: pair ${fmt(result.pairMsgPerS, 0)} msg/s, p99 ${fmt(result.pairP99Ms, 2)} ms` +
        (flood === null ? '' : `; flood ${fmt(result.floodConnacksPerS, 0)} CONNACK/s, p50 ${fmt(result.floodP50Ms, 0)} ms, max ${fmt(result.floodMaxMs, 0)} ms, codes ${JSON.stringify(codes)}`))
      return result
    }
    phases.push(await window('no CONNECT flood'))
    service.delayMs = opts.slowDelayMs
    flood = new ConnectLoop(node.port, opts.slowClients, seeded, 'slow-')
    flood.start()
    log(`slow backend: the service now answers after ${opts.slowDelayMs} ms; ${opts.slowClients} clients keep connecting`)
    await sleep(opts.slowDelayMs + 500)
    phases.push(await window(`flood, service answers after ${opts.slowDelayMs} ms`))
    service.delayMs = opts.slowerDelayMs
    log(`slow backend: the service now answers after ${opts.slowerDelayMs} ms, past auth.http.timeout ${opts.slowTimeoutS}s`)
    await sleep(opts.slowDelayMs + timeoutMs + 500)
    const slower = await window(`flood, service answers after ${opts.slowerDelayMs} ms (timeout ${opts.slowTimeoutS} s)`)
    phases.push(slower)
    await flood.stop(opts.slowerDelayMs + 1000)
    flood = null
    service.delayMs = 0
    phases.push(await window('flood stopped'))
    // answered within the timeout: the CONNACK (5: nobody decided, allow_anonymous false) comes
    // at the timeout plus scheduling, never at the service's delay
    const answeredWithinTimeout = slower.floodMaxMs !== null && slower.floodMaxMs <= timeoutMs * 1.25 && slower.floodErrors === 0
    if (node.exited()) notes.push('node exited')
    return { phases, timeoutMs, answeredWithinTimeout, notes }
  } finally {
    await (flood as ConnectLoop | null)?.stop(opts.slowerDelayMs + 1000)
    await pair.stop()
    await node.stop()
    await service.stop()
  }
}

/** Median of the finite values (NaN when none). */
function median (values: number[]): number {
  const xs = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (xs.length === 0) return NaN
  const mid = xs.length >> 1
  return xs.length % 2 === 1 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2
}

/** One row per backend and pool size (in first-seen order), each number the median over its runs. */
function summarize (runs: Row[]): Row[] {
  const groups = new Map<string, Row[]>()
  for (const run of runs) {
    const key = `${run.backend}/${String(run.pool)}`
    groups.set(key, [...(groups.get(key) ?? []), run])
  }
  return [...groups.values()].map((group) => {
    const m = (pick: (r: Row) => number | null): number => median(group.map((r) => pick(r) ?? NaN))
    const server = m((r) => r.serverCpuUsPerConnect)
    return {
      backend: group[0].backend,
      pool: group[0].pool,
      rounds: group.length,
      connectsPerS: m((r) => r.connectsPerS),
      p50Ms: m((r) => r.p50Ms),
      p99Ms: m((r) => r.p99Ms),
      maxMs: Math.max(...group.map((r) => r.maxMs)),
      nodeCpuUsPerConnect: m((r) => r.nodeCpuUsPerConnect),
      cpuVsUsername: null,
      nodeCpuPercent: m((r) => r.nodeCpuPercent),
      serverCpuUsPerConnect: Number.isFinite(server) ? server : null,
      benchCpuPercent: m((r) => r.benchCpuPercent),
      refused: group.reduce((n, r) => n + r.refused, 0),
      errors: group.reduce((n, r) => n + r.errors, 0),
      loadAverage: m((r) => r.loadAverage),
      notes: [...new Set(group.flatMap((r) => r.notes))]
    }
  })
}

function renderRows (rows: Row[]): string {
  const table = new Table({
    head: ['backend', 'pool', 'CONNECT/s', 'p50 ms', 'p99 ms', 'node CPU µs/CONNECT', 'vs username', 'node CPU %', 'server CPU µs/CONNECT', 'bench CPU %', 'load', 'notes'],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    style: { head: [], border: [], compact: true }
  })
  for (const r of rows) {
    table.push([r.backend, r.pool === null ? '-' : String(r.pool), fmt(r.connectsPerS, 0), fmt(r.p50Ms, 2), fmt(r.p99Ms, 2),
      fmt(r.nodeCpuUsPerConnect, 0), r.cpuVsUsername === null ? '-' : `${fmt(r.cpuVsUsername, 2)}x`, fmt(r.nodeCpuPercent, 0),
      fmt(r.serverCpuUsPerConnect, 0), fmt(r.benchCpuPercent, 0), fmt(r.loadAverage, 1), r.notes.join('; ')])
  }
  return table.toString()
}

function renderSlow (phases: SlowPhase[]): string {
  const table = new Table({
    head: ['phase', 'pair msg/s', 'pair p50 ms', 'pair p99 ms', 'node CPU %', 'flood CONNACK/s', 'CONNACK p50 ms', 'p99 ms', 'max ms', 'CONNACK codes'],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    style: { head: [], border: [], compact: true }
  })
  for (const p of phases) {
    table.push([p.phase, fmt(p.pairMsgPerS, 0), fmt(p.pairP50Ms, 2), fmt(p.pairP99Ms, 2), fmt(p.nodeCpuPercent, 0),
      fmt(p.floodConnacksPerS, 0), fmt(p.floodP50Ms, 0), fmt(p.floodP99Ms, 0), fmt(p.floodMaxMs, 0),
      p.floodCodes === null ? '-' : Object.entries(p.floodCodes).map(([c, n]) => `${c}: ${n}`).join(', ') + (p.floodErrors ? `; ${p.floodErrors} failed` : '')])
  }
  return table.toString()
}

async function main (): Promise<void> {
  const started = new Date()
  const offered = new Set(['svc_auth_username', ...AUTH_BACKEND_PLUGINS.map((p) => p.name)])
  log(`${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}, Node ${process.version}; ` +
    `${opts.users} users, ${opts.clients} clients, ${opts.warmupS} s warm-up + ${opts.durationS} s per run`)
  const users = makeUsers(opts.users)
  const service = new HttpAuthService()
  const runs: Row[] = []
  const missing: Array<{ backend: string, why: string }> = []
  const active: Array<{ backend: Backend, credentials: Credentials[] }> = []
  let runIndex = 0
  try {
    for (const name of opts.backends) {
      if (!offered.has(name)) {
        missing.push({ backend: name, why: 'not in this build of the node (plugin not committed / not built yet)' })
        log(`skipping ${name}: not in this build of the node`)
        continue
      }
      const backend = backendFor(name, repoRoot, service)
      const why = backend.missing()
      if (why !== undefined) {
        missing.push({ backend: name, why })
        log(`skipping ${name}: ${why}`)
        continue
      }
      log(`${name}: starting ${backend.server} and seeding ${opts.users} users`)
      const began = Date.now()
      try {
        active.push({ backend, credentials: await backend.start(users) })
        log(`${name}: ready in ${((Date.now() - began) / 1000).toFixed(1)} s`)
      } catch (err) {
        missing.push({ backend: name, why: `server did not start: ${(err as Error).message.split('\n')[0]}` })
        log(`skipping ${name}: ${(err as Error).message}`)
        await backend.stop().catch(() => {})
      }
    }
    // every server stays up; each round runs every backend and pool size once, so drift of
    // the shared machine hits them alike
    for (let round = 1; round <= opts.rounds; round++) {
      log(`round ${round} of ${opts.rounds}`)
      for (const { backend, credentials } of active) {
        for (const pool of backend.poolKey === undefined ? [undefined] : opts.pools) {
          try {
            runs.push(await measure(backend, credentials, pool, runIndex++))
          } catch (err) {
            missing.push({ backend: `${backend.plugin}${pool === undefined ? '' : ` pool ${pool}`} (round ${round})`, why: (err as Error).message.split('\n')[0] })
            log(`${backend.plugin}: run failed: ${(err as Error).message}`)
          }
        }
      }
    }
  } finally {
    for (const { backend } of active) await backend.stop().catch(() => {})
  }
  const rows = summarize(runs)
  const reference = rows.find((r) => r.backend === 'svc_auth_username')
  for (const r of rows) {
    if (reference !== undefined && r !== reference) r.cpuVsUsername = r.nodeCpuUsPerConnect / reference.nodeCpuUsPerConnect
  }
  let slow: Awaited<ReturnType<typeof slowBackend>> | null = null
  if (opts.slow) {
    if (offered.has('svc_auth_http')) {
      try {
        slow = await slowBackend(users)
      } catch (err) {
        log(`slow backend part failed: ${(err as Error).message}`)
      }
    } else {
      missing.push({ backend: 'slow backend part', why: 'svc_auth_http is not in this build' })
    }
  }

  console.log(`\nCONNECT → CONNACK → DISCONNECT, ${opts.clients} clients, ${opts.users} users, ${opts.durationS} s window, medians of ${opts.rounds} round(s) (${started.toISOString()})`)
  console.log(renderRows(rows))
  if (slow !== null) {
    const [base, during] = slow.phases
    console.log(`\nSlow HTTP backend: a QoS 1 publisher/subscriber pair (window ${opts.window}) while ${opts.slowClients} clients connect through it`)
    console.log(renderSlow(slow.phases))
    console.log(`pair during the ${opts.slowDelayMs} ms flood / before: msg/s ${fmt(during.pairMsgPerS / base.pairMsgPerS, 2)}x, p99 ${fmt(during.pairP99Ms / base.pairP99Ms, 2)}x`)
    console.log(`CONNECTs answered within auth.http.timeout (${opts.slowTimeoutS} s) when the service takes ${opts.slowerDelayMs} ms: ${slow.answeredWithinTimeout ? 'yes' : 'NO'} (max ${fmt(slow.phases[2].floodMaxMs, 0)} ms)`)
  }
  for (const m of missing) console.log(`not measured: ${m.backend}: ${m.why}`)

  const file = cli.json ?? path.join(repoRoot, 'bench', 'results', `auth-${started.toISOString().slice(0, 10)}.json`)
  mkdirSync(path.dirname(file), { recursive: true })
  writeFileSync(file, JSON.stringify({
    bench: 'auth',
    started: started.toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadAverageAtEnd: os.loadavg(), node: process.version },
    options: opts,
    rows,
    runs,
    slow,
    missing
  }, null, 2))
  console.log(`wrote ${file}`)
}

main().then(() => process.exit(0), (err) => {
  console.error(err)
  process.exit(1)
})
