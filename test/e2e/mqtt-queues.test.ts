/**
 * The message queues of away persistent sessions, as EMQ X 4.x keeps them
 * (`mqtt.mqueue_store_qos0`, `mqtt.max_mqueue_len`; docs/mqtt.md, Queues and session limits):
 * QoS 0 messages are queued too, a full queue drops its oldest message, and the drops are
 * counted in `messages/dropped` and the session's `mqueue_dropped` — but a message that is
 * queued and later delivered is not a drop.
 */
import type { DroppedEvent } from '../../node/hooks.js'
import { sessionsOf } from '../../node/ops/sessions.js'
import { closeClients, connect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, leave, nodeWith, open } from '../helpers/mqtt.js'

afterEach(async () => {
  await closeOpened()
  await closeClients()
})

/** The session of `clientId` as the sessions API reports it. */
function session (node: TestNode, clientId: string): any {
  return sessionsOf(node, { clientid: clientId })[0]
}

/** Subscribes a persistent session of `clientId` to `filter` at `qos`, then leaves. */
async function awaySession (node: TestNode, clientId: string, filter: string, qos: 0 | 1 | 2, protocolVersion: 4 | 5 = 4): Promise<void> {
  const opts = protocolVersion === 5
    ? { protocolVersion, clientId, clean: false, properties: { sessionExpiryInterval: 600 } }
    : { protocolVersion, clientId, clean: false }
  const first = await open(node, opts)
  await first.client.subscribeAsync(filter, { qos })
  await leave(first.client)
}

describe('queues of away sessions (mqtt.mqueue_store_qos0 on, the default)', () => {
  const node = nodeWith({})

  it('queues QoS 0 messages for an away MQTT 3.1.1 session and delivers them at reconnect, once', async () => {
    await awaySession(node(), 'q-v4-qos0', 'q/v4/#', 1)
    const pub = await connect(node(), { protocolVersion: 4 })
    const droppedBefore = node().metrics['messages/dropped']
    for (const payload of ['a', 'b', 'c']) await pub.publishAsync('q/v4/t', payload, { qos: 0 })
    await waitFor(() => session(node(), 'q-v4-qos0')?.mqueue_len === 3, 'three queued messages')
    // queued for the session: not a drop, though no subscriber was online
    expect(node().metrics['messages/dropped']).toBe(droppedBefore)

    const again = await open(node(), { protocolVersion: 4, clientId: 'q-v4-qos0', clean: false })
    await waitFor(() => again.messages.length >= 3, 'queued QoS 0 messages')
    expect(again.messages.map(m => [m.payload.toString(), m.packet.qos])).toEqual([['a', 0], ['b', 0], ['c', 0]])
    // sent, so gone from the queue: the next reconnect gets nothing again
    await waitFor(() => session(node(), 'q-v4-qos0')?.mqueue_len === 0, 'an empty queue')
    await leave(again.client)
    const third = await open(node(), { protocolVersion: 4, clientId: 'q-v4-qos0', clean: false })
    await pub.publishAsync('q/v4/t', 'live', { qos: 1 })
    await waitFor(() => third.messages.length >= 1, 'the live message')
    expect(third.messages.map(m => m.payload.toString())).toEqual(['live'])
  })

  it('queues a QoS 1 message for an MQTT 5 session subscribed at QoS 0 (delivered at QoS 0)', async () => {
    await awaySession(node(), 'q-v5-sub0', 'q/v5/+', 0, 5)
    const pub = await connect(node(), { protocolVersion: 5 })
    await pub.publishAsync('q/v5/x', 'one', { qos: 1 })
    await waitFor(() => session(node(), 'q-v5-sub0')?.mqueue_len === 1, 'one queued message')
    const again = await open(node(), { protocolVersion: 5, clientId: 'q-v5-sub0', clean: false, properties: { sessionExpiryInterval: 600 } })
    await waitFor(() => again.messages.length >= 1, 'the queued message')
    expect(again.messages.map(m => [m.topic, m.payload.toString(), m.packet.qos])).toEqual([['q/v5/x', 'one', 0]])
  })

  it('does not count a QoS 1 message queued for an away session as dropped', async () => {
    await awaySession(node(), 'q-v4-qos1', 'q/qos1/t', 1)
    const pub = await connect(node(), { protocolVersion: 4 })
    const droppedBefore = node().metrics['messages/dropped']
    await pub.publishAsync('q/qos1/t', 'kept', { qos: 1 })
    await waitFor(() => session(node(), 'q-v4-qos1')?.mqueue_len === 1, 'one queued message')
    expect(node().metrics['messages/dropped']).toBe(droppedBefore)
    expect(session(node(), 'q-v4-qos1').mqueue_dropped).toBe(0)
  })
})

describe('mqtt.mqueue_store_qos0 = false', () => {
  const node = nodeWith({ 'mqtt.mqueue_store_qos0': 'false' })

  it('queues only the QoS 1 message for an away session', async () => {
    await awaySession(node(), 'q-noqos0', 'q/noqos0/t', 1)
    const pub = await connect(node(), { protocolVersion: 4 })
    await pub.publishAsync('q/noqos0/t', 'zero', { qos: 0 })
    await pub.publishAsync('q/noqos0/t', 'one', { qos: 1 })
    const again = await open(node(), { protocolVersion: 4, clientId: 'q-noqos0', clean: false })
    await waitFor(() => again.messages.length >= 1, 'the queued message')
    await pub.publishAsync('q/noqos0/t', 'marker', { qos: 1 })
    await waitFor(() => again.messages.some(m => m.payload.toString() === 'marker'), 'the marker')
    expect(again.messages.map(m => m.payload.toString())).toEqual(['one', 'marker'])
  })
})

describe('mqtt.max_mqueue_len = 3', () => {
  const node = nodeWith({ 'mqtt.max_mqueue_len': '3' })

  it('keeps the 3 newest of 8 queued messages, counting 5 drops in messages/dropped and mqueue_dropped', async () => {
    await awaySession(node(), 'q-full', 'q/full/t', 1)
    const pub = await connect(node(), { protocolVersion: 4 })
    const before = node().metrics['messages/dropped']
    const reasons: string[] = []
    const off = node().hooks.on('message.dropped', (e: DroppedEvent) => { reasons.push(e.reason) })
    try {
      for (let i = 1; i <= 8; i++) await pub.publishAsync('q/full/t', `m${i}`, { qos: i % 2 === 0 ? 1 : 0 })
      await waitFor(() => session(node(), 'q-full')?.mqueue_dropped === 5, 'five drops')
    } finally {
      off()
    }
    expect(reasons).toEqual(['queue_full', 'queue_full', 'queue_full', 'queue_full', 'queue_full'])
    expect(node().metrics['messages/dropped'] - before).toBe(5)
    expect(session(node(), 'q-full')).toMatchObject({ mqueue_len: 3, max_mqueue: 3 })

    const again = await open(node(), { protocolVersion: 4, clientId: 'q-full', clean: false })
    await waitFor(() => again.messages.length >= 3, 'the queued messages')
    expect(again.messages.map(m => m.payload.toString())).toEqual(['m6', 'm7', 'm8'])
    // a connected session's deliveries are not bounded by the queue length
    for (let i = 1; i <= 5; i++) await pub.publishAsync('q/full/t', `live${i}`, { qos: 1 })
    await waitFor(() => again.messages.length >= 8, 'the live messages')
    expect(node().metrics['messages/dropped'] - before).toBe(5)
  })
})
