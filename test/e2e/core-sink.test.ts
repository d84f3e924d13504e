/**
 * The MQTT core's sinks (broker.core.sink): a part that takes messages elsewhere (a bridge's
 * disk buffer) sees every message matching its filter, and a QoS 1 publisher's PUBACK waits
 * until the sink says the message is safe.
 */
import { closeClients, connect, startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import type { PublishMessage } from '../../node/mqtt/core.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode() })
afterAll(async () => { await closeClients(); await node.stop() })

describe('core sinks', () => {
  it('hold a QoS 1 publisher\'s PUBACK until the sink calls done, and see only matching topics', async () => {
    const seen: Array<Readonly<PublishMessage>> = []
    let release: (() => void) | null = null
    const off = node.broker.core.sink('out/#', (message, done) => {
      seen.push(message)
      release = () => { done() }
    })
    const client = await connect(node, { clientId: 'sink-pub', protocolVersion: 5 })
    let acked = false
    client.publish('out/a', 'x', { qos: 1 }, () => { acked = true })
    await waitFor(() => seen.length === 1, 'the sink to get the message')
    expect(seen[0]).toMatchObject({ topic: 'out/a', qos: 1 })
    expect(seen[0].payload.toString()).toBe('x')
    // the PUBACK does not go out while the sink holds the message: another client's
    // publish, sent after it, is acknowledged first
    const other = await connect(node, { clientId: 'sink-other', protocolVersion: 5 })
    await new Promise<void>(resolve => other.publish('elsewhere/a', 'w', { qos: 1 }, () => resolve()))
    expect(acked).toBe(false)
    release!()
    await waitFor(() => acked, 'the PUBACK once the sink released it')
    // other topics do not reach it, and a removed sink sees nothing more
    await new Promise<void>(resolve => client.publish('other/a', 'y', { qos: 1 }, () => resolve()))
    off()
    await new Promise<void>(resolve => client.publish('out/b', 'z', { qos: 1 }, () => resolve()))
    expect(seen.map(m => m.topic)).toEqual(['out/a'])
  })
})
