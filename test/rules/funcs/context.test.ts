import { ConversionError } from '../../../rules/funcs/index.js'
import { call, callWith } from './call.js'


describe('event readers', () => {
  const emqx = { id: 'abc', clientid: 'c1', username: 'u1', peerhost: '10.0.0.1', topic: 't/a/b', qos: 1, flags: { retain: true }, payload: '{"x":1}' }
  const spec = { client_id: 'c2', peername: '[::1]:1883', topic: 't' }

  it("read EMQ X 4's columns", () => {
    expect(callWith(emqx, 'msgid')).toBe('abc')
    expect(callWith(emqx, 'clientid')).toBe('c1')
    expect(callWith(emqx, 'username')).toBe('u1')
    expect(callWith(emqx, 'clientip')).toBe('10.0.0.1')
    expect(callWith(emqx, 'peerhost')).toBe('10.0.0.1')
    expect(callWith(emqx, 'qos')).toBe(1)
    expect(callWith(emqx, 'flags')).toEqual({ retain: true })
    expect(callWith(emqx, 'flag', 'retain')).toBe(true)
    expect(callWith(emqx, 'flag', 'dup')).toBeUndefined()
    expect(callWith(emqx, 'payload')).toBe('{"x":1}')
  })

  it("read the spec's column names too", () => {
    expect(callWith(spec, 'clientid')).toBe('c2')
    expect(callWith(spec, 'peerhost')).toBe('::1')
    expect(callWith({ peername: '192.168.0.10:56431' }, 'clientip')).toBe('192.168.0.10')
  })

  it('give undefined (and flags an empty map) when the event lacks the column', () => {
    for (const f of ['msgid', 'qos', 'topic', 'clientid', 'username', 'clientip', 'peerhost', 'payload']) {
      expect(call(f)).toBeUndefined()
    }
    expect(call('flags')).toEqual({})
  })

  it('topic(N) gives the N-th level, 1-based', () => {
    expect(callWith(emqx, 'topic')).toBe('t/a/b')
    expect(callWith(emqx, 'topic', 2)).toBe('a')
    expect(() => callWith(emqx, 'topic', 4)).toThrow(ConversionError)
    expect(() => callWith(emqx, 'topic', 0)).toThrow(ConversionError)
  })

  it('payload(Path) reads a payload already decoded to a map', () => {
    expect(callWith({ payload: { a: { b: 2 } } }, 'payload', 'a.b')).toBe(2)
    expect(callWith(emqx, 'payload', 'x')).toBeUndefined()
  })

  it('null() is undefined', () => {
    expect(call('null')).toBeUndefined()
  })
})

describe('contains_topic and contains_topic_match', () => {
  const filters = [{ topic: 't/1', qos: 1 }, { topic: 't/+/x', qos: 2 }, { topic: 'a/#', qos: 0 }]

  it('find a topic filter by equality, optionally with its QoS', () => {
    expect(call('contains_topic', filters, 't/1')).toBe(true)
    expect(call('contains_topic', filters, 't/1', 1)).toBe(true)
    expect(call('contains_topic', filters, 't/1', 2)).toBe(false)
    expect(call('contains_topic', filters, 't/+/x', 2)).toBe(true)
    expect(call('contains_topic', filters, 't/2')).toBe(false)
  })

  it('match subscribed filters against a filter argument', () => {
    expect(call('contains_topic_match', filters, 't/#')).toBe(true)
    expect(call('contains_topic_match', filters, 't/+', 1)).toBe(true)
    expect(call('contains_topic_match', filters, 'a/#', 0)).toBe(true)
    expect(call('contains_topic_match', filters, 'b/#')).toBe(false)
  })

  it('accept [topic, {qos}] pairs and bare topics, and no filters at all', () => {
    expect(call('contains_topic', [['t/1', { qos: 1 }]], 't/1', 1)).toBe(true)
    expect(call('contains_topic', ['t/1'], 't/1')).toBe(true)
    expect(call('contains_topic', undefined, 't/1')).toBe(false)
    expect(() => call('contains_topic', 't/1', 't/1')).toThrow(ConversionError)
  })
})

describe('kv_store', () => {
  it('stores values by key on this node', () => {
    expect(call('kv_store_get', 'k-test', 'none')).toBe('none')
    expect(call('kv_store_put', 'k-test', { a: 1 })).toBe(true)
    expect(call('kv_store_get', 'k-test')).toEqual({ a: 1 })
    expect(call('kv_store_get', Buffer.from('k-test'))).toEqual({ a: 1 })
    expect(call('kv_store_del', 'k-test')).toBe(true)
    expect(call('kv_store_get', 'k-test')).toBeUndefined()
    expect(() => call('kv_store_put', { a: 1 }, 1)).toThrow(ConversionError)
  })
})
