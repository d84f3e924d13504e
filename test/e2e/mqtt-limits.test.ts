/**
 * The `mqtt.*` limits as a client meets them on the wire: Receive Maximum, packet sizes, client
 * id length, topic levels, maximum QoS, invalid filters, retain and wildcard availability
 * (MQTT 5.0 §3.1.2.11, §3.2.2.3, §3.9.3, §4.9, §4.13; MQTT 3.1.1 §3.9.3).
 *
 * Each block starts its own node with the limit under test. Raw sockets send what mqtt.js
 * refuses to send (invalid filters) or would complete on its own (QoS 2 flows).
 */
import { connect, closeClients, nextMessage, waitFor, type TestNode } from '../helpers/node.js'
import { open, refusedConnack, suback, nodeWith, closeOpened, openRawSession } from '../helpers/mqtt.js'

afterEach(async () => {
  await closeOpened()
  await closeClients()
})

function publishPacket (messageId: number, fields: Record<string, any> = {}): any {
  return { cmd: 'publish', topic: 'limits/inflight', payload: Buffer.from(`m${messageId}`), qos: 2, retain: false, dup: false, messageId, ...fields }
}

/** Proves a pair of fresh clients still exchange messages on `node`. */
async function stillServes (node: TestNode, protocolVersion: 4 | 5, topic: string): Promise<void> {
  const sub = await connect(node, { protocolVersion })
  await sub.subscribeAsync(topic, { qos: 1 })
  const pub = await connect(node, { protocolVersion })
  const arrived = nextMessage(sub)
  await pub.publishAsync(topic, 'still working', { qos: 1 })
  expect((await arrived).payload.toString()).toBe('still working')
}

describe('Receive Maximum (mqtt.max_inflight = 3)', () => {
  const node = nodeWith({ 'mqtt.max_inflight': '3' })

  it('disconnects an MQTT 5 client with 0x93 when a 4th QoS 2 PUBLISH arrives while 3 are unacknowledged', async () => {
    const raw = await openRawSession(node(), 5, 'inflight-over')
    for (const id of [1, 2, 3]) raw.send(publishPacket(id))
    // three PUBRECs: all three are in flight (no PUBREL is ever sent, so none completes)
    expect((await raw.next('pubrec', 3))?.messageId).toBe(3)
    raw.send(publishPacket(4))
    await waitFor(raw.closed, 'the connection to close')
    expect(raw.packets.find(p => p.cmd === 'disconnect')?.reasonCode).toBe(0x93)
    expect(raw.packets.filter(p => p.cmd === 'pubrec').map(p => p.messageId)).toEqual([1, 2, 3])
  })

  it('accepts another QoS 2 PUBLISH once one of the 3 in flight has completed', async () => {
    const raw = await openRawSession(node(), 5, 'inflight-within')
    for (const id of [1, 2, 3]) raw.send(publishPacket(id))
    await raw.next('pubrec', 3)
    raw.send({ cmd: 'pubrel', messageId: 1 })
    expect((await raw.next('pubcomp'))?.messageId).toBe(1)
    raw.send(publishPacket(4))
    expect((await raw.next('pubrec', 4))?.messageId).toBe(4)
    expect(raw.closed()).toBe(false)
    expect(raw.packets.some(p => p.cmd === 'disconnect')).toBe(false)
  })
})

describe('mqtt.max_packet_size = 1024', () => {
  const node = nodeWith({ 'mqtt.max_packet_size': '1024' })
  const big = Buffer.alloc(2000, 'x')

  it('disconnects an MQTT 5 client publishing a larger packet with 0x95 and keeps serving others', async () => {
    const sub = await open(node(), { protocolVersion: 5 })
    await sub.client.subscribeAsync('limits/size/#', { qos: 0 })
    const sender = await open(node(), { protocolVersion: 5 })
    sender.client.publish('limits/size/big', big, { qos: 0 })
    await waitFor(sender.closed, 'the sender to be disconnected')
    expect(sender.disconnect()?.reasonCode).toBe(0x95)
    expect(sub.messages.filter(m => m.topic === 'limits/size/big')).toHaveLength(0)
    expect(sub.closed()).toBe(false)
    await stillServes(node(), 5, 'limits/size/after/v5')
  })

  it('closes an MQTT 3.1.1 client publishing a larger packet and keeps serving others', async () => {
    const sender = await open(node(), { protocolVersion: 4 })
    sender.client.publish('limits/size/big', big, { qos: 0 })
    await waitFor(sender.closed, 'the sender to be closed')
    await stillServes(node(), 4, 'limits/size/after/v4')
  })

  it('does not send a subscriber a message above its own Maximum Packet Size, but sends smaller ones', async () => {
    const sub = await open(node(), { protocolVersion: 5, properties: { maximumPacketSize: 200 } })
    await sub.client.subscribeAsync('limits/client-size', { qos: 1 })
    const pub = await connect(node(), { protocolVersion: 5 })
    await pub.publishAsync('limits/client-size', Buffer.alloc(500, 'b'), { qos: 1 })
    await pub.publishAsync('limits/client-size', 'small', { qos: 1 })
    await waitFor(() => sub.messages.length > 0 || sub.closed(), 'the small message')
    expect(sub.messages.map(m => m.payload.toString())).toEqual(['small'])
    expect(sub.closed()).toBe(false)
  })
})

describe('mqtt.max_clientid_len = 23', () => {
  const node = nodeWith({ 'mqtt.max_clientid_len': '23' })
  const tooLong = 'c'.repeat(24)

  it('refuses a longer client id with CONNACK 0x85 (MQTT 5)', async () => {
    const connack = await refusedConnack(node(), { protocolVersion: 5, clientId: tooLong })
    expect(connack?.reasonCode).toBe(0x85)
  })

  it('refuses a longer client id with CONNACK return code 2 (MQTT 3.1.1)', async () => {
    const connack = await refusedConnack(node(), { protocolVersion: 4, clientId: tooLong })
    expect(connack?.returnCode).toBe(2)
  })

  it('accepts a client id of exactly the limit', async () => {
    const { connack } = await open(node(), { protocolVersion: 5, clientId: 'c'.repeat(23) })
    expect(connack.reasonCode).toBe(0)
  })
})

describe('mqtt.max_topic_levels = 3', () => {
  const node = nodeWith({ 'mqtt.max_topic_levels': '3' })

  it.each([[5, 0x8f], [4, 0x80]] as const)('MQTT v%i: refuses a deeper filter with %i and grants one within the limit', async (protocolVersion, code) => {
    const { client } = await open(node(), { protocolVersion })
    expect(await suback(client, { 'a/b/c/d': { qos: 1 }, 'a/b/c': { qos: 1 } })).toEqual([code, 1])
  })

  it('counts the levels of a shared subscription\'s real filter, not of the $share/<group>/ prefix', async () => {
    const { client } = await open(node(), { protocolVersion: 5 })
    expect(await suback(client, { '$share/g/a/b/c': { qos: 1 }, '$share/g/a/b/c/d': { qos: 1 } })).toEqual([1, 0x8f])
  })
})

describe('mqtt.max_qos_allowed = 1', () => {
  const node = nodeWith({ 'mqtt.max_qos_allowed': '1' })

  it.each([5, 4] as const)('MQTT v%i: grants a QoS 2 subscription at QoS 1', async (protocolVersion) => {
    const { client } = await open(node(), { protocolVersion })
    expect(await suback(client, { 'limits/qos/t': { qos: 2 } })).toEqual([1])
  })

  it('disconnects an MQTT 5 client that publishes at QoS 2 with 0x9B', async () => {
    const sender = await open(node(), { protocolVersion: 5 })
    sender.client.publish('limits/qos/t', 'too high', { qos: 2 })
    await waitFor(sender.closed, 'the sender to be disconnected')
    expect(sender.disconnect()?.reasonCode).toBe(0x9b)
  })
})

describe('invalid topic filters', () => {
  const node = nodeWith({})
  const invalid = ['a/#/b', 'a+', '#a']

  it.each([[5, 0x8f], [4, 0x80]] as const)('MQTT v%i: refuses each invalid filter with %i and grants the valid one in the same SUBSCRIBE, which works', async (protocolVersion, code) => {
    const raw = await openRawSession(node(), protocolVersion, `invalid-filters-${protocolVersion}`)
    raw.send({
      cmd: 'subscribe',
      messageId: 7,
      subscriptions: [...invalid, `valid/${protocolVersion}/+`].map(topic => ({ topic, qos: 0 }))
    })
    const ack = await raw.next('suback')
    expect(ack?.messageId).toBe(7)
    expect(ack?.granted).toEqual([code, code, code, 0])
    const pub = await connect(node(), { protocolVersion })
    await pub.publishAsync(`valid/${protocolVersion}/x`, 'granted', { qos: 1 })
    const msg = await raw.next('publish')
    expect([msg?.topic, msg?.payload.toString()]).toEqual([`valid/${protocolVersion}/x`, 'granted'])
    expect(raw.closed()).toBe(false)
  })
})

describe('mqtt.retain_available = false', () => {
  const node = nodeWith({ 'mqtt.retain_available': 'false' })

  it('says Retain Available = false in CONNACK', async () => {
    const { connack } = await open(node(), { protocolVersion: 5 })
    expect(connack.properties?.retainAvailable).toBe(false)
  })

  it('disconnects an MQTT 5 client that publishes a retained message with 0x9A, and stores nothing', async () => {
    const sender = await open(node(), { protocolVersion: 5 })
    sender.client.publish('limits/retain/t', 'keep me', { qos: 1, retain: true })
    await waitFor(sender.closed, 'the sender to be disconnected')
    expect(sender.disconnect()?.reasonCode).toBe(0x9a)
    const late = await open(node(), { protocolVersion: 5 })
    await late.client.subscribeAsync('limits/retain/t', { qos: 1 })
    const pub = await connect(node(), { protocolVersion: 5 })
    await pub.publishAsync('limits/retain/t', 'live', { qos: 1 })
    await waitFor(() => late.messages.length > 0, 'the live message')
    expect(late.messages.map(m => m.payload.toString())).toEqual(['live'])
  })
})

describe('mqtt.wildcard_subscription = false', () => {
  const node = nodeWith({ 'mqtt.wildcard_subscription': 'false' })

  it('says Wildcard Subscription Available = false in CONNACK', async () => {
    const { connack } = await open(node(), { protocolVersion: 5 })
    expect(connack.properties?.wildcardSubscriptionAvailable).toBe(false)
  })

  it('MQTT v5: a SUBSCRIBE with a wildcard filter is a Protocol Error once the CONNACK said so: DISCONNECT 0xA2 (3.2.2.3.11)', async () => {
    const opened = await open(node(), { protocolVersion: 5 })
    opened.client.subscribe({ 'a/+': { qos: 1 }, 'a/b': { qos: 1 } }, () => undefined)
    await waitFor(() => opened.closed(), 'the close')
    expect(opened.disconnect()?.reasonCode).toBe(0xa2)
  })

  it('MQTT v4: refuses a wildcard filter with 0x80 and grants a plain one', async () => {
    const { client } = await open(node(), { protocolVersion: 4 })
    expect(await suback(client, { 'a/+': { qos: 1 }, 'a/b': { qos: 1 } })).toEqual([0x80, 1])
  })

  it('MQTT v4: answers every filter of a SUBSCRIBE, also two refused ones that differ only in their wildcards', async () => {
    const { client } = await open(node(), { protocolVersion: 4 })
    // [MQTT-3.9.3-1] one reason code per filter, in order
    expect(await suback(client, { 'a/+': { qos: 1 }, 'a/#': { qos: 1 }, 'a/b': { qos: 1 } })).toEqual([0x80, 0x80, 1])
  })
})
