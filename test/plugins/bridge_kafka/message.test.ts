/**
 * data_to_kafka's params and messages (plugins/bridge_kafka/message.ts) and bridge_kafka's
 * servers; the real broker is test/e2e/data-kafka.test.ts's (with TEST_KAFKA_BROKERS).
 */
import { compileKafkaAction, kafkaBrokersOf, kafkaRow } from '../../../plugins/bridge_kafka/index.js'

describe('data_to_kafka messages', () => {
  it('reads EMQ X 4.4\'s params with their defaults: random, all_isr (-1), no key', () => {
    expect(compileKafkaAction({ topic: 'mqtt' })).toEqual({ topic: 'mqtt', acks: -1, strategy: 'random', key: '', payload: '' })
    expect(compileKafkaAction({ topic: 'mqtt', required_acks: 'leader_only', strategy: 'key_dispatch', key: '${clientid}' })).toMatchObject({ acks: 1, strategy: 'key_dispatch' })
    expect(compileKafkaAction({ topic: 'mqtt', required_acks: 'none' }).acks).toBe(0)
  })

  it('refuses a topic with a placeholder or not a Kafka name, an unknown strategy or acks, key_dispatch without a key (108)', () => {
    for (const [params, why] of [
      [{ topic: 't.${clientid}' }, /parameter topic cannot hold a \$\{key\} placeholder/],
      [{ topic: 'a b' }, /parameter topic must name a Kafka topic/],
      [{ topic: '..' }, /parameter topic must name a Kafka topic/],
      [{ topic: 't', strategy: 'first_key_dispatch' }, /parameter strategy must be one of random, key_dispatch/],
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

  it('reads servers as bootstrap brokers, port 9092 when left out', () => {
    expect(kafkaBrokersOf('k1:9093, k2')).toEqual(['k1:9093', 'k2:9092'])
    expect(() => kafkaBrokersOf('')).toThrow(/parameter servers must list the bootstrap brokers/)
  })
})
