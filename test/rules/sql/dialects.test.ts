import { compileSql, SqlError } from '../../../rules/sql/index.js'

/** One publish as each dialect's columns carry it. */
const SPEC_PUBLISH = {
  event: 'message.publish', id: 'A1', client_id: 'sensor-7', username: 'u', topic: 't/7',
  payload: '{"x": 1, "temp": 35}', peername: '10.0.0.2:50000', qos: 1, timestamp: 1700000000000
}
const EMQX_PUBLISH = {
  event: 'message.publish', id: 'A1', clientid: 'sensor-7', username: 'u', topic: 't/7',
  payload: '{"x": 1, "temp": 35}', peerhost: '10.0.0.2', qos: 1, flags: {}, pub_props: {},
  publish_received_at: 1700000000000, timestamp: 1700000000000, node: 'n@h'
}

describe('rule SQL dialects', () => {
  describe("the spec's: FROM names an event", () => {
    it.each([
      ['message.publish'], ['message.deliver'], ['message.acked'], ['message.dropped'],
      ['client.connected'], ['client.disconnected'], ['client.subscribe'], ['client.unsubscribe']
    ])('"%s" listens to that hook', (event) => {
      const sql = compileSql(`SELECT * FROM "${event}"`)
      expect(sql.dialect).toBe('spec')
      expect(sql.events).toEqual([event])
      expect(sql.topicFilters).toBeNull()
      expect(sql.matchesTopic('any/topic')).toBe(true)
    })

    it('reads the spec\'s columns', () => {
      const sql = compileSql('SELECT client_id, peername, event FROM "message.publish" WHERE qos = 1')
      expect(sql.run(SPEC_PUBLISH)).toEqual([{ client_id: 'sensor-7', peername: '10.0.0.2:50000', event: 'message.publish' }])
    })

    it('reads payload.<key> directly (before 3.4.0) and after json_decode(payload) (3.4.1+)', () => {
      const old = compileSql('SELECT payload.x AS x FROM "message.publish" WHERE payload.temp > 30')
      const now = compileSql('SELECT json_decode(payload) AS p, p.x AS x FROM "message.publish" WHERE p.temp > 30')
      const alias = compileSql('SELECT payload AS p FROM "message.publish" WHERE p.x = 1')
      expect(old.run(SPEC_PUBLISH)).toEqual([{ x: 1 }])
      expect(now.run(SPEC_PUBLISH)).toEqual([{ p: { x: 1, temp: 35 }, x: 1 }])
      expect(alias.run(SPEC_PUBLISH)).toEqual([{ p: SPEC_PUBLISH.payload }])
      const cold = { ...SPEC_PUBLISH, payload: '{"x": 1, "temp": 20}' }
      expect(old.run(cold)).toBeNull()
      expect(now.run(cold)).toBeNull()
    })

    it('a payload that is not JSON makes either form not match', () => {
      const bad = { ...SPEC_PUBLISH, payload: 'hello' }
      expect(compileSql('SELECT payload.x AS x FROM "message.publish"').run(bad)).toBeNull()
      expect(compileSql('SELECT json_decode(payload) AS p FROM "message.publish"').run(bad)).toBeNull()
      expect(compileSql('SELECT payload AS p FROM "message.publish" WHERE p.x = 1').run(bad)).toBeNull()
    })

    it('filters subscribe events with contains_topic on topic_filters', () => {
      const sub = { event: 'client.subscribe', client_id: 'c', topic_filters: [{ topic: 't/#', qos: 1 }, { topic: 'x', qos: 0 }], topic: 't/#', qos: 1 }
      expect(compileSql("SELECT client_id FROM \"client.subscribe\" WHERE contains_topic(topic_filters, 'x')").run(sub)).toEqual([{ client_id: 'c' }])
      expect(compileSql("SELECT client_id FROM \"client.subscribe\" WHERE contains_topic(topic_filters, 'x', 1)").run(sub)).toBeNull()
      expect(compileSql("SELECT client_id FROM \"client.subscribe\" WHERE contains_topic_match(topic_filters, '+')").run(sub)).toEqual([{ client_id: 'c' }])
      expect(compileSql('SELECT topic, qos FROM "client.subscribe"').run(sub)).toEqual([{ topic: 't/#', qos: 1 }])
    })

    it('names several events', () => {
      const sql = compileSql('SELECT * FROM "client.connected", "client.disconnected"')
      expect(sql.events).toEqual(['client.connected', 'client.disconnected'])
    })
  })

  describe("EMQ X 4's: FROM names topic filters and $events/", () => {
    it('topic filters listen to message.publish on matching topics', () => {
      const sql = compileSql('SELECT * FROM "t/#", "a/+/c"')
      expect(sql.dialect).toBe('emqx4')
      expect(sql.events).toEqual(['message.publish'])
      expect(sql.topicFilters).toEqual(['t/#', 'a/+/c'])
      expect(sql.matchesTopic('t/1/2')).toBe(true)
      expect(sql.matchesTopic('a/b/c')).toBe(true)
      expect(sql.matchesTopic('a/b/d')).toBe(false)
      expect(sql.matchesTopic('$SYS/x')).toBe(false)
    })

    it.each([
      ['$events/client_connected', 'client.connected', 'client.connected'],
      ['$events/client_disconnected', 'client.disconnected', 'client.disconnected'],
      ['$events/session_subscribed', 'client.subscribe', 'session.subscribed'],
      ['$events/session_unsubscribed', 'client.unsubscribe', 'session.unsubscribed'],
      ['$events/message_delivered', 'message.deliver', 'message.delivered'],
      ['$events/message_acked', 'message.acked', 'message.acked'],
      ['$events/message_dropped', 'message.dropped', 'message.dropped']
    ])('"%s" listens to %s (EMQ X event %s)', (from, hook, emqxEvent) => {
      const sql = compileSql(`SELECT * FROM "${from}"`)
      expect(sql.dialect).toBe('emqx4')
      expect(sql.events).toEqual([hook])
      expect(sql.sources[0]).toEqual({ text: from, event: hook, eventName: emqxEvent })
      expect(sql.topicFilters).toBeNull()
    })

    it('mixes topic filters and events', () => {
      const sql = compileSql('SELECT * FROM "t/#", "$events/client_connected"')
      expect(sql.events).toEqual(['message.publish', 'client.connected'])
      expect(sql.topicFilters).toEqual(['t/#'])
    })

    it('$events/message_publish is every publish', () => {
      const sql = compileSql('SELECT * FROM "t/#", "$events/message_publish"')
      expect(sql.events).toEqual(['message.publish'])
      expect(sql.topicFilters).toBeNull()
    })

    it("reads EMQ X 4's columns and payload.<key> directly", () => {
      const sql = compileSql('SELECT payload.x AS x, clientid, peerhost FROM "t/#" WHERE payload.temp > 30')
      expect(sql.run(EMQX_PUBLISH)).toEqual([{ x: 1, clientid: 'sensor-7', peerhost: '10.0.0.2' }])
    })
  })

  it('the same rule written in both dialects selects the same data', () => {
    const spec = compileSql("SELECT payload.x AS x, client_id AS who FROM \"message.publish\" WHERE topic =~ 't/#' and payload.temp > 30")
    const emqx = compileSql('SELECT payload.x AS x, clientid AS who FROM "t/#" WHERE payload.temp > 30')
    expect(spec.run(SPEC_PUBLISH)).toEqual([{ x: 1, who: 'sensor-7' }])
    expect(emqx.matchesTopic(EMQX_PUBLISH.topic) ? emqx.run(EMQX_PUBLISH) : null).toEqual([{ x: 1, who: 'sensor-7' }])
    const elsewhere = { topic: 'u/7' }
    expect(spec.run({ ...SPEC_PUBLISH, ...elsewhere })).toBeNull()
    expect(emqx.matchesTopic(elsewhere.topic)).toBe(false)
  })

  describe('FROM errors', () => {
    it.each([
      ['SELECT * FROM "message.publish", "t/#"', 'cannot mix spec events ("message.publish" ...) with topic filters or $events/ in FROM: "t/#" at 1:34'],
      ['SELECT * FROM "$events/client_connected", "client.connected"', 'cannot mix spec events ("message.publish" ...) with topic filters or $events/ in FROM: "client.connected" at 1:43'],
      ['SELECT * FROM "$events/nope"', 'unknown event "$events/nope" in FROM; known: $events/message_publish, $events/message_delivered, $events/message_acked, $events/message_dropped, $events/client_connected, $events/client_disconnected, $events/session_subscribed, $events/session_unsubscribed at 1:15'],
      ['SELECT * FROM "t/#/x"', 'invalid topic filter "t/#/x" in FROM: \'#\' must be the last level on its own at 1:15'],
      ['SELECT * FROM ""', 'invalid topic filter "" in FROM: empty topic filter at 1:15'],
      ['SELECT * FROM "message+publish"', 'invalid topic filter "message+publish" in FROM: \'+\' must occupy a whole level at 1:15']
    ])('%s', (sql, message) => {
      expect(() => compileSql(sql)).toThrow(SqlError)
      expect(() => compileSql(sql)).toThrow(message)
    })
  })
})
