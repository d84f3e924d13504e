/**
 * Two nodes in one process keep their own svc_retainer and svc_delayed_publish: each node's
 * retainer and delayed publisher belong to that node (found through its own plugin manager), and
 * unloading a plugin on one node leaves the other node's running.
 */
import { closeClients, collect, connect, nextMessage, waitFor } from '../../helpers/node.js'
import { startPluginNode, type PluginNode } from './harness.js'
import { retainerOf } from '../../../plugins/retainer/plugin.js'
import { delayedPublisherOf } from '../../../plugins/delayed_publish/plugin.js'

describe('plugins on two nodes in one process', () => {
  let a: PluginNode
  let b: PluginNode
  beforeAll(async () => {
    a = await startPluginNode()
    b = await startPluginNode()
  })
  afterEach(async () => { await closeClients() })
  afterAll(async () => {
    await a?.destroy()
    await b?.destroy()
  })

  it('gives each node its own retainer and delayed publisher', () => {
    expect(retainerOf(a.node)).toBeDefined()
    expect(retainerOf(b.node)).toBeDefined()
    expect(retainerOf(a.node)).not.toBe(retainerOf(b.node))
    expect(delayedPublisherOf(a.node)).toBeDefined()
    expect(delayedPublisherOf(b.node)).toBeDefined()
    expect(delayedPublisherOf(a.node)).not.toBe(delayedPublisherOf(b.node))
  })

  it('keeps svc_delayed_publish running on one node while it is unloaded on the other', async () => {
    await a.manager.unload('svc_delayed_publish')
    try {
      expect(delayedPublisherOf(a.node)).toBeUndefined()
      const sub = await connect(b.node)
      const got = collect(sub)
      await sub.subscribeAsync('pn/delayed', { qos: 1 })
      const pub = await connect(b.node)
      await pub.publishAsync('$delayed/0/pn/delayed', 'on b', { qos: 1 })
      await waitFor(() => got.length === 1, 'the delayed message on node b')
      expect(got[0].payload.toString()).toBe('on b')
    } finally {
      await a.manager.load('svc_delayed_publish')
    }
    expect(delayedPublisherOf(a.node)).toBeDefined()
  })

  it('keeps svc_retainer running on one node while it is unloaded on the other', async () => {
    await a.manager.unload('svc_retainer')
    try {
      // the retainer stays attached (unloaded: it stores and delivers nothing new)
      expect(retainerOf(a.node)).toBeDefined()
      // counted before: $SYS topics may be retained too
      const heldA = retainerOf(a.node)?.count() ?? -1
      const heldB = retainerOf(b.node)?.count() ?? -1
      const pubA = await connect(a.node)
      await pubA.publishAsync('pn/retained', 'on a', { qos: 1, retain: true })
      const pubB = await connect(b.node)
      await pubB.publishAsync('pn/retained', 'on b', { qos: 1, retain: true })
      expect(retainerOf(a.node)?.count()).toBe(heldA)
      expect(retainerOf(b.node)?.count()).toBe(heldB + 1)
      const late = await connect(b.node)
      const msg = nextMessage(late)
      await late.subscribeAsync('pn/retained', { qos: 1 })
      expect((await msg).payload.toString()).toBe('on b')
    } finally {
      await a.manager.load('svc_retainer')
    }
  })
})
