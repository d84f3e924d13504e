/**
 * svc_auth_redis against a real Redis (the harness's redis-server, with a password, so the
 * RESP2 path is the one tested) with real clients: mqtt.js (MQTT 3.1.1 and 5) and
 * mosquitto_pub / mosquitto_sub. One Redis and one node for the file; the plugin is loaded
 * through the node's plugin manager with the shipped etc/plugins/svc_auth_redis.conf plus the
 * keys a test sets. A second part runs a sentinel group (redis-server --sentinel, the same
 * Debian package) in front of its own Redis.
 */
import type { IClientOptions } from 'mqtt'
import { closeClients, collect, connect, type TestNode } from '../helpers/node.js'
import { closeOpened, open, suback } from '../helpers/mqtt.js'
import { describeWithServer, spawnServer, redisBinary, startRedis, type RedisServer, type ServerProcess } from '../helpers/servers/index.js'
import {
  QUERY_INJECTIONS, expectAclCached, expectMosquittoPub, expectMosquittoSubDenied, expectNeverAuthenticated, expectOutageAndRecovery,
  expectPublishes, expectUnknownUserToChain, itWithMosquitto, refusedCode, retryUntil, startBackendNode, type BackendNode
} from '../helpers/auth-backend.js'

const PLUGIN = 'svc_auth_redis'

describeWithServer('redis', 'svc_auth_redis (single)', () => {
  let redis: RedisServer
  let backend: BackendNode
  let node: TestNode
  const v5 = (o: IClientOptions): IClientOptions => ({ protocolVersion: 5, ...o })
  const alice = v5({ username: 'alice', password: 'wonderland' })

  beforeAll(async () => {
    redis = await startRedis({ password: 'redis pw' })
    await redis.command('HSET', 'mqtt_user:alice', 'password', 'wonderland')
    await redis.command('HSET', 'mqtt_user:root', 'password', 'toor', 'is_superuser', '1')
    await redis.command('HSET', 'mqtt_acl:alice', 'alice/%u/#', '3', 'pub/only', '2', 'sub/only', '1', 'cache/t', '2')
    backend = await startBackendNode(PLUGIN, { allow_anonymous: 'false', acl_nomatch: 'allow' })
    node = backend.node
    await backend.load({
      'auth.redis.server': `127.0.0.1:${redis.port}`,
      'auth.redis.password': 'redis pw',
      'auth.redis.pool': '2',
      'auth.redis.timeout': '1s',
      'auth.redis.query_timeout': '1s'
    })
  })
  afterAll(async () => {
    await backend?.destroy()
    await redis?.close()
  })
  afterEach(async () => {
    await closeClients()
    await closeOpened()
    await backend.setAnonymous(false)
  })

  it('accepts the right password (MQTT 3.1.1 and 5) and refuses a wrong one with 0x86 / 4', async () => {
    await connect(node, { protocolVersion: 4, username: 'alice', password: 'wonderland' })
    await connect(node, alice)
    expect(await refusedCode(node, v5({ username: 'alice', password: 'wrong' }))).toBe(0x86)
    expect(await refusedCode(node, { protocolVersion: 4, username: 'alice', password: 'wrong' })).toBe(4)
    expect(await refusedCode(node, { protocolVersion: 4, username: 'alice' })).toBe(4)
  })

  itWithMosquitto('accepts and refuses mosquitto_pub the same way', async () => {
    await expectMosquittoPub(node, { username: 'alice', password: 'wonderland', wrongPassword: 'nope', topic: 'alice/alice/m', versions: ['5', '311'], refusal: /bad user ?name or password/i })
  })

  it('ignores an unknown user: allow_anonymous decides (false: 0x87 / 5, true: accepted)', async () => {
    await expectUnknownUserToChain(backend, { username: 'alice', password: 'wrong' })
  })

  it('applies the ACL hash: allow per entry and bits, deny when entries exist but none match; superuser bypasses', async () => {
    const root = await open(node, v5({ clientId: 'root-1', username: 'root', password: 'toor' }))
    expect(await suback(root.client, ['#', 'anything/at/all'])).toEqual([1, 1])
    const a = await connect(node, { ...alice, clientId: 'alice-1' })
    expect(await suback(a, ['alice/alice/x', 'sub/only', 'pub/only', 'elsewhere'])).toEqual([1, 1, 0x80, 0x80])
    await expectPublishes(a, root, { allowed: ['pub/only', 'alice/alice/y'], denied: ['sub/only', 'elsewhere'] })
    // a user without ACL entries: ignore, so acl_nomatch (allow) decides
    await backend.setAnonymous(true)
    const anon = await connect(node, v5({ username: 'nobody' }))
    expect(await suback(anon, ['elsewhere'])).toEqual([1])
  })

  itWithMosquitto('refuses mosquitto_sub a denied subscription', async () => {
    await expectMosquittoSubDenied(node, { username: 'alice', password: 'wonderland' }, 'elsewhere', /denied/i)
  })

  it('keeps a cached ACL decision for the client until the cache expires; a new client sees the change', async () => {
    await expectAclCached({
      node,
      watcher: v5({ clientId: 'root-2', username: 'root', password: 'toor' }),
      user: { ...alice, clientId: 'alice' },
      topic: 'cache/t',
      revoke: async () => {
        await redis.command('HDEL', 'mqtt_acl:alice', 'cache/t')
        return async () => { await redis.command('HSET', 'mqtt_acl:alice', 'cache/t', '2') }
      }
    })
  })

  it('never lets a username alter the command (spaces, CRLF, glob characters)', async () => {
    await backend.setAnonymous(false)
    await expectNeverAuthenticated(node, ['alice password', 'alice\r\nFLUSHALL', 'alice*', '* ', ...QUERY_INJECTIONS], 'wonderland')
    expect(await redis.command('HGET', 'mqtt_user:alice', 'password')).toBe('wonderland')
    await connect(node, alice)
  })

  it('answers within the timeout while Redis is down (alarm raised, chain decides) and recovers after a restart (alarm cleared)', async () => {
    await expectOutageAndRecovery({
      backend,
      down: async () => { await redis.kill() },
      up: async () => { await redis.restart() },
      refused: [[alice, 0x87]],
      withinMs: 1500,
      alarm: 'eventually',
      listed: true,
      anonymous: v5({ username: 'alice', password: 'anything' }), // the chain (allow_anonymous) decides
      recovered: async () => { await retryUntil(async () => { await connect(node, alice) }, 'auth to work again') },
      timings: ['svc_auth_redis', 'Redis']
    })
  })

  it('bounds a CONNECT by auth.redis.timeout when Redis hangs (SIGSTOP)', async () => {
    await connect(node, alice)
    process.kill(redis.pid!, 'SIGSTOP')
    try {
      const began = Date.now()
      expect(await refusedCode(node, alice)).toBe(0x87)
      const ms = Date.now() - began
      console.log(`svc_auth_redis: CONNECT with Redis hung answered in ${ms} ms (timeout 1s)`)
      expect(ms).toBeGreaterThanOrEqual(900)
      expect(ms).toBeLessThan(2500)
      expect(backend.alarmActive()).toBe(true)
    } finally {
      process.kill(redis.pid!, 'SIGCONT')
    }
    await retryUntil(async () => { await connect(node, alice) }, 'auth after SIGCONT')
    expect(backend.alarmActive()).toBe(false)
  })

  it('loads with Redis down (lazy connect) and unloads cleanly', async () => {
    await backend.unload()
    const began = Date.now()
    await backend.load({ 'auth.redis.server': '127.0.0.1:1', 'auth.redis.timeout': '1s' })
    expect(Date.now() - began).toBeLessThan(1000)
    expect(await refusedCode(node, alice)).toBe(0x87)
    await backend.unload()
    expect(backend.alarmActive()).toBe(false)
  })
})

describeWithServer('redis', 'svc_auth_redis (sentinel)', () => {
  let master: RedisServer
  let sentinel: ServerProcess
  let backend: BackendNode

  beforeAll(async () => {
    master = await startRedis()
    await master.command('HSET', 'mqtt_user:sam', 'password', 'pw')
    const bin = redisBinary()
    sentinel = await spawnServer({
      name: 'Sentinel',
      debianPackage: 'redis-server',
      command: (ctx) => {
        const conf = ctx.writeFile('sentinel.conf', [
          `port ${ctx.port}`, `bind ${ctx.host}`, 'protected-mode no', `dir ${ctx.dir}`,
          `sentinel monitor mq ${master.host} ${master.port} 1`, ''
        ].join('\n'))
        return [bin, conf, '--sentinel']
      },
      probe: async (ctx) => {
        const { Redis } = await import('ioredis')
        const c = new Redis({ host: ctx.host, port: ctx.port, lazyConnect: true, retryStrategy: () => null, enableOfflineQueue: false, protocol: 2 })
        c.on('error', () => {})
        try {
          await c.connect()
          const addr = await c.call('SENTINEL', 'get-master-addr-by-name', 'mq')
          if (!Array.isArray(addr)) throw new Error('master not known yet')
        } finally {
          if (c.status !== 'end') c.disconnect()
        }
      }
    })
    backend = await startBackendNode(PLUGIN, { allow_anonymous: 'false' })
    await backend.load({
      'auth.redis.type': 'sentinel',
      'auth.redis.server': `127.0.0.1:${sentinel.port}`,
      'auth.redis.sentinel': 'mq',
      'auth.redis.pool': '1',
      'auth.redis.timeout': '2s'
    })
  })
  afterAll(async () => {
    await closeClients()
    await closeOpened()
    await backend?.destroy()
    await sentinel?.close()
    await master?.close()
  })

  it('finds the master through the sentinel and authenticates', async () => {
    const c = await connect(backend.node, { protocolVersion: 5, username: 'sam', password: 'pw' })
    expect(c.connected).toBe(true)
    expect(await refusedCode(backend.node, { protocolVersion: 5, username: 'sam', password: 'no' })).toBe(0x86)
    collect(c)
  })
})
