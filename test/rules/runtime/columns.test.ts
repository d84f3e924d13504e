/**
 * The columns of each event in both dialects: the spec's names (`client_id`, `peername` ...)
 * and EMQ X 4.4's (`clientid`, `peerhost`, `pub_props` with MQTT property names ...).
 */
import { emqx4Columns, mqttProperties, specColumns } from '../../../rules/columns.js'
import type { ConnectedEvent, DisconnectedEvent, MessageEvent, SubscribeEvent } from '../../../node/hooks.js'

const message: MessageEvent = {
  event: 'message.publish',
  id: 'abc',
  client_id: 'c1',
  username: undefined,
  topic: 't/1',
  payload: Buffer.from('{"x":1}'),
  qos: 1,
  peername: '127.0.0.1:5000',
  peerhost: '127.0.0.1',
  flags: { retain: false, dup: false },
  pub_props: { messageExpiryInterval: 30, userProperties: { foo: 'bar' } },
  publish_received_at: 1000,
  timestamp: 1000,
  node: 'n@h'
}

describe('message.publish columns', () => {
  it('carries the spec fields in the spec dialect', () => {
    expect(specColumns('message.publish', message)).toEqual({
      event: 'message.publish', client_id: 'c1', username: null, timestamp: 1000, node: 'n@h',
      id: 'abc', topic: 't/1', payload: '{"x":1}', peername: '127.0.0.1:5000', qos: 1
    })
  })

  it("carries EMQ X 4's fields in its dialect", () => {
    const [cols] = emqx4Columns('message.publish', message)
    expect(cols).toEqual({
      event: 'message.publish', clientid: 'c1', username: null, timestamp: 1000, node: 'n@h',
      id: 'abc', payload: '{"x":1}', peerhost: '127.0.0.1', topic: 't/1', qos: 1, flags: { retain: false, dup: false },
      pub_props: { 'Message-Expiry-Interval': 30, 'User-Property': { foo: 'bar' } },
      publish_received_at: 1000, headers: { peerhost: '127.0.0.1', username: null }
    })
  })

  it('names a delivered message message.delivered with from_clientid', () => {
    const [cols] = emqx4Columns('message.deliver', { ...message, event: 'message.deliver', from_client_id: 'p', auth_result: 'success', mountpoint: undefined })
    expect(cols).toMatchObject({ event: 'message.delivered', from_clientid: 'p', from_username: null })
    expect(specColumns('message.deliver', { ...message, event: 'message.deliver', auth_result: 'success', mountpoint: undefined }))
      .toMatchObject({ event: 'message.deliver', auth_result: 'success', mountpoint: null })
  })
})

describe('EMQ X 4.4 message columns (emqx_rule_events eventmsg_*)', () => {
  it('gives delivered and acked the publisher in from_* and in headers, the receiver in clientid and peerhost', () => {
    const deliver = { ...message, event: 'message.deliver', client_id: 'sub', username: 'su', peerhost: '10.0.0.2', from_client_id: 'pub', from_username: 'pu', from_peerhost: '10.0.0.1', auth_result: 'success' as const, mountpoint: undefined }
    for (const hook of ['message.deliver', 'message.acked'] as const) {
      expect(emqx4Columns(hook, deliver)[0]).toMatchObject({
        clientid: 'sub', username: 'su', peerhost: '10.0.0.2', from_clientid: 'pub', from_username: 'pu',
        headers: { peerhost: '10.0.0.1', username: 'pu' }
      })
    }
    expect(emqx4Columns('message.acked', deliver)[0]).toMatchObject({ puback_props: {} })
  })

  it('gives dropped its reason and the publisher in headers', () => {
    const [cols] = emqx4Columns('message.dropped', { ...message, event: 'message.dropped', username: 'pu', reason: 'no_subscribers' })
    expect(cols).toMatchObject({ event: 'message.dropped', reason: 'no_subscribers', headers: { peerhost: '127.0.0.1', username: 'pu' } })
  })
})

describe('client event columns', () => {
  const client = {
    client_id: 'c1', username: 'u', timestamp: 5, node: 'n@h', peername: '1.2.3.4:5', peerhost: '1.2.3.4', sockname: '0.0.0.0:1883',
    mountpoint: undefined, auth_result: 'success' as const, proto_ver: 5, proto_name: 'MQTT'
  }

  it('gives client.connected its fields in both dialects', () => {
    const e: ConnectedEvent = { ...client, event: 'client.connected', clean_start: true, connack: 0, connected_at: 4, is_bridge: false, keepalive: 60, expiry_interval: 0, conn_props: { sessionExpiryInterval: 10 } }
    expect(specColumns('client.connected', e)).toEqual({
      event: 'client.connected', client_id: 'c1', username: 'u', timestamp: 5, node: 'n@h', auth_result: 'success', mountpoint: null,
      peername: '1.2.3.4:5', clean_start: true, connack: 0, connected_at: 4, is_bridge: false, keepalive: 60, proto_ver: 5
    })
    expect(emqx4Columns('client.connected', e)[0]).toMatchObject({
      event: 'client.connected', clientid: 'c1', sockname: '0.0.0.0:1883', proto_name: 'MQTT', expiry_interval: 0, conn_props: { 'Session-Expiry-Interval': 10 }
    })
  })

  it("gives client.connected EMQ X 4.4's receive_maximum: the client's, at most the in-flight limit", () => {
    const e: ConnectedEvent = { ...client, event: 'client.connected', clean_start: true, connack: 0, connected_at: 4, is_bridge: false, keepalive: 60, expiry_interval: 0, conn_props: {} }
    expect(emqx4Columns('client.connected', e)[0].receive_maximum).toBe(32)
    expect(emqx4Columns('client.connected', e, () => 100)[0].receive_maximum).toBe(100)
    expect(emqx4Columns('client.connected', { ...e, conn_props: { receiveMaximum: 10 } }, () => 100)[0].receive_maximum).toBe(10)
    expect(emqx4Columns('client.connected', { ...e, conn_props: { receiveMaximum: 500 } }, () => 100)[0].receive_maximum).toBe(100)
  })

  it('gives client.disconnected its protocol name and version (EMQ X 4.4 eventmsg_disconnected)', () => {
    const e: DisconnectedEvent = { ...client, event: 'client.disconnected', reason_code: 'normal', reason: 'normal', disconnected_at: 9, connected_at: 4 }
    expect(emqx4Columns('client.disconnected', e)[0]).toEqual({
      event: 'client.disconnected', clientid: 'c1', username: 'u', timestamp: 5, node: 'n@h', reason: 'normal', peername: '1.2.3.4:5',
      sockname: '0.0.0.0:1883', proto_name: 'MQTT', proto_ver: 5, disconn_props: {}, disconnected_at: 9
    })
  })

  it('gives one EMQ X 4 column set per filter of a subscribe, the first pair in the spec dialect', () => {
    const e: SubscribeEvent = { ...client, event: 'client.subscribe', topic_filters: [{ topic: 'a', qos: 1 }, { topic: 'b/#', qos: 2 }], topic: 'a', qos: 1 }
    expect(specColumns('client.subscribe', e)).toMatchObject({ topic: 'a', qos: 1, topic_filters: e.topic_filters })
    expect(emqx4Columns('client.subscribe', e).map(c => [c.event, c.topic, c.qos, c.peerhost])).toEqual([
      ['session.subscribed', 'a', 1, '1.2.3.4'], ['session.subscribed', 'b/#', 2, '1.2.3.4']
    ])
    expect(emqx4Columns('client.unsubscribe', { ...e, event: 'client.unsubscribe' })[0]).toMatchObject({ event: 'session.unsubscribed', unsub_props: {} })
  })
})

describe('mqttProperties', () => {
  it('renames mqtt-packet properties as MQTT 5 names them', () => {
    expect(mqttProperties({ payloadFormatIndicator: 1, contentType: 'a/b', correlationData: Buffer.from('x'), topicAlias: 2 }))
      .toEqual({ 'Payload-Format-Indicator': 1, 'Content-Type': 'a/b', 'Correlation-Data': 'x', 'Topic-Alias': 2 })
  })
})
