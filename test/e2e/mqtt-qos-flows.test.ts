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
