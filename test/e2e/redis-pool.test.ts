/**
 * The Redis pool's wait for a client that is coming up (plugins/kit/pools/redis.ts), against
 * real servers from the harness: a single Redis and a 3-master Redis Cluster.
 *
 * - A new pool's first calls wait for its clients' first ready, even when ioredis's Cluster
 *   client failed its first ready check (its `CLUSTER INFO` went to a node whose connection
 *   was still opening) and sits in `reconnecting`: many fresh pools, each called at once.
 * - A pool whose server refuses connections from the start fails at once (no wait).
 * - A pool that was ready and lost its server fails at once while it reconnects (the outage
 *   alarms and the buffered sinks count on it), and answers again once the server is back.
 */
import { createRedisPool, RedisUnavailableError, type RedisPool } from '../../plugins/kit/pools/redis.js'
import { describeWithServer, freePort, startRedis, startRedisCluster, type RedisCluster, type RedisServer } from '../helpers/servers/index.js'

const PASSWORD = 'pool pw'
const TIMEOUT_MS = 5000

describeWithServer('redis', 'Redis pool: clients coming up', () => {
  let cluster: RedisCluster
  let single: RedisServer
  const pools: RedisPool[] = []
  beforeAll(async () => {
    [cluster, single] = await Promise.all([startRedisCluster({ password: PASSWORD }), startRedis({ password: PASSWORD })])
  }, 90_000)
  afterEach(async () => {
    await Promise.all(pools.splice(0).map(async (p) => { await p.close() }))
  })
  afterAll(async () => {
    await Promise.all([cluster?.close(), single?.close()])
  })

  it('answers the first calls of new cluster pools, each called right after its creation', async () => {
    const seeds = cluster.nodes.map((n) => ({ host: n.host, port: n.port }))
    // 20 rounds of 4 pools of 2 clients: the ready-check race of a new Cluster client shows
    // in a fair share of them (the refusals this test was written for came from it)
    for (let round = 0; round < 20; round++) {
      const batch = Array.from({ length: 4 }, () => createRedisPool({ type: 'cluster', servers: seeds, password: PASSWORD, pool: 2, commandTimeoutMs: TIMEOUT_MS }))
      pools.push(...batch)
      const replies = await Promise.all(batch.map(async (p, i) => await p.call(['SET', `pool:${round}:${i}`, 'v'])))
      expect(replies).toEqual(['OK', 'OK', 'OK', 'OK'])
      await Promise.all(pools.splice(0).map(async (p) => { await p.close() }))
    }
  }, 120_000)

  it('fails at once when the server refuses connections from the start', async () => {
    const port = await freePort()
    let errors = 0
    const pool = createRedisPool({ servers: [{ host: '127.0.0.1', port }], commandTimeoutMs: TIMEOUT_MS, onError: () => { errors++ } })
    pools.push(pool)
    // the first call may catch the first attempt in progress: it waits for its refusal only
    const start = Date.now()
    await expect(pool.call(['PING'])).rejects.toThrow(RedisUnavailableError)
    expect(Date.now() - start).toBeLessThan(TIMEOUT_MS / 2)
    expect(errors).toBe(1)
    const again = Date.now()
    await expect(pool.call(['PING'])).rejects.toThrow(RedisUnavailableError)
    expect(Date.now() - again).toBeLessThan(TIMEOUT_MS / 2)
  })

  it('fails at once while a client that was ready reconnects, and answers once the server is back', async () => {
    const pool = createRedisPool({ servers: [{ host: single.host, port: single.port }], password: PASSWORD, commandTimeoutMs: TIMEOUT_MS })
    pools.push(pool)
    expect(await pool.call(['PING'])).toBe('PONG')
    await single.stop()
    const deadline = Date.now() + 10_000
    while (pool.ready() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(pool.ready()).toBe(false)
    const start = Date.now()
    // a reconnection attempt may be in progress: the call waits for its refusal only
    await expect(pool.call(['PING'])).rejects.toThrow()
    expect(Date.now() - start).toBeLessThan(TIMEOUT_MS / 2)
    await single.restart()
    const back = Date.now() + 15_000
    let reply: unknown
    while (reply === undefined && Date.now() < back) reply = await pool.call(['PING']).catch(async () => await new Promise((resolve) => setTimeout(resolve, 50)))
    expect(reply).toBe('PONG')
  }, 40_000)
})
