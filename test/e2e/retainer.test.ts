/**
 * svc_retainer over real MQTT clients: retained messages stored and delivered, nothing
 * stored while the plugin is unloaded, the limits and expiry of svc_retainer.conf, and
 * ram versus disc storage across a restart.
 */
import { connect, closeClients, collect, waitFor, type Received } from '../helpers/node.js'
import { startPluginNode, type PluginNode } from '../node/plugins/harness.js'
import type { StarlingNode } from '../../node/node.js'

afterEach(async () => { await closeClients() })

/**
 * Node overrides for every node here: no `$SYS` statistics round, whose version, sysdescr
 * and brokers messages are retained, so the retained messages counted are the test's own.
 */
const OWN_RETAINED_ONLY = { 'broker.sys_interval': '0' }

/** The node's retained-message count (`retained/count`). */
function retainedCount (node: StarlingNode): number {
  return node.broker.core.sessions.retainedCount()
}

/**
 * The retained messages a new subscriber to `filters` then `last` gets, once the retained
 * message of `last` has arrived. The broker sends retained messages filter by filter, so
 * anything matching `filters` would have arrived before it.
 */
async function retainedFor (node: StarlingNode, filters: string[], last: string): Promise<Received[]> {
  const client = await connect(node, { protocolVersion: 5 })
  const got = collect(client)
  await client.subscribeAsync([...filters, last], { qos: 1 })
  await waitFor(() => got.some(m => m.topic === last), `the retained message of ${last}`)
  return got
}

const topicsOf = (got: Received[]): string[] => got.map(m => m.topic)

describe('svc_retainer with the default configuration', () => {
  let p: PluginNode
  beforeAll(async () => { p = await startPluginNode({ overrides: OWN_RETAINED_ONLY }) })
  afterAll(async () => { await p.destroy() })

  it('stores a retained message and delivers it to a later subscriber with the retain flag', async () => {
    const pub = await connect(p.node)
    await pub.publishAsync('ret/default/a', 'kept', { qos: 1, retain: true })
    const got = await retainedFor(p.node, [], 'ret/default/a')
    expect(got[0].payload.toString()).toBe('kept')
    expect(got[0].packet.retain).toBe(true)
    expect(got[0].packet.properties?.messageExpiryInterval).toBeUndefined()
  })

  it('stores nothing while unloaded, and delivers what was stored before once loaded again', async () => {
    const pub = await connect(p.node)
    await pub.publishAsync('ret/unload/old', 'before', { qos: 1, retain: true })
    const before = retainedCount(p.node)
    await p.manager.unload('svc_retainer')
    await pub.publishAsync('ret/unload/new', 'while unloaded', { qos: 1, retain: true })
    await pub.publishAsync('ret/unload/old', '', { qos: 1, retain: true }) // no delete either
    expect(retainedCount(p.node)).toBe(before)
    // and subscribers get no retained messages meanwhile (EMQ X without emqx_retainer)
    expect(await p.node.broker.core.retained.createRetainedStreamCombi(['ret/unload/#']).toArray()).toEqual([])
    await p.manager.load('svc_retainer')
    const got = await retainedFor(p.node, ['ret/unload/new'], 'ret/unload/old')
    expect(topicsOf(got)).toEqual(['ret/unload/old'])
    expect(got[0].payload.toString()).toBe('before')
  })

  it('never retains a $delayed/ command topic', async () => {
    const pub = await connect(p.node)
    const before = retainedCount(p.node)
    await p.manager.unload('svc_delayed_publish')
    try {
      await pub.publishAsync('$delayed/100/ret/cmd', 'x', { qos: 1, retain: true })
      expect(retainedCount(p.node)).toBe(before)
    } finally {
      await p.manager.load('svc_delayed_publish')
    }
  })
})

describe('retainer.max_retained_messages = 2', () => {
  let p: PluginNode
  beforeAll(async () => { p = await startPluginNode({ overrides: OWN_RETAINED_ONLY, pluginConf: { svc_retainer: 'retainer.max_retained_messages = 2\n' } }) })
  afterAll(async () => { await p.destroy() })

  it('does not store a third topic, still replaces a stored one, and stores again once one is cleared', async () => {
    const pub = await connect(p.node)
    const sub = await connect(p.node)
    const live = collect(sub)
    await sub.subscribeAsync('max/#', { qos: 1 })
    await pub.publishAsync('max/1', 'one', { qos: 1, retain: true })
    await pub.publishAsync('max/2', 'two', { qos: 1, retain: true })
    await pub.publishAsync('max/3', 'three', { qos: 1, retain: true })
    await waitFor(() => live.length === 3, 'the live deliveries')
    expect(retainedCount(p.node)).toBe(2)
    await pub.publishAsync('max/1', 'one again', { qos: 1, retain: true })
    let got = await retainedFor(p.node, ['max/3'], 'max/1')
    expect(got.map(m => [m.topic, m.payload.toString()])).toEqual([['max/1', 'one again']])
    await pub.publishAsync('max/2', '', { qos: 1, retain: true })
    await pub.publishAsync('max/3', 'three later', { qos: 1, retain: true })
    got = await retainedFor(p.node, [], 'max/3')
    expect(got[0].payload.toString()).toBe('three later')
    expect(retainedCount(p.node)).toBe(2)
  })
})

describe('retainer.max_retained_messages = 1 with the $SYS service publishing', () => {
  let p: PluginNode
  // the default sys_interval: the node publishes its retained $SYS topics at start
  beforeAll(async () => { p = await startPluginNode({ pluginConf: { svc_retainer: 'retainer.max_retained_messages = 1\n' } }) })
  afterAll(async () => { await p.destroy() })

  it("does not count the broker's own retained $SYS topics against the limit", async () => {
    await waitFor(() => retainedCount(p.node) >= 3, 'the retained $SYS topics of the start round')
    const pub = await connect(p.node)
    await pub.publishAsync('quota/1', 'mine', { qos: 1, retain: true })
    const got = await retainedFor(p.node, [], 'quota/1')
    expect(got.map(m => m.payload.toString())).toEqual(['mine'])
  })
})

describe('retainer.max_payload_size = 10', () => {
  let p: PluginNode
  beforeAll(async () => { p = await startPluginNode({ overrides: OWN_RETAINED_ONLY, pluginConf: { svc_retainer: 'retainer.max_payload_size = 10\n' } }) })
  afterAll(async () => { await p.destroy() })

  it('delivers a larger payload live but does not store it; 10 bytes are stored', async () => {
    const pub = await connect(p.node)
    const sub = await connect(p.node)
    const live = collect(sub)
    await sub.subscribeAsync('size/#', { qos: 1 })
    await pub.publishAsync('size/big', '12345678901', { qos: 1, retain: true })
    await pub.publishAsync('size/fits', '1234567890', { qos: 1, retain: true })
    await waitFor(() => live.length === 2, 'the live deliveries')
    const got = await retainedFor(p.node, ['size/big'], 'size/fits')
    expect(topicsOf(got)).toEqual(['size/fits'])
  })
})

describe('retainer.expiry_interval = 1s', () => {
  let p: PluginNode
  beforeAll(async () => { p = await startPluginNode({ overrides: OWN_RETAINED_ONLY, pluginConf: { svc_retainer: 'retainer.expiry_interval = 1s\n' } }) })
  afterAll(async () => { await p.destroy() })

  it('stops delivering a retained message a second after it was stored; its own MQTT 5 expiry wins', async () => {
    const pub = await connect(p.node, { protocolVersion: 5 })
    const storedAt = Date.now()
    await pub.publishAsync('exp/short', 'gone soon', { qos: 1, retain: true })
    await pub.publishAsync('exp/own', 'mine', { qos: 1, retain: true, properties: { messageExpiryInterval: 60 } })
    await waitFor(() => Date.now() >= storedAt + 1100, 'a second to pass')
    await pub.publishAsync('exp/fresh', 'new', { qos: 1, retain: true })
    const got = await retainedFor(p.node, ['exp/short', 'exp/own'], 'exp/fresh')
    expect(topicsOf(got)).toEqual(['exp/own', 'exp/fresh'])
    expect(got[0].packet.properties.messageExpiryInterval).toBeGreaterThan(0)
    expect(got[0].packet.properties.messageExpiryInterval).toBeLessThanOrEqual(60)
    // the retainer's own expiry is not shown to subscribers as a Message Expiry Interval
    expect(got[1].packet.properties?.messageExpiryInterval).toBeUndefined()
  })

  it('removes expired messages on its own, so retained/count goes down without subscribers', async () => {
    const pub = await connect(p.node)
    await pub.publishAsync('exp/count', 'x', { qos: 1, retain: true })
    await waitFor(() => retainedCount(p.node) === 1, 'only the message with its own expiry to be left')
    expect(retainedCount(p.node)).toBe(1)
  })
})

describe('retainer.storage_type across a restart', () => {
  it.each([
    ['disc', true],
    ['ram', false]
  ])('%s: kept after a restart: %s', async (storage, kept) => {
    const conf = { svc_retainer: `retainer.storage_type = ${storage}\n` }
    const first = await startPluginNode({ overrides: OWN_RETAINED_ONLY, pluginConf: conf })
    try {
      const pub = await connect(first.node)
      await pub.publishAsync('store/a', 'survives?', { qos: 1, retain: true })
      await pub.publishAsync('store/marker', 'then', { qos: 1, retain: true })
      expect(retainedCount(first.node)).toBe(2)
      await closeClients()
    } finally {
      await first.stop()
    }
    const second = await startPluginNode({ overrides: OWN_RETAINED_ONLY, dataDir: first.node.dataDir, etcDir: first.etcDir })
    try {
      expect(retainedCount(second.node)).toBe(kept ? 2 : 0)
      if (kept) {
        const got = await retainedFor(second.node, ['store/a'], 'store/marker')
        expect(topicsOf(got)).toEqual(['store/a', 'store/marker'])
      }
    } finally {
      await second.destroy()
    }
  })
})
