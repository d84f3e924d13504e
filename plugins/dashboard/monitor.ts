/**
 * The dashboard monitor (EMQ X 4's emqx_dashboard monitor): while svc_dashboard is loaded,
 * each node samples its own counters into two bounded histories, so that the overview's
 * charts have history on first load: every 10 s for the last hour (360 samples) and every
 * 5 min for the last day (288 samples). A sample holds the messages received, sent and
 * dropped per second over its interval (from the node's metrics counters) and the
 * connections and subscriptions at that moment (from the node's stats). monitor-routes.ts
 * serves them, summed over the cluster.
 *
 * Invariants:
 * - A sample's time is a wall-clock boundary of its interval (a multiple of the interval in
 *   ms since the epoch), so the samples of every node of a cluster line up and can be summed
 *   by time.
 * - Times in a history strictly increase; a history never holds more than its size (the
 *   oldest sample is dropped first).
 * - A rate is the counter's growth since the previous sample of the same history (or since
 *   the monitor started, for the first) divided by the time that actually passed; never
 *   negative.
 * - Nothing is kept across an unload: a loaded plugin starts a new monitor with empty
 *   histories.
 */

/** The windows the monitor keeps, as the API names them (`?range=`). */
export const MONITOR_RANGES = ['1h', '1d'] as const

/** One window's name. */
export type MonitorRange = typeof MONITOR_RANGES[number]

/** How one window is sampled. */
export interface RingSpec {
  /** Time between samples, ms. */
  intervalMs: number
  /** Most samples kept. */
  size: number
}

/** The shipped windows: 10 s for an hour, 5 min for a day (EMQ X 4's dashboard kept the same spans). */
export const DEFAULT_RINGS: Readonly<Record<MonitorRange, RingSpec>> = {
  '1h': { intervalMs: 10_000, size: 360 },
  '1d': { intervalMs: 300_000, size: 288 }
}

/**
 * One sample, compact for the wire: `[time ms, received/s, sent/s, dropped/s, connections,
 * subscriptions]`.
 */
export type MonitorSample = [number, number, number, number, number, number]

/** The names of a sample's values after its time, in order (the API's series names). */
export const SAMPLE_FIELDS = ['received', 'sent', 'dropped', 'connections', 'subscriptions'] as const

/** One node's history of one window, as the `monitor.counters` operation answers. */
export interface MonitorHistory {
  /** Seconds between samples. */
  interval: number
  samples: MonitorSample[]
}

/** What the monitor reads: the node's counters and gauges, read at each sample. */
export interface MonitorComponents {
  /** The node's metrics counters (`node.metrics`): `messages/received`, `/sent`, `/dropped`. */
  metrics: Readonly<Record<string, number>>
  /** The gauges now: `connections/count` and `subscriptions/count` of the node's stats. */
  gauges: () => { connections: number, subscriptions: number }
  /** Wall-clock ms (default `Date.now`); tests pass their own. */
  now?: () => number
}

/** Options of the sampler: the windows' intervals and sizes (tests use short ones). */
export interface MonitorOptions {
  rings?: Partial<Record<MonitorRange, RingSpec>>
}

/** A running monitor. */
export interface Monitor {
  /** Starts sampling: the first sample of each window at its next boundary. */
  start: () => void
  /** Stops sampling; the histories stay readable. */
  stop: () => void
  /** The history of `range`, oldest first (a copy). */
  history: (range: MonitorRange) => MonitorHistory
  /** The newest sample of the finest window, or undefined before the first. */
  latest: () => MonitorSample | undefined
}

/** True when `value` names a window. */
export function isMonitorRange (value: unknown): value is MonitorRange {
  return typeof value === 'string' && (MONITOR_RANGES as readonly string[]).includes(value)
}

/** Two decimals: the rates are shown, not summed further than the cluster's nodes. */
function round2 (x: number): number {
  return Math.round(x * 100) / 100
}

/** The counters a rate is made of, read together. */
interface CounterReading { at: number, received: number, sent: number, dropped: number }

/** One window: its samples and the reading its next rate starts from. */
class Ring {
  readonly samples: MonitorSample[] = []
  private timer: ReturnType<typeof setTimeout> | undefined

  constructor (readonly spec: RingSpec, private from: CounterReading, private readonly c: Required<MonitorComponents>) {}

  /** Arms the timer for the next boundary of the interval (recomputed each time: no drift). */
  schedule (): void {
    const now = this.c.now()
    const next = (Math.floor(now / this.spec.intervalMs) + 1) * this.spec.intervalMs
    this.timer = setTimeout(() => { this.tick() }, next - now)
    this.timer.unref()
  }

  cancel (): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }

  private tick (): void {
    this.timer = undefined
    this.sample()
    this.schedule()
  }

  /** Takes the sample of the boundary nearest now (a timer may fire a little late or early). */
  private sample (): void {
    const reading = readCounters(this.c)
    const at = Math.round(reading.at / this.spec.intervalMs) * this.spec.intervalMs
    const last = this.samples[this.samples.length - 1]
    if (last !== undefined && at <= last[0]) return
    const seconds = Math.max((reading.at - this.from.at) / 1000, 0.001)
    const rate = (now: number, before: number): number => round2(Math.max(now - before, 0) / seconds)
    const gauges = this.c.gauges()
    this.samples.push([at, rate(reading.received, this.from.received), rate(reading.sent, this.from.sent),
      rate(reading.dropped, this.from.dropped), gauges.connections, gauges.subscriptions])
    if (this.samples.length > this.spec.size) this.samples.splice(0, this.samples.length - this.spec.size)
    this.from = reading
  }
}

function readCounters (c: Required<MonitorComponents>): CounterReading {
  const m = c.metrics
  return { at: c.now(), received: m['messages/received'] ?? 0, sent: m['messages/sent'] ?? 0, dropped: m['messages/dropped'] ?? 0 }
}

/** Creates the monitor of one node (not started). */
export function createMonitor (components: MonitorComponents, options: MonitorOptions = {}): Monitor {
  const c: Required<MonitorComponents> = { now: Date.now, ...components }
  const specs: Record<MonitorRange, RingSpec> = { ...DEFAULT_RINGS, ...options.rings }
  for (const [range, spec] of Object.entries(specs)) {
    if (!(spec.intervalMs > 0) || !(spec.size > 0)) throw new Error(`monitor window ${range}: interval and size must be positive`)
  }
  // the first rates start from the counters as they are when the monitor is made (the plugin loads)
  const start = readCounters(c)
  const rings: Record<MonitorRange, Ring> = { '1h': new Ring(specs['1h'], start, c), '1d': new Ring(specs['1d'], start, c) }
  return {
    start () {
      for (const ring of Object.values(rings)) { ring.cancel(); ring.schedule() }
    },
    stop () {
      for (const ring of Object.values(rings)) ring.cancel()
    },
    history (range) {
      const ring = rings[range]
      return { interval: ring.spec.intervalMs / 1000, samples: ring.samples.map(s => [...s] as MonitorSample) }
    },
    latest () {
      const samples = rings['1h'].samples
      const last = samples[samples.length - 1]
      return last === undefined ? undefined : [...last] as MonitorSample
    }
  }
}
