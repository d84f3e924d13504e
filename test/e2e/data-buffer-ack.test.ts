/**
 * A data action with the resource's local buffer holds the publisher's PUBACK until the row is
 * on disk (docs/integrations.md, "What each mode guarantees"): a real Redis (the harness), a
 * rule with data_to_redis and a long batch_time, and a real node process SIGKILLed while
 * Redis is stopped: every row its publisher had a PUBACK for arrives, in order, once the node
 * restarted and Redis is back. Beside it, in one process: other publishers (QoS 0, or topics no
 * such rule selects) do not wait for the batch.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { jest } from '@jest/globals'
import { envVarName } from '../../node/config/index.js'
import { API_AUTH, closeClients, connect, startTestNode, type TestNode } from '../helpers/node.js'
import { connectTo, killAllNodes, publishUntilClosed, spawnNode, stopNode, tempDir, type NodeProcess } from '../helpers/process.js'
import { describeWithServer, freePort, startRedis, type RedisServer } from '../helpers/servers/index.js'
import { apiOf, type ApiCall } from './api-actions-client.js'
import { until } from './data-actions-client.js'

jest.setTimeout(90_000)

const PLUGIN = 'svc_backend_redis'
/** Long enough that a PUBACK not held would go out well before its row is on disk. */
const BATCH_TIME_MS = 150

/** An {@link ApiCall} on the management listener at `port`. */
function apiAt (port: number): ApiCall {
  return async (method, path, body) => {
    const headers: Record<string, string> = { authorization: API_AUTH }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`http://127.0.0.1:${port}/api/v3${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
  }
}

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
    const dataDir = tempDir()
    writeFileSync(join(dataDir, 'loaded_plugins'), `{svc_rule_engine, true}.\n{${PLUGIN}, true}.\n`)
    const apiPort = await freePort()
    const env = { [envVarName('management.listener.http')]: `127.0.0.1:${apiPort}` }
    let node: NodeProcess | undefined = await spawnNode({ env, dataDir })
    try {
      await bufferedRule(apiAt(apiPort), redis, 'crash/#', 'crash')
      await redis.stop()
      const pub = await connectTo(node.port('mqtt:tcp'), { reconnectPeriod: 0 })
      pub.on('error', () => {})
      // 50 in flight until the node dies, SIGKILLed once 1,000 were acknowledged
      const { acked, sent } = await publishUntilClosed(pub, 'crash/a', 50, (_n, count) => { if (count >= 1000) node!.kill('SIGKILL') })
      await node.exited
      node = await spawnNode({ env, dataDir })
      await redis.restart()
      const rows = async (): Promise<number[]> => (await redis.command('LRANGE', 'crash', '0', '-1') as string[]).map(Number)
      const ackedSet = new Set(acked)
      await until(async () => { const got = new Set(await rows()); return acked.every((n) => got.has(n)) }, `the ${acked.length} acknowledged rows in Redis`, 30_000)
      // at least once: a batch written just before the crash may come twice; the first arrivals keep the order
      const first = [...new Set(await rows())]
      const order = first.filter((n) => ackedSet.has(n))
      expect(order).toEqual([...acked].sort((a, b) => a - b))
      process.stdout.write(`data-buffer-ack: SIGKILL with ${acked.length} acknowledged (${sent} sent), all in Redis after the restart\n`)
    } finally {
      if (node !== undefined) await stopNode(node, 'SIGKILL')
      if (redis.pid === undefined) await redis.restart()
    }
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
