/**
 * The bench scenarios: who publishes what to whom, how fast, and what each one is meant
 * to show. Each is bounded in time (warm-up + measured window) and stops by itself.
 */
import type { PublisherSpec, SubscriberSpec } from './load-plan.js'

/** Knobs shared by every scenario (the CLI sets them). */
export interface BenchOptions {
  /** Measured window, seconds. */
  duration: number
  /** Traffic before the window opens, seconds (lets JITs and buffers settle). */
  warmup: number
  /** Load-generator worker threads. */
  workers: number
  /** PUBLISH payload bytes. */
  payloadSize: number
  /** fanin-qos0: total msg/s over all 100 publishers. */
  faninRate: number
  /** fanin-qos1: total msg/s over all 100 publishers (lower: plain aedes falls behind past ~10k/s on 2 cores). */
  faninQos1Rate: number
  /** fanout: msg/s of the one publisher (deliveries are 1000× this). */
  fanoutRate: number
  /** latency: msg/s of the one publisher. */
  latencyRate: number
  /** idle: connections to open. */
  idleConnections: number
  /** idle: from the last CONNACK to the RSS reading, ms (what the broker does once quiet is in the reading). */
  idleSettleMs: number
  /** flood: unthrottled publishers. */
  floodPublishers: number
  /** flood: stop the window early when the broker's RSS passes this, MiB. */
  maxRssMb: number
}

/** The load one scenario puts on a broker. */
export interface ScenarioLoad {
  publishers: number
  publisher: PublisherSpec
  subscribers: number
  subscriber: SubscriberSpec
  idle: number
  /** Deliveries per PUBLISH when nothing is lost (the number of matching subscribers). */
  fanout: number
}

/** A named scenario. */
export interface Scenario {
  name: string
  /**
   * `traffic`: measure CPU per delivered message over the window; `idle`: measure RSS per
   * connection; `flood`: unthrottled traffic, then an abrupt disconnect and a liveness probe.
   */
  kind: 'traffic' | 'idle' | 'flood'
  /** One line saying what runs, with the actual numbers. */
  describe (o: BenchOptions): string
  load (o: BenchOptions): ScenarioLoad
}

const NO_SUBSCRIBER: SubscriberSpec = { filter: 'unused', qos: 0 }

function publisher (o: BenchOptions, topic: string, qos: 0 | 1, rate: number, tickMs = 10): PublisherSpec {
  return { topic, qos, rate, tickMs, inflightWindow: 1000, payloadSize: o.payloadSize }
}

function fanin (name: string, qos: 0 | 1): Scenario {
  const total = (o: BenchOptions): number => qos === 0 ? o.faninRate : o.faninQos1Rate
  return {
    name,
    kind: 'traffic',
    describe: (o) => `100 publishers x ${total(o) / 100} msg/s = ${total(o)} msg/s QoS ${qos} -> 1 subscriber on t/#`,
    load: (o) => ({
      publishers: 100,
      publisher: publisher(o, 't/{i}', qos, total(o) / 100),
      subscribers: 1,
      subscriber: { filter: 't/#', qos },
      idle: 0,
      fanout: 1
    })
  }
}

/** Every scenario, in the order they run. */
export const SCENARIOS: readonly Scenario[] = [
  fanin('fanin-qos0', 0),
  fanin('fanin-qos1', 1),
  {
    name: 'fanout',
    kind: 'traffic',
    describe: (o) => `1 publisher x ${o.fanoutRate} msg/s QoS 0 -> 1000 subscribers on f/all = ${o.fanoutRate * 1000} deliveries/s`,
    load: (o) => ({
      publishers: 1,
      publisher: publisher(o, 'f/all', 0, o.fanoutRate),
      subscribers: 1000,
      subscriber: { filter: 'f/all', qos: 0 },
      idle: 0,
      fanout: 1000
    })
  },
  {
    name: 'idle',
    kind: 'idle',
    describe: (o) => `${o.idleConnections} idle connections (CONNECT, keepalive 300 s), RSS growth per connection`,
    load: (o) => ({
      publishers: 0,
      publisher: publisher(o, 'unused', 0, 0),
      subscribers: 0,
      subscriber: NO_SUBSCRIBER,
      idle: o.idleConnections,
      fanout: 0
    })
  },
  {
    name: 'latency',
    kind: 'traffic',
    describe: (o) => `1 publisher x ${o.latencyRate} msg/s QoS 0 -> 1 subscriber, paced every 1 ms; p50/p99 end to end`,
    load: (o) => ({
      publishers: 1,
      publisher: publisher(o, 'l/one', 0, o.latencyRate, 1),
      subscribers: 1,
      subscriber: { filter: 'l/one', qos: 0 },
      idle: 0,
      fanout: 1
    })
  },
  {
    name: 'flood',
    kind: 'flood',
    describe: (o) => `${o.floodPublishers} unthrottled QoS 0 publishers -> 1 subscriber on t/#; then RST the publishers and probe CONNECT`,
    load: (o) => ({
      publishers: o.floodPublishers,
      publisher: publisher(o, 't/{i}', 0, 0),
      subscribers: 1,
      subscriber: { filter: 't/#', qos: 0 },
      idle: 0,
      fanout: 1
    })
  }
]

/** Looks up scenarios by name; throws with the list of valid names on a typo. */
export function selectScenarios (names: string[]): Scenario[] {
  return names.map((name) => {
    const found = SCENARIOS.find((s) => s.name === name)
    if (found === undefined) {
      throw new Error(`unknown scenario '${name}'; choose from ${SCENARIOS.map((s) => s.name).join(', ')}`)
    }
    return found
  })
}
