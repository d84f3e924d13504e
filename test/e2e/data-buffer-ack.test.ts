/**
 * A data action with the resource's local buffer holds the publisher's PUBACK until the row is
 * on disk (docs/integrations.md, "What each mode guarantees"): a real Redis (the harness), a
 * rule with data_to_redis and a long batch_time, and a real node process SIGKILLed while
 * Redis is stopped: every row its publisher had a PUBACK for arrives, in order, once the node
 * restarted and Redis is back. Beside it, in one process: other publishers (QoS 0, or topics no
 * such rule selects) do not wait for the batch.
 */
import { jest } from '@jest/globals'
import { closeClients, connect, startTestNode, type TestNode } from '../helpers/node.js'
import { killAllNodes } from '../helpers/process.js'
import { describeWithServer, startRedis, type RedisServer } from '../helpers/servers/index.js'
import { apiOf, type ApiCall } from './api-actions-client.js'
import { ackedRowsSurviveSigkill, until } from './data-actions-client.js'

jest.setTimeout(90_000)

const PLUGIN = 'svc_backend_redis'
/** Long enough that a PUBACK not held would go out well before its row is on disk. */
const BATCH_TIME_MS = 150

/** A buffered Redis resource and a rule pushing each `<topic>` message's payload onto list `key`. */
async function bufferedRule (api: ApiCall, redis: RedisServer, topic: string, key: string): Promise<void> {
  const created = await api('POST', '/resources', { name: key, type: 'backend_redis_single', config: { server: `${redis.host}:${redis.port}`, local_buffer: true } })
  expect([created.body.code, created.body.message]).toEqual([0, undefined])
  const rule = await api('POST', '/rules', {
    rawsql: `SELECT payload FROM "${topic}"`,
    actions: [{ name: 'data_to_redis', params: { $resource: created.body.data.id, cmd: `RPUSH ${key} \${payload}`, batch_size: 1000, batch_time: BATCH_TIME_MS } }]
  })
  expect(rule.body.code).toBe(0)
}

describeWithServer('redis', 'data actions with the local buffer: the PUBACK means the row is on disk', () => {
  let redis: RedisServer
  beforeAll(async () => { redis = await startRedis() }, 30_000)
  afterAll(async () => {
    await closeClients()
    await killAllNodes()
    await redis?.close()
  })

  it('delivers after a SIGKILL of the node every row whose publisher had a PUBACK, in order', async () => {
    const { acked, sent } = await ackedRowsSurviveSigkill({
      plugin: PLUGIN,
      setUp: async (api) => { await bufferedRule(api, redis, 'crash/#', 'crash') },
      stopServer: async () => { await redis.stop() },
      restartServer: async () => { await redis.restart() },
      rows: async () => (await redis.command('LRANGE', 'crash', '0', '-1') as string[]).map(Number)
    })
    process.stdout.write(`data-buffer-ack: SIGKILL with ${acked} acknowledged (${sent} sent), all in Redis after the restart\n`)
  })

  describe('in one node', () => {
    let n: TestNode
    beforeAll(async () => {
      n = await startTestNode({ 'broker.sys_interval': '0' }, undefined, { plugins: [PLUGIN] })
      await bufferedRule(apiOf(() => n), redis, 'held/#', 'held')
    }, 30_000)
    afterAll(async () => { await closeClients(); await n?.destroy() })

    it('acknowledges a QoS 1 publish a buffered rule selects once its batch is on disk, and the others at once', async () => {
      const pub = await connect(n)
      const sub = await connect(n)
      await sub.subscribeAsync('#', { qos: 0 })
      const delivered: Array<{ topic: string, at: number }> = []
      sub.on('message', (topic) => { delivered.push({ topic, at: Date.now() }) })
      const begin = Date.now()
      const held = pub.publishAsync('held/a', 'h1', { qos: 1 })
      // another client's QoS 0 and QoS 1 publishes on other topics go through while that one waits
      const other = await connect(n)
      await other.publishAsync('free/a', 'f0', { qos: 0 })
      await other.publishAsync('free/b', 'f1', { qos: 1 })
      const otherAt = Date.now() - begin
      await held
      const heldAt = Date.now() - begin
      expect(heldAt).toBeGreaterThanOrEqual(BATCH_TIME_MS - 5)
      expect(otherAt).toBeLessThan(heldAt)
      expect(await redis.command('LRANGE', 'held', '0', '-1')).toEqual(['h1'])
      // the subscriber had the held message before its PUBACK went out
      await until(async () => delivered.length === 3, 'three deliveries')
      expect(delivered.find((d) => d.topic === 'held/a')!.at - begin).toBeLessThan(BATCH_TIME_MS)
      // QoS 0 on a held topic is not held: the same publisher's next QoS 1 is acknowledged at once
      const q0 = Date.now()
      pub.publish('held/a', 'h0', { qos: 0 })
      await pub.publishAsync('free/c', 'f2', { qos: 1 })
      expect(Date.now() - q0).toBeLessThan(BATCH_TIME_MS)
      await until(async () => Number(await redis.command('LLEN', 'held')) === 2, 'the QoS 0 row')
    })
  })
})
