import { startTestNode, connect, closeClients, nextMessage, collect, waitFor, type TestNode } from '../helpers/node.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode() })
afterAll(async () => { await node.destroy() })
afterEach(async () => { await closeClients() })

describe.each([
  ['3.1.1', 4],
  ['5.0', 5]
] as const)('MQTT %s', (_name, protocolVersion) => {
  it.each([0, 1, 2] as const)('delivers a QoS %i publish to a subscriber at the granted QoS', async (qos) => {
    const sub = await connect(node, { protocolVersion, clientId: `sub-${protocolVersion}-${qos}` })
    const granted = await sub.subscribeAsync(`q/${qos}/+`, { qos })
    expect(granted[0].qos).toBe(qos)
    const pub = await connect(node, { protocolVersion })
    const arrived = nextMessage(sub)
    await pub.publishAsync(`q/${qos}/x`, 'hello', { qos })
    const msg = await arrived
    expect(msg.topic).toBe(`q/${qos}/x`)
    expect(msg.payload.toString()).toBe('hello')
    expect(msg.packet.qos).toBe(qos)
  })

  it('downgrades delivery to the subscription QoS', async () => {
    const sub = await connect(node, { protocolVersion })
    await sub.subscribeAsync('down/t', { qos: 0 })
    const pub = await connect(node, { protocolVersion })
    const arrived = nextMessage(sub)
    await pub.publishAsync('down/t', 'x', { qos: 2 })
    expect((await arrived).packet.qos).toBe(0)
  })

  it('delivers a retained message to a later subscriber and clears it with an empty payload', async () => {
    const pub = await connect(node, { protocolVersion })
    await pub.publishAsync(`ret/${protocolVersion}`, 'kept', { qos: 1, retain: true })
    const sub = await connect(node, { protocolVersion })
    const arrived = nextMessage(sub)
    await sub.subscribeAsync(`ret/${protocolVersion}`, { qos: 1 })
    const msg = await arrived
    expect(msg.payload.toString()).toBe('kept')
    expect(msg.packet.retain).toBe(true)
    await pub.publishAsync(`ret/${protocolVersion}`, '', { qos: 1, retain: true })
    const late = await connect(node, { protocolVersion })
    const got = collect(late)
    await late.subscribeAsync(`ret/${protocolVersion}`, { qos: 1 })
    // a marker published after the subscribe proves no retained message came first
    await pub.publishAsync(`ret/${protocolVersion}`, 'live', { qos: 1 })
    await waitFor(() => got.length > 0, 'live message')
    expect(got.map(m => m.payload.toString())).toEqual(['live'])
  })

  it('never matches $-topics with a wildcard at the first level', async () => {
    const sub = await connect(node, { protocolVersion })
    const got = collect(sub)
    await sub.subscribeAsync('#')
    await sub.subscribeAsync('+/dollar')
    const exact = await connect(node, { protocolVersion })
    await exact.subscribeAsync('$app/dollar')
    const exactGot = collect(exact)
    const pub = await connect(node, { protocolVersion })
    await pub.publishAsync('$app/dollar', 'x', { qos: 1 })
    await pub.publishAsync('plain/dollar', 'y', { qos: 1 })
    // same publisher, so '$app/dollar' would have arrived before 'plain/dollar'
    await waitFor(() => exactGot.length === 1 && got.length >= 1, 'deliveries')
    expect(exactGot[0].topic).toBe('$app/dollar')
    expect(got.map(m => m.topic)).toEqual(['plain/dollar'])
  })

  it('publishes the will when a client drops without DISCONNECT', async () => {
    const watcher = await connect(node, { protocolVersion })
    await watcher.subscribeAsync(`will/${protocolVersion}`)
    const arrived = nextMessage(watcher)
    const dying = await connect(node, { protocolVersion, will: { topic: `will/${protocolVersion}`, payload: Buffer.from('gone'), qos: 1, retain: false } })
    ;(dying as any).stream.destroy()
    expect((await arrived).payload.toString()).toBe('gone')
  })

  it('delivers a message once to a client whose subscriptions overlap', async () => {
    const sub = await connect(node, { protocolVersion })
    const got = collect(sub)
    await sub.subscribeAsync({ 'ov/#': { qos: 1 }, 'ov/+': { qos: 0 }, 'ov/a': { qos: 1 } })
    const pub = await connect(node, { protocolVersion })
    await pub.publishAsync('ov/a', 'once', { qos: 1 })
    await pub.publishAsync('ov/marker/end', 'end', { qos: 1 })
    await waitFor(() => got.some(m => m.topic === 'ov/marker/end'), 'marker')
    expect(got.filter(m => m.topic === 'ov/a')).toHaveLength(1)
  })
})

describe('between protocol versions', () => {
  it.each([[4, 5], [5, 4]] as const)('a v%i publisher reaches a v%i subscriber', async (from, to) => {
    const sub = await connect(node, { protocolVersion: to })
    await sub.subscribeAsync('x/version', { qos: 1 })
    const pub = await connect(node, { protocolVersion: from })
    const arrived = nextMessage(sub)
    await pub.publishAsync('x/version', `from ${from}`, { qos: 1 })
    expect((await arrived).payload.toString()).toBe(`from ${from}`)
  })
})
