/**
 * Flow control towards the client (MQTT 5.0 §4.9, §3.1.2.11.3): the broker keeps at most the
 * client's Receive Maximum QoS 1/2 PUBLISH packets unacknowledged and queues the rest
 * [MQTT-3.3.4-9]; QoS 0 and other packets are not held behind them.
 */
import { startTestNode, connect, closeClients, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, openRaw, connectPacket, type RawClient } from '../helpers/mqtt.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode() })
afterAll(async () => { await node.destroy() })
afterEach(async () => {
  await closeOpened()
  await closeClients()
})

/** A raw v5 subscriber to `topic` (QoS 2 granted) that acknowledges nothing on its own. */
async function rawSubscriber (clientId: string, topic: string, receiveMaximum: number, fields: Record<string, any> = {}): Promise<RawClient> {
  const raw = await openRaw(node, 5)
  raw.send(connectPacket(5, { clientId, ...fields, properties: { receiveMaximum, ...fields.properties } }))
  expect((await raw.next('connack')).reasonCode).toBe(0)
  raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 2 }] })
  await raw.next('suback')
  return raw
}

function publishes (raw: RawClient, qos?: number): any[] {
  return raw.packets.filter(p => p.cmd === 'publish' && (qos === undefined || p.qos === qos))
}

/** Publishes a QoS 0 'marker' and waits for `raw` to have it: what was published before it was written, or held. */
async function marker (raw: RawClient, pub: any, topic: string): Promise<void> {
  const before = publishes(raw, 0).length
  await pub.publishAsync(topic, 'marker', { qos: 0 })
  await waitFor(() => publishes(raw, 0).length > before, 'the QoS 0 marker')
}

describe('Receive Maximum of the client', () => {
  it('keeps at most Receive Maximum QoS 1 publishes unacknowledged; PUBACK releases the next [MQTT-3.3.4-9]', async () => {
    const sub = await rawSubscriber('fc-qos1', 'fc/one', 2)
    const pub = await connect(node, { protocolVersion: 5 })
    for (const p of ['a', 'b', 'c', 'd']) await pub.publishAsync('fc/one', p, { qos: 1 })
    // QoS 0 is not held behind the window
    await marker(sub, pub, 'fc/one')
    expect(publishes(sub, 1).map(p => p.payload.toString())).toEqual(['a', 'b'])

    sub.send({ cmd: 'puback', messageId: publishes(sub, 1)[0].messageId })
    await waitFor(() => publishes(sub, 1).length === 3, 'the third QoS 1 publish')
    await marker(sub, pub, 'fc/one')
    expect(publishes(sub, 1).map(p => p.payload.toString())).toEqual(['a', 'b', 'c'])

    sub.send({ cmd: 'puback', messageId: publishes(sub, 1)[1].messageId })
    sub.send({ cmd: 'puback', messageId: publishes(sub, 1)[2].messageId })
    await waitFor(() => publishes(sub, 1).length === 4, 'the fourth QoS 1 publish')
    expect(publishes(sub, 1).map(p => p.payload.toString())).toEqual(['a', 'b', 'c', 'd'])
  })

  it('counts QoS 2 until PUBCOMP, not PUBREC', async () => {
    const sub = await rawSubscriber('fc-qos2', 'fc/two', 1)
    const pub = await connect(node, { protocolVersion: 5 })
    for (const p of ['a', 'b']) await pub.publishAsync('fc/two', p, { qos: 2 })
    await marker(sub, pub, 'fc/two')
    expect(publishes(sub, 2).map(p => p.payload.toString())).toEqual(['a'])

    const first = publishes(sub, 2)[0].messageId
    sub.send({ cmd: 'pubrec', messageId: first })
    await sub.next('pubrel')
    await marker(sub, pub, 'fc/two')
    expect(publishes(sub, 2)).toHaveLength(1)

    sub.send({ cmd: 'pubcomp', messageId: first })
    await waitFor(() => publishes(sub, 2).length === 2, 'the second QoS 2 publish')
    expect(publishes(sub, 2)[1].payload.toString()).toBe('b')
  })

  it('a PUBREC with an error reason code ends the exchange and frees the slot', async () => {
    const sub = await rawSubscriber('fc-pubrec-err', 'fc/err', 1)
    const pub = await connect(node, { protocolVersion: 5 })
    for (const p of ['a', 'b']) await pub.publishAsync('fc/err', p, { qos: 2 })
    await waitFor(() => publishes(sub, 2).length === 1, 'the first QoS 2 publish')
    sub.send({ cmd: 'pubrec', messageId: publishes(sub, 2)[0].messageId, reasonCode: 0x80 })
    await waitFor(() => publishes(sub, 2).length === 2, 'the second QoS 2 publish')
  })

  it('applies to queued messages sent on reconnect, and loses none the window held back', async () => {
    const session = { clean: false, properties: { sessionExpiryInterval: 60 } }
    const first = await rawSubscriber('fc-resume', 'fc/resume', 2, session)
    first.send({ cmd: 'disconnect', reasonCode: 0 })
    await waitFor(() => first.closed(), 'the first connection to close')
    const pub = await connect(node, { protocolVersion: 5 })
    for (const p of ['a', 'b', 'c', 'd', 'e']) await pub.publishAsync('fc/resume', p, { qos: 1 })

    const second = await openRaw(node, 5)
    second.send(connectPacket(5, { clientId: 'fc-resume', clean: false, properties: { sessionExpiryInterval: 60, receiveMaximum: 2 } }))
    expect((await second.next('connack')).sessionPresent).toBe(true)
    // aedes counts the client connected once it has written the queue (QoS 0 to it is dropped before)
    await waitFor(() => node.broker.core.client('fc-resume')?.connected === true, 'the queue to be written')
    await marker(second, pub, 'fc/resume')
    expect(publishes(second, 1).map(p => p.payload.toString())).toEqual(['a', 'b'])
    // acknowledge one, then leave with 'c' in flight and 'd', 'e' held back
    second.send({ cmd: 'puback', messageId: publishes(second, 1)[0].messageId })
    await waitFor(() => publishes(second, 1).length === 3, 'the third queued publish')
    second.send({ cmd: 'disconnect', reasonCode: 0 })
    await waitFor(() => second.closed(), 'the second connection to close')

    const third = await openRaw(node, 5)
    third.send(connectPacket(5, { clientId: 'fc-resume', clean: false, properties: { sessionExpiryInterval: 60 } }))
    expect((await third.next('connack')).sessionPresent).toBe(true)
    await waitFor(() => publishes(third, 1).length === 4, 'the unacknowledged messages again')
    expect(publishes(third, 1).map(p => p.payload.toString())).toEqual(['b', 'c', 'd', 'e'])
  })

  it('never lets a QoS 0 publish use a topic alias that a held publish would set [MQTT-3.3.2-12]', async () => {
    const sub = await rawSubscriber('fc-alias', 'fc/alias/#', 1, { properties: { topicAliasMaximum: 10 } })
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('fc/alias/x', 'a', { qos: 1 })
    await pub.publishAsync('fc/alias/y', 'b', { qos: 1 }) // held: the window is full
    await pub.publishAsync('fc/alias/y', 'c', { qos: 0 })
    await waitFor(() => publishes(sub, 0).length === 1, 'the QoS 0 publish')
    sub.send({ cmd: 'puback', messageId: publishes(sub, 1)[0].messageId })
    await waitFor(() => publishes(sub, 1).length === 2, 'the held publish')
    // in the order received, an alias is used only after a PUBLISH with a topic set it
    const known = new Map<number, string>()
    for (const p of publishes(sub)) {
      const alias: number | undefined = p.properties?.topicAlias
      if (p.topic !== '') { if (alias !== undefined) known.set(alias, p.topic); continue }
      expect(alias !== undefined && known.has(alias)).toBe(true)
    }
  })

  it('a client without Receive Maximum gets every publish without acknowledging', async () => {
    const raw = await openRaw(node, 5)
    raw.send(connectPacket(5, { clientId: 'fc-default' }))
    await raw.next('connack')
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'fc/default', qos: 1 }] })
    await raw.next('suback')
    const pub = await connect(node, { protocolVersion: 5 })
    for (let i = 0; i < 30; i++) await pub.publishAsync('fc/default', String(i), { qos: 1 })
    await waitFor(() => publishes(raw, 1).length === 30, 'thirty publishes')
  })
})
