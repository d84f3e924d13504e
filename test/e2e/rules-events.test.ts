/**
 * Every rule-engine trigger event fires a rule from real mqtt.js client actions, in both
 * dialects: the spec's (`FROM "client.connected"`, spec column names) and EMQ X 4's
 * (`FROM "t/#"`, `FROM "$events/client_connected"`, its column names). Each rule republishes
 * what it selected as JSON (empty payload template) to `out/<dialect>/<event>`.
 */
import type { MqttClient } from 'mqtt'
import { startTestNode, closeClients, connect, collect, waitFor, type Received, type TestNode } from '../helpers/node.js'
import { apiOf } from './api-actions-client.js'

let node: TestNode
let watcher: MqttClient
let seen: Received[]
const api = apiOf(() => node)
const ruleIds: Record<string, string> = {}

const SPEC: Record<string, string> = {
  publish: 'SELECT * FROM "message.publish" WHERE topic = \'ev/pub\'',
  deliver: 'SELECT * FROM "message.deliver" WHERE topic = \'ev/del\'',
  acked: 'SELECT * FROM "message.acked" WHERE topic = \'ev/ack\'',
  dropped: 'SELECT * FROM "message.dropped" WHERE topic = \'ev/drop\'',
  connected: 'SELECT * FROM "client.connected" WHERE client_id = \'ev-client\'',
  disconnected: 'SELECT * FROM "client.disconnected" WHERE client_id = \'ev-client\'',
  subscribe: 'SELECT * FROM "client.subscribe" WHERE client_id = \'ev-client\'',
  unsubscribe: 'SELECT * FROM "client.unsubscribe" WHERE client_id = \'ev-client\''
}

const EMQX4: Record<string, string> = {
  publish: 'SELECT * FROM "ev/pub"',
  deliver: 'SELECT * FROM "$events/message_delivered" WHERE topic = \'ev/del\'',
  acked: 'SELECT * FROM "$events/message_acked" WHERE topic = \'ev/ack\'',
  dropped: 'SELECT * FROM "$events/message_dropped" WHERE topic = \'ev/drop\'',
  connected: 'SELECT * FROM "$events/client_connected" WHERE clientid = \'ev-client\'',
  connected5: 'SELECT clientid, proto_ver, receive_maximum FROM "$events/client_connected" WHERE clientid = \'ev-client5\'',
  disconnected: 'SELECT * FROM "$events/client_disconnected" WHERE clientid = \'ev-client\'',
  subscribe: 'SELECT * FROM "$events/session_subscribed" WHERE clientid = \'ev-client\'',
  unsubscribe: 'SELECT * FROM "$events/session_unsubscribed" WHERE clientid = \'ev-client\''
}

/** The JSON payloads republished to `out/<dialect>/<event>`, once `n` arrived. */
async function outputs (dialect: string, event: string, n = 1): Promise<any[]> {
  const topic = `out/${dialect}/${event}`
  await waitFor(() => seen.filter(m => m.topic === topic).length >= n, `${n} output(s) on ${topic}`)
  return seen.filter(m => m.topic === topic).map(m => JSON.parse(m.payload.toString()))
}

beforeAll(async () => {
  node = await startTestNode({ 'broker.sys_interval': '0' })
  for (const [dialect, table] of [['spec', SPEC], ['emqx4', EMQX4]] as const) {
    for (const [event, rawsql] of Object.entries(table)) {
      const res = await api('POST', '/rules', {
        rawsql,
        actions: [{ name: 'republish', params: { target_topic: `out/${dialect}/${event}`, target_qos: 1, payload_tmpl: '' } }]
      })
      expect(res.body.code).toBe(0)
      ruleIds[`${dialect}/${event}`] = res.body.data.id
    }
  }
  watcher = await connect(node, { clientId: 'ev-watcher' })
  await watcher.subscribeAsync('out/#', { qos: 1 })
  seen = collect(watcher)
})
afterAll(async () => {
  await closeClients()
  await node.destroy()
})

describe('rule-engine trigger events from real clients', () => {
  let client: MqttClient
  let publisher: MqttClient

  it('client.connected and client.subscribe (one EMQ X 4 event per filter)', async () => {
    client = await connect(node, { clientId: 'ev-client', username: 'ev-user', keepalive: 30 })
    await client.subscribeAsync(['ev/del', 'ev/ack'], { qos: 1 })
    const [spec] = await outputs('spec', 'connected')
    expect(spec).toMatchObject({
      event: 'client.connected', client_id: 'ev-client', username: 'ev-user', auth_result: 'success', clean_start: true,
      connack: 0, is_bridge: false, keepalive: 30, mountpoint: null, proto_ver: 4, node: node.name
    })
    expect(spec.peername).toMatch(/^127\.0\.0\.1:\d+$/)
    expect(typeof spec.connected_at).toBe('number')
    const [emqx] = await outputs('emqx4', 'connected')
    expect(emqx).toMatchObject({
      event: 'client.connected', clientid: 'ev-client', username: 'ev-user', proto_name: 'MQTT', proto_ver: 4, keepalive: 30,
      clean_start: true, is_bridge: false, mountpoint: null, conn_props: {}, metadata: { rule_id: ruleIds['emqx4/connected'] },
      receive_maximum: 32 // EMQ X 4.4: a v3.1.1 client gets the broker's in-flight limit (mqtt.max_inflight)
    })
    for (const key of ['peername', 'sockname', 'expiry_interval', 'timestamp', 'connected_at']) expect(emqx).toHaveProperty(key)
    expect(emqx).not.toHaveProperty('client_id')

    const [sub] = await outputs('spec', 'subscribe')
    expect(sub).toMatchObject({ event: 'client.subscribe', client_id: 'ev-client', topic: 'ev/del', qos: 1, topic_filters: [{ topic: 'ev/del', qos: 1 }, { topic: 'ev/ack', qos: 1 }] })
    const subs = await outputs('emqx4', 'subscribe', 2)
    expect(subs.map(s => [s.event, s.topic, s.qos])).toEqual([['session.subscribed', 'ev/del', 1], ['session.subscribed', 'ev/ack', 1]])
    expect(subs[0]).toMatchObject({ clientid: 'ev-client', username: 'ev-user', peerhost: '127.0.0.1', sub_props: {} })
  })

  it("client.connected of a v5 client: receive_maximum is its Receive Maximum, at most the broker's limit", async () => {
    const v5 = await connect(node, { clientId: 'ev-client5', protocolVersion: 5, properties: { receiveMaximum: 10 } })
    const [emqx] = await outputs('emqx4', 'connected5')
    expect(emqx).toEqual({ clientid: 'ev-client5', proto_ver: 5, receive_maximum: 10 })
    await v5.endAsync()
  })

  it('message.publish', async () => {
    publisher = await connect(node, { clientId: 'ev-publisher', username: 'ev-pub-user' })
    await publisher.publishAsync('ev/pub', '{"x":1}', { qos: 1 })
    const [spec] = await outputs('spec', 'publish')
    expect(spec).toMatchObject({ event: 'message.publish', client_id: 'ev-publisher', username: 'ev-pub-user', topic: 'ev/pub', payload: '{"x":1}', qos: 1 })
    for (const key of ['id', 'peername', 'timestamp']) expect(spec).toHaveProperty(key)
    const [emqx] = await outputs('emqx4', 'publish')
    expect(emqx).toMatchObject({
      event: 'message.publish', clientid: 'ev-publisher', topic: 'ev/pub', payload: '{"x":1}', qos: 1, peerhost: '127.0.0.1',
      flags: { retain: false, dup: false }, pub_props: {}, metadata: { rule_id: ruleIds['emqx4/publish'] }
    })
    for (const key of ['id', 'headers', 'timestamp', 'publish_received_at', 'node']) expect(emqx).toHaveProperty(key)
  })

  it('message.deliver (EMQ X 4: message.delivered)', async () => {
    await publisher.publishAsync('ev/del', 'hello', { qos: 1 })
    const [spec] = await outputs('spec', 'deliver')
    expect(spec).toMatchObject({ event: 'message.deliver', client_id: 'ev-client', username: 'ev-user', topic: 'ev/del', payload: 'hello', auth_result: 'success', mountpoint: null })
    const [emqx] = await outputs('emqx4', 'deliver')
    expect(emqx).toMatchObject({
      event: 'message.delivered', clientid: 'ev-client', username: 'ev-user', from_clientid: 'ev-publisher', from_username: 'ev-pub-user',
      topic: 'ev/del', payload: 'hello', headers: { peerhost: '127.0.0.1', username: 'ev-pub-user' } // the publisher's (emqx_rule_events)
    })
  })

  it('message.acked when the subscriber acknowledges a QoS 1 delivery', async () => {
    await publisher.publishAsync('ev/ack', 'ack me', { qos: 1 })
    const [spec] = await outputs('spec', 'acked')
    expect(spec).toMatchObject({ event: 'message.acked', client_id: 'ev-client', topic: 'ev/ack', payload: 'ack me', qos: 1 })
    const [emqx] = await outputs('emqx4', 'acked')
    expect(emqx).toMatchObject({ event: 'message.acked', clientid: 'ev-client', topic: 'ev/ack', payload: 'ack me', puback_props: {} })
    expect(emqx).toHaveProperty('headers')
  })

  it('message.dropped for a publish without subscribers', async () => {
    await publisher.publishAsync('ev/drop', 'nobody', { qos: 0 })
    const [spec] = await outputs('spec', 'dropped')
    expect(spec).toMatchObject({ event: 'message.dropped', client_id: 'ev-publisher', topic: 'ev/drop', payload: 'nobody', node: node.name })
    const [emqx] = await outputs('emqx4', 'dropped')
    expect(emqx).toMatchObject({
      event: 'message.dropped', clientid: 'ev-publisher', username: 'ev-pub-user', topic: 'ev/drop', reason: 'no_subscribers',
      headers: { peerhost: '127.0.0.1', username: 'ev-pub-user' }
    })
  })

  it('client.unsubscribe (EMQ X 4: session.unsubscribed)', async () => {
    await client.unsubscribeAsync('ev/del')
    const [spec] = await outputs('spec', 'unsubscribe')
    expect(spec).toMatchObject({ event: 'client.unsubscribe', client_id: 'ev-client', topic: 'ev/del', topic_filters: [{ topic: 'ev/del' }] })
    const [emqx] = await outputs('emqx4', 'unsubscribe')
    expect(emqx).toMatchObject({ event: 'session.unsubscribed', clientid: 'ev-client', topic: 'ev/del' })
  })

  it('client.disconnected with reason normal after DISCONNECT', async () => {
    await client.endAsync()
    const [spec] = await outputs('spec', 'disconnected')
    expect(spec).toMatchObject({ event: 'client.disconnected', client_id: 'ev-client', reason_code: 'normal', auth_result: 'success' })
    const [emqx] = await outputs('emqx4', 'disconnected')
    expect(emqx).toMatchObject({ event: 'client.disconnected', clientid: 'ev-client', reason: 'normal', disconn_props: {}, proto_name: 'MQTT', proto_ver: 4 })
    for (const key of ['peername', 'sockname', 'disconnected_at', 'timestamp']) expect(emqx).toHaveProperty(key)
  })

  it('counted a hit for every rule: each event fired each rule once (EMQ X 4 subscribe: once per filter)', async () => {
    const { body } = await api('GET', '/rules')
    const matched: Record<string, number> = {}
    for (const [key, id] of Object.entries(ruleIds)) matched[key] = body.data.find((r: any) => r.id === id).metrics[0].matched
    // the hooks bus also reports the clean session's remaining filter (ev/ack) as unsubscribed
    // when the client disconnects, so the unsubscribe rules may count that one too
    const expected = Object.fromEntries(Object.keys(ruleIds).map(k => [k, k.endsWith('/unsubscribe') ? matched[k] : k === 'emqx4/subscribe' ? 2 : 1]))
    expect(matched).toEqual(expected)
    expect(matched['spec/unsubscribe']).toBeGreaterThanOrEqual(1)
  })
})
