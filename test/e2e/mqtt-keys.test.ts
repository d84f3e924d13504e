/**
 * The session keys EMQ X 4.x gives its MQTT channel, each seen from real clients
 * (docs/mqtt.md, Queues and session limits): `mqtt.ignore_loop_deliver`,
 * `mqtt.max_subscriptions`, `mqtt.max_awaiting_rel`, `mqtt.await_rel_timeout`,
 * `mqtt.retry_interval` and `mqtt.keepalive_backoff`. Timing keys use small values (1 s) and
 * `waitFor` deadlines a margin past them.
 */
import { configWarnings, loadConfig } from '../../node/config/index.js'
import { sessionsOf } from '../../node/ops/sessions.js'
import { apiRequest, closeClients, connect, waitFor } from '../helpers/node.js'
import { closeOpened, connectPacket, nodeWith, open, openRaw, openRawSession, suback, type RawClient } from '../helpers/mqtt.js'

afterEach(async () => {
  await closeOpened()
  await closeClients()
})

/** Publishes 'marker' on `topic` from `via`; resolves once `raw` has received it. */
async function rawMarker (raw: RawClient, via: { publishAsync: (t: string, p: string, o: any) => Promise<unknown> }, topic: string): Promise<void> {
  await via.publishAsync(topic, 'marker', { qos: 0 })
  await waitFor(() => raw.packets.some(p => p.cmd === 'publish' && p.payload.toString() === 'marker'), 'marker')
}

describe('mqtt.ignore_loop_deliver = true', () => {
  const node = nodeWith({ 'mqtt.ignore_loop_deliver': 'true' })

  it('does not deliver an MQTT 3.1.1 client its own messages, at any QoS', async () => {
    const self = await open(node(), { protocolVersion: 4 })
    await self.client.subscribeAsync('loop/v4', { qos: 1 })
    await self.client.publishAsync('loop/v4', 'own-0', { qos: 0 })
    await self.client.publishAsync('loop/v4', 'own-1', { qos: 1 })
    const other = await connect(node(), { protocolVersion: 4 })
    await other.publishAsync('loop/v4', 'other', { qos: 1 })
    await waitFor(() => self.messages.length >= 1, 'the other client\'s message')
    expect(self.messages.map(m => m.payload.toString())).toEqual(['other'])
  })

  it('still delivers an MQTT 5 client its own messages (No Local decides there)', async () => {
    const self = await open(node(), { protocolVersion: 5 })
    await self.client.subscribeAsync('loop/v5', { qos: 1 })
    await self.client.publishAsync('loop/v5', 'own', { qos: 1 })
    await waitFor(() => self.messages.length >= 1, 'its own message')
    expect(self.messages[0].payload.toString()).toBe('own')
  })
})

describe('mqtt.max_subscriptions = 2', () => {
  const node = nodeWith({ 'mqtt.max_subscriptions': '2' })

  it('refuses MQTT 5 filters beyond the quota with 0x97, and takes a replacement of a held filter', async () => {
    const c = await open(node(), { protocolVersion: 5 })
    expect(await suback(c.client, ['quota/a', 'quota/b', 'quota/c'], { qos: 1 })).toEqual([1, 1, 0x97])
    expect(await suback(c.client, 'quota/d', { qos: 0 })).toEqual([0x97])
    expect(await suback(c.client, 'quota/a', { qos: 0 })).toEqual([0])
    expect(sessionsOf(node(), { clientid: c.client.options.clientId })[0]).toMatchObject({ subscriptions_count: 2, max_subscriptions: 2 })
  })

  it('refuses MQTT 3.1.1 filters beyond the quota with 0x80', async () => {
    const c = await open(node(), { protocolVersion: 4 })
    expect(await suback(c.client, ['quota/x', 'quota/y'], { qos: 1 })).toEqual([1, 1])
    expect(await suback(c.client, 'quota/z', { qos: 1 })).toEqual([0x80])
    await c.client.unsubscribeAsync('quota/x')
    expect(await suback(c.client, 'quota/z', { qos: 1 })).toEqual([1])
  })
})

describe('mqtt.max_awaiting_rel = 2', () => {
  const node = nodeWith({ 'mqtt.max_awaiting_rel': '2' })

  async function threeUnreleased (protocolVersion: 4 | 5, clientId: string): Promise<{ raw: RawClient, got: string[] }> {
    const sub = await connect(node(), { protocolVersion: 4 })
    const got: string[] = []
    sub.on('message', (_t, payload) => got.push(payload.toString()))
    await sub.subscribeAsync(`awaiting/${clientId}`, { qos: 0 })
    const raw = await openRawSession(node(), protocolVersion, clientId)
    for (let id = 1; id <= 3; id++) raw.send({ cmd: 'publish', topic: `awaiting/${clientId}`, payload: `m${id}`, qos: 2, messageId: id })
    await raw.next('pubrec', 3)
    return { raw, got }
  }

  it('answers an MQTT 5 QoS 2 PUBLISH beyond the limit with PUBREC 0x97 (Quota exceeded) and drops it', async () => {
    const before = node().metrics['messages/qos2/dropped']
    const { raw, got } = await threeUnreleased(5, 'awaiting-v5')
    const recs = raw.packets.filter(p => p.cmd === 'pubrec').sort((a, b) => a.messageId - b.messageId)
    expect(recs.map(p => [p.messageId, p.reasonCode ?? 0])).toEqual([[1, 0], [2, 0], [3, 0x97]])
    expect(sessionsOf(node(), { clientid: 'awaiting-v5' })[0]).toMatchObject({ awaiting_rel_len: 2, max_awaiting_rel: 2 })
    // a retransmission of one awaiting its PUBREL is no new message: answered, not refused
    raw.send({ cmd: 'publish', topic: 'awaiting/awaiting-v5', payload: 'm2', qos: 2, messageId: 2, dup: true })
    expect((await raw.next('pubrec', 4)).reasonCode ?? 0).toBe(0)
    // once released, there is room again
    raw.send({ cmd: 'pubrel', messageId: 1 })
    await raw.next('pubcomp')
    raw.send({ cmd: 'publish', topic: 'awaiting/awaiting-v5', payload: 'm4', qos: 2, messageId: 4 })
    expect((await raw.next('pubrec', 5)).reasonCode ?? 0).toBe(0)
    await waitFor(() => got.includes('m4'), 'm4')
    expect(got).toEqual(['m1', 'm2', 'm4'])
    expect(node().metrics['messages/qos2/dropped'] - before).toBe(1)
  })

  it('disconnects an MQTT 3.1.1 client whose QoS 2 PUBLISH is beyond the limit, without acknowledging it (EMQ X acknowledges and drops it)', async () => {
    const before = node().metrics['messages/qos2/dropped']
    const sub = await connect(node(), { protocolVersion: 4 })
    const got: string[] = []
    sub.on('message', (_t, payload) => got.push(payload.toString()))
    await sub.subscribeAsync('awaiting/awaiting-v4', { qos: 0 })
    const raw = await openRawSession(node(), 4, 'awaiting-v4')
    for (let id = 1; id <= 3; id++) raw.send({ cmd: 'publish', topic: 'awaiting/awaiting-v4', payload: `m${id}`, qos: 2, messageId: id })
    await waitFor(() => raw.closed(), 'the connection closed')
    // the refused message was never acknowledged: its publisher still owns it
    expect(raw.packets.filter(p => p.cmd === 'pubrec').map(p => p.messageId)).not.toContain(3)
    const via = await connect(node(), { protocolVersion: 4 })
    await via.publishAsync('awaiting/awaiting-v4', 'marker', { qos: 1 })
    await waitFor(() => got.includes('marker'), 'marker')
    expect(got).toEqual(['m1', 'm2', 'marker'])
    expect(node().metrics['messages/qos2/dropped'] - before).toBe(1)
  })
})

describe('mqtt.await_rel_timeout = 1s', () => {
  const node = nodeWith({ 'mqtt.await_rel_timeout': '1s' })

  it('forgets an incoming QoS 2 message whose PUBREL does not come, counting it in messages/qos2/expired', async () => {
    const before = node().metrics['messages/qos2/expired']
    const raw = await openRawSession(node(), 5, 'await-rel')
    raw.send({ cmd: 'publish', topic: 'await/rel', payload: 'x', qos: 2, messageId: 7 })
    await raw.next('pubrec')
    expect(sessionsOf(node(), { clientid: 'await-rel' })[0].awaiting_rel_len).toBe(1)
    await waitFor(() => sessionsOf(node(), { clientid: 'await-rel' })[0].awaiting_rel_len === 0, 'the expiry', 3000)
    expect(node().metrics['messages/qos2/expired'] - before).toBe(1)
    // a late PUBREL is still completed
    raw.send({ cmd: 'pubrel', messageId: 7 })
    expect((await raw.next('pubcomp')).messageId).toBe(7)
  })
})

describe('mqtt.retry_interval = 1s', () => {
  const node = nodeWith({ 'mqtt.retry_interval': '1s' })

  it('sends an unacknowledged QoS 1 delivery to an MQTT 3.1.1 client again, with DUP, until it is acknowledged', async () => {
    const raw = await openRawSession(node(), 4, 'retry-v4')
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'retry/t', qos: 1 }] })
    await raw.next('suback')
    const pub = await connect(node(), { protocolVersion: 4 })
    const sentAt = Date.now()
    await pub.publishAsync('retry/t', 'again', { qos: 1 })
    const first = await raw.next('publish')
    expect(first.dup).toBe(false)
    const second = await raw.next('publish', 2)
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(900)
    expect([second.messageId, second.dup, second.payload.toString()]).toEqual([first.messageId, true, 'again'])
    raw.send({ cmd: 'puback', messageId: first.messageId })
    await rawMarker(raw, pub, 'retry/t')
    const count = raw.packets.filter(p => p.cmd === 'publish').length
    const quiet = Date.now() + 1500
    await waitFor(() => Date.now() > quiet, 'one more interval')
    expect(raw.packets.filter(p => p.cmd === 'publish')).toHaveLength(count)
  })

  it('sends a PUBREL again when its PUBCOMP does not come', async () => {
    const raw = await openRawSession(node(), 4, 'retry-rel')
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'retry/rel', qos: 2 }] })
    await raw.next('suback')
    const pub = await connect(node(), { protocolVersion: 4 })
    await pub.publishAsync('retry/rel', 'x', { qos: 2 })
    const publish = await raw.next('publish')
    raw.send({ cmd: 'pubrec', messageId: publish.messageId })
    await raw.next('pubrel')
    expect((await raw.next('pubrel', 2)).messageId).toBe(publish.messageId)
    raw.send({ cmd: 'pubcomp', messageId: publish.messageId })
  })

  it('does not resend to an MQTT 5 client on a live connection', async () => {
    const raw = await openRawSession(node(), 5, 'retry-v5')
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'retry/v5', qos: 1 }] })
    await raw.next('suback')
    const pub = await connect(node(), { protocolVersion: 5 })
    await pub.publishAsync('retry/v5', 'once', { qos: 1 })
    await raw.next('publish')
    const quiet = Date.now() + 1600
    await waitFor(() => Date.now() > quiet, 'more than an interval')
    expect(raw.packets.filter(p => p.cmd === 'publish')).toHaveLength(1)
  })
})

describe('mqtt.keepalive_backoff = 1.5', () => {
  const node = nodeWith({ 'mqtt.keepalive_backoff': '1.5' })

  it('disconnects a silent client after keepalive x 1.5 x 2 (3 s for a keep alive of 1 s), not at aedes\' 1.5 s', async () => {
    const raw = await openRaw(node(), 4)
    raw.send(connectPacket(4, { clientId: 'backoff', keepalive: 1 }))
    await raw.next('connack')
    const connectedAt = Date.now()
    const check = connectedAt + 2200
    await waitFor(() => Date.now() > check || raw.closed(), 'past aedes\' own timeout')
    expect(raw.closed()).toBe(false)
    await waitFor(() => raw.closed(), 'the keep alive timeout', 3000)
    expect(Date.now() - connectedAt).toBeGreaterThanOrEqual(2900)
  })
})

describe('changed at run time (configs API)', () => {
  const node = nodeWith({})

  it('applies mqtt.max_subscriptions and mqtt.ignore_loop_deliver to connected clients at once', async () => {
    const c = await open(node(), { protocolVersion: 4 })
    expect(await suback(c.client, ['live/a', 'live/b'], { qos: 1 })).toEqual([1, 1])
    const res = await apiRequest(node(), '/configs/starling', 'PUT', { 'mqtt.max_subscriptions': '2', 'mqtt.ignore_loop_deliver': 'true' })
    expect(res.data).toEqual([{ node: node().name, applied: ['mqtt.max_subscriptions', 'mqtt.ignore_loop_deliver'], restart_required: [] }])
    expect(await suback(c.client, 'live/c', { qos: 1 })).toEqual([0x80])
    await c.client.publishAsync('live/a', 'own', { qos: 1 })
    const other = await connect(node(), { protocolVersion: 4 })
    await other.publishAsync('live/b', 'other', { qos: 1 })
    await waitFor(() => c.messages.length >= 1, 'the other client\'s message')
    expect(c.messages.map(m => m.payload.toString())).toEqual(['other'])
  })
})

describe('broker.shared_dispatch_ack_enabled', () => {
  it('is not a Starling key: EMQ X\'s false is what Starling does, true is accepted with one warning line (docs/mqtt.md, docs/migration.md)', () => {
    expect(configWarnings(loadConfig({ env: {}, overrides: { 'broker.shared_dispatch_ack_enabled': 'false' } }))).toEqual([])
    const warnings = configWarnings(loadConfig({ env: {}, overrides: { 'broker.shared_dispatch_ack_enabled': 'true' } }))
    expect(warnings.map(w => w.key)).toEqual(['broker.shared_dispatch_ack_enabled'])
    expect(warnings[0].message).toMatch(/accepted without effect/)
  })
})
