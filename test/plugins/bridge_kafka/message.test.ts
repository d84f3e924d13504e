/**
 * data_to_kafka's params and messages (plugins/bridge_kafka/message.ts) and bridge_kafka's
 * servers; the real broker is test/e2e/data-kafka.test.ts's (with TEST_KAFKA_BROKERS).
 */
import { DATA_TO_KAFKA, compileKafkaAction, kafkaBrokersOf, kafkaBufferOf, kafkaRow } from '../../../plugins/bridge_kafka/index.js'
import { checkParams } from '../../../rules/params.js'
import { maskParams, restoreParams } from '../../../rules/views.js'
import type { Resource } from '../../../rules/types.js'

describe('data_to_kafka messages', () => {
  it('reads EMQ X 4.4\'s params with their defaults: random, all_isr (-1), no key', () => {
    expect(compileKafkaAction({ topic: 'mqtt' })).toEqual({ topic: 'mqtt', acks: -1, strategy: 'random', key: '', payload: '', extHeaders: [], headerEncoding: 'NONE' })
    expect(compileKafkaAction({ topic: 'mqtt', required_acks: 'leader_only', strategy: 'key_dispatch', key: '${clientid}' })).toMatchObject({ acks: 1, strategy: 'key_dispatch' })
    expect(compileKafkaAction({ topic: 'mqtt', required_acks: 'none' }).acks).toBe(0)
  })

  it('refuses a topic with a placeholder or not a Kafka name, an unknown strategy or acks, key_dispatch without a key (108)', () => {
    for (const [params, why] of [
      [{ topic: 't.${clientid}' }, /parameter topic cannot hold a \$\{key\} placeholder/],
      [{ topic: 'a b' }, /parameter topic must name a Kafka topic/],
      [{ topic: '..' }, /parameter topic must name a Kafka topic/],
      [{ topic: 't', strategy: 'hash' }, /parameter strategy must be one of random, roundrobin, key_dispatch/],
      [{ topic: 't', strategy: 'key_dispatch', key: 'none' }, /parameter key must be given with strategy key_dispatch/],
      [{ topic: 't', type: 'later' }, /parameter type must be sync or async/],
      [{ topic: 't', kafka_headers: 'pub_props' }, /parameter kafka_headers must be one placeholder/],
      [{ topic: 't', kafka_ext_headers: [{ key: 'a' }] }, /parameter kafka_ext_headers \[0\] must be \{"key": <text>, "value": <text>\}/],
      [{ topic: 't', kafka_ext_headers: 'a=b' }, /parameter kafka_ext_headers must be a list/],
      [{ topic: 't', kafka_header_value_encode_mode: 'RAW' }, /parameter kafka_header_value_encode_mode must be NONE or JSON/],
      [{ topic: 't', required_acks: 'all' }, /parameter required_acks must be one of none, leader_only, all_isr/],
      [{ topic: 't', strategy: 'key_dispatch' }, /parameter key must be given with strategy key_dispatch/]
    ] as const) {
      expect(() => compileKafkaAction(params)).toThrow(why)
    }
  })

  it('fills the key and payload_tmpl; an empty template is every selected field as JSON', () => {
    const selected = { clientid: 'c1', payload: { t: 21.5 } }
    const plain = kafkaRow(compileKafkaAction({ topic: 'mqtt', key: 'dev-${clientid}' }), selected)
    expect(plain).toMatchObject({ t: 'mqtt', a: -1, s: 'random', m: [{ k: 'dev-c1', v: '{"clientid":"c1","payload":{"t":21.5}}', ts: expect.stringMatching(/^\d{13}$/) }] })
    const templated = kafkaRow(compileKafkaAction({ topic: 'mqtt', payload_tmpl: '${clientid}=${payload.t}' }), selected)
    expect(templated.m[0]).toEqual({ v: 'c1=21.5', ts: expect.any(String) })
  })

  it('reads EMQ X 4.4\'s key words: none is no key, clientid, username and topic their fields', () => {
    const selected = { clientid: 'c1', username: 'u1', topic: 't/1' }
    const keyOf = (key: string): string | undefined => kafkaRow(compileKafkaAction({ topic: 'mqtt', key }), selected).m[0].k
    expect(keyOf('none')).toBeUndefined()
    expect(keyOf('clientid')).toBe('c1')
    expect(keyOf('username')).toBe('u1')
    expect(keyOf('topic')).toBe('t/1')
    expect(compileKafkaAction({ topic: 't', strategy: 'roundrobin' }).strategy).toBe('roundrobin')
    // EMQ X 4.2's name, renamed so by EMQ X 4.4's own import
    expect(compileKafkaAction({ topic: 't', strategy: 'first_key_dispatch', key: 'clientid' }).strategy).toBe('key_dispatch')
  })

  it('makes headers of kafka_headers\' object and kafka_ext_headers\' templates; values not text per the encode mode', () => {
    const selected = { clientid: 'c1', pub_props: { 'Content-Type': 'text/plain', 'Message-Expiry-Interval': 30, 'User-Property': { a: '1' } } }
    const headers = (extra: Record<string, unknown>): unknown => kafkaRow(compileKafkaAction({ topic: 'mqtt', kafka_headers: '${pub_props}', ...extra }), selected).m[0].h
    expect(headers({})).toEqual({ 'Content-Type': 'text/plain' })
    expect(headers({ kafka_header_value_encode_mode: 'JSON' })).toEqual({ 'Content-Type': 'text/plain', 'Message-Expiry-Interval': '30', 'User-Property': '{"a":"1"}' })
    expect(headers({ kafka_ext_headers: [{ key: 'from', value: 'dev-${clientid}' }, { key: 'Content-Type', value: 'json' }] }))
      .toEqual({ 'Content-Type': 'json', from: 'dev-c1' })
    expect(kafkaRow(compileKafkaAction({ topic: 'mqtt' }), selected).m[0]).not.toHaveProperty('h')
  })

  it('masks kafka_ext_headers\' values (but content-type\'s) and keeps them when sent back masked', () => {
    const params = checkParams(DATA_TO_KAFKA.params, { $resource: 'r', topic: 't', kafka_ext_headers: [{ key: 'authorization', value: 'Bearer x' }, { key: 'content-type', value: 'json' }] }, 'action data_to_kafka')
    const shown = maskParams(params, DATA_TO_KAFKA.params)
    expect(shown.kafka_ext_headers).toEqual([{ key: 'authorization', value: '******' }, { key: 'content-type', value: 'json' }])
    expect(restoreParams(shown, params, DATA_TO_KAFKA.params).kafka_ext_headers).toEqual(params.kafka_ext_headers)
  })

  it('holds a QoS 1/2 publisher for type sync (EMQ X\'s name of insert_mode), not for async', () => {
    const resource = { config: { local_buffer: false } } as unknown as Resource
    const params = (extra: Record<string, unknown>): Record<string, unknown> => checkParams(DATA_TO_KAFKA.params, { $resource: 'r', topic: 't', ...extra }, 'action data_to_kafka')
    expect(DATA_TO_KAFKA.holdsPublish?.(params({ type: 'sync' }), resource)).toBe(true)
    expect(DATA_TO_KAFKA.holdsPublish?.(params({}), resource)).toBe(false)
    expect(DATA_TO_KAFKA.params).not.toHaveProperty('insert_mode')
    expect(DATA_TO_KAFKA.params).not.toHaveProperty('sync_timeout')
  })

  it('stands EMQ X\'s per-action buffer for the resource\'s: cache_mode Disk is local_buffer, max_total_bytes max_buffer_bytes', () => {
    expect(kafkaBufferOf({ cache_mode: 'Memory', max_total_bytes: '2GB' })).toEqual({ max_buffer_bytes: 2 * 1024 ** 3 })
    expect(kafkaBufferOf({ cache_mode: 'Disk' })).toEqual({ local_buffer: true })
    expect(kafkaBufferOf({ cache_mode: 'Memory+Disk', max_total_bytes: '10MB' })).toEqual({ local_buffer: true, max_buffer_bytes: 10 * 1024 ** 2 })
    expect(DATA_TO_KAFKA.resourceConfigOf).toBe(kafkaBufferOf)
  })

  it('reads servers as bootstrap brokers, port 9092 when left out', () => {
    expect(kafkaBrokersOf('k1:9093, k2')).toEqual(['k1:9093', 'k2:9092'])
    expect(() => kafkaBrokersOf('')).toThrow(/parameter servers must list the bootstrap brokers/)
  })
})
