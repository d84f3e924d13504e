import { testSql } from '../../../rules/sql/index.js'

const NOW = () => 1700000000123

describe('rule SQL tester', () => {
  it("fills EMQ X's example columns of message.publish under ctx", () => {
    const r = testSql({ rawsql: 'SELECT * FROM "t/#"', ctx: { topic: 't/x', qos: 2 } }, { node: 'n1@host', now: NOW })
    if (!r.ok) throw new Error(JSON.stringify(r))
    expect(r.output).toEqual({
      event: 'message.publish',
      id: expect.stringMatching(/^[0-9A-F]{32}$/),
      clientid: 'c_emqx',
      username: 'u_emqx',
      payload: '{"msg": "hello"}',
      peerhost: '192.168.0.10',
      topic: 't/x',
      qos: 2,
      flags: {},
      publish_received_at: 1700000000123,
      pub_props: {
        'Payload-Format-Indicator': 0,
        'Message-Expiry-Interval': 30,
        'User-Property': { foo: 'bar' },
        'User-Property-Pairs': [{ key: 'foo' }, { value: 'bar' }]
      },
      timestamp: 1700000000123,
      node: 'n1@host',
      metadata: { rule_id: expect.stringMatching(/^test_rule:/) }
    })
  })

  it('takes the node name alone as options, and defaults it', () => {
    expect(testSql({ rawsql: 'SELECT node FROM "t/#"', ctx: { topic: 't' } }, 'x@y')).toEqual({ ok: true, output: { node: 'x@y' } })
    expect(testSql({ rawsql: 'SELECT node FROM "t/#"', ctx: { topic: 't' } })).toEqual({ ok: true, output: { node: 'starling@127.0.0.1' } })
  })

  it('is no match when ctx.topic matches no FROM filter, or is missing', () => {
    expect(testSql({ rawsql: 'SELECT * FROM "t/#"', ctx: { topic: 'u/1' } })).toMatchObject({ ok: false, reason: 'nomatch' })
    expect(testSql({ rawsql: 'SELECT * FROM "t/#"', ctx: {} })).toMatchObject({ ok: false, reason: 'nomatch' })
    expect(testSql({ rawsql: 'SELECT * FROM "t/#", "u/#"', ctx: { topic: 'u/1' } })).toMatchObject({ ok: true })
  })

  it('does not check the topic when FROM names an event', () => {
    expect(testSql({ rawsql: 'SELECT clientid FROM "t/#", "$events/client_connected"', ctx: {} })).toEqual({ ok: true, output: { clientid: 'c_emqx' } })
    expect(testSql({ rawsql: 'SELECT client_id FROM "message.publish"', ctx: {} })).toEqual({ ok: true, output: { client_id: 'c_emqx' } })
  })

  it.each([
    ['$events/client_connected', { event: 'client.connected', peername: '192.168.0.10:56431', proto_ver: 5, clean_start: true, conn_props: { 'Session-Expiry-Interval': 7200 } }],
    ['$events/client_disconnected', { event: 'client.disconnected', reason: 'normal', disconnected_at: 1700000000123 }],
    ['$events/session_subscribed', { event: 'session.subscribed', topic: 't/a', qos: 1, sub_props: { 'User-Property': { foo: 'bar' } } }],
    ['$events/session_unsubscribed', { event: 'session.unsubscribed', unsub_props: { 'User-Property': { foo: 'bar' } } }],
    ['$events/message_delivered', { event: 'message.delivered', from_clientid: 'c_emqx_1', clientid: 'c_emqx_2' }],
    ['$events/message_acked', { event: 'message.acked', puback_props: { 'Reason-String': 'OK' } }],
    ['$events/message_dropped', { event: 'message.dropped', reason: 'no_subscribers' }]
  ])('fills the example columns of %s', (from, subset) => {
    const r = testSql({ rawsql: `SELECT * FROM "${from}"` }, { now: NOW })
    expect(r).toMatchObject({ ok: true, output: { ...subset, timestamp: 1700000000123 } })
  })

  it.each([
    ['message.publish', { event: 'message.publish', client_id: 'c_emqx', peername: '192.168.0.10:56431', topic: 't/a', qos: 1 }],
    ['message.deliver', { event: 'message.deliver', auth_result: 'success' }],
    ['message.dropped', { event: 'message.dropped', node: 'starling@127.0.0.1' }],
    ['client.connected', { event: 'client.connected', client_id: 'c_emqx', connack: 0, keepalive: 60, connected_at: 1700000000123 }],
    ['client.disconnected', { event: 'client.disconnected', reason_code: 'normal' }],
    ['client.subscribe', { event: 'client.subscribe', topic_filters: [{ topic: 't/a', qos: 1 }], topic: 't/a', qos: 1 }],
    ['client.unsubscribe', { event: 'client.unsubscribe', topic: 't/a' }]
  ])("fills the spec dialect's example columns of %s", (event, subset) => {
    const r = testSql({ rawsql: `SELECT * FROM "${event}"` }, { now: NOW })
    expect(r).toMatchObject({ ok: true, output: subset })
    if (r.ok) expect(r.output).not.toHaveProperty('clientid')
  })

  it('merges ctx over the examples, the payload included', () => {
    const r = testSql({ rawsql: 'SELECT payload.t AS t, clientid FROM "s/+" WHERE payload.t > 20', ctx: { topic: 's/1', clientid: 'me', payload: '{"t": 25}' } })
    expect(r).toEqual({ ok: true, output: { t: 25, clientid: 'me' } })
    expect(testSql({ rawsql: 'SELECT payload.t AS t FROM "s/+" WHERE payload.t > 20', ctx: { topic: 's/1', payload: '{"t": 5}' } }))
      .toEqual({ ok: false, reason: 'nomatch', message: 'the WHERE condition is false' })
  })

  it('answers FOREACH with an array', () => {
    const r = testSql({ rawsql: 'FOREACH payload.l AS x DO x FROM "t/#"', ctx: { topic: 't', payload: '{"l": [1, 2]}' } })
    expect(r).toEqual({ ok: true, output: [{ x: 1 }, { x: 2 }] })
  })

  it('reports a failure with its phase and reason', () => {
    const r = testSql({ rawsql: 'SELECT payload.x FROM "t/#"', ctx: { topic: 't', payload: 'not json' } })
    expect(r).toEqual({
      ok: false,
      reason: 'error',
      phase: 'select_and_transform_error',
      error: 'decode_json_failed',
      message: 'select_and_transform_error: the payload is not JSON: "not json"'
    })
  })

  it('reports an invalid statement without throwing', () => {
    expect(testSql({ rawsql: 'SELECT FROM "t/#"', ctx: {} }))
      .toEqual({ ok: false, reason: 'error', error: 'invalid_sql', message: 'expected an expression, found FROM at 1:8' })
    expect(testSql({ rawsql: 'SELECT nope(1) FROM "t/#"', ctx: {} }))
      .toEqual({ ok: false, reason: 'error', error: 'invalid_sql', message: "unknown function 'nope' at 1:8" })
  })
})
