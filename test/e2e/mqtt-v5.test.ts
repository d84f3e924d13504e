/**
 * MQTT 5 features end to end with real mqtt.js clients (MQTT 5.0 §3.1.2.11, §3.2.2.3,
 * §3.3.2.3, §3.8.3.1): message expiry, subscription options and identifiers, properties,
 * topic aliases both ways and the capabilities advertised in CONNACK.
 */
import type { MqttClient } from 'mqtt'
import { startTestNode, connect, closeClients, nextMessage, waitFor, payloads, type TestNode } from '../helpers/node.js'
import { open, leave, until, marker, closeOpened, openRaw, connectPacket } from '../helpers/mqtt.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode() })
afterAll(async () => { await node.destroy() })
afterEach(async () => {
  await closeOpened()
  await closeClients()
})

describe('Message Expiry Interval', () => {
  it('drops a message that expired while queued for an offline session', async () => {
    const session = { protocolVersion: 5 as const, clientId: 'expiry-drop', clean: false, properties: { sessionExpiryInterval: 60 } }
    const first = await open(node, session)
    await first.client.subscribeAsync('expiry/drop/t', { qos: 1 })
    await leave(first.client)
    const pub = await connect(node, { protocolVersion: 5 })
    const publishedAt = Date.now()
    await pub.publishAsync('expiry/drop/t', 'short-lived', { qos: 1, properties: { messageExpiryInterval: 1 } })
    await pub.publishAsync('expiry/drop/t', 'no expiry', { qos: 1 })
    await until(publishedAt + 1500, 'the message to expire')

    const again = await open(node, session)
    expect(again.connack.sessionPresent).toBe(true)
    await waitFor(() => again.messages.length > 0, 'the unexpired message')
    // queued in order, so the expired one would have come first
    expect(payloads(again.messages, 'expiry/drop/t')).toEqual(['no expiry'])
  })

  it('delivers a queued message with the remaining interval, not the original one', async () => {
    const session = { protocolVersion: 5 as const, clientId: 'expiry-left', clean: false, properties: { sessionExpiryInterval: 60 } }
    const first = await open(node, session)
    await first.client.subscribeAsync('expiry/left/t', { qos: 1 })
    await leave(first.client)
    const pub = await connect(node, { protocolVersion: 5 })
    const publishedAt = Date.now()
    await pub.publishAsync('expiry/left/t', 'ten seconds', { qos: 1, properties: { messageExpiryInterval: 10 } })
    await until(publishedAt + 1100, 'more than a second to pass')

    const again = await open(node, session)
    await waitFor(() => again.messages.length > 0, 'the queued message')
    const left = again.messages[0].packet.properties?.messageExpiryInterval
    expect(left).toBeGreaterThanOrEqual(1)
    expect(left).toBeLessThan(10)
  })

  it('does not deliver a retained message once its expiry interval has passed', async () => {
    const pub = await connect(node, { protocolVersion: 5 })
    const publishedAt = Date.now()
    await pub.publishAsync('expiry/retained/short', 'gone soon', { qos: 1, retain: true, properties: { messageExpiryInterval: 1 } })
    await pub.publishAsync('expiry/retained/kept', 'stays', { qos: 1, retain: true })
    await until(publishedAt + 1500, 'the retained message to expire')

    const sub = await open(node, { protocolVersion: 5 })
    await sub.client.subscribeAsync('expiry/retained/+', { qos: 1 })
    // both retained messages come from one pass over the store, and the expired one was stored first
    await waitFor(() => sub.messages.some(m => m.payload.toString() === 'stays'), 'the unexpired retained message')
    await marker(sub, pub, 'expiry/retained/marker')
    expect(sub.messages.filter(m => m.packet.retain).map(m => m.payload.toString())).toEqual(['stays'])
    await pub.publishAsync('expiry/retained/kept', '', { qos: 1, retain: true })
  })
})

describe('subscription options and identifiers', () => {
  it('echoes the Subscription Identifier of the matching subscription', async () => {
    const sub = await open(node, { protocolVersion: 5 })
    await sub.client.subscribeAsync('subid/with', { qos: 1, properties: { subscriptionIdentifier: 7 } })
    await sub.client.subscribeAsync('subid/without', { qos: 1 })
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('subid/with', 'a', { qos: 1 })
    await pub.publishAsync('subid/without', 'b', { qos: 1 })
    await waitFor(() => sub.messages.length >= 2, 'both messages')
    const byTopic = Object.fromEntries(sub.messages.map(m => [m.topic, m.packet.properties?.subscriptionIdentifier]))
    expect(byTopic['subid/with']).toBe(7)
    expect(byTopic['subid/without']).toBeUndefined()
  })

  it('carries the identifiers of every matching subscription when overlapping subscriptions deliver one copy', async () => {
    const sub = await open(node, { protocolVersion: 5 })
    await sub.client.subscribeAsync('subid/ov/#', { qos: 1, properties: { subscriptionIdentifier: 7 } })
    await sub.client.subscribeAsync('subid/ov/+', { qos: 1, properties: { subscriptionIdentifier: 9 } })
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('subid/ov/x', 'once', { qos: 1 })
    await marker(sub, pub, 'subid/ov/marker/end')
    const copies = sub.messages.filter(m => m.topic === 'subid/ov/x')
    // [MQTT-3.3.4-3..5]: one copy with both identifiers, or one copy per subscription with its own
    const ids = copies.flatMap(m => [m.packet.properties?.subscriptionIdentifier ?? []].flat())
    expect([...ids].sort()).toEqual([7, 9])
  })

  it('does not send a No Local subscriber its own messages', async () => {
    const self = await open(node, { protocolVersion: 5 })
    await self.client.subscribeAsync('nolocal/t', { qos: 1, nl: true })
    await self.client.subscribeAsync('nolocal/marker', { qos: 1 })
    const other = await connect(node, { protocolVersion: 5 })
    await self.client.publishAsync('nolocal/t', 'own', { qos: 1 })
    await other.publishAsync('nolocal/t', 'other', { qos: 1 })
    // own message first: when the marker (also its own, on a normal subscription) arrives, 'own' would be in
    await self.client.publishAsync('nolocal/marker', 'marker', { qos: 1 })
    await waitFor(() => self.messages.some(m => m.topic === 'nolocal/marker') && self.messages.some(m => m.topic === 'nolocal/t'), 'marker and the other client\'s message')
    expect(payloads(self.messages, 'nolocal/t')).toEqual(['other'])
  })

  it('keeps the RETAIN flag on live messages for Retain As Published and clears it otherwise', async () => {
    const asPublished = await open(node, { protocolVersion: 5 })
    await asPublished.client.subscribeAsync('rap/t', { qos: 1, rap: true })
    const plain = await open(node, { protocolVersion: 5 })
    await plain.client.subscribeAsync('rap/t', { qos: 1 })
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('rap/t', 'retained live', { qos: 1, retain: true })
    await waitFor(() => asPublished.messages.length > 0 && plain.messages.length > 0, 'both deliveries')
    expect(asPublished.messages[0].packet.retain).toBe(true)
    expect(plain.messages[0].packet.retain).toBe(false)
    await pub.publishAsync('rap/t', '', { qos: 1, retain: true })
  })

  describe('Retain Handling', () => {
    let pub: MqttClient
    beforeEach(async () => {
      pub = await connect(node, { protocolVersion: 5 })
      await pub.publishAsync('rh/t', 'retained', { qos: 1, retain: true })
    })
    afterEach(async () => { await pub.publishAsync('rh/t', '', { qos: 1, retain: true }) })

    /**
     * Subscribes twice to rh/t with `rh` and returns how many retained copies came with each
     * SUBSCRIBE. Retained copies are sent after the SUBACK, so a marker from another client
     * is no fence for them: the expected copies are awaited, then the marker shows no extra.
     */
    async function retainedPerSubscribe (rh: 0 | 1 | 2, expected: [number, number]): Promise<number[]> {
      const sub = await open(node, { protocolVersion: 5 })
      await sub.client.subscribeAsync('rh/marker', { qos: 1 })
      const counts: number[] = []
      for (let round = 0; round < 2; round++) {
        const before = sub.messages.length
        const retained = (): number => sub.messages.slice(before).filter(m => m.topic === 'rh/t' && m.packet.retain).length
        await sub.client.subscribeAsync('rh/t', { qos: 1, rh })
        await waitFor(() => retained() >= expected[round], `${expected[round]} retained copies`)
        await pub.publishAsync('rh/marker', `m${round}`, { qos: 1 })
        await waitFor(() => sub.messages.some(m => m.topic === 'rh/marker' && m.payload.toString() === `m${round}`), 'marker')
        counts.push(retained())
      }
      return counts
    }

    it('0: sends retained messages at every subscribe', async () => {
      expect(await retainedPerSubscribe(0, [1, 1])).toEqual([1, 1])
    })

    it('1: sends retained messages only for a new subscription', async () => {
      expect(await retainedPerSubscribe(1, [1, 0])).toEqual([1, 0])
    })

    it('2: never sends retained messages at subscribe', async () => {
      expect(await retainedPerSubscribe(2, [0, 0])).toEqual([0, 0])
    })
  })
})

describe('request/response properties', () => {
  it('carries user properties, content type, payload format, response topic and correlation data end to end', async () => {
    const responder = await open(node, { protocolVersion: 5 })
    await responder.client.subscribeAsync('service/request', { qos: 1 })
    responder.client.on('message', (_topic, payload, packet) => {
      const p = packet.properties ?? {}
      if (p.responseTopic === undefined) return
      responder.client.publish(p.responseTopic, `re: ${payload.toString()}`, {
        qos: 1,
        properties: { correlationData: p.correlationData, contentType: 'text/plain', userProperties: { handledBy: 'responder' } }
      })
    })
    const requester = await open(node, { protocolVersion: 5 })
    await requester.client.subscribeAsync('service/response/requester-1', { qos: 1 })

    const correlationData = Buffer.from([0, 1, 2, 0xfe, 0xff])
    await requester.client.publishAsync('service/request', '{"op":"ping"}', {
      qos: 1,
      properties: {
        responseTopic: 'service/response/requester-1',
        correlationData,
        contentType: 'application/json',
        payloadFormatIndicator: true,
        userProperties: { trace: 'abc', tags: ['x', 'y'] }
      }
    })

    await waitFor(() => responder.messages.length > 0 && requester.messages.length > 0, 'request and response')
    const request = responder.messages[0].packet.properties
    expect(request.responseTopic).toBe('service/response/requester-1')
    expect(Buffer.from(request.correlationData)).toEqual(correlationData)
    expect(request.contentType).toBe('application/json')
    expect(request.payloadFormatIndicator).toBe(true)
    expect(request.userProperties).toEqual({ trace: 'abc', tags: ['x', 'y'] })

    const response = requester.messages[0]
    expect(response.payload.toString()).toBe('re: {"op":"ping"}')
    expect(Buffer.from(response.packet.properties.correlationData)).toEqual(correlationData)
    expect(response.packet.properties.contentType).toBe('text/plain')
    expect(response.packet.properties.userProperties).toEqual({ handledBy: 'responder' })
  })
})

describe('topic aliases', () => {
  it('resolves a client\'s topic alias: a publish with an empty topic and the alias reaches subscribers with the full topic', async () => {
    const sub = await open(node, { protocolVersion: 4 })
    await sub.client.subscribeAsync('alias/in/t', { qos: 1 })
    const pub = await open(node, { protocolVersion: 5 })
    const sent: Array<[string, number | undefined]> = []
    pub.client.on('packetsend', (p: any) => { if (p.cmd === 'publish') sent.push([p.topic, p.properties?.topicAlias]) })
    await pub.client.publishAsync('alias/in/t', 'first', { qos: 1, properties: { topicAlias: 3 } })
    await pub.client.publishAsync('', 'second', { qos: 1, properties: { topicAlias: 3 } })
    expect(sent).toEqual([['alias/in/t', 3], ['', 3]])
    await waitFor(() => sub.messages.length >= 2, 'both messages')
    expect(sub.messages.map(m => [m.topic, m.payload.toString()])).toEqual([['alias/in/t', 'first'], ['alias/in/t', 'second']])
  })

  it('disconnects a client using a topic alias above mqtt.max_topic_alias with 0x94', async () => {
    const small = await startTestNode({ 'mqtt.max_topic_alias': '5' })
    try {
      const raw = await openRaw(small, 5)
      raw.send(connectPacket(5, { clientId: 'alias-over' }))
      await raw.next('connack')
      expect(raw.packets[0].properties?.topicAliasMaximum).toBe(5)
      raw.send({ cmd: 'publish', topic: 'alias/over', payload: Buffer.from('x'), qos: 0, retain: false, dup: false, properties: { topicAlias: 6 } })
      await waitFor(raw.closed, 'the connection to close')
      expect(raw.packets.find(p => p.cmd === 'disconnect')?.reasonCode).toBe(0x94)
    } finally {
      await closeOpened()
      await small.destroy()
    }
  })

  it('sends a subscriber that accepts aliases the topic once, then an empty topic with the alias', async () => {
    const sub = await open(node, { protocolVersion: 5, properties: { topicAliasMaximum: 10 } })
    const wire: Array<[string, number | undefined]> = []
    // copied when the packet arrives: mqtt.js writes the resolved topic into the packet afterwards
    sub.client.on('packetreceive', (p: any) => { if (p.cmd === 'publish') wire.push([p.topic, p.properties?.topicAlias]) })
    await sub.client.subscribeAsync('alias/out/t', { qos: 0 })
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('alias/out/t', 'one', { qos: 0 })
    await pub.publishAsync('alias/out/t', 'two', { qos: 0 })
    await waitFor(() => sub.messages.length >= 2, 'both messages')
    expect(wire).toHaveLength(2)
    const alias = wire[0][1]
    expect(alias).toBeGreaterThanOrEqual(1)
    expect(alias).toBeLessThanOrEqual(10)
    expect(wire).toEqual([['alias/out/t', alias], ['', alias]])
    expect(sub.messages.map(m => [m.topic, m.payload.toString()])).toEqual([['alias/out/t', 'one'], ['alias/out/t', 'two']])
  })
})

describe('CONNACK', () => {
  it('advertises the configured limits and capabilities', async () => {
    const limited = await startTestNode({
      'mqtt.max_inflight': '7',
      'mqtt.max_topic_alias': '9',
      'mqtt.max_packet_size': '4096',
      'mqtt.max_qos_allowed': '1'
    })
    try {
      const { connack } = await open(limited, { protocolVersion: 5 })
      expect(connack.reasonCode).toBe(0)
      expect(connack.properties).toMatchObject({
        sharedSubscriptionAvailable: true,
        receiveMaximum: 7,
        topicAliasMaximum: 9,
        maximumPacketSize: 4096,
        maximumQoS: 1
      })
    } finally {
      await closeOpened()
      await limited.destroy()
    }
  })

  it('advertises the defaults, without Maximum QoS when QoS 2 is allowed', async () => {
    const { connack } = await open(node, { protocolVersion: 5 })
    expect(connack.properties).toMatchObject({
      sharedSubscriptionAvailable: true,
      receiveMaximum: 32,
      topicAliasMaximum: 65535,
      maximumPacketSize: 1024 * 1024
    })
    expect(connack.properties.maximumQoS).toBeUndefined()
  })
})

describe('Server Keep Alive', () => {
  let keepaliveNode: TestNode
  beforeAll(async () => { keepaliveNode = await startTestNode({ 'mqtt.server_keepalive': '60s' }) })
  afterAll(async () => { await keepaliveNode.destroy() })

  it('tells an MQTT 5 client asking for 120 s to use mqtt.server_keepalive', async () => {
    const { connack } = await open(keepaliveNode, { protocolVersion: 5, keepalive: 120 })
    expect(connack.properties?.serverKeepAlive).toBe(60)
  })

  it('still accepts an MQTT 3.1.1 client asking for 120 s', async () => {
    const { client, connack } = await open(keepaliveNode, { protocolVersion: 4, keepalive: 120 })
    expect(connack.returnCode).toBe(0)
    const arrived = nextMessage(client)
    await client.subscribeAsync('keepalive/v4', { qos: 1 })
    await client.publishAsync('keepalive/v4', 'ok', { qos: 1 })
    expect((await arrived).payload.toString()).toBe('ok')
  })
})
