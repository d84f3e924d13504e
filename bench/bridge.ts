/**
 * `npm run bench:bridge`: a bridge's throughput to a remote ("cloud") Mosquitto, end to end,
 * for Starling's svc_bridge_mqtt (memory buffer, disk buffer) and Mosquitto's own bridge, in
 * the same run, round by round (issue 15). Per round and bridge, on fresh brokers:
 * 1. streams: publishers on the local broker send 100-byte messages on `bench/...` (forwarded);
 *    a subscriber on the remote counts arrivals and the end-to-end latency:
 *    - `qos1`, `qos0`: as fast as the pipeline goes, with a fixed number of messages in flight
 *      end to end (published, not yet arrived), so no buffer grows and the rate is the
 *      bridge's capacity on this machine;
 *    - `qos1-paced`: QoS 1 at a fixed rate the bridges all sustain: latency without queueing;
 * 2. buffer: the remote stopped, QoS 1 publishers (each message acknowledged once buffered:
 *    after fsync with the disk buffer) for a while: what the buffer absorbs (msg/s, MB/s
 *    written); then the remote started again: how fast the buffer drains to it.
 * Prints medians over rounds and writes a JSON report (bench/results/bridge-<date>.json).
 * See docs/performance.md, "Bridges".
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Table from 'cli-table3'
import { Command } from 'commander'
import { startBroker, type RunningBroker } from './broker-process.js'
import { BridgeBenchClient } from './bridge-client.js'
import { bridgeCases, directoryBytes, FORWARDED, RemoteMosquitto, type BridgeCase } from './bridge-brokers.js'
import { LatencyHistogram } from './latency-histogram.js'
import { clockTicksPerSecond, readProcessTree } from './proc-stats.js'
import { median } from './report.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/bridge.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')

const STREAMS = ['qos1', 'qos0', 'qos1-paced'] as const
type StreamName = typeof STREAMS[number]

const program = new Command('bench:bridge')
  .description('Messages per second through a bridge to a remote Mosquitto: Starling (memory and disk buffer) against Mosquitto\'s bridge, and the disk buffer\'s write and drain rates.')
  .option('--rounds <n>', 'rounds; the tables show medians', '3')
  .option('--bridges <list>', 'starling-mem,starling-disk,mosquitto', 'starling-mem,starling-disk,mosquitto')
  .option('--only <list>', `parts: ${[...STREAMS, 'buffer'].join(',')}`, [...STREAMS, 'buffer'].join(','))
  .option('--duration <s>', 'measured window of each stream, seconds', '10')
  .option('--warmup <s>', 'stream before the window opens, seconds', '2')
  .option('--publishers <n>', 'publishers on the local broker (topics bench/<stream>/<i>)', '4')
  .option('--payload <bytes>', 'payload size', '100')
  .option('--window <n>', 'qos1/qos0: messages in flight end to end (published, not yet arrived)', '2000')
  .option('--pub-window <n>', 'QoS 1: unacknowledged PUBLISHes per publisher', '256')
  .option('--paced-rate <msg/s>', 'qos1-paced: total publish rate', '2000')
  .option('--absorb <s>', 'buffer: seconds of publishing with the remote stopped', '10')
  .option('--starling-key <key=value>', 'another key of the Starling bridge, e.g. max_inflight_batches=256 (repeatable)',
    (value: string, previous: string[]) => previous.concat([value]), [] as string[])
  .option('--json <file>', 'where to write the JSON report (default bench/results/bridge-<date>.json)')

interface CliOptions {
  rounds: string
  bridges: string
  only: string
  duration: string
  warmup: string
  publishers: string
  payload: string
  window: string
  pubWindow: string
  pacedRate: string
  absorb: string
  starlingKey: string[]
  json?: string
}

interface Options {
  durationMs: number
  warmupMs: number
  publishers: number
  payload: number
  window: number
  pubWindow: number
  pacedRate: number
  absorbMs: number
}

/** One stream of one round. */
interface StreamResult {
  stream: StreamName
  bridge: string
  round: number
  deliveredPerS: number
  publishedPerS: number
  p50Ms: number | null
  p99Ms: number | null
  /** Local broker CPU (user+sys) per delivered message, µs. */
  cpuUsPerMsg: number | null
  localCpuPercent: number
  remoteCpuPercent: number
  benchCpuPercent: number
  localRssMb: number
  /** QoS 1: messages published and never delivered (after the drain wait). */
  lost: number
  /** Messages delivered more than once (received beyond sent). */
  extra: number
  /** The machine's 1-minute load average at the end of the window (other work shows here). */
  load1: number
}

/** The buffer part of one round. */
interface BufferResult {
  bridge: string
  round: number
  /** QoS 1 messages acknowledged to the publishers per second with the remote stopped. */
  absorbedPerS: number
  /** Bytes added to the disk buffer's directory per second, MB/s (disk buffer only). */
  diskMbPerS: number | null
  /** Messages buffered when the remote came back. */
  buffered: number
  /** Disk buffer size then, MB. */
  diskMb: number | null
  cpuUsPerMsg: number | null
  localRssMb: number
  /** From the first to the last arrival after the restart. */
  drainPerS: number
  /** Remote started → first message arrived, s (reconnect + session restore). */
  firstAfterS: number
  /** Remote started → last buffered message arrived, s. */
  emptyAfterS: number
  lost: number
  load1: number
}

function positive (name: string, value: string): number {
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${value}'`)
  return n
}

const log = (line: string): void => { console.log(line) }
const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/** Waits until `check` holds (polled every 10 ms); false at the timeout. */
async function until (check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs
  while (!check()) {
    if (performance.now() > deadline) return false
    await sleep(10)
  }
  return true
}

/** CPU readings of the local broker, the remote and this process. */
class CpuMeter {
  private readonly t0 = performance.now()
  private readonly local: number
  private readonly remote: number
  private readonly bench = process.cpuUsage()
  constructor (private readonly localPid: number, private readonly remotePid: number) {
    this.local = readProcessTree(localPid).cpuTicks
    this.remote = remotePid === 0 ? 0 : readProcessTree(remotePid).cpuTicks
  }

  /** Seconds since the meter started, and each process's CPU seconds over them. */
  read (): { seconds: number, localS: number, remoteS: number, benchS: number, localRssMb: number } {
    const ticks = clockTicksPerSecond()
    const local = readProcessTree(this.localPid)
    const remote = this.remotePid === 0 ? 0 : readProcessTree(this.remotePid).cpuTicks
    const bench = process.cpuUsage(this.bench)
    return {
      seconds: (performance.now() - this.t0) / 1000,
      localS: (local.cpuTicks - this.local) / ticks,
      remoteS: (remote - this.remote) / ticks,
      benchS: (bench.user + bench.system) / 1e6,
      localRssMb: local.rssKb / 1024
    }
  }
}

/**
 * Publishers on the local broker. `window` bounds the messages in flight end to end (sent and
 * not yet arrived at `sub`; Infinity: only the per-publisher QoS 1 window), or `rate` paces them.
 */
class Publishers {
  readonly clients: BridgeBenchClient[] = []
  private timer: NodeJS.Timeout | null = null
  private scheduled = false
  private started = 0
  private next = 0
  /** Rate mode: messages due so far that were not sent (window full or socket backed up). */
  skipped = 0

  constructor (private readonly opts: { qos: 0 | 1, window: number, rate: number, pubWindow: number, sub: BridgeBenchClient | null, baseline: number }) {}

  static async connect (port: number, stream: string, count: number, qos: 0 | 1, payload: number,
    opts: { window: number, rate: number, pubWindow: number, sub: BridgeBenchClient | null }): Promise<Publishers> {
    const pubs = new Publishers({ qos, ...opts, baseline: opts.sub?.received ?? 0 })
    for (let i = 0; i < count; i++) {
      const client = new BridgeBenchClient('127.0.0.1', port)
      await client.connect(`bench-${stream}-${i}-${process.pid}`, true)
      client.preparePublisher(`bench/${stream}/${i}`, qos, payload)
      client.onActivity = () => pubs.schedule()
      pubs.clients.push(client)
    }
    if (opts.sub !== null) opts.sub.onActivity = () => pubs.schedule()
    return pubs
  }

  get sent (): number {
    return this.clients.reduce((n, c) => n + c.sent, 0)
  }

  get acked (): number {
    return this.clients.reduce((n, c) => n + c.acked, 0)
  }

  get inflight (): number {
    return this.clients.reduce((n, c) => n + c.inflight, 0)
  }

  start (): void {
    this.started = performance.now()
    this.timer = setInterval(() => this.pump(), 2)
    this.pump()
  }

  stop (): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    if (this.opts.sub !== null) this.opts.sub.onActivity = null
  }

  async close (): Promise<void> {
    this.stop()
    await Promise.all(this.clients.map(async (c) => await c.close()))
  }

  private schedule (): void {
    if (this.scheduled || this.timer === null) return
    this.scheduled = true
    setImmediate(() => { this.scheduled = false; this.pump() })
  }

  private pump (): void {
    if (this.timer === null) return
    const { rate, window, pubWindow, sub } = this.opts
    let budget: number
    if (rate > 0) {
      const due = Math.floor(rate * (performance.now() - this.started) / 1000)
      budget = due - this.sent - this.skipped
    } else {
      const arrived = sub === null ? 0 : sub.received - this.opts.baseline
      budget = window - (this.sent - arrived)
    }
    let progress = true
    while (budget > 0 && progress) {
      progress = false
      for (let k = 0; k < this.clients.length && budget > 0; k++) {
        const client = this.clients[this.next]
        this.next = (this.next + 1) % this.clients.length
        if (client.backedUp) continue
        const n = client.publish(Math.min(budget, 64), pubWindow)
        budget -= n
        if (n > 0) progress = true
      }
    }
    // a paced publisher that could not keep up does not burst later
    if (rate > 0 && budget > 0) this.skipped += budget
  }
}

/** The brokers of one round of one bridge, and the remote subscriber. */
interface Rig {
  bridge: BridgeCase
  remote: RemoteMosquitto
  local: RunningBroker
  /** The disk buffer's directory, or null. */
  bufferDir: string | null
  sub: BridgeBenchClient
  histogram: LatencyHistogram
}

const SUB_ID = 'bench-remote-sub'

async function connectSubscriber (remote: RemoteMosquitto, histogram: LatencyHistogram): Promise<BridgeBenchClient> {
  const sub = new BridgeBenchClient('127.0.0.1', remote.port, histogram)
  // a persistent session: it keeps the subscription and the queued messages across a remote restart
  await sub.connect(SUB_ID, false)
  await sub.subscribe(FORWARDED, 1)
  return sub
}

async function startRig (bridge: BridgeCase): Promise<Rig> {
  const remote = await RemoteMosquitto.start()
  let dataDir = ''
  const target = bridge.target(remote.port)
  const command = target.command
  target.command = (port, dir) => { dataDir = dir; return command(port, dir) }
  let local: RunningBroker
  try {
    local = await startBroker(target, 4096, repoRoot)
  } catch (err) {
    await remote.destroy()
    throw err
  }
  const histogram = new LatencyHistogram()
  const sub = await connectSubscriber(remote, histogram)
  // the bridge is up once a message published locally arrives at the remote
  const probe = new BridgeBenchClient('127.0.0.1', local.port)
  await probe.connect(`bench-probe-${process.pid}`, true)
  probe.preparePublisher('bench/probe', 1, 100)
  const began = performance.now()
  while (sub.received === 0) {
    if (performance.now() - began > 30_000) throw new Error(`${bridge.name}: no message crossed the bridge within 30 s\n${local.output()}`)
    probe.publish(1, 1000)
    await until(() => sub.received > 0, 200)
  }
  await probe.close()
  await quiet(sub, 300)
  sub.resetCounts()
  return { bridge, remote, local, bufferDir: bridge.bufferDir === null ? null : bridge.bufferDir(dataDir), sub, histogram }
}

/** Waits until `sub` has received nothing for `ms`. */
async function quiet (sub: BridgeBenchClient, ms: number): Promise<void> {
  let last = -1
  while (sub.received !== last) {
    last = sub.received
    await sleep(ms)
  }
}

async function stopRig (rig: Rig): Promise<void> {
  await rig.sub.close()
  await rig.local.stop()
  await rig.remote.destroy()
}

async function runStream (rig: Rig, stream: StreamName, round: number, opts: Options): Promise<StreamResult> {
  const { sub, histogram, local, remote } = rig
  const qos = stream === 'qos0' ? 0 : 1
  await quiet(sub, 200)
  sub.resetCounts()
  const pubs = await Publishers.connect(local.port, stream, opts.publishers, qos, opts.payload, {
    window: opts.window, rate: stream === 'qos1-paced' ? opts.pacedRate : 0, pubWindow: opts.pubWindow, sub
  })
  pubs.start()
  await sleep(opts.warmupMs)
  histogram.reset()
  sub.recording = true
  const received0 = sub.received
  const sent0 = pubs.sent
  const cpu = new CpuMeter(local.pid, remote.pid)
  await sleep(opts.durationMs)
  const used = cpu.read()
  const delivered = sub.received - received0
  const published = pubs.sent - sent0
  sub.recording = false
  pubs.stop()
  // whatever is still on its way arrives before the next stream starts (QoS 1: all of it)
  const sent = pubs.sent
  if (qos === 1) await until(() => sub.received >= sent, 60_000)
  else await until(() => sub.received >= sent, 5000)
  await quiet(sub, 300)
  await pubs.close()
  return {
    stream,
    bridge: rig.bridge.name,
    round,
    deliveredPerS: delivered / used.seconds,
    publishedPerS: published / used.seconds,
    p50Ms: histogram.total === 0 ? null : histogram.percentile(50) / 1000,
    p99Ms: histogram.total === 0 ? null : histogram.percentile(99) / 1000,
    cpuUsPerMsg: delivered === 0 ? null : used.localS * 1e6 / delivered,
    localCpuPercent: 100 * used.localS / used.seconds,
    remoteCpuPercent: 100 * used.remoteS / used.seconds,
    benchCpuPercent: 100 * used.benchS / used.seconds,
    localRssMb: used.localRssMb,
    lost: Math.max(0, sent - sub.received),
    extra: Math.max(0, sub.received - sent),
    load1: os.loadavg()[0]
  }
}

async function runBuffer (rig: Rig, round: number, opts: Options): Promise<BufferResult> {
  const { local, remote } = rig
  await quiet(rig.sub, 200)
  await rig.sub.close()
  await remote.stop()
  const pubs = await Publishers.connect(local.port, 'buffer', opts.publishers, 1, opts.payload, {
    window: Infinity, rate: 0, pubWindow: opts.pubWindow, sub: null
  })
  pubs.start()
  // the first second is warm-up: segment files created, the bridge's first reconnect attempts
  const warm = Math.min(1000, opts.absorbMs / 5)
  await sleep(warm)
  const acked0 = pubs.acked
  const bytes0 = rig.bufferDir === null ? 0 : directoryBytes(rig.bufferDir)
  const cpu = new CpuMeter(local.pid, 0)
  await sleep(opts.absorbMs - warm)
  const used = cpu.read()
  const absorbed = pubs.acked - acked0
  const bytes1 = rig.bufferDir === null ? 0 : directoryBytes(rig.bufferDir)
  pubs.stop()
  await until(() => pubs.inflight === 0, 30_000)
  const buffered = pubs.acked
  const diskBytes = rig.bufferDir === null ? 0 : directoryBytes(rig.bufferDir)
  log(`    remote stopped: ${buffered} messages acknowledged and buffered (${Math.round(absorbed / used.seconds)} msg/s` +
    `${rig.bufferDir === null ? '' : `, ${(diskBytes / 1e6).toFixed(1)} MB on disk`}); starting the remote again`)
  const restarted = performance.now()
  await remote.restart()
  const sub = await connectSubscriber(remote, rig.histogram)
  rig.sub = sub
  // the persistent session's queue and the bridge's buffer: every acknowledged message arrives,
  // or nothing more comes for 5 s (a broker that dropped some)
  await until(() => sub.received >= buffered ||
    (sub.firstArrival === 0 ? performance.now() - restarted > 30_000 : performance.now() - sub.lastArrival > 5000), 600_000)
  const done = sub.received >= buffered
  await quiet(sub, 300)
  await pubs.close()
  const firstAfterS = sub.firstArrival === 0 ? NaN : (sub.firstArrival - restarted) / 1000
  const drainS = (sub.lastArrival - sub.firstArrival) / 1000
  if (!done) log(`    WARNING: only ${sub.received} of ${buffered} acknowledged messages arrived`)
  return {
    bridge: rig.bridge.name,
    round,
    absorbedPerS: absorbed / used.seconds,
    diskMbPerS: rig.bufferDir === null ? null : (bytes1 - bytes0) / 1e6 / used.seconds,
    buffered,
    diskMb: rig.bufferDir === null ? null : diskBytes / 1e6,
    cpuUsPerMsg: absorbed === 0 ? null : used.localS * 1e6 / absorbed,
    localRssMb: used.localRssMb,
    drainPerS: drainS > 0 ? sub.received / drainS : NaN,
    firstAfterS,
    emptyAfterS: (sub.lastArrival - restarted) / 1000,
    lost: Math.max(0, buffered - sub.received),
    load1: os.loadavg()[0]
  }
}

function fmt (value: number | null | undefined, digits: number): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '-'
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

function describeStream (r: StreamResult): string {
  return `${fmt(r.deliveredPerS, 0)} msg/s delivered (published ${fmt(r.publishedPerS, 0)}/s), p50/p99 ${fmt(r.p50Ms, 2)}/${fmt(r.p99Ms, 2)} ms, ` +
    `local ${fmt(r.cpuUsPerMsg, 1)} µs CPU/msg (${fmt(r.localCpuPercent, 0)}%), remote ${fmt(r.remoteCpuPercent, 0)}%, bench ${fmt(r.benchCpuPercent, 0)}%, ` +
    `RSS ${fmt(r.localRssMb, 0)} MiB, load ${fmt(r.load1, 1)}${r.lost > 0 ? `, LOST ${r.lost}` : ''}${r.extra > 0 ? `, ${r.extra} extra` : ''}`
}

function describeBuffer (r: BufferResult): string {
  return `absorbed ${fmt(r.absorbedPerS, 0)} msg/s${r.diskMbPerS === null ? '' : ` (${fmt(r.diskMbPerS, 1)} MB/s to disk)`}, ` +
    `${fmt(r.cpuUsPerMsg, 1)} µs CPU/msg; drained ${r.buffered} at ${fmt(r.drainPerS, 0)} msg/s, first after ${fmt(r.firstAfterS, 2)} s, ` +
    `empty after ${fmt(r.emptyAfterS, 1)} s, load ${fmt(r.load1, 1)}${r.lost > 0 ? `, LOST ${r.lost}` : ''}`
}

interface StreamRow {
  stream: StreamName
  bridge: string
  rounds: number
  deliveredPerS: number | null
  publishedPerS: number | null
  p50Ms: number | null
  p99Ms: number | null
  cpuUsPerMsg: number | null
  vsMosquitto: number | null
  localCpuPercent: number | null
  remoteCpuPercent: number | null
  benchCpuPercent: number | null
  localRssMb: number | null
  lost: number
  extra: number
}

function summarizeStreams (runs: StreamResult[]): StreamRow[] {
  const rows: StreamRow[] = []
  for (const stream of STREAMS) {
    for (const bridge of [...new Set(runs.map((r) => r.bridge))]) {
      const group = runs.filter((r) => r.stream === stream && r.bridge === bridge)
      if (group.length === 0) continue
      const m = (pick: (r: StreamResult) => number | null): number | null => median(group.map(pick))
      rows.push({
        stream,
        bridge,
        rounds: group.length,
        deliveredPerS: m((r) => r.deliveredPerS),
        publishedPerS: m((r) => r.publishedPerS),
        p50Ms: m((r) => r.p50Ms),
        p99Ms: m((r) => r.p99Ms),
        cpuUsPerMsg: m((r) => r.cpuUsPerMsg),
        vsMosquitto: null,
        localCpuPercent: m((r) => r.localCpuPercent),
        remoteCpuPercent: m((r) => r.remoteCpuPercent),
        benchCpuPercent: m((r) => r.benchCpuPercent),
        localRssMb: m((r) => r.localRssMb),
        lost: group.reduce((n, r) => n + r.lost, 0),
        extra: group.reduce((n, r) => n + r.extra, 0)
      })
    }
  }
  for (const row of rows) {
    const base = rows.find((r) => r.stream === row.stream && r.bridge === 'mosquitto')
    if (base === undefined || base === row || row.cpuUsPerMsg === null || base.cpuUsPerMsg === null) continue
    row.vsMosquitto = row.cpuUsPerMsg / base.cpuUsPerMsg
  }
  return rows
}

function renderStreams (rows: StreamRow[]): string {
  const table = new Table({
    head: ['stream', 'bridge', 'delivered msg/s', 'p50 ms', 'p99 ms', 'local CPU µs/msg', 'vs mosq', 'local CPU %', 'remote CPU %', 'bench CPU %', 'local RSS MiB', 'notes'],
    colAligns: ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    style: { head: [], border: [], compact: true }
  })
  for (const r of rows) {
    const notes: string[] = []
    if (r.lost > 0) notes.push(`${r.lost} lost`)
    if (r.extra > 0) notes.push(`${r.extra} twice`)
    table.push([r.stream, r.bridge, fmt(r.deliveredPerS, 0), fmt(r.p50Ms, 2), fmt(r.p99Ms, 2), fmt(r.cpuUsPerMsg, 1),
      r.vsMosquitto === null ? '-' : `${fmt(r.vsMosquitto, 2)}x`, fmt(r.localCpuPercent, 0), fmt(r.remoteCpuPercent, 0),
      fmt(r.benchCpuPercent, 0), fmt(r.localRssMb, 0), notes.join('; ')])
  }
  return table.toString()
}

interface BufferRow {
  bridge: string
  rounds: number
  absorbedPerS: number | null
  diskMbPerS: number | null
  buffered: number | null
  diskMb: number | null
  cpuUsPerMsg: number | null
  drainPerS: number | null
  firstAfterS: number | null
  emptyAfterS: number | null
  lost: number
}

function summarizeBuffer (runs: BufferResult[]): BufferRow[] {
  return [...new Set(runs.map((r) => r.bridge))].map((bridge) => {
    const group = runs.filter((r) => r.bridge === bridge)
    const m = (pick: (r: BufferResult) => number | null): number | null => median(group.map(pick))
    return {
      bridge,
      rounds: group.length,
      absorbedPerS: m((r) => r.absorbedPerS),
      diskMbPerS: m((r) => r.diskMbPerS),
      buffered: m((r) => r.buffered),
      diskMb: m((r) => r.diskMb),
      cpuUsPerMsg: m((r) => r.cpuUsPerMsg),
      drainPerS: m((r) => r.drainPerS),
      firstAfterS: m((r) => r.firstAfterS),
      emptyAfterS: m((r) => r.emptyAfterS),
      lost: group.reduce((n, r) => n + r.lost, 0)
    }
  })
}

function renderBuffer (rows: BufferRow[]): string {
  const table = new Table({
    head: ['bridge', 'absorbed msg/s', 'disk MB/s', 'buffered msgs', 'disk MB', 'local CPU µs/msg', 'drain msg/s', 'first after s', 'empty after s', 'lost'],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    style: { head: [], border: [], compact: true }
  })
  for (const r of rows) {
    table.push([r.bridge, fmt(r.absorbedPerS, 0), fmt(r.diskMbPerS, 1), fmt(r.buffered, 0), fmt(r.diskMb, 1), fmt(r.cpuUsPerMsg, 1),
      fmt(r.drainPerS, 0), fmt(r.firstAfterS, 2), fmt(r.emptyAfterS, 1), String(r.lost)])
  }
  return table.toString()
}

async function main (): Promise<void> {
  const cli = program.parse().opts<CliOptions>()
  const opts: Options = {
    durationMs: positive('duration', cli.duration) * 1000,
    warmupMs: Number(cli.warmup) * 1000,
    publishers: Math.round(positive('publishers', cli.publishers)),
    payload: Math.max(8, Math.round(positive('payload', cli.payload))),
    window: Math.round(positive('window', cli.window)),
    pubWindow: Math.min(60_000, Math.round(positive('pub-window', cli.pubWindow))),
    pacedRate: positive('paced-rate', cli.pacedRate),
    absorbMs: positive('absorb', cli.absorb) * 1000
  }
  const rounds = Math.round(positive('rounds', cli.rounds))
  const parts = cli.only.split(',').map((s) => s.trim()).filter((s) => s !== '')
  for (const part of parts) {
    if (!(STREAMS as readonly string[]).includes(part) && part !== 'buffer') throw new Error(`unknown part '${part}'; choose from ${[...STREAMS, 'buffer'].join(', ')}`)
  }
  const streams = STREAMS.filter((s) => parts.includes(s))
  const starlingKeys: Record<string, string> = {}
  for (const spec of cli.starlingKey) {
    const eq = spec.indexOf('=')
    if (eq <= 0) throw new Error(`--starling-key expects key=value, got '${spec}'`)
    starlingKeys[spec.slice(0, eq)] = spec.slice(eq + 1)
  }
  const all = bridgeCases(repoRoot, starlingKeys)
  const wanted = cli.bridges.split(',').map((s) => s.trim()).filter((s) => s !== '')
  const bridges: BridgeCase[] = []
  for (const name of wanted) {
    const found = all.find((b) => b.name === name)
    if (found === undefined) throw new Error(`unknown bridge '${name}'; choose from ${all.map((b) => b.name).join(', ')}`)
    const reason = found.target(1).unavailable()
    if (reason !== null) log(`skipping ${name}: ${reason}`)
    else bridges.push(found)
  }
  if (bridges.length === 0) throw new Error('no bridge to run')

  const started = new Date()
  log(`bench:bridge: ${bridges.map((b) => b.name).join(', ')} x ${rounds} rounds; streams ${streams.join(', ') || 'none'}` +
    `${parts.includes('buffer') ? ' + buffer' : ''}; ${opts.durationMs / 1000} s windows + ${opts.warmupMs / 1000} s warm-up, ` +
    `${opts.publishers} publishers, ${opts.payload}-byte payloads, ${opts.window} in flight end to end, paced ${opts.pacedRate} msg/s; ` +
    `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), node ${process.version}`)
  for (const b of bridges) log(`  ${b.name}: ${b.describe}`)
  if (Object.keys(starlingKeys).length > 0) log(`  Starling bridge keys added: ${JSON.stringify(starlingKeys)}`)
  const streamRuns: StreamResult[] = []
  const bufferRuns: BufferResult[] = []
  for (let round = 1; round <= rounds; round++) {
    // bridges alternate within each round, so drift in the machine hits them alike
    for (const bridge of bridges) {
      log(`[round ${round}/${rounds}] ${bridge.name}: starting the remote Mosquitto and the local broker ...`)
      let rig: Rig
      try {
        rig = await startRig(bridge)
      } catch (err) {
        log(`    FAILED: ${(err as Error).message}`)
        continue
      }
      try {
        for (const stream of streams) {
          log(`[round ${round}/${rounds}] ${bridge.name} ${stream} ...`)
          const result = await runStream(rig, stream, round, opts)
          streamRuns.push(result)
          log(`    ${describeStream(result)}`)
        }
        if (parts.includes('buffer')) {
          log(`[round ${round}/${rounds}] ${bridge.name} buffer: remote stopped for ${opts.absorbMs / 1000} s of QoS 1 ...`)
          const result = await runBuffer(rig, round, opts)
          bufferRuns.push(result)
          log(`    ${describeBuffer(result)}`)
        }
      } catch (err) {
        log(`    FAILED: ${(err as Error).message}`)
      } finally {
        await stopRig(rig)
      }
    }
  }
  const streamRows = summarizeStreams(streamRuns)
  const bufferRows = summarizeBuffer(bufferRuns)
  if (streamRows.length > 0) {
    log('\nStreams through the bridge, medians over rounds (local CPU = the bridging broker\'s user+sys per delivered message; vs mosq = over Mosquitto\'s bridge):')
    log(renderStreams(streamRows))
  }
  if (bufferRows.length > 0) {
    log(`\nBuffer with the remote stopped (QoS 1, ${opts.absorbMs / 1000} s), then drained to it, medians over rounds:`)
    log(renderBuffer(bufferRows))
  }
  const file = cli.json ?? path.join(repoRoot, 'bench', 'results', `bridge-${started.toISOString().slice(0, 10)}.json`)
  mkdirSync(path.dirname(file), { recursive: true })
  writeFileSync(file, JSON.stringify({
    date: started.toISOString(),
    host: { cores: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
    options: opts,
    starlingKeys,
    rounds,
    bridges: bridges.map((b) => ({ name: b.name, describe: b.describe })),
    streams: { runs: streamRuns, summary: streamRows },
    buffer: { runs: bufferRuns, summary: bufferRows }
  }, null, 2))
  log(`wrote ${file}`)
}

process.on('SIGINT', () => process.exit(130))
process.on('SIGTERM', () => process.exit(143))
main().then(() => process.exit(0), (err: Error) => {
  console.error(`bench:bridge: ${err.message}`)
  process.exit(1)
})
