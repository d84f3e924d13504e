/**
 * svc_bridge_kafka against a real Kafka. Kafka has no Debian package, so the harness cannot
 * start one: this suite runs only when TEST_KAFKA_BROKERS names a broker the test may create
 * topics on (host:port, comma separated), and is skipped with a note otherwise. It creates a
 * fresh topic of 3 partitions, publishes through a rule on one node and reads the topic back
 * with a kafkajs consumer.
 */
import { Kafka, logLevel } from 'kafkajs'
import { closeClients, connect, startTestNode, type TestNode } from '../helpers/node.js'
import { apiOf } from './api-actions-client.js'
import { actionTotals, clearRulesAndResources, resourceStatus, until } from './data-actions-client.js'
import { freePort } from '../helpers/servers/index.js'

const BROKERS = process.env.TEST_KAFKA_BROKERS
const PLUGIN = 'svc_bridge_kafka'
const SQL = 'SELECT clientid, topic, payload.seq as seq FROM "sensors/#"'
describe('svc_bridge_kafka without a broker', () => {
  let node: TestNode
  const api = apiOf(() => node)
  beforeAll(async () => {
    node = await startTestNode({ 'node.name': 'k0@127.0.0.1', 'broker.sys_interval': '0' }, undefined, { plugins: [PLUGIN] })
  }, 60_000)
  afterAll(async () => { await node?.destroy() })

  it('lists the resource type and the action while loaded, and refuses a broker that cannot be reached (102)', async () => {
    const type = (await api('GET', '/resource_types')).body.data.find((t: { name: string }) => t.name === 'bridge_kafka')
    expect(type.provider).toBe(PLUGIN)
    expect(Object.keys(type.params)).toEqual(expect.arrayContaining(['servers', 'compression', 'ssl', 'cacertfile', 'local_buffer', 'retry_timeout']))
    const action = (await api('GET', '/actions')).body.data.find((a: { name: string }) => a.name === 'data_to_kafka')
    expect(Object.keys(action.params)).toEqual(expect.arrayContaining(['$resource', 'topic', 'key', 'strategy', 'required_acks', 'payload_tmpl', 'batch_size']))
    const port = await freePort()
    const refused = await api('POST', '/resources', { name: 'nowhere', type: 'bridge_kafka', config: { servers: `127.0.0.1:${port}` } })
    expect(refused.body.code).toBe(102)
    expect(refused.body.message).toMatch(/resource type bridge_kafka: cannot connect: kafka 127\.0\.0\.1:\d+: .*ECONNREFUSED.*; start the server or correct the config/)
    // snappy is taken (kafkajs-snappy's codec): the same refusal, for the broker, not the config
    const snappy = await api('POST', '/resources', { name: 'snappy', type: 'bridge_kafka', config: { servers: `127.0.0.1:${port}`, compression: 'snappy' } })
    expect(snappy.body.code).toBe(102)
    const lz4 = await api('POST', '/resources', { name: 'lz4', type: 'bridge_kafka', config: { servers: `127.0.0.1:${port}`, compression: 'lz4' } })
    expect(lz4.body).toMatchObject({ code: 108, message: expect.stringMatching(/parameter compression must be one of "no_compression", "gzip", "snappy", got "lz4"/) })
  }, 30_000)
})

if (BROKERS === undefined) console.warn('skipping "svc_bridge_kafka (real Kafka)": set TEST_KAFKA_BROKERS (host:port,...) to run it; Kafka has no Debian package for the harness')

;(BROKERS === undefined ? describe.skip : describe)('svc_bridge_kafka: data_to_kafka against TEST_KAFKA_BROKERS (a real Kafka)', () => {
  let node: TestNode
  const api = apiOf(() => node)
  const kafka = new Kafka({ clientId: 'starling-test', brokers: (BROKERS ?? '').split(','), logLevel: logLevel.NOTHING })
  const topic = `starling_test_${process.pid}_${Date.now()}`
  const snappyTopic = `${topic}_snappy`

  beforeAll(async () => {
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }, { topic: snappyTopic, numPartitions: 1 }], waitForLeaders: true })
    await admin.disconnect()
    node = await startTestNode({ 'node.name': 'k1@127.0.0.1', 'broker.sys_interval': '0' }, undefined, { plugins: [PLUGIN] })
  }, 60_000)
  afterAll(async () => {
    await closeClients()
    await clearRulesAndResources(api)
    await node?.destroy()
    const admin = kafka.admin()
    await admin.connect()
    await admin.deleteTopics({ topics: [topic, snappyTopic] }).catch(() => {})
    await admin.disconnect()
  })

  /** Every message of `from` (the suite's topic by default): partition, key and value, in partition order. */
  async function consume (n: number, from = topic): Promise<Array<{ partition: number, key: string | undefined, value: Record<string, unknown> }>> {
    const consumer = kafka.consumer({ groupId: `${from}-reader` })
    const out: Array<{ partition: number, key: string | undefined, value: Record<string, unknown> }> = []
    await consumer.connect()
    await consumer.subscribe({ topic: from, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ partition, message }) => { out.push({ partition, key: message.key?.toString(), value: JSON.parse(message.value?.toString() ?? 'null') }) } })
    try {
      await until(async () => out.length >= n, `${n} messages consumed`, 60_000)
    } finally {
      await consumer.disconnect()
    }
    return out
  }

  it('publishes 1,000 messages with the selected fields; key_dispatch keeps one client\'s messages in one partition, in order', async () => {
    const created = await api('POST', '/resources', { name: 'kafka', type: 'bridge_kafka', config: { servers: BROKERS, compression: 'gzip' } })
    expect(created.body).toMatchObject({ code: 0 })
    const resource = created.body.data.id as string
    expect(Object.values(await resourceStatus(api, resource))).toEqual([true])
    const rule = await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_kafka', params: { $resource: resource, topic, key: '${clientid}', strategy: 'key_dispatch', required_acks: 'all_isr' } }] })
    const id = rule.body.data.id as string
    const pub = await connect(node, { clientId: 'sensor-1' })
    await Promise.all(Array.from({ length: 1000 }, (_, seq) => pub.publishAsync('sensors/sensor-1', JSON.stringify({ seq }), { qos: 1 })))
    await until(async () => (await actionTotals(api, id)).success === 1000, 'success 1000', 60_000)
    const messages = await consume(1000)
    expect(new Set(messages.map((m) => m.partition)).size).toBe(1)
    expect(messages.map((m) => m.value.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => i))
    expect(messages[7]).toMatchObject({ key: 'sensor-1', value: { clientid: 'sensor-1', topic: 'sensors/sensor-1', seq: 7 } })
  }, 120_000)

  it('publishes snappy-compressed batches a consumer reads back (the codec is the process\'s: the node registered it)', async () => {
    const created = await api('POST', '/resources', { name: 'kafka-snappy', type: 'bridge_kafka', config: { servers: BROKERS, compression: 'snappy' } })
    expect(created.body).toMatchObject({ code: 0 })
    const rule = await api('POST', '/rules', { rawsql: SQL.replace('"sensors/#"', '"snappy/#"'), actions: [{ name: 'data_to_kafka', params: { $resource: created.body.data.id, topic: snappyTopic } }] })
    const id = rule.body.data.id as string
    const pub = await connect(node, { clientId: 'sensor-2' })
    await Promise.all(Array.from({ length: 100 }, (_, seq) => pub.publishAsync('snappy/sensor-2', JSON.stringify({ seq }), { qos: 1 })))
    await until(async () => (await actionTotals(api, id)).success === 100, 'success 100', 60_000)
    const messages = await consume(100, snappyTopic)
    expect(messages.map((m) => m.value.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i))
  }, 120_000)
})
