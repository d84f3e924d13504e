/**
 * Runs one scenario once against one broker: start the broker, connect the load, open
 * the measured window between two readings of the broker's CPU time and the
 * subscribers' counters, then tear everything down.
 */
import { startBroker, type BrokerTarget, type RunningBroker } from './broker-process.js'
import { LoadClient } from './load-client.js'
import { LoadGenerator, type LoadCounters } from './load-generator.js'
import { LatencyHistogram } from './latency-histogram.js'
import { clockTicksPerSecond, isAlive, readProcessTree, type ProcessTreeStats } from './proc-stats.js'
import type { BenchOptions, Scenario } from './scenarios.js'

/** What one run measured. Rates are per second of the measured window. */
export interface RunResult {
  scenario: string
  broker: string
  round: number
  /** Measured window, seconds. */
  windowS: number
  /** PUBLISH packets the generator wrote, per second. */
  sentPerS: number
  /** PUBLISH packets subscribers received, per second (the throughput). */
  deliveredPerS: number
  /** Deliveries expected from what was sent (sent × matching subscribers), per second. */
  expectedPerS: number
  /** Broker CPU time (user + sys) per delivered message, µs; null when nothing was delivered. */
  cpuUsPerMsg: number | null
  /** Broker CPU over the window, % of one core. */
  cpuPercent: number
  /** Broker RSS at the end of the window, MiB. */
  rssMb: number
  /** Highest broker RSS sampled during the run, MiB. */
  peakRssMb: number
  /** End-to-end latency percentiles over the window, ms (null when nothing was delivered). */
  p50Ms: number | null
  p99Ms: number | null
  p999Ms: number | null
  /** Generator CPU over the window, % of one core (all its threads). */
  generatorCpuPercent: number
  /** Connections the broker closed on us. */
  dropped: number
  /** idle: RSS growth per connection, KiB, and broker CPU per connection set-up, µs. */
  kbPerConn?: number
  cpuUsPerConn?: number
  /** flood: broker alive after the window and the abrupt disconnect; answers a new CONNECT. */
  survived?: boolean
  answersConnect?: boolean
  /** Anything the reader should know (e.g. the window was cut short). */
  note?: string
}

/** Reports progress lines. */
export type Progress = (line: string) => void

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const MB = 1024

/** Samples the broker's RSS every 200 ms, keeping the peak. */
class RssSampler {
  peakKb = 0
  private readonly timer: NodeJS.Timeout
  constructor (private readonly pid: number) {
    this.sample()
    this.timer = setInterval(() => this.sample(), 200)
  }

  sample (): number {
    const rss = readProcessTree(this.pid).rssKb
    if (rss > this.peakKb) this.peakKb = rss
    return rss
  }

  stop (): void { clearInterval(this.timer) }
}

/** Connects a fresh client and waits for CONNACK: does the broker still serve? */
async function answersConnect (port: number, clientId: string): Promise<boolean> {
  const ctx = { counters: new Float64Array(8), base: 0, histogram: new LatencyHistogram(), recording: () => false }
  const probe = new LoadClient('127.0.0.1', port, ctx)
  try {
    await probe.connect(clientId, 30, 5000)
    return true
  } catch {
    return false
  } finally {
    await probe.close(false)
  }
}

interface Snapshot { proc: ProcessTreeStats, load: LoadCounters, at: number, self: NodeJS.CpuUsage }

function snapshot (broker: RunningBroker, load: LoadGenerator | null): Snapshot {
  const zero = { sent: 0, received: 0, acked: 0, skipped: 0, dropped: 0, connected: 0 }
  return { proc: readProcessTree(broker.pid), load: load?.read() ?? zero, at: performance.now(), self: process.cpuUsage() }
}

function windowResult (scenario: Scenario, broker: RunningBroker, round: number, fanout: number, a: Snapshot, b: Snapshot): RunResult {
  const windowS = (b.at - a.at) / 1000
  const cpuUs = (b.proc.cpuTicks - a.proc.cpuTicks) * (1e6 / clockTicksPerSecond())
  const delivered = b.load.received - a.load.received
  const sent = b.load.sent - a.load.sent
  const selfUs = (b.self.user + b.self.system) - (a.self.user + a.self.system)
  // A broker that exited mid-window has no CPU reading left to subtract from.
  const cpuKnown = b.proc.processes > 0
  return {
    scenario: scenario.name,
    broker: broker.name,
    round,
    windowS,
    sentPerS: sent / windowS,
    deliveredPerS: delivered / windowS,
    expectedPerS: (sent * fanout) / windowS,
    cpuUsPerMsg: cpuKnown && delivered > 0 ? cpuUs / delivered : null,
    cpuPercent: cpuKnown ? (cpuUs / (windowS * 1e6)) * 100 : NaN,
    rssMb: b.proc.rssKb / MB,
    peakRssMb: 0,
    p50Ms: null,
    p99Ms: null,
    p999Ms: null,
    generatorCpuPercent: (selfUs / (windowS * 1e6)) * 100,
    dropped: b.load.dropped
  }
}

/** Runs `scenario` once against `target` and returns what it measured. */
export async function runScenario (
  scenario: Scenario, target: BrokerTarget, round: number, opts: BenchOptions, cwd: string, progress: Progress
): Promise<RunResult> {
  const load = scenario.load(opts)
  const fdLimit = load.idle + load.publishers + load.subscribers + 1024
  const broker = await startBroker(target, fdLimit, cwd)
  const rss = new RssSampler(broker.pid)
  const generator = new LoadGenerator({
    host: '127.0.0.1',
    port: broker.port,
    workers: opts.workers,
    clientIdPrefix: `bench-${scenario.name}-${round}-${process.pid}`,
    keepalive: 300,
    connectBatch: scenario.kind === 'idle' ? 100 : 50,
    ...load
  })
  try {
    if (scenario.kind === 'idle') return await runIdle(scenario, broker, round, generator, rss, load.idle, opts.idleSettleMs, progress)
    await generator.setup()
    await generator.start()
    await sleep(opts.warmup * 1000)
    const a = snapshot(broker, generator)
    generator.setRecording(true)
    let note: string | undefined
    const end = Date.now() + opts.duration * 1000
    while (Date.now() < end) {
      await sleep(Math.min(200, end - Date.now()))
      if (scenario.kind === 'flood' && rss.sample() > opts.maxRssMb * MB) {
        note = `window cut at ${opts.maxRssMb} MiB RSS`
        break
      }
      if (broker.exited()) break
    }
    const b = snapshot(broker, generator)
    generator.setRecording(false)
    const result = windowResult(scenario, broker, round, load.fanout, a, b)
    result.note = note
    if (scenario.kind === 'flood') {
      result.survived = isAlive(broker.pid)
      // Vanish without DISCONNECT while the broker still holds their unread bytes.
      await generator.close('publishers', true)
      await sleep(500)
      result.answersConnect = await answersConnect(broker.port, `bench-probe-${process.pid}`)
      result.survived = result.survived && isAlive(broker.pid)
      if (!result.survived) result.note = `broker died: ${broker.output().trim().split('\n').slice(-3).join(' | ')}`
    } else {
      await generator.stop()
      await generator.drain(300, 3000)
    }
    const histogram = await generator.histogram()
    result.p50Ms = histogram.total > 0 ? histogram.percentile(50) / 1000 : null
    result.p99Ms = histogram.total > 0 ? histogram.percentile(99) / 1000 : null
    result.p999Ms = histogram.total > 0 ? histogram.percentile(99.9) / 1000 : null
    result.peakRssMb = rss.peakKb / MB
    result.dropped = generator.read().dropped
    await generator.close('all', scenario.kind === 'flood')
    return result
  } finally {
    rss.stop()
    await generator.terminate()
    await broker.stop()
  }
}

async function runIdle (
  scenario: Scenario, broker: RunningBroker, round: number, generator: LoadGenerator,
  rss: RssSampler, connections: number, settleMs: number, progress: Progress
): Promise<RunResult> {
  await sleep(1000)
  const a = snapshot(broker, null)
  const started = performance.now()
  await generator.setup()
  progress(`    ${connections} connections open in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  // Let lazily freed buffers and GC settle before reading RSS.
  await sleep(settleMs)
  const b = snapshot(broker, null)
  const result = windowResult(scenario, broker, round, 0, a, b)
  const cpuUs = (b.proc.cpuTicks - a.proc.cpuTicks) * (1e6 / clockTicksPerSecond())
  result.kbPerConn = (b.proc.rssKb - a.proc.rssKb) / connections
  result.cpuUsPerConn = cpuUs / connections
  result.peakRssMb = rss.peakKb / MB
  result.dropped = generator.read().dropped
  await generator.close('all', false)
  return result
}
