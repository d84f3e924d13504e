/**
 * Every metric of the spec against known traffic from real MQTT clients: each counter
 * must move by exactly what the traffic implies, and the others not at all.
 */
import net from 'node:net'
import mqttPacket from 'mqtt-packet'
import { startTestNode, connect, closeClients, collect, waitFor, type TestNode } from '../helpers/node.js'
import { METRIC_NAMES, type MetricName, type Metrics } from '../../node/metrics.js'
import type { DroppedEvent } from '../../node/hooks.js'

let node: TestNode

// The node counts everything itself: the broker counts drops by their reason, and its
// packet tap counts the missed acknowledgements. Nothing is started here beside it.
beforeAll(async () => {
  // no $SYS rounds: they are a burst of broker messages at start and every interval
  node = await startTestNode({ 'broker.sys_interval': '0', 'broker.sys_heartbeat': '0' })
})
afterAll(async () => {
  await node.destroy()
})
afterEach(async () => { await closeClients() })

function deltas (before: Metrics, after: Metrics): Partial<Record<MetricName, number>> {
  const out: Partial<Record<MetricName, number>> = {}
  for (const name of METRIC_NAMES) if (after[name] !== before[name]) out[name] = after[name] - before[name]
  return out
}

/** Size of the frame a v3.1.1 client or broker writes for `packet`. */
function frameSize (packet: Record<string, unknown>): number {
  return mqttPacket.generate({ cmd: 'publish', dup: false, retain: false, ...packet } as any, { protocolVersion: 4 }).length
}

describe('metrics', () => {
  it('counts 3 QoS 0, 2 QoS 1, 1 QoS 2, 1 retained and 1 unrouted publish exactly', async () => {
    const sub = await connect(node, { clientId: 'mt-sub', protocolVersion: 4 })
    await sub.subscribeAsync('mt/#', { qos: 2 })
    const received = collect(sub)
    const pub = await connect(node, { clientId: 'mt-pub', protocolVersion: 4 })
    const before = { ...node.metrics }

    const publishes = [
      { topic: 'mt/0', payload: 'zero-a', qos: 0 },
      { topic: 'mt/0', payload: 'zero-b', qos: 0 },
      { topic: 'mt/0', payload: 'zero-c', qos: 0 },
      { topic: 'mt/1', payload: 'one-a', qos: 1 },
      { topic: 'mt/1', payload: 'one-b', qos: 1 },
      { topic: 'mt/2', payload: 'two', qos: 2 },
      { topic: 'mt/r', payload: 'kept', qos: 0, retain: true },
      { topic: 'nobody/listens', payload: 'lost', qos: 0 }
    ] as const
    for (const p of publishes) await pub.publishAsync(p.topic, p.payload, { qos: p.qos, retain: 'retain' in p })
    await waitFor(() => received.length === 7, 'seven deliveries')
    await waitFor(() => node.metrics['packets/pubcomp/received'] - before['packets/pubcomp/received'] === 1 &&
      node.metrics['packets/puback/received'] - before['packets/puback/received'] === 2, 'the subscriber\'s acks')
    // let anything unexpected arrive before comparing
    await new Promise(resolve => setTimeout(resolve, 100))

    const withId = (p: typeof publishes[number]): Record<string, unknown> => ({ topic: p.topic, payload: p.payload, qos: p.qos, messageId: p.qos > 0 ? 1 : undefined })
    const routed = publishes.filter(p => p.topic !== 'nobody/listens')
    const acks = 4 * (2 + 1 + 1 + 1) // PUBACK x2, PUBREC, PUBREL, PUBCOMP each way, 4 bytes each
    expect(deltas(before, node.metrics)).toEqual({
      'bytes/received': publishes.reduce((n, p) => n + frameSize({ ...withId(p), retain: 'retain' in p }), 0) + acks,
      'bytes/sent': routed.reduce((n, p) => n + frameSize(withId(p)), 0) + acks,
      // one ACL decision per PUBLISH (no ACL file rules: acl_nomatch allows), issue 14's counters
      'client.acl.allow': 8,
      'packets/received': 8 + 2 + 1 + 1 + 1,
      'packets/sent': 7 + 2 + 1 + 1 + 1,
      'packets/publish/received': 8,
      'packets/publish/sent': 7,
      'packets/puback/received': 2,
      'packets/puback/sent': 2,
      'packets/pubrec/received': 1,
      'packets/pubrec/sent': 1,
      'packets/pubrel/received': 1,
      'packets/pubrel/sent': 1,
      'packets/pubcomp/received': 1,
      'packets/pubcomp/sent': 1,
      'messages/received': 8,
      'messages/sent': 7,
      'messages/retained': 1,
      'messages/dropped': 1,
      'messages/qos0/received': 5,
      'messages/qos0/sent': 4,
      'messages/qos1/received': 2,
      'messages/qos1/sent': 2,
      'messages/qos2/received': 1,
      'messages/qos2/sent': 1
    })
  })

  it('counts CONNECT, CONNACK, SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK, PINGREQ, PINGRESP and DISCONNECT', async () => {
    const before = { ...node.metrics }
    const c = await connect(node, { clientId: 'mt-ctl', protocolVersion: 4, keepalive: 0 })
    await c.subscribeAsync('mt-ctl/a')
    await c.unsubscribeAsync('mt-ctl/a')
    await new Promise<void>((resolve) => { c.once('packetreceive', () => resolve()); (c as any)._sendPacket({ cmd: 'pingreq' }) })
    await c.endAsync()
    await waitFor(() => node.metrics['packets/disconnect/received'] > before['packets/disconnect/received'], 'DISCONNECT')
    const d = deltas(before, node.metrics)
    expect(d).toMatchObject({
      'packets/connect': 1,
      'packets/connack': 1,
      'packets/subscribe': 1,
      'packets/suback': 1,
      'packets/unsubscribe': 1,
      'packets/unsuback': 1,
      'packets/pingreq': 1,
      'packets/pingresp': 1,
      'packets/disconnect/received': 1,
      'packets/received': 5,
      'packets/sent': 4
    })
    // the node's $SYS presence messages (connected, disconnected) have no subscriber: not client messages dropped
    for (const name of ['packets/disconnect/sent', 'packets/auth', 'messages/received', 'messages/sent', 'messages/dropped'] as const) expect(d[name]).toBeUndefined()
  })

  it('leaves messages/forward, messages/expired and the QoS 2 expiry counters at 0 on one node', () => {
    for (const name of ['messages/forward', 'messages/expired', 'messages/qos2/expired', 'messages/qos2/dropped'] as const) {
      expect(node.metrics[name]).toBe(0)
    }
  })

  it('counts a message dropped as expired in messages/expired (reason on message.dropped)', () => {
    const before = { ...node.metrics }
    const reasons: string[] = []
    const off = node.hooks.on('message.dropped', (e: DroppedEvent) => { reasons.push(e.reason) })
    try {
      // where the broker gives up on a client's message (the forward filter, the QoS 2 inflight)
      const packet = { cmd: 'publish', topic: 'mt/drop', payload: Buffer.from('x'), qos: 1, retain: false, dup: false, clientId: 'mt-dropper' }
      node.broker.dropped(packet, 'expired')
      node.broker.dropped({ ...packet, qos: 2 }, 'await_rel_timeout')
      node.broker.dropped({ ...packet, qos: 2 }, 'awaiting_rel_full')
    } finally {
      off()
    }
    expect(reasons).toEqual(['expired', 'await_rel_timeout', 'awaiting_rel_full'])
    // each drop counted once, in messages/dropped and in the metric of its reason
    expect(deltas(before, node.metrics)).toEqual({
      'messages/dropped': 3,
      'messages/expired': 1,
      'messages/qos2/expired': 1,
      'messages/qos2/dropped': 1
    })
  })

  it('counts a PUBACK, PUBREC, PUBREL and PUBCOMP for unknown packet ids as missed', async () => {
    const before = { ...node.metrics }
    const socket = net.connect(node.port('mqtt:tcp'), '127.0.0.1')
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    const connack = new Promise<void>((resolve) => socket.once('data', () => resolve()))
    socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: 'mt-raw', keepalive: 0 } as any))
    await connack
    // distinct ids: the broker answers the PUBREC with a PUBREL, whose PUBCOMP would be expected
    const ids = { puback: 4242, pubrec: 4243, pubrel: 4244, pubcomp: 4245 }
    for (const [cmd, messageId] of Object.entries(ids)) socket.write(mqttPacket.generate({ cmd, messageId } as any))
    await waitFor(() => node.metrics['packets/pubcomp/received'] > before['packets/pubcomp/received'], 'the acks')
    socket.destroy()
    expect(node.metrics['packets/puback/missed'] - before['packets/puback/missed']).toBe(1)
    expect(node.metrics['packets/pubrec/missed'] - before['packets/pubrec/missed']).toBe(1)
    expect(node.metrics['packets/pubrel/missed'] - before['packets/pubrel/missed']).toBe(1)
    expect(node.metrics['packets/pubcomp/missed'] - before['packets/pubcomp/missed']).toBe(1)
  })
})
