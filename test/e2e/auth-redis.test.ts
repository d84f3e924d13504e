/**
 * svc_auth_redis against a real Redis (the harness's redis-server, with a password, so the
 * RESP2 path is the one tested) with real clients: mqtt.js (MQTT 3.1.1 and 5) and
 * mosquitto_pub / mosquitto_sub. One Redis and one node for the file; the plugin is loaded
 * through the node's plugin manager with the shipped etc/plugins/svc_auth_redis.conf plus the
 * keys a test sets. A second part runs a sentinel group (redis-server --sentinel, the same
 * Debian package) in front of its own Redis.
 */
import { spawn, spawnSync } from 'node:child_process'
import type { IClientOptions } from 'mqtt'
import { apiRequest, closeClients, collect, connect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, open, pubackCode, refusedConnack, suback } from '../helpers/mqtt.js'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'
import { describeWithServer, spawnServer, redisBinary, startRedis, type RedisServer, type ServerProcess } from '../helpers/servers/index.js'

const PLUGIN = 'svc_auth_redis'
const ALARM = 'svc_auth_redis_unreachable'
const hasMosquitto = spawnSync('mosquitto_pub', ['--help']).status !== null

/** Runs a mosquitto client; resolves with its exit code and output. */
async function mosquitto (cmd: 'mosquitto_pub' | 'mosquitto_sub', args: string[]): Promise<{ code: number | null, out: string }> {
  return await new Promise((resolve) => {
    const child = spawn(cmd, args)
    let out = ''
    child.stdout.on('data', (d) => { out += String(d) })
    child.stderr.on('data', (d) => { out += String(d) })
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, out }) })
  })
}

/** Runs `attempt` until it resolves (one at a time, 50 ms apart); fails after `timeoutMs`. */
async function retryUntil (attempt: () => Promise<void>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await attempt()
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${(err as Error).message}`)
      await new Promise(resolve => setTimeout(resolve, 50))
    }
  }
}

describeWithServer('redis', 'svc_auth_redis (single)', () => {
  let redis: RedisServer
  let p: PluginNode
  let node: TestNode
  const v5 = (o: IClientOptions): IClientOptions => ({ protocolVersion: 5, ...o })
  const setAnonymous = async (allow: boolean): Promise<void> => {
    await apiRequest(node, '/configs/starling', 'PUT', { allow_anonymous: allow })
    expect(node.config.allow_anonymous).toBe(allow)
  }

  beforeAll(async () => {
    redis = await startRedis({ password: 'redis pw' })
    await redis.command('HSET', 'mqtt_user:alice', 'password', 'wonderland')
    await redis.command('HSET', 'mqtt_user:root', 'password', 'toor', 'is_superuser', '1')
    await redis.command('HSET', 'mqtt_acl:alice', 'alice/%u/#', '3', 'pub/only', '2', 'sub/only', '1', 'cache/t', '2')
    p = await startPluginNode({ overrides: { allow_anonymous: 'false', acl_nomatch: 'allow' } })
    node = p.node
    p.writeConf(PLUGIN, shippedPluginConf(PLUGIN, {
      'auth.redis.server': `127.0.0.1:${redis.port}`,
      'auth.redis.password': 'redis pw',
      'auth.redis.pool': '2',
      'auth.redis.timeout': '1s',
      'auth.redis.query_timeout': '1s'
    }))
    await p.manager.load(PLUGIN)
  })
  afterAll(async () => {
    await p?.destroy()
    await redis?.close()
  })
  afterEach(async () => {
    await closeClients()
    await closeOpened()
    await setAnonymous(false)
  })

  it('accepts the right password (MQTT 3.1.1 and 5) and refuses a wrong one with 0x86 / 4', async () => {
    await connect(node, { protocolVersion: 4, username: 'alice', password: 'wonderland' })
    await connect(node, v5({ username: 'alice', password: 'wonderland' }))
    expect((await refusedConnack(node, v5({ username: 'alice', password: 'wrong' }))).reasonCode).toBe(0x86)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'alice', password: 'wrong' })).returnCode).toBe(4)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'alice' })).returnCode).toBe(4)
  })

  ;(hasMosquitto ? it : it.skip)('accepts and refuses mosquitto_pub the same way', async () => {
    const port = String(node.port('mqtt:tcp'))
    const base = ['-h', '127.0.0.1', '-p', port, '-t', 'alice/alice/m', '-m', 'hi', '-q', '1']
    expect((await mosquitto('mosquitto_pub', [...base, '-u', 'alice', '-P', 'wonderland', '-V', '5'])).code).toBe(0)
    expect((await mosquitto('mosquitto_pub', [...base, '-u', 'alice', '-P', 'wonderland', '-V', '311'])).code).toBe(0)
    const bad5 = await mosquitto('mosquitto_pub', [...base, '-u', 'alice', '-P', 'nope', '-V', '5'])
    expect(bad5.code).not.toBe(0)
    expect(bad5.out).toMatch(/bad user ?name or password/i)
    const bad3 = await mosquitto('mosquitto_pub', [...base, '-u', 'alice', '-P', 'nope', '-V', '311'])
    expect(bad3.code).not.toBe(0)
    expect(bad3.out).toMatch(/bad user ?name or password/i)
  })

  it('ignores an unknown user: allow_anonymous decides (false: 0x87 / 5, true: accepted)', async () => {
    expect((await refusedConnack(node, v5({ username: 'stranger', password: 'x' }))).reasonCode).toBe(0x87)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'stranger', password: 'x' })).returnCode).toBe(5)
    await setAnonymous(true)
    await connect(node, v5({ username: 'stranger', password: 'x' }))
    await connect(node, { protocolVersion: 4 })
    // a known user with a wrong password is still refused
    expect((await refusedConnack(node, v5({ username: 'alice', password: 'wrong' }))).reasonCode).toBe(0x86)
  })

  it('applies the ACL hash: allow per entry and bits, deny when entries exist but none match; superuser bypasses', async () => {
    const root = await open(node, v5({ clientId: 'root-1', username: 'root', password: 'toor' }))
    expect(await suback(root.client, ['#', 'anything/at/all'])).toEqual([1, 1])
    const alice = await connect(node, v5({ clientId: 'alice-1', username: 'alice', password: 'wonderland' }))
    expect(await suback(alice, ['alice/alice/x', 'sub/only', 'pub/only', 'elsewhere'])).toEqual([1, 1, 0x80, 0x80])
    expect(await pubackCode(alice, 'pub/only')).toBe(0)
    expect(await pubackCode(alice, 'alice/alice/y')).toBe(0)
    expect(await pubackCode(alice, 'sub/only')).toBe(0x87)
    expect(await pubackCode(alice, 'elsewhere')).toBe(0x87)
    await waitFor(() => root.messages.some(m => m.topic === 'alice/alice/y'), 'the allowed publish')
    expect(root.messages.map(m => m.topic)).not.toContain('sub/only')
    expect(root.messages.map(m => m.topic)).not.toContain('elsewhere')
    // a user without ACL entries: ignore, so acl_nomatch (allow) decides
    await setAnonymous(true)
    const anon = await connect(node, v5({ username: 'nobody' }))
    expect(await suback(anon, ['elsewhere'])).toEqual([1])
  })

  ;(hasMosquitto ? it : it.skip)('refuses mosquitto_sub a denied subscription', async () => {
    const r = await mosquitto('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(node.port('mqtt:tcp')), '-V', '5',
      '-u', 'alice', '-P', 'wonderland', '-t', 'elsewhere', '-W', '3'])
    expect(r.out).toMatch(/denied/i)
  })

  it('keeps a cached ACL decision for the client until the cache expires; a new client sees the change', async () => {
    const root = await open(node, v5({ clientId: 'root-2', username: 'root', password: 'toor' }))
    await root.client.subscribeAsync('cache/t', { qos: 1 })
    const a = await connect(node, v5({ clientId: 'alice-cache', username: 'alice', password: 'wonderland' }))
    expect(await pubackCode(a, 'cache/t')).toBe(0)
    await redis.command('HDEL', 'mqtt_acl:alice', 'cache/t')
    try {
      expect(await pubackCode(a, 'cache/t')).toBe(0) // cached allow
      const b = await connect(node, v5({ clientId: 'alice-fresh', username: 'alice', password: 'wonderland' }))
      expect(await pubackCode(b, 'cache/t')).toBe(0x87)
      await waitFor(() => root.messages.filter(m => m.topic === 'cache/t').length === 2, 'two cached-allowed messages')
    } finally {
      await redis.command('HSET', 'mqtt_acl:alice', 'cache/t', '2')
    }
  })

  it('never lets a username alter the command (spaces, CRLF, glob characters)', async () => {
    await setAnonymous(false)
    for (const username of ['alice password', 'alice\r\nFLUSHALL', 'alice*', '* ', 'x" || true', "' OR 1=1 --"]) {
      expect((await refusedConnack(node, v5({ username, password: 'wonderland' }))).reasonCode).toBe(0x87)
    }
    expect(await redis.command('HGET', 'mqtt_user:alice', 'password')).toBe('wonderland')
    await connect(node, v5({ username: 'alice', password: 'wonderland' }))
  })

  it('answers within the timeout while Redis is down (alarm raised, chain decides) and recovers after a restart (alarm cleared)', async () => {
    await redis.kill()
    try {
      const began = Date.now()
      expect((await refusedConnack(node, v5({ username: 'alice', password: 'wonderland' }))).reasonCode).toBe(0x87)
      const refusedInMs = Date.now() - began
      expect(refusedInMs).toBeLessThan(1500)
      await waitFor(() => node.services.alarms.isActive(ALARM), 'the unreachable alarm')
      const alarms = await apiRequest(node, '/alarms/present')
      expect(JSON.stringify(alarms)).toContain(ALARM)
      await setAnonymous(true)
      await connect(node, v5({ username: 'alice', password: 'anything' })) // the chain (allow_anonymous) decides
      await setAnonymous(false)
      console.log(`svc_auth_redis: CONNECT with Redis down refused in ${refusedInMs} ms`)
    } finally {
      await redis.restart()
    }
    const back = Date.now()
    await retryUntil(async () => { await connect(node, v5({ username: 'alice', password: 'wonderland' })) }, 'auth to work again')
    console.log(`svc_auth_redis: auth works again ${Date.now() - back} ms after Redis restarted`)
    expect(node.services.alarms.isActive(ALARM)).toBe(false)
  })

  it('bounds a CONNECT by auth.redis.timeout when Redis hangs (SIGSTOP)', async () => {
    await connect(node, v5({ username: 'alice', password: 'wonderland' }))
    process.kill(redis.pid!, 'SIGSTOP')
    try {
      const began = Date.now()
      expect((await refusedConnack(node, v5({ username: 'alice', password: 'wonderland' }))).reasonCode).toBe(0x87)
      const ms = Date.now() - began
      console.log(`svc_auth_redis: CONNECT with Redis hung answered in ${ms} ms (timeout 1s)`)
      expect(ms).toBeGreaterThanOrEqual(900)
      expect(ms).toBeLessThan(2500)
      expect(node.services.alarms.isActive(ALARM)).toBe(true)
    } finally {
      process.kill(redis.pid!, 'SIGCONT')
    }
    await retryUntil(async () => { await connect(node, v5({ username: 'alice', password: 'wonderland' })) }, 'auth after SIGCONT')
    expect(node.services.alarms.isActive(ALARM)).toBe(false)
  })

  it('loads with Redis down (lazy connect) and unloads cleanly', async () => {
    await p.manager.unload(PLUGIN)
    p.writeConf(PLUGIN, shippedPluginConf(PLUGIN, { 'auth.redis.server': '127.0.0.1:1', 'auth.redis.timeout': '1s' }))
    const began = Date.now()
    await p.manager.load(PLUGIN)
    expect(Date.now() - began).toBeLessThan(1000)
    expect((await refusedConnack(node, v5({ username: 'alice', password: 'wonderland' }))).reasonCode).toBe(0x87)
    await p.manager.unload(PLUGIN)
    expect(node.services.alarms.isActive(ALARM)).toBe(false)
  })
})

describeWithServer('redis', 'svc_auth_redis (sentinel)', () => {
  let master: RedisServer
  let sentinel: ServerProcess
  let p: PluginNode

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
    p = await startPluginNode({ overrides: { allow_anonymous: 'false' } })
    p.writeConf(PLUGIN, shippedPluginConf(PLUGIN, {
      'auth.redis.type': 'sentinel',
      'auth.redis.server': `127.0.0.1:${sentinel.port}`,
      'auth.redis.sentinel': 'mq',
      'auth.redis.pool': '1',
      'auth.redis.timeout': '2s'
    }))
    await p.manager.load(PLUGIN)
  })
  afterAll(async () => {
    await closeClients()
    await closeOpened()
    await p?.destroy()
    await sentinel?.close()
    await master?.close()
  })

  it('finds the master through the sentinel and authenticates', async () => {
    const c = await connect(p.node, { protocolVersion: 5, username: 'sam', password: 'pw' })
    expect(c.connected).toBe(true)
    expect((await refusedConnack(p.node, { protocolVersion: 5, username: 'sam', password: 'no' })).reasonCode).toBe(0x86)
    collect(c)
  })
})
