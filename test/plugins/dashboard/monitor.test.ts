/**
 * The dashboard monitor's sampler (plugins/dashboard/monitor.ts) over a real node's counters
 * and stats, with short windows so the test does not wait 10 s per sample: samples land on
 * wall-clock boundaries, carry the messages per second and the connections of the node,
 * the history grows and stays bounded, and the cluster sum adds nodes at equal times.
 */
import type { MqttClient } from 'mqtt'
import { createMonitor, DEFAULT_RINGS, type Monitor } from '../../../plugins/dashboard/monitor.js'
import { sumHistories } from '../../../plugins/dashboard/monitor-routes.js'
import { startTestNode, connect, closeClients, waitFor, type TestNode } from '../../helpers/node.js'

const FINE_MS = 200
const SIZE = 5

let node: TestNode
let monitor: Monitor | undefined

beforeAll(async () => {
  node = await startTestNode({ 'broker.sys_interval': '0' })
})

afterEach(() => {
  monitor?.stop()
  monitor = undefined
})

afterAll(async () => {
  await closeClients()
  await node?.destroy()
})

function sampler (): Monitor {
  const made = createMonitor({
    metrics: node.metrics,
    gauges: () => {
      const s = node.services.stats.snapshot()
      return { connections: s['connections/count'], subscriptions: s['subscriptions/count'] }
    }
  }, { rings: { '1h': { intervalMs: FINE_MS, size: SIZE }, '1d': { intervalMs: 10 * FINE_MS, size: SIZE } } })
  monitor = made
  return made
}

describe('the dashboard monitor', () => {
  it('ships 10 s samples for an hour and 5 min samples for a day', () => {
    expect(DEFAULT_RINGS).toEqual({ '1h': { intervalMs: 10_000, size: 360 }, '1d': { intervalMs: 300_000, size: 288 } })
  })

  it('samples the node on interval boundaries: messages per second, connections and subscriptions', async () => {
    const sub: MqttClient = await connect(node)
    await new Promise<void>((resolve, reject) => sub.subscribe('mon/#', { qos: 0 }, (err) => { if (err != null) reject(err); else resolve() }))
    const pub = await connect(node)
    const before = { received: node.metrics['messages/received'], sent: node.metrics['messages/sent'] }
    const m = sampler()
    m.start()
    expect(m.history('1h')).toEqual({ interval: FINE_MS / 1000, samples: [] })
    // the first sample spans from the start to the first boundary, maybe a few ms: publish after it,
    // so that every sample with traffic spans one interval
    await waitFor(() => m.history('1h').samples.length === 1, 'the first sample', 5000)
    for (let i = 0; i < 20; i++) pub.publish('mon/x', 'hi')
    await waitFor(() => node.metrics['messages/sent'] - before.sent === 20, 'the 20 messages delivered', 5000)
    // two more samples: the last traffic is in a finished interval
    const count = m.history('1h').samples.length
    await waitFor(() => m.history('1h').samples.length >= count + 2, 'two more samples', 5000)
    expect(node.metrics['messages/received'] - before.received).toBe(20)
    const samples = m.history('1h').samples
    for (const [t] of samples) expect(t % FINE_MS).toBe(0)
    for (let i = 1; i < samples.length; i++) expect(samples[i][0]).toBeGreaterThan(samples[i - 1][0])
    const last = samples[samples.length - 1]
    expect(last[4]).toBe(2) // connections
    expect(last[5]).toBe(1) // subscriptions
    // rates are per second over the time that passed, about one interval (timers are a few ms late):
    // the 20 messages, spread over the samples they fell in, add up to about 20 again
    const received = samples.slice(1).reduce((n, s) => n + s[1] * (FINE_MS / 1000), 0)
    const sent = samples.slice(1).reduce((n, s) => n + s[2] * (FINE_MS / 1000), 0)
    expect(received).toBeGreaterThan(15)
    expect(received).toBeLessThan(25)
    expect(sent).toBeGreaterThan(15)
    expect(sent).toBeLessThan(25)
    expect(m.latest()).toEqual(last)
  })

  it('keeps at most its size, dropping the oldest, and keeps the day window apart', async () => {
    const m = sampler()
    m.start()
    await waitFor(() => m.history('1h').samples.length === SIZE, 'a full hour window', 5000)
    const first = m.history('1h').samples[0][0]
    await waitFor(() => m.history('1h').samples[0][0] > first, 'the oldest sample dropped', 5000)
    expect(m.history('1h').samples).toHaveLength(SIZE)
    await waitFor(() => m.history('1d').samples.length >= 1, 'a day sample', 5000)
    const day = m.history('1d')
    expect(day.interval).toBe(10 * FINE_MS / 1000)
    for (const [t] of day.samples) expect(t % (10 * FINE_MS)).toBe(0)
  })

  it('stops sampling when stopped', async () => {
    const m = sampler()
    m.start()
    await waitFor(() => m.history('1h').samples.length >= 1, 'a sample', 5000)
    m.stop()
    const count = m.history('1h').samples.length
    await new Promise(resolve => setTimeout(resolve, 3 * FINE_MS))
    expect(m.history('1h').samples).toHaveLength(count)
  })
})

describe('the cluster sum of histories', () => {
  it('adds the nodes\' samples at equal times, keeps the others, in time order', () => {
    const sum = sumHistories([
      { interval: 10, samples: [[10_000, 1.5, 2, 0, 3, 4], [20_000, 1, 1, 1, 3, 4]] },
      { interval: 10, samples: [[20_000, 0.25, 1, 0, 2, 1], [30_000, 1, 0, 0, 2, 1]] }
    ])
    expect(sum).toEqual({
      interval: 10,
      series: {
        received: [[10_000, 1.5], [20_000, 1.25], [30_000, 1]],
        sent: [[10_000, 2], [20_000, 2], [30_000, 0]],
        dropped: [[10_000, 0], [20_000, 1], [30_000, 0]],
        connections: [[10_000, 3], [20_000, 5], [30_000, 2]],
        subscriptions: [[10_000, 4], [20_000, 5], [30_000, 1]]
      }
    })
  })
})
