/**
 * The `mqtt.*` limits as a client meets them on the wire: Receive Maximum, packet sizes, client
 * id length, topic levels, maximum QoS, invalid filters, retain and wildcard availability
 * (MQTT 5.0 §3.1.2.11, §3.2.2.3, §3.9.3, §4.9, §4.13; MQTT 3.1.1 §3.9.3).
 *
 * Each block starts its own node with the limit under test. Raw sockets send what mqtt.js
 * refuses to send (invalid filters) or would complete on its own (QoS 2 flows).
 */
import net from 'node:net'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import mqttPacket from 'mqtt-packet'
import { startTestNode, connect, closeClients, collect, nextMessage, waitFor, type Received, type TestNode } from '../helpers/node.js'

afterEach(async () => {
  await closeOpened()
  await closeClients()
})

/** Starts a node with `overrides` for the tests of one describe block. */
function nodeWith (overrides: Record<string, string>): () => TestNode {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode(overrides) })
  afterAll(async () => { await node.destroy() })
  return () => node
}

const opened = new Set<MqttClient>()
const raws = new Set<net.Socket>()

async function closeOpened (): Promise<void> {
  await Promise.all([...opened].map(c => new Promise<void>(resolve => c.end(true, {}, () => resolve()))))
  opened.clear()
  for (const s of raws) s.destroy()
  raws.clear()
}

/** An mqtt.js client with its CONNACK, messages, the DISCONNECT it got (if any) and whether it closed. */
interface Watched { client: MqttClient, connack: any, messages: Received[], disconnect: () => any, closed: () => boolean }

async function open (node: TestNode, opts: IClientOptions): Promise<Watched> {
  const client = mqtt.connect({ host: '127.0.0.1', port: node.port('mqtt:tcp'), reconnectPeriod: 0, connectTimeout: 5000, ...opts })
  opened.add(client)
  const messages = collect(client)
  let disconnect: any = null
  let closed = false
  client.on('disconnect', (p) => { disconnect = p })
  client.on('close', () => { closed = true })
  client.on('error', () => {})
  const connack = await new Promise<any>((resolve, reject) => {
    client.once('connect', resolve)
    client.once('close', () => reject(new Error('connection closed before CONNACK')))
  })
  return { client, connack, messages, disconnect: () => disconnect, closed: () => closed }
}

/** Connects and resolves with the CONNACK of a connection the broker refuses (and closes). */
async function refusedConnack (node: TestNode, opts: IClientOptions): Promise<any> {
  const client = mqtt.connect({ host: '127.0.0.1', port: node.port('mqtt:tcp'), reconnectPeriod: 0, connectTimeout: 5000, ...opts })
  opened.add(client)
  let connack: any = null
  client.on('packetreceive', (p: any) => { if (p.cmd === 'connack') connack = p })
  client.on('error', () => {})
  await new Promise<void>((resolve) => client.once('close', () => resolve()))
  return connack
}

/** SUBSCRIBEs and resolves with the SUBACK's reason codes, failures included (mqtt.js rejects on those). */
async function suback (client: MqttClient, subs: Record<string, { qos: 0 | 1 | 2 }>): Promise<number[]> {
  return await new Promise((resolve, reject) => {
    client.subscribe(subs, (err: any, _granted: any, packet: any) => {
      if (packet?.granted) resolve(packet.granted)
      else reject(err ?? new Error('no SUBACK'))
    })
  })
}

/** A bare MQTT socket that sends exactly the packets a test writes and records what comes back. */
interface Raw { packets: any[], closed: () => boolean, send: (packet: any) => void, next: (cmd: string, n?: number) => Promise<any> }

async function openRaw (node: TestNode, protocolVersion: 4 | 5, clientId: string): Promise<Raw> {
  const socket = net.connect(node.port('mqtt:tcp'), '127.0.0.1')
  raws.add(socket)
  const packets: any[] = []
  let closed = false
  const parser = mqttPacket.parser({ protocolVersion })
  parser.on('packet', (p: any) => packets.push(p))
  parser.on('error', () => socket.destroy())
  socket.on('data', (d) => parser.parse(d))
  socket.on('close', () => { closed = true })
  socket.on('error', () => {})
  await new Promise<void>((resolve, reject) => { socket.once('connect', () => resolve()); socket.once('error', reject) })
  const raw: Raw = {
    packets,
    closed: () => closed,
    send: (p) => socket.write(mqttPacket.generate(p, { protocolVersion })),
    /** The n-th (1-based) packet of type `cmd`, once it has arrived. */
    next: async (cmd, n = 1) => {
      const nth = (): any => packets.filter(p => p.cmd === cmd)[n - 1]
      await waitFor(() => nth() !== undefined || closed, `${cmd} #${n}`)
      return nth()
    }
  }
  raw.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, keepalive: 0, clientId })
  const connack = await raw.next('connack')
  expect(connack?.[protocolVersion === 5 ? 'reasonCode' : 'returnCode']).toBe(0)
  return raw
}

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
    const raw = await openRaw(node(), 5, 'inflight-over')
    for (const id of [1, 2, 3]) raw.send(publishPacket(id))
    // three PUBRECs: all three are in flight (no PUBREL is ever sent, so none completes)
    expect((await raw.next('pubrec', 3))?.messageId).toBe(3)
    raw.send(publishPacket(4))
    await waitFor(raw.closed, 'the connection to close')
    expect(raw.packets.find(p => p.cmd === 'disconnect')?.reasonCode).toBe(0x93)
    expect(raw.packets.filter(p => p.cmd === 'pubrec').map(p => p.messageId)).toEqual([1, 2, 3])
  })

  it('accepts another QoS 2 PUBLISH once one of the 3 in flight has completed', async () => {
    const raw = await openRaw(node(), 5, 'inflight-within')
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
    const raw = await openRaw(node(), protocolVersion, `invalid-filters-${protocolVersion}`)
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

  it.each([[5, 0xa2], [4, 0x80]] as const)('MQTT v%i: refuses a wildcard filter with %i and grants a plain one', async (protocolVersion, code) => {
    const { client } = await open(node(), { protocolVersion })
    expect(await suback(client, { 'a/+': { qos: 1 }, 'a/b': { qos: 1 } })).toEqual([code, 1])
  })

  it.each([[5, 0xa2], [4, 0x80]] as const)('MQTT v%i: answers every filter of a SUBSCRIBE, also two refused ones that differ only in their wildcards', async (protocolVersion, code) => {
    const { client } = await open(node(), { protocolVersion })
    // [MQTT-3.9.3-1] one reason code per filter, in order
    expect(await suback(client, { 'a/+': { qos: 1 }, 'a/#': { qos: 1 }, 'a/b': { qos: 1 } })).toEqual([code, code, 1])
  })
})
