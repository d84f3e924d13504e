/**
 * svc_auth_redis without a server: the shipped file, the pool options of each `type`
 * (single, sentinel, cluster: only mapped here; the e2e suite runs single and sentinel), the
 * compiled commands (argv, never text) and the decisions over replies from a fake pool.
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadPluginConfig, parseConfText } from '../../../../node/config/index.js'
import { readFileSync } from 'node:fs'
import { DEFAULT_SALTED_AUTH_CMD, openRedisBackend, redisPoolOptions, svcAuthRedis } from '../../../../plugins/auth/redis/plugin.js'
import { parseRedisServers, redisClientOptions, type RedisPool } from '../../../../plugins/kit/pools/redis.js'

const etc = fileURLToPath(new URL('../../../../etc/plugins/', import.meta.url))
const file = join(etc, 'svc_auth_redis.conf')
const defaults = (): Record<string, any> => ({ ...loadPluginConfig(file, svcAuthRedis.configSchema, { env: {} }) })
const resolvePath = (p: string): string => p

/** A request of the framework that records whether the backend says Redis answered it. */
function request (): { answered: () => void, heard: boolean } {
  const r = { heard: false, answered: () => { r.heard = true } }
  return r
}

/** A pool that records each argv and answers from `replies` (keyed by the argv joined with |). */
function fakePool (replies: Record<string, unknown>): RedisPool & { calls: string[][] } {
  const calls: string[][] = []
  return {
    calls,
    call: async (argv) => { calls.push([...argv]); return replies[argv.join('|')] ?? null },
    batch: async (commands) => commands.map((argv): [null, unknown] => { calls.push([...argv]); return [null, replies[argv.join('|')] ?? null] }),
    ready: () => true,
    close: async () => {}
  }
}

describe('etc/plugins/svc_auth_redis.conf', () => {
  it('sets every key of the schema and loads as the defaults', () => {
    const keys = parseConfText(readFileSync(file, 'utf8'), file).map(e => e.key)
    expect(keys.sort()).toEqual(Object.keys(svcAuthRedis.configSchema).sort())
    expect(defaults()).toEqual({ ...loadPluginConfig(join(etc, 'none.conf'), svcAuthRedis.configSchema, { env: {}, optional: true }) })
  })

  it('has EMQ X 4.4 defaults', () => {
    const c = defaults()
    expect(c).toMatchObject({
      'auth.redis.type': 'single', 'auth.redis.server': '127.0.0.1:6379', 'auth.redis.sentinel': 'mymaster', 'auth.redis.pool': 8,
      'auth.redis.database': 0, 'auth.redis.password': '', 'auth.redis.auth_cmd': 'HMGET mqtt_user:%u password',
      'auth.redis.password_hash': 'plain', 'auth.redis.super_cmd': 'HGET mqtt_user:%u is_superuser', 'auth.redis.acl_cmd': 'HGETALL mqtt_acl:%u'
    })
    expect(svcAuthRedis.configSchema['auth.redis.password'].secret).toBe(true)
  })
})

describe('pool options', () => {
  it('parses server lists, IPv6 in brackets, default port', () => {
    expect(parseRedisServers('127.0.0.1:6380, redis.local ,[::1]:7000')).toEqual([
      { host: '127.0.0.1', port: 6380 }, { host: 'redis.local', port: 6379 }, { host: '::1', port: 7000 }])
    expect(() => parseRedisServers('a:99999')).toThrow(/bad server/)
    expect(() => parseRedisServers(' , ')).toThrow(/no server/)
  })

  it('maps single: host, port, db, password, RESP2, no offline queue, bounded commands', () => {
    const o = redisPoolOptions({ ...defaults(), 'auth.redis.server': '10.0.0.1:6390', 'auth.redis.database': 3, 'auth.redis.password': 'pw', 'auth.redis.query_timeout': 1500 }, resolvePath)
    expect(o).toMatchObject({ type: 'single', servers: [{ host: '10.0.0.1', port: 6390 }], database: 3, password: 'pw', pool: 8, commandTimeoutMs: 1500, tls: undefined })
    expect(redisClientOptions(o)).toMatchObject({ host: '10.0.0.1', port: 6390, db: 3, password: 'pw', protocol: 2, enableOfflineQueue: false, commandTimeout: 1500 })
  })

  it('maps sentinel: the master name and the sentinel list', () => {
    const o = redisPoolOptions({ ...defaults(), 'auth.redis.type': 'sentinel', 'auth.redis.server': 'h1:26379,h2:26380', 'auth.redis.sentinel': 'mq', 'auth.redis.password': 'pw' }, resolvePath)
    const r = redisClientOptions(o)
    expect(r).toMatchObject({ name: 'mq', sentinels: [{ host: 'h1', port: 26379 }, { host: 'h2', port: 26380 }], sentinelPassword: 'pw', password: 'pw', protocol: 2 })
    expect(r.host).toBeUndefined()
  })

  it('maps cluster: seed nodes, database 0', () => {
    const o = redisPoolOptions({ ...defaults(), 'auth.redis.type': 'cluster', 'auth.redis.server': 'h1:7000,h2:7001', 'auth.redis.database': 2 }, resolvePath)
    expect(o.servers).toEqual([{ host: 'h1', port: 7000 }, { host: 'h2', port: 7001 }])
    expect(redisClientOptions(o).db).toBe(0)
  })

  it('refuses a list with type single, and unreadable TLS files', () => {
    expect(() => redisPoolOptions({ ...defaults(), 'auth.redis.server': 'a:1,b:2' }, resolvePath)).toThrow(/auth.redis.server/)
    expect(() => redisPoolOptions({ ...defaults(), 'auth.redis.ssl': true, 'auth.redis.ssl.cacertfile': '/nonexistent/ca.pem' }, resolvePath)).toThrow(/auth.redis.ssl.cacertfile/)
    const tls = redisPoolOptions({ ...defaults(), 'auth.redis.ssl': true, 'auth.redis.ssl.verify': false, 'auth.redis.ssl.server_name_indication': 'redis.example' }, resolvePath).tls
    expect(tls).toMatchObject({ rejectUnauthorized: false, servername: 'redis.example' })
  })
})

describe('queries over a fake pool', () => {
  const ctx = { clientId: 'c1', username: 'alice', password: 'pw', peerhost: '127.0.0.1' }

  it('authenticates with HMGET argv and reads the superuser flag', async () => {
    const pool = fakePool({ 'HMGET|mqtt_user:alice|password': ['pw', null], 'HGET|mqtt_user:alice|is_superuser': '1' })
    const b = openRedisBackend(pool, defaults())
    expect(await b.authenticate!(ctx, request())).toEqual({ verdict: 'allow', superuser: true })
    expect(await b.authenticate!({ ...ctx, password: 'bad' }, request())).toEqual({ verdict: 'deny' })
    expect(await b.authenticate!({ ...ctx, username: 'bob' }, request())).toEqual({ verdict: 'ignore' })
    expect(await b.authenticate!({ ...ctx, username: undefined }, request())).toEqual({ verdict: 'ignore' })
  })

  it('says Redis answered only when a command got a reply (no username: nothing asked, nothing heard)', async () => {
    const pool = fakePool({ 'HMGET|mqtt_user:alice|password': ['pw', null] })
    const b = openRedisBackend(pool, defaults())
    const asked = request()
    await b.authenticate!({ ...ctx, username: 'bob' }, asked)
    expect(asked.heard).toBe(true) // a nil reply is an answer
    const anonymous = request()
    await b.authenticate!({ ...ctx, username: undefined }, anonymous)
    expect(anonymous.heard).toBe(false)
    const aclAnonymous = request()
    expect(await b.checkAcl!({ ...ctx, username: undefined, access: 2, topic: 't' }, 'publish', aclAnonymous)).toBe('ignore')
    expect(aclAnonymous.heard).toBe(false)
    expect(pool.calls).toEqual([['HMGET', 'mqtt_user:bob', 'password']])
    const failing = openRedisBackend({ ...pool, call: async () => { throw new Error('connection refused') } }, defaults())
    const refused = request()
    await expect(failing.authenticate!(ctx, refused)).rejects.toThrow(/refused/)
    expect(refused.heard).toBe(false)
  })

  it('keeps a username with spaces in one argument', async () => {
    const pool = fakePool({})
    const b = openRedisBackend(pool, defaults())
    await b.authenticate!({ ...ctx, username: 'x password salt' }, request())
    expect(pool.calls[0]).toEqual(['HMGET', 'mqtt_user:x password salt', 'password'])
  })

  it('asks for the salt with a salted hash and the default command', async () => {
    const pool = fakePool({ 'HMGET|mqtt_user:alice|password|salt': ['5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8'.replace(/./g, 'x'), 'NaCl'] })
    const b = openRedisBackend(pool, { ...defaults(), 'auth.redis.password_hash': 'salt,sha256' })
    expect(DEFAULT_SALTED_AUTH_CMD).toBe('HMGET mqtt_user:%u password salt')
    expect((await b.authenticate!(ctx, request())).verdict).toBe('deny')
    expect(pool.calls[0]).toEqual(['HMGET', 'mqtt_user:alice', 'password', 'salt'])
  })

  it('decides the ACL hash as EMQ X 4.4: match allow, entries without match deny, none ignore', async () => {
    const pool = fakePool({ 'HGETALL|mqtt_acl:alice': ['t/%u/#', '3', 'pub/only', '2'] })
    const b = openRedisBackend(pool, defaults())
    const acl = { ...ctx, access: 2 as const }
    expect(await b.checkAcl!({ ...acl, topic: 't/alice/x' }, 'publish', request())).toBe('allow')
    expect(await b.checkAcl!({ ...acl, topic: 'pub/only' }, 'subscribe', request())).toBe('deny')
    expect(await b.checkAcl!({ ...acl, topic: 'pub/only' }, 'publish', request())).toBe('allow')
    expect(await b.checkAcl!({ ...acl, topic: 'other' }, 'publish', request())).toBe('deny')
    expect(await b.checkAcl!({ ...acl, username: 'bob', topic: 'other' }, 'publish', request())).toBe('ignore')
  })

  it('turns super_cmd and acl_cmd off when empty, and refuses a bad password_hash', () => {
    const b = openRedisBackend(fakePool({}), { ...defaults(), 'auth.redis.acl_cmd': '' })
    expect(b.checkAcl).toBeUndefined()
    expect(() => openRedisBackend(fakePool({}), { ...defaults(), 'auth.redis.password_hash': 'rot13' })).toThrow(/auth.redis.password_hash/)
  })
})
