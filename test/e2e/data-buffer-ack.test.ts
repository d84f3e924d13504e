/**
 * A data action with the resource's local buffer holds the publisher's PUBACK until the row is
 * on disk (docs/integrations.md, "What each mode guarantees"): a real Redis (the harness), a
 * rule with data_to_redis and a long batch_time, and a real node process SIGKILLed while
 * Redis is stopped: every row its publisher had a PUBACK for arrives, in order, once the node
 * restarted and Redis is back. Beside it, in one process: other publishers (QoS 0, or topics no
 * such rule selects) do not wait for the batch. And `insert_mode` sync without the buffer: the
 * PUBACK goes out once the row is in Redis, or, with Redis down or not answering, after
 * `sync_timeout` with the row counted failed.
 */
import { jest } from '@jest/globals'
import type { MqttClient } from 'mqtt'
import { closeClients, connect, startTestNode, type TestNode } from '../helpers/node.js'
import { killAllNodes } from '../helpers/process.js'
import { describeWithServer, startRedis, type RedisServer } from '../helpers/servers/index.js'
import { apiOf, type ApiCall } from './api-actions-client.js'
import { ackedRowsSurviveSigkill, actionTotals, resourceStatus, until, type ActionTotals } from './data-actions-client.js'

jest.setTimeout(90_000)

const PLUGIN = 'svc_backend_redis'
/** Long enough that a PUBACK not held would go out well before its row is on disk. */
const BATCH_TIME_MS = 150

/**
 * A Redis resource (`resourceConfig` beside its server) and a rule pushing each `<topic>`
 * message's payload onto list `key`, batched for {@link BATCH_TIME_MS}; resolves with their ids.
 */
async function redisRule (api: ApiCall, redis: RedisServer, topic: string, key: string, resourceConfig: Record<string, unknown>, params: Record<string, unknown> = {}): Promise<{ resource: string, rule: string }> {
  const created = await api('POST', '/resources', { name: key, type: 'backend_redis_single', config: { server: `${redis.host}:${redis.port}`, ...resourceConfig } })
  expect([created.body.code, created.body.message]).toEqual([0, undefined])
  const rule = await api('POST', '/rules', {
    rawsql: `SELECT payload FROM "${topic}"`,
    actions: [{ name: 'data_to_redis', params: { $resource: created.body.data.id, cmd: `RPUSH ${key} \${payload}`, batch_size: 1000, batch_time: BATCH_TIME_MS, ...params } }]
  })
  expect(rule.body.code).toBe(0)
  return { resource: created.body.data.id as string, rule: rule.body.data.id as string }
}

/** A buffered Redis resource and a rule pushing each `<topic>` message's payload onto list `key`. */
async function bufferedRule (api: ApiCall, redis: RedisServer, topic: string, key: string): Promise<void> {
  await redisRule(api, redis, topic, key, { local_buffer: true })
}

describeWithServer('redis', 'data actions with the local buffer or in sync mode: the PUBACK means the row is on disk or written', () => {
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
    const SYNC_TIMEOUT_MS = 1000
    let n: TestNode
    let api: ApiCall
    /** insert_mode sync, without the local buffer: the PUBACK means the row is written, or counted failed. */
    let sync: { resource: string, rule: string }
    beforeAll(async () => {
      n = await startTestNode({ 'broker.sys_interval': '0' }, undefined, { plugins: [PLUGIN] })
      api = apiOf(() => n)
      await bufferedRule(api, redis, 'held/#', 'held')
      sync = await redisRule(api, redis, 'sync/#', 'sync', {}, { insert_mode: 'sync', sync_timeout: SYNC_TIMEOUT_MS })
      await redisRule(api, redis, 'async/#', 'async', {})
    }, 30_000)
    afterAll(async () => { await closeClients(); await n?.destroy() })

    /**
     * Publishes `payload` at QoS 1 on the sync rule's topic while Redis cannot take it: the
     * PUBACK comes after about sync_timeout (generous for a loaded machine, well under
     * ioredis's 15 s command timeout) with the row already counted failed. Resolves with the
     * totals read when the PUBACK arrived.
     */
    async function failsAfterSyncTimeout (pub: MqttClient, payload: string): Promise<ActionTotals> {
      const before = await actionTotals(api, sync.rule)
      const begin = Date.now()
      await pub.publishAsync('sync/a', payload, { qos: 1 })
      const at = Date.now() - begin
      const totals = await actionTotals(api, sync.rule)
      expect(at).toBeGreaterThanOrEqual(SYNC_TIMEOUT_MS - 5)
      expect(at).toBeLessThan(SYNC_TIMEOUT_MS + 2000)
      expect(totals).toEqual({ taken: before.taken + 1, success: before.success, failed: before.failed + 1 })
      return totals
    }

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

    it('in sync mode, acknowledges a QoS 1 publish a sync rule selects once its row is in Redis; async mode, QoS 0 and other publishers at once', async () => {
      const pub = await connect(n)
      const sub = await connect(n)
      await sub.subscribeAsync('sync/#', { qos: 0 })
      let deliveredAt = 0
      sub.on('message', () => { deliveredAt = Date.now() })
      const begin = Date.now()
      const held = pub.publishAsync('sync/a', 's1', { qos: 1 }).then(async () => {
        // read the moment the PUBACK arrives
        const at = Date.now() - begin
        return { at, rows: await redis.command('LRANGE', 'sync', '0', '-1') }
      })
      const other = await connect(n)
      await other.publishAsync('free/a', 'f1', { qos: 1 })
      const otherAt = Date.now() - begin
      const { at, rows } = await held
      expect(rows).toEqual(['s1'])
      expect(at).toBeGreaterThanOrEqual(BATCH_TIME_MS - 5)
      expect(otherAt).toBeLessThan(at)
      // the subscriber had it before the write
      await until(async () => deliveredAt > 0, 'the delivery')
      expect(deliveredAt - begin).toBeLessThan(BATCH_TIME_MS)
      expect(await actionTotals(api, sync.rule)).toEqual({ taken: 1, success: 1, failed: 0 })

      // async mode (the default): the PUBACK goes out before the batch is written
      const a = Date.now()
      await pub.publishAsync('async/a', 'a1', { qos: 1 })
      expect(Date.now() - a).toBeLessThan(BATCH_TIME_MS)
      expect(await redis.command('LRANGE', 'async', '0', '-1')).toEqual([])
      // QoS 0 on a sync topic is not held: the same publisher's next QoS 1 is acknowledged at once
      const q0 = Date.now()
      pub.publish('sync/a', 's0', { qos: 0 })
      await pub.publishAsync('free/b', 'f2', { qos: 1 })
      expect(Date.now() - q0).toBeLessThan(BATCH_TIME_MS)
      await until(async () => Number(await redis.command('LLEN', 'sync')) === 2, 'the QoS 0 row')
      await until(async () => Number(await redis.command('LLEN', 'async')) === 1, 'the async row')
    })

    it('in sync mode, with Redis not answering (SIGSTOP), acknowledges after about sync_timeout although the write is in flight; it counts failed and may yet be stored', async () => {
      const pub = await connect(n)
      process.kill(redis.pid!, 'SIGSTOP')
      let stopped = true
      try {
        const totals = await failsAfterSyncTimeout(pub, 'hung')
        process.kill(redis.pid!, 'SIGCONT')
        stopped = false
        // the write sent before the deadline is answered now: the row is stored, still counted failed
        await until(async () => ((await redis.command('LRANGE', 'sync', '0', '-1')) as string[]).includes('hung'), 'the write in flight')
        expect(await actionTotals(api, sync.rule)).toEqual(totals)
      } finally {
        if (stopped) process.kill(redis.pid!, 'SIGCONT')
      }
    })

    it('in sync mode, with Redis down, acknowledges a QoS 1 publish after about sync_timeout, the row counted failed', async () => {
      const pub = await connect(n)
      await redis.kill()
      let before: ActionTotals
      try {
        before = await failsAfterSyncTimeout(pub, 'lost')
      } finally {
        await redis.restart()
      }
      // never written later: once Redis is back, the next row is written and that one is not before it
      await until(async () => Object.values(await resourceStatus(api, sync.resource)).every(Boolean), 'alive again')
      await pub.publishAsync('sync/a', 'after', { qos: 1 })
      expect(await redis.command('LRANGE', 'sync', '0', '-1')).toEqual(['s1', 's0', 'hung', 'after'])
      expect(await actionTotals(api, sync.rule)).toEqual({ ...before, taken: before.taken + 1, success: before.success + 1 })
    })
  })
})
