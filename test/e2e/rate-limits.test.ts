/**
 * Per-connection rate limits over the wire (issue 22, EMQ X 4.4's
 * `zone.external.rate_limit.conn_messages_in` / `conn_bytes_in`): a client publishing far
 * above its limit is read at about its limit (its messages are paused, not dropped: all of
 * them arrive), while another client publishing at the same time is not slowed. Off (the
 * default), the same burst goes through at once.
 */
import type { MqttClient } from 'mqtt'
import { startTestNode, closeClients, connect, waitFor, type TestNode } from '../helpers/node.js'

/** Subscribes to `filter` and records the arrival time of every message, by topic. */
async function arrivals (node: TestNode, filter: string): Promise<Map<string, number[]>> {
  const sub = await connect(node, { clientId: `sub-${filter.replace(/\W/g, '')}` })
  await sub.subscribeAsync(filter, { qos: 0 })
  const times = new Map<string, number[]>()
  sub.on('message', (topic) => {
    let list = times.get(topic)
    if (list === undefined) times.set(topic, list = [])
    list.push(Date.now())
  })
  return times
}

/** Publishes `count` QoS 0 messages of `size` bytes at once (as fast as the socket takes them). */
function burst (client: MqttClient, topic: string, count: number, size = 16): void {
  const payload = Buffer.alloc(size, 0x61)
  for (let i = 0; i < count; i++) client.publish(topic, payload, { qos: 0 })
}

/** Messages per second between the arrival of message `from` and the last one. */
function rateAfter (times: number[], from: number): number {
  return (times.length - 1 - from) / ((times[times.length - 1] - times[from]) / 1000)
}

afterEach(async () => { await closeClients() })

describe('conn_messages_in = 400,1s', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode({ 'zone.external.rate_limit.conn_messages_in': '400,1s' }) })
  afterAll(async () => { await node.destroy() })

  it('reads a flooding client at about its rate, delivers all of it, and does not slow another client', async () => {
    const times = await arrivals(node, 'rl/#')
    const flooder = await connect(node, { clientId: 'flooder' })
    const other = await connect(node, { clientId: 'other' })
    // 400 at once (the bucket), then 1200 more at 400/s: about 3 s
    burst(flooder, 'rl/flood', 1600)
    await waitFor(() => (times.get('rl/flood')?.length ?? 0) >= 600, 'the flood past its first burst')
    const started = Date.now()
    burst(other, 'rl/other', 300)
    await waitFor(() => (times.get('rl/other')?.length ?? 0) === 300, 'the other client\'s 300 messages')
    const otherTook = Date.now() - started
    await waitFor(() => (times.get('rl/flood')?.length ?? 0) === 1600, 'every flood message', 15000)
    const flood = times.get('rl/flood')!
    const rate = rateAfter(flood, 500)
    expect(rate).toBeGreaterThan(400 * 0.7)
    expect(rate).toBeLessThan(400 * 1.3)
    // the other client's burst is within its own bucket: it is not held behind the flooder
    expect(otherTook).toBeLessThan(1000)
  }, 30000)
})

describe('conn_bytes_in = 32KB,1s', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode({ 'zone.external.rate_limit.conn_bytes_in': '32KB,1s' }) })
  afterAll(async () => { await node.destroy() })

  it('reads a client sending large messages at about its byte rate', async () => {
    const times = await arrivals(node, 'rb/#')
    const flooder = await connect(node, { clientId: 'bytes-flooder' })
    // 100 messages of about 1 KB: 32 at once, the rest at about 32 per second
    burst(flooder, 'rb/flood', 100, 1000)
    await waitFor(() => (times.get('rb/flood')?.length ?? 0) === 100, 'every message', 15000)
    const flood = times.get('rb/flood')!
    const bytesPerSecond = rateAfter(flood, 40) * 1012
    expect(bytesPerSecond).toBeGreaterThan(32 * 1024 * 0.6)
    expect(bytesPerSecond).toBeLessThan(32 * 1024 * 1.4)
  }, 30000)
})

describe('rate limits off (the default)', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode() })
  afterAll(async () => { await node.destroy() })

  it('lets the same burst through at once', async () => {
    const times = await arrivals(node, 'rn/#')
    const flooder = await connect(node, { clientId: 'unlimited' })
    const started = Date.now()
    burst(flooder, 'rn/flood', 1600)
    await waitFor(() => (times.get('rn/flood')?.length ?? 0) === 1600, 'every message')
    expect(Date.now() - started).toBeLessThan(2000)
  })
})
