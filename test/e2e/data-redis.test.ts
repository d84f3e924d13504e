/**
 * svc_backend_redis against real Redis (test/helpers/servers/): `backend_redis_single`,
 * `backend_redis_cluster` and `backend_redis_sentinel` with `data_to_redis`, through the HTTP
 * API and a real MQTT publisher on two clustered nodes. What each mode guarantees
 * (docs/integrations.md) with the server killed (SIGKILL) mid-stream and restarted.
 *
 * The sentinel is `redis-server --sentinel` (the same binary; Debian's `redis-sentinel`
 * package only adds a service), started here beside a Redis it watches.
 */
import { statSync } from 'node:fs'
import { Redis } from 'ioredis'
import { connect, type TestNode } from '../helpers/node.js'
import { apiOf } from './api-actions-client.js'
import { actionTotals, clearRulesAndResources, resourceStatus, until, useDataCluster, type ActionTotals } from './data-actions-client.js'
import {
  describeWithServer, freePort, redisBinary, spawnServer, startRedis, startRedisCluster,
  type RedisServer, type ServerProcess
} from '../helpers/servers/index.js'
import { bufferDirOf } from '../../plugins/kit/data/index.js'

const PLUGIN = 'svc_backend_redis'
const PASSWORD = 'redis pw'
const SQL = 'SELECT clientid, topic, payload, payload.seq as seq FROM "sensors/#"'


/** A sentinel (`redis-server <conf> --sentinel`) watching `master` as `name`, quorum 1. */
async function startSentinel (master: RedisServer, name: string): Promise<ServerProcess> {
  return await spawnServer({
    name: 'Redis sentinel',
    debianPackage: 'redis-server',
    setup: async (ctx) => {
      // the sentinel rewrites its file: it lives in the server's own directory
      ctx.writeFile('sentinel.conf', [
        `sentinel monitor ${name} ${master.host} ${master.port} 1`,
        `sentinel auth-pass ${name} "${PASSWORD}"`,
        'sentinel down-after-milliseconds ' + name + ' 5000',
        // the resource's password is the sentinels' too (ioredis's sentinelPassword)
        `requirepass "${PASSWORD}"`,
        ''
      ].join('\n'), 0o600)
    },
    command: (ctx) => [redisBinary(), `${ctx.dir}/sentinel.conf`, '--sentinel', '--port', String(ctx.port), '--bind', ctx.host,
      '--dir', ctx.dir, '--daemonize', 'no', '--protected-mode', 'no'],
    probe: async (ctx, timeoutMs) => {
      const c = new Redis({ host: ctx.host, port: ctx.port, password: PASSWORD, lazyConnect: true, connectTimeout: timeoutMs, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false })
      c.on('error', () => {})
      try {
        await c.connect()
        const addr = await c.call('SENTINEL', 'get-master-addr-by-name', name)
        if (!Array.isArray(addr)) throw new Error('the sentinel does not know the master yet')
      } finally {
        c.disconnect()
      }
    }
  })
}

describeWithServer('redis', 'svc_backend_redis: data_to_redis', () => {
  let server: RedisServer
  let n1: TestNode
  const api = apiOf(() => n1)
  const plugins = { plugins: [PLUGIN] }
  let run = 0

  // the data suites' lifecycle: the server and two clustered nodes, cleared after each test
  const d = useDataCluster('r', plugins.plugins[0], async () => await startRedis({ password: PASSWORD }))
  beforeAll(() => { server = d.server; n1 = d.n1 })

  const single = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ server: `${server.host}:${server.port}`, password: PASSWORD, ...extra })

  /** A resource of `type` and a rule running `cmd` for every `sensors/#` message. */
  async function setUp (type: string, config: Record<string, unknown>, cmd: string, actionParams: Record<string, unknown> = {}): Promise<{ resource: string, rule: string }> {
    const created = await api('POST', '/resources', { name: `r${++run}`, type, config })
    expect([created.body.code, created.body.message]).toEqual([0, undefined])
    const resource = created.body.data.id as string
    const rule = await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_redis', params: { $resource: resource, cmd, ...actionParams } }] })
    expect(rule.body).toMatchObject({ code: 0 })
    return { resource, rule: rule.body.data.id as string }
  }

  const statusOf = async (resource: string): Promise<Record<string, boolean>> => await resourceStatus(api, resource)

  const metricsOf = async (rule: string): Promise<ActionTotals> => await actionTotals(api, rule)

  /** The list at `key`, each entry parsed as JSON. */
  async function list (key: string): Promise<Array<Record<string, unknown>>> {
    return (await server.command('LRANGE', key, '0', '-1') as string[]).map((e) => JSON.parse(e))
  }

  async function length (key: string): Promise<number> {
    return Number(await server.command('LLEN', key))
  }

  /** Publishes `n` messages (seq `from`..) at QoS 1 from one client; resolves once all are acknowledged. */
  async function publish (node: TestNode, n: number, clientId: string, from = 0, extra: (seq: number) => Record<string, unknown> = () => ({})): Promise<void> {
    const pub = await connect(node, { clientId })
    await Promise.all(Array.from({ length: n }, (_, i) => pub.publishAsync(`sensors/${clientId}`,
      JSON.stringify({ seq: from + i, note: `reading ${from + i} of ${clientId}`, ...extra(from + i) }), { qos: 1 })))
  }

  it('refuses a resource whose server cannot be reached, and a cmd that is empty or whose command is a placeholder', async () => {
    const port = await freePort()
    const refused = await api('POST', '/resources', { name: 'nowhere', type: 'backend_redis_single', config: single({ server: `127.0.0.1:${port}` }) })
    expect(refused.status).toBe(400)
    expect(refused.body.code).toBe(102)
    expect(refused.body.message).toMatch(/resource type backend_redis_single: cannot connect: .*ECONNREFUSED.*; start the server or correct the config/)
    const wrongPassword = await api('POST', '/resources', { name: 'denied', type: 'backend_redis_single', config: single({ password: 'nope' }) })
    expect(wrongPassword.body.code).toBe(102)
    expect(wrongPassword.body.message).toMatch(/WRONGPASS/)
    expect((await api('GET', '/resources')).body.data).toEqual([])

    const ok = await api('POST', '/resources', { name: 'here', type: 'backend_redis_single', config: single() })
    for (const [cmd, why] of [['  ', /parameter cmd cannot be used: it is empty/], ['${payload.cmd} k v', /parameter cmd cannot be used: the command name/]] as const) {
      const bad = await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_redis', params: { $resource: ok.body.data.id, cmd } }] })
      expect(bad.status).toBe(400)
      expect(bad.body.code).toBe(108)
      expect(bad.body.message).toMatch(why)
    }
  })

  it('runs 1,000 messages through one rule into a list, in order, a value with spaces as one argument; the password is never shown', async () => {
    const { resource, rule } = await setUp('backend_redis_single', single(), 'RPUSH msgs:${clientid} ${payload}')
    const shown = (await api('GET', `/resources/${resource}`)).body.data
    expect(shown.config).toMatchObject({ password: '******', database: 0, pool_size: 8, auto_reconnect: true, local_buffer: false, ssl: false })
    await until(async () => Object.values(await statusOf(resource)).filter(Boolean).length === 2, 'alive on both nodes')
    expect(await statusOf(resource)).toEqual({ 'r1@127.0.0.1': true, 'r2@127.0.0.1': true })

    await publish(n1, 1000, 'sensor-1')
    await until(async () => await length('msgs:sensor-1') === 1000, '1000 entries')
    const entries = await list('msgs:sensor-1')
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => i))
    expect(entries[7]).toEqual({ seq: 7, note: 'reading 7 of sensor-1' })
    await until(async () => (await metricsOf(rule)).success === 1000, 'success 1000')
    expect(await metricsOf(rule)).toEqual({ taken: 1000, success: 1000, failed: 0 })
  }, 60_000)

  it('counts a command Redis refuses as failed for that row only, writing the others of its batch once', async () => {
    await server.command('SET', 'wrong:type', 'a string, not a list')
    const { rule } = await setUp('backend_redis_single', single(), 'RPUSH ${payload.key} ${seq}', { batch_size: 100, batch_time: 50 })
    await publish(n1, 100, 'sensor-mixed', 0, (seq) => ({ key: seq % 2 === 0 ? 'good:list' : 'wrong:type' }))
    await until(async () => { const m = await metricsOf(rule); return m.success + m.failed === 100 }, 'every row counted')
    expect(await metricsOf(rule)).toEqual({ taken: 100, success: 50, failed: 50 })
    expect(await server.command('LRANGE', 'good:list', '0', '-1')).toEqual(Array.from({ length: 50 }, (_, i) => String(i * 2)))
  }, 60_000)

  it('with the local buffer, loses none while the server is killed mid-stream, writes them in order, and reports is_alive per node', async () => {
    const { resource } = await setUp('backend_redis_single', single({ local_buffer: true }), 'RPUSH msgs:${clientid} ${payload}', { batch_size: 20 })
    expect(statSync(bufferDirOf(n1.dataDir, resource)).mode & 0o777).toBe(0o700)
    const first = publish(n1, 400, 'sensor-buffered')
    await until(async () => await length('msgs:sensor-buffered') >= 300, '300 entries before the kill')
    await server.kill()
    await first
    await publish(n1, 600, 'sensor-buffered', 400)
    await until(async () => Object.values(await statusOf(resource)).every((a) => !a), 'not alive on both nodes')
    await server.restart()
    await until(async () => await length('msgs:sensor-buffered') >= 1000, 'every entry after the restart')
    const seqs = (await list('msgs:sensor-buffered')).map((e) => e.seq)
    // at least once: a batch whose answer was lost to the kill may come twice, in its place
    expect([...new Set(seqs)]).toEqual(Array.from({ length: 1000 }, (_, i) => i))
    await until(async () => Object.values(await statusOf(resource)).filter(Boolean).length === 2, 'alive again on both nodes')
  }, 60_000)

  it('without the local buffer, counts every row the killed server could not take as failed, exactly', async () => {
    const { resource, rule } = await setUp('backend_redis_single', single({ retry_timeout: 500 }), 'RPUSH msgs:${clientid} ${payload}')
    const key = 'msgs:sensor-lossy'
    const first = publish(n1, 400, 'sensor-lossy')
    await until(async () => await length(key) >= 300, '300 entries before the kill')
    await server.kill()
    await first
    await publish(n1, 300, 'sensor-lossy', 400)
    // every row so far settled, those sent while down failed at their deadline; not "failed
    // >= 300": the write in flight at the kill may fail 300 of its own while those sent
    // after it still wait within retry_timeout, to be written once the server is back
    await until(async () => { const x = await metricsOf(rule); return x.success + x.failed === 700 }, 'every row sent so far settled')
    await server.restart()
    // once it is back: the clients reconnect with back-off (at most 2 s), longer than retry_timeout
    await until(async () => (await statusOf(resource))['r1@127.0.0.1'], 'alive again on the publishing node')
    await publish(n1, 300, 'sensor-lossy', 700)
    await until(async () => { const m = await metricsOf(rule); return m.success + m.failed === 1000 }, 'every row counted')
    const m = await metricsOf(rule)
    expect(m.taken).toBe(1000)
    expect(m.failed).toBeGreaterThanOrEqual(300)
    expect(await length(key)).toBe(m.success)
    const seqs = (await list(key)).map((e) => e.seq as number)
    expect(seqs.filter((q) => q >= 400 && q < 700)).toEqual([])
    expect(seqs.filter((q) => q >= 700)).toEqual(Array.from({ length: 300 }, (_, i) => 700 + i))
  }, 60_000)

  it('backend_redis_cluster writes across the slots of a 3-node Redis Cluster, and has no database or auto_reconnect', async () => {
    const cluster = await startRedisCluster({ password: PASSWORD })
    try {
      const types = (await api('GET', '/resource_types')).body.data as Array<{ name: string, params: Record<string, unknown> }>
      const params = Object.keys(types.find((t) => t.name === 'backend_redis_cluster')?.params ?? {})
      expect(params).toEqual(expect.arrayContaining(['servers', 'password', 'pool_size', 'local_buffer', 'ssl']))
      expect(params).not.toContain('database')
      expect(params).not.toContain('auto_reconnect')

      // created at once: the create's probe waits for the new Cluster client's first ready,
      // even when its first ready check failed (plugins/kit/pools/redis.ts)
      const { resource, rule } = await setUp('backend_redis_cluster', { servers: cluster.seeds, password: PASSWORD }, 'SET reading:${seq} ${payload}')
      await until(async () => Object.values(await statusOf(resource)).filter(Boolean).length === 2, 'alive on both nodes')
      await publish(n1, 300, 'sensor-cluster')
      await until(async () => (await metricsOf(rule)).success === 300, 'success 300')
      expect(await metricsOf(rule)).toEqual({ taken: 300, success: 300, failed: 0 })
      const c = await cluster.connect()
      try {
        for (let seq = 0; seq < 300; seq++) {
          expect(JSON.parse(String(await c.get(`reading:${seq}`)))).toEqual({ seq, note: `reading ${seq} of sensor-cluster` })
        }
      } finally {
        c.disconnect()
      }
      const owners = new Set<number>()
      for (let seq = 0; seq < 30; seq++) owners.add(await cluster.nodeOf(`reading:${seq}`))
      expect([...owners].sort()).toEqual([0, 1, 2])
    } finally {
      await clearRulesAndResources(api)
      await cluster.close()
    }
  }, 90_000)

  it('backend_redis_sentinel runs the commands on the master its sentinel names', async () => {
    const sentinel = await startSentinel(server, 'mymaster')
    try {
      const { resource, rule } = await setUp('backend_redis_sentinel',
        { servers: `${sentinel.host}:${sentinel.port}`, sentinel: 'mymaster', database: 3, password: PASSWORD },
        'HSET readings:${clientid} ${seq} ${payload}')
      await until(async () => Object.values(await statusOf(resource)).filter(Boolean).length === 2, 'alive on both nodes')
      await publish(n1, 100, 'sensor-sentinel')
      await until(async () => (await metricsOf(rule)).success === 100, 'success 100')
      const c = await server.connect()
      try {
        await c.select(3)
        const hash = await c.hgetall('readings:sensor-sentinel')
        expect(Object.keys(hash)).toHaveLength(100)
        expect(JSON.parse(hash['42'])).toEqual({ seq: 42, note: 'reading 42 of sensor-sentinel' })
      } finally {
        c.disconnect()
      }
    } finally {
      await clearRulesAndResources(api)
      await sentinel.close()
    }
  }, 60_000)
})
