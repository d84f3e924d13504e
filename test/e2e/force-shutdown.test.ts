/**
 * `zone.external.force_shutdown_policy` over the wire (issue 22, EMQ X 4.4's
 * `<max queue length>|<max size>`): a client with more messages waiting for it than the
 * policy allows is disconnected, MQTT 5 with DISCONNECT 0x97 Quota exceeded; one with more
 * unsent bytes likewise. Off (the default), the same backlog is kept and the client stays.
 */
import net from 'node:net'
import mqttPacket from 'mqtt-packet'
import { startTestNode, closeClients, connect, waitFor, apiRequest, type TestNode } from '../helpers/node.js'
import { closeOpened, openRaw, connectPacket, type RawClient } from '../helpers/mqtt.js'

/** A raw v5 subscriber to `topic` at QoS 1 with Receive Maximum 1 that acknowledges nothing: the rest waits for it. */
async function stalledSubscriber (node: TestNode, clientId: string, topic: string): Promise<RawClient> {
  const raw = await openRaw(node, 5)
  raw.send(connectPacket(5, { clientId, properties: { receiveMaximum: 1 } }))
  expect((await raw.next('connack')).reasonCode).toBe(0)
  raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 1 }] })
  await raw.next('suback')
  return raw
}

/** Whether the node lists `clientId` as connected. */
async function connected (node: TestNode, clientId: string): Promise<boolean> {
  const res = await apiRequest(node, `/connections/${clientId}`)
  return Array.isArray(res.data) && res.data.length > 0
}

/** Polls `predicate` (which asks the node) until it holds. */
async function eventually (predicate: () => Promise<boolean>, what: string, timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

afterEach(async () => {
  await closeOpened()
  await closeClients()
})

describe('force_shutdown_policy = 5|256KB', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode({ 'zone.external.force_shutdown_policy': '5|256KB' }) })
  afterAll(async () => { await node.destroy() })

  it('disconnects an MQTT 5 client with more than 5 messages waiting for it, with DISCONNECT 0x97 Quota exceeded', async () => {
    const sub = await stalledSubscriber(node, 'fs-queue', 'fs/queue')
    const pub = await connect(node, { protocolVersion: 5 })
    for (let i = 0; i < 10; i++) await pub.publishAsync('fs/queue', `m${i}`, { qos: 1 })
    const disconnect = await sub.next('disconnect')
    expect(disconnect?.reasonCode).toBe(0x97)
    await waitFor(() => sub.closed(), 'the connection closed')
    // the one in flight was sent; the held ones never were
    expect(sub.packets.filter(p => p.cmd === 'publish').length).toBe(1)
  })

  it('keeps a client whose queue stays within the limit', async () => {
    const sub = await stalledSubscriber(node, 'fs-within', 'fs/within')
    const pub = await connect(node, { protocolVersion: 5 })
    for (let i = 0; i < 5; i++) await pub.publishAsync('fs/within', `m${i}`, { qos: 1 })
    await pub.publishAsync('fs/within', 'marker', { qos: 0 })
    await waitFor(() => sub.packets.some(p => p.cmd === 'publish' && p.qos === 0), 'the QoS 0 marker')
    expect(sub.closed()).toBe(false)
    expect(await connected(node, 'fs-within')).toBe(true)
  })

  it('disconnects an MQTT 3.1.1 client that does not read once more than 256 KB wait for it', async () => {
    // a subscriber that stops reading: what the node sends fills the kernel's buffers, then waits in the node
    const socket = net.connect(node.port('mqtt:tcp'), '127.0.0.1')
    socket.on('error', () => {})
    let closed = false
    socket.on('close', () => { closed = true })
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    socket.write(mqttPacket.generate(connectPacket(4, { clientId: 'fs-bytes' })))
    socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'fs/bytes', qos: 0 }] }))
    await new Promise<void>((resolve) => socket.once('data', () => resolve()))
    socket.pause()
    await eventually(async () => await connected(node, 'fs-bytes'), 'the subscriber connected')
    const pub = await connect(node)
    const payload = Buffer.alloc(64 * 1024, 0x61)
    // far more than loopback's buffers hold, a little at a time until the node lets it go
    for (let i = 0; i < 1024 && await connected(node, 'fs-bytes'); i++) await pub.publishAsync('fs/bytes', payload, { qos: 0 })
    await eventually(async () => !(await connected(node, 'fs-bytes')), 'the subscriber disconnected')
    socket.resume()
    await waitFor(() => closed, 'the connection closed')
  })
})

describe('force_shutdown_policy off (the default)', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode() })
  afterAll(async () => { await node.destroy() })

  it('keeps a client however many messages wait for it', async () => {
    const sub = await stalledSubscriber(node, 'fs-off', 'fs/off')
    const pub = await connect(node, { protocolVersion: 5 })
    for (let i = 0; i < 50; i++) await pub.publishAsync('fs/off', `m${i}`, { qos: 1 })
    await pub.publishAsync('fs/off', 'marker', { qos: 0 })
    await waitFor(() => sub.packets.some(p => p.cmd === 'publish' && p.qos === 0), 'the QoS 0 marker')
    expect(sub.closed()).toBe(false)
    expect(sub.packets.some(p => p.cmd === 'disconnect')).toBe(false)
  })
})
