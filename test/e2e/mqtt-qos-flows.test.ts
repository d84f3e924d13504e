import { startTestNode, closeClients, connect, collect, waitFor, type TestNode } from '../helpers/node.js'
import { openRawSession, closeOpened } from '../helpers/mqtt.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode() })
afterAll(async () => { await node.destroy() })
afterEach(async () => { await closeOpened(); await closeClients() })

describe('QoS 1 and 2 flows over a raw connection', () => {
  it.each([4, 5] as const)('answers a retransmitted QoS 2 PUBLISH with PUBREC, publishes it once, and keeps answering (MQTT %i)', async (version) => {
    const sub = await connect(node, { protocolVersion: version })
    const got = collect(sub)
    await sub.subscribeAsync('flow/q2', { qos: 2 })
    const raw = await openRawSession(node, version, `q2-retry-${version}`)
    const publish = { cmd: 'publish', topic: 'flow/q2', payload: Buffer.from('once'), qos: 2, messageId: 7 }
    raw.send(publish)
    expect((await raw.next('pubrec')).messageId).toBe(7)
    // the client did not see the PUBREC and sends the PUBLISH again with DUP [MQTT-4.3.3]
    raw.send({ ...publish, dup: true })
    expect((await raw.next('pubrec', 2)).messageId).toBe(7)
    raw.send({ cmd: 'pubrel', messageId: 7 })
    expect((await raw.next('pubcomp')).messageId).toBe(7)
    // output to this client still flows after the retransmission
    raw.send({ cmd: 'pingreq' })
    await raw.next('pingresp')
    await waitFor(() => got.length >= 1, 'the delivery')
    raw.send({ cmd: 'publish', topic: 'flow/q2', payload: Buffer.from('marker'), qos: 1, messageId: 8 })
    await raw.next('puback')
    await waitFor(() => got.some(m => m.payload.toString() === 'marker'), 'the marker')
    expect(got.filter(m => m.payload.toString() === 'once')).toHaveLength(1)
  })
})

describe('QoS 1 and 2 deliveries to clean sessions', () => {
  it.each([4, 5] as const)('deliver the first time with DUP 0 whatever the publisher sent [MQTT-3.3.1-3], with packet identifiers of their own, at the subscription\'s QoS (MQTT %i)', async (version) => {
    const sub = await connect(node, { protocolVersion: version, clean: true })
    const got = collect(sub)
    await sub.subscribeAsync('flow/dup', { qos: 2 })
    await sub.subscribeAsync('flow/low', { qos: 1 })
    const raw = await openRawSession(node, version, `dup-${version}`)
    // the publisher's own retransmission (DUP 1) is the subscriber's first delivery
    raw.send({ cmd: 'publish', topic: 'flow/dup', payload: Buffer.from('q1'), qos: 1, messageId: 30, dup: true })
    expect((await raw.next('puback')).messageId).toBe(30)
    raw.send({ cmd: 'publish', topic: 'flow/dup', payload: Buffer.from('q2'), qos: 2, messageId: 31, dup: true })
    expect((await raw.next('pubrec')).messageId).toBe(31)
    raw.send({ cmd: 'pubrel', messageId: 31 })
    await raw.next('pubcomp')
    // a QoS 2 message to a QoS 1 subscription of the same topic goes out at QoS 1
    raw.send({ cmd: 'publish', topic: 'flow/low', payload: Buffer.from('down'), qos: 2, messageId: 32 })
    await raw.next('pubrec')
    raw.send({ cmd: 'pubrel', messageId: 32 })
    await raw.next('pubcomp')
    await waitFor(() => got.length >= 3, 'three deliveries')
    expect(got.map(m => [m.payload.toString(), m.packet.qos, m.packet.dup])).toEqual([['q1', 1, false], ['q2', 2, false], ['down', 1, false]])
    const ids = got.map(m => m.packet.messageId)
    expect(new Set(ids).size).toBe(3)
    expect(ids).not.toContain(30)
  })
})
