import { startTestNode, connect, closeClients, nextMessage, waitFor, type TestNode } from '../helpers/node.js'
import { HOOK_NAMES, type HookName, type HookEventMap } from '../../node/hooks.js'

let node: TestNode
const seen: Array<{ name: HookName, event: any }> = []
beforeAll(async () => {
  node = await startTestNode()
  for (const name of HOOK_NAMES) node.hooks.on(name, (event) => { seen.push({ name, event }) })
})
afterAll(async () => { await node.destroy() })
afterEach(async () => { await closeClients() })

function eventsOf<K extends HookName> (name: K, clientId?: string): Array<HookEventMap[K]> {
  return seen.filter(s => s.name === name && (clientId === undefined || s.event.client_id === clientId)).map(s => s.event)
}

describe('hooks bus', () => {
  it('fires client.connected with the connection facts', async () => {
    await connect(node, { clientId: 'hk-conn', username: 'alice', keepalive: 42, protocolVersion: 5 })
    await waitFor(() => eventsOf('client.connected', 'hk-conn').length === 1, 'client.connected')
    const e = eventsOf('client.connected', 'hk-conn')[0]
    expect(e).toMatchObject({ event: 'client.connected', client_id: 'hk-conn', username: 'alice', keepalive: 42, proto_ver: 5, clean_start: true, connack: 0, is_bridge: false, node: node.name })
    expect(e.peername).toMatch(/^127\.0\.0\.1:\d+$/)
    expect(typeof e.connected_at).toBe('number')
  })

  it('fires client.subscribe and client.unsubscribe with every filter, $share as written', async () => {
    const c = await connect(node, { clientId: 'hk-sub', protocolVersion: 5 })
    await c.subscribeAsync({ 'hk/a': { qos: 1 }, '$share/g/hk/b': { qos: 0 } })
    await waitFor(() => eventsOf('client.subscribe', 'hk-sub').length === 1, 'client.subscribe')
    expect(eventsOf('client.subscribe', 'hk-sub')[0]).toMatchObject({ topic: 'hk/a', qos: 1, topic_filters: [{ topic: 'hk/a', qos: 1 }, { topic: '$share/g/hk/b', qos: 0 }] })
    await c.unsubscribeAsync('hk/a')
    await waitFor(() => eventsOf('client.unsubscribe', 'hk-sub').length === 1, 'client.unsubscribe')
    expect(eventsOf('client.unsubscribe', 'hk-sub')[0].topic).toBe('hk/a')
  })

  it('fires message.publish, message.deliver (QoS 0 too) and message.acked for one message', async () => {
    const sub = await connect(node, { clientId: 'hk-rcv' })
    await sub.subscribeAsync('hk/m/+', { qos: 1 })
    const pub = await connect(node, { clientId: 'hk-snd', username: 'bob' })
    const arrived = nextMessage(sub)
    await pub.publishAsync('hk/m/1', 'one', { qos: 1 })
    await arrived
    await waitFor(() => eventsOf('message.acked', 'hk-rcv').length === 1, 'message.acked')
    const published = eventsOf('message.publish', 'hk-snd')[0]
    expect(published).toMatchObject({ topic: 'hk/m/1', qos: 1, username: 'bob' })
    expect(published.payload.toString()).toBe('one')
    const delivered = eventsOf('message.deliver', 'hk-rcv')[0]
    expect(delivered).toMatchObject({ topic: 'hk/m/1', from_client_id: 'hk-snd', id: published.id })
    expect(eventsOf('message.acked', 'hk-rcv')[0]).toMatchObject({ topic: 'hk/m/1', qos: 1 })
    expect(eventsOf('message.acked', 'hk-rcv')[0].payload.toString()).toBe('one')
    await pub.publishAsync('hk/m/2', 'zero', { qos: 0 })
    await waitFor(() => eventsOf('message.deliver', 'hk-rcv').some(e => e.topic === 'hk/m/2'), 'QoS 0 deliver')
  })

  it('fires message.dropped with reason no_subscribers and counts it', async () => {
    const before = node.metrics['messages/dropped']
    const pub = await connect(node, { clientId: 'hk-drop' })
    await pub.publishAsync('hk/nobody/listens', 'x', { qos: 1 })
    await waitFor(() => eventsOf('message.dropped', 'hk-drop').length === 1, 'message.dropped')
    expect(eventsOf('message.dropped', 'hk-drop')[0]).toMatchObject({ reason: 'no_subscribers', topic: 'hk/nobody/listens' })
    expect(node.metrics['messages/dropped']).toBe(before + 1)
  })

  it('fires client.disconnected with reason normal after DISCONNECT', async () => {
    const c = await connect(node, { clientId: 'hk-bye' })
    await c.endAsync()
    await waitFor(() => eventsOf('client.disconnected', 'hk-bye').length === 1, 'client.disconnected')
    expect(eventsOf('client.disconnected', 'hk-bye')[0]).toMatchObject({ reason_code: 'normal' })
  })

  it('keeps serving when a listener throws', async () => {
    const off = node.hooks.on('message.publish', () => { throw new Error('listener bug') })
    const sub = await connect(node)
    await sub.subscribeAsync('hk/throw')
    const pub = await connect(node)
    const arrived = nextMessage(sub)
    await pub.publishAsync('hk/throw', 'still delivered')
    expect((await arrived).payload.toString()).toBe('still delivered')
    off()
  })
})
