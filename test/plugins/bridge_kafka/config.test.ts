/**
 * bridge_kafka's resource config (plugins/bridge_kafka/config.ts) and the kafkajs options, socket
 * and produce requests built from it (client.ts), without a broker: the keys of an EMQ X 4.4
 * export (test/fixtures/backup/emqx44-kafka-backup.json) read with their meaning, SASL, the
 * refusals (108, naming the key), TCP keepalive on a real socket, max_batch_bytes' cut and the
 * roundrobin partitioner. A real broker is test/e2e/data-kafka.test.ts's (TEST_KAFKA_BROKERS).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createServer, Socket, type AddressInfo } from 'node:net'
import { jest } from '@jest/globals'
import { Partitioners, type Message, type PartitionerArgs } from 'kafkajs'
import { BRIDGE_KAFKA, kafkaConfigOf } from '../../../plugins/bridge_kafka/index.js'
import { kafkaOptions, keepaliveSocketFactory, produceRequests, strategyPartitioner } from '../../../plugins/bridge_kafka/client.js'
import { checkParams } from '../../../rules/params.js'
import { maskParams } from '../../../rules/views.js'
import type { KafkaWrite } from '../../../plugins/bridge_kafka/index.js'

const backup = JSON.parse(readFileSync(join(process.cwd(), 'test/fixtures/backup/emqx44-kafka-backup.json'), 'utf8'))
/** The EMQ X 4.4 export's resource config, its empty TLS file objects as a data import makes them. */
const emqxConfig: Record<string, unknown> = Object.fromEntries(Object.entries(backup.resources[0].config as Record<string, unknown>)
  .map(([k, v]) => [k, typeof v === 'object' && v !== null ? '' : v]))

/** The config as the API stores it: checked against the type's params, defaults filled. */
const stored = (config: Record<string, unknown>): Record<string, unknown> => checkParams(BRIDGE_KAFKA.params, config, 'resource type bridge_kafka config')

describe('bridge_kafka config', () => {
  it('reads an EMQ X 4.4 export\'s keys with their meaning: SASL, sizes, durations', () => {
    const config = stored(emqxConfig)
    BRIDGE_KAFKA.checkConfig?.(config)
    expect(kafkaConfigOf(config)).toEqual({
      brokers: ['127.0.0.1:9'],
      compression: 'no_compression',
      sasl: { mechanism: 'scram-sha-256', username: 'emqx', password: 'kafka-secret-44' },
      maxBatchBytes: 900 * 1024,
      syncTimeoutMs: 3000,
      tcpKeepaliveMs: 0
    })
  })

  it('has EMQ X 4.4\'s defaults: no SASL, 900KB, 3s, keepalive off', () => {
    expect(kafkaConfigOf(stored({ servers: 'k1' }))).toEqual({
      brokers: ['k1:9092'], compression: 'no_compression', sasl: undefined, maxBatchBytes: 921600, syncTimeoutMs: 3000, tcpKeepaliveMs: 0
    })
  })

  it('maps each authentication_mechanism onto kafkajs\'s; absent is PLAIN with a username, as EMQ X 4.4', () => {
    const sasl = (extra: Record<string, unknown>): unknown => kafkaConfigOf(stored({ servers: 'k1', ...extra })).sasl
    expect(sasl({ authentication_mechanism: 'NONE', username: 'u', password: 'p' })).toBeUndefined()
    expect(sasl({ authentication_mechanism: 'PLAIN', username: 'u', password: 'p' })).toEqual({ mechanism: 'plain', username: 'u', password: 'p' })
    expect(sasl({ authentication_mechanism: 'SCRAM_SHA_512', username: 'u', password: 'p' })).toEqual({ mechanism: 'scram-sha-512', username: 'u', password: 'p' })
    expect(sasl({ username: 'u', password: 'p' })).toEqual({ mechanism: 'plain', username: 'u', password: 'p' })
    expect(sasl({})).toBeUndefined()
  })

  it('refuses what it cannot use with 108, naming the key', () => {
    for (const [extra, why] of [
      [{ authentication_mechanism: 'KERBEROS', username: 'u' }, /parameter authentication_mechanism must be one of "NONE", "PLAIN", "SCRAM_SHA_256", "SCRAM_SHA_512", got "KERBEROS"/],
      [{ authentication_mechanism: 'PLAIN' }, /parameter username must be given with authentication_mechanism PLAIN/],
      [{ max_batch_bytes: 'lots' }, /parameter max_batch_bytes must be a size of at least 1024 bytes/],
      [{ max_batch_bytes: '512' }, /parameter max_batch_bytes must be a size of at least 1024 bytes/],
      [{ sync_timeout: 'soon' }, /parameter sync_timeout is not a duration/],
      [{ sync_timeout: '0s' }, /parameter sync_timeout must be a duration of at least 1 ms/],
      [{ tcp_keepalive: 'x' }, /parameter tcp_keepalive is not a duration/],
      [{ send_buffer: 'big' }, /parameter send_buffer must be a size/],
      [{ query_api_versions: 'yes' }, /parameter query_api_versions must be a boolean/],
      [{ compression: 'lz4' }, /parameter compression must be one of/]
    ] as const) {
      let err: unknown
      try {
        BRIDGE_KAFKA.checkConfig?.(stored({ servers: 'k1', ...extra }))
      } catch (e) { err = e }
      expect(err).toMatchObject({ code: 108, message: expect.stringMatching(why) })
    }
  })

  it('shows the password as ****** and the rest as given', () => {
    const shown = maskParams(stored(emqxConfig), BRIDGE_KAFKA.params)
    expect(shown).toMatchObject({ password: '******', username: 'emqx', authentication_mechanism: 'SCRAM_SHA_256', max_batch_bytes: '900KB' })
  })
})

describe('kafkajs options of a resource', () => {
  it('carries SASL, TLS and retries none (the kit retries)', () => {
    const s = { ...kafkaConfigOf(stored(emqxConfig)), tls: { rejectUnauthorized: true }, clientId: 'starling-n1' }
    const options = kafkaOptions(s)
    expect(options).toMatchObject({
      clientId: 'starling-n1',
      brokers: ['127.0.0.1:9'],
      ssl: { rejectUnauthorized: true },
      sasl: { mechanism: 'scram-sha-256', username: 'emqx', password: 'kafka-secret-44' },
      retry: { retries: 0 }
    })
    expect(kafkaOptions({ ...s, sasl: undefined, tls: undefined })).not.toHaveProperty('sasl')
    expect(kafkaOptions({ ...s, tls: undefined }).ssl).toBe(false)
  })

  it('sets tcp_keepalive on the sockets kafkajs opens, and turns it off for 0s', async () => {
    const server = createServer((s) => s.destroy())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as AddressInfo).port
    const calls: unknown[][] = []
    const spy = jest.spyOn(Socket.prototype, 'setKeepAlive').mockImplementation(function (this: Socket, ...args: unknown[]) {
      calls.push(args)
      return this
    })
    try {
      for (const ms of [45_000, 0]) {
        await new Promise<void>((resolve, reject) => {
          const socket = keepaliveSocketFactory(ms)({ host: '127.0.0.1', port, ssl: null as never, onConnect: () => { socket.destroy(); resolve() } })
          socket.once('error', reject)
        })
      }
    } finally {
      spy.mockRestore()
      server.close()
    }
    expect(calls).toEqual([[true, 45_000], [false, 0]])
  })
})

describe('produce requests', () => {
  const write = (t: string, a: number, values: string[]): KafkaWrite => ({ t, a, s: 'random', m: values.map((v) => ({ v, ts: '1', k: 'k' })) })
  const shape = (writes: KafkaWrite[], max: number): unknown => produceRequests(writes, max, () => {})
    .map((r) => ({ acks: r.acks, topics: r.topicMessages.map((t) => `${t.topic}:${t.messages.map((m) => String(m.value)).join(',')}`) }))

  it('cuts a run at max_batch_bytes of keys and values, in order; a larger message goes alone', () => {
    // each message: key 1 byte + value 9 bytes
    const values = ['aaaaaaaaa', 'bbbbbbbbb', 'ccccccccc', 'ddddddddd']
    expect(shape([write('t1', -1, values.slice(0, 2)), write('t2', -1, values.slice(2))], 25)).toEqual([
      { acks: -1, topics: ['t1:aaaaaaaaa,bbbbbbbbb'] },
      { acks: -1, topics: ['t2:ccccccccc,ddddddddd'] }
    ])
    expect(shape([write('t1', -1, values)], 1024)).toEqual([{ acks: -1, topics: ['t1:aaaaaaaaa,bbbbbbbbb,ccccccccc,ddddddddd'] }])
    expect(shape([write('t1', -1, ['x'.repeat(50), 'y'])], 25)).toEqual([{ acks: -1, topics: [`t1:${'x'.repeat(50)}`] }, { acks: -1, topics: ['t1:y'] }])
  })

  it('starts a request where the acks change, and carries headers', () => {
    const withHeaders: KafkaWrite = { t: 't', a: 1, s: 'random', m: [{ v: 'v', ts: '1', h: { clientid: 'c1' } }] }
    const requests = produceRequests([write('t', -1, ['a']), withHeaders, write('t', -1, ['b'])], 1024, () => {})
    expect(requests.map((r) => r.acks)).toEqual([-1, 1, -1])
    expect(requests[1].topicMessages[0].messages[0]).toEqual({ key: null, value: 'v', timestamp: '1', headers: { clientid: 'c1' } })
  })
})

describe('the partitioner', () => {
  const args = (message: Message, leaders: number[]): PartitionerArgs => ({
    topic: 't', message, partitionMetadata: leaders.map((leader, partitionId) => ({ partitionId, leader, partitionErrorCode: 0, replicas: [], isr: [] }))
  })

  it('takes the partitions with a leader in turn for roundrobin, per topic', () => {
    const m: Message = { value: 'v' }
    const p = strategyPartitioner(() => 'roundrobin', Partitioners.DefaultPartitioner())
    expect([0, 1, 2, 3, 4].map(() => p(args(m, [1, -1, 2, 3])))).toEqual([0, 2, 3, 0, 2])
    expect(p({ ...args(m, [1, 1]), topic: 'other' })).toBe(0)
  })

  it('hashes the key for key_dispatch (the same key, the same partition) and picks a led one for random', () => {
    const byKey = strategyPartitioner(() => 'key_dispatch', Partitioners.DefaultPartitioner())
    const one = byKey(args({ key: 'dev-1', value: 'v' }, [1, 1, 1, 1]))
    expect(byKey(args({ key: 'dev-1', value: 'w' }, [1, 1, 1, 1]))).toBe(one)
    const random = strategyPartitioner(() => 'random', Partitioners.DefaultPartitioner())
    for (let i = 0; i < 20; i++) expect(random(args({ value: 'v' }, [-1, 1, -1]))).toBe(1)
  })
})
