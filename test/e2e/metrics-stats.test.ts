/**
 * The Stats object (spec: "Stats"): counts of connections, sessions, subscriptions, shared
 * subscriptions, subscribers, routes and retained messages, and their high-water marks,
 * with real clients.
 */
import { startTestNode, connect, closeClients, waitFor, type TestNode } from '../helpers/node.js'
import { STAT_NAMES, type Stats } from '../../node/stats.js'

let node: TestNode
/** The node's own stats (started with the node; what the $SYS publisher and the API read). */
let stats: Stats

beforeAll(async () => {
  // no $SYS rounds: their retained topics would count in retained/count
  node = await startTestNode({ 'broker.sys_interval': '0', 'broker.sys_heartbeat': '0' })
  stats = node.services.stats
})
afterAll(async () => {
  await node.destroy()
})
afterEach(async () => { await closeClients() })

describe('stats', () => {
  it('has every spec key, in the spec order, all zero on a fresh node', () => {
    const s = stats.snapshot()
    expect(Object.keys(s)).toEqual([...STAT_NAMES])
    for (const name of STAT_NAMES) expect(s[name]).toBe(0)
  })

  it('counts connections, sessions, persistent sessions, subscriptions, shared ones, subscribers, routes and retained', async () => {
    const plain = await connect(node, { clientId: 'st-plain', protocolVersion: 4 })
    await plain.subscribeAsync(['st/a', 'st/b'])
    const sharer = await connect(node, { clientId: 'st-share', protocolVersion: 5 })
    await sharer.subscribeAsync('$share/g/st/c')
    const away = await connect(node, { clientId: 'st-away', protocolVersion: 4, clean: false })
    await away.subscribeAsync('st/p', { qos: 1 })
    await connect(node, { clientId: 'st-idle', protocolVersion: 4 })
    await plain.publishAsync('st/r', 'kept', { retain: true })
    await away.endAsync()
    await waitFor(() => node.broker.core.client('st-away') === undefined, 'st-away gone')

    const s = stats.snapshot()
    expect(s['connections/count']).toBe(3)
    expect(s['sessions/count']).toBe(4)
    expect(s['sessions/persistent/count']).toBe(1)
    expect(s['subscriptions/count']).toBe(4)
    expect(s['subscriptions/shared/count']).toBe(1)
    expect(s['subscribers/count']).toBe(3)
    expect(s['routes/count']).toBe(node.broker.router.routeCount)
    expect(s['routes/count']).toBeGreaterThanOrEqual(3)
    expect(s['topics/count']).toBe(s['routes/count'])
    expect(s['retained/count']).toBe(1)
    expect(s['connections/max']).toBe(4)
    expect(s['topics/max']).toBe(s['routes/max'])
  })

  it('keeps the high-water marks after the clients leave', async () => {
    await waitFor(() => node.broker.core.clientCount === 0, 'all gone')
    const s = stats.snapshot()
    expect(s['connections/count']).toBe(0)
    expect(s['connections/max']).toBe(4)
    expect(s['subscriptions/max']).toBe(4)
    expect(s['subscriptions/shared/max']).toBe(1)
    expect(s['sessions/count']).toBe(1) // st-away's session outlives its connection
  })

  it('raises the marks on a peak that ends before anyone reads the stats', async () => {
    const before = stats.snapshot()
    const burst = await Promise.all([1, 2, 3, 4, 5, 6].map(i => connect(node, { clientId: `st-burst-${i}` })))
    await Promise.all(burst.map((c, i) => c.subscribeAsync([`st/burst/${i}/a`, `st/burst/${i}/b`])))
    await closeClients()
    await waitFor(() => node.broker.core.clientCount === 0, 'burst gone')
    const after = stats.snapshot()
    expect(after['connections/count']).toBe(0)
    expect(after['connections/max']).toBe(Math.max(before['connections/max'], 6))
    expect(after['subscriptions/max']).toBeGreaterThanOrEqual(12)
    expect(after['subscribers/max']).toBeGreaterThanOrEqual(6)
    expect(after['routes/max']).toBeGreaterThanOrEqual(12)
  })
})
