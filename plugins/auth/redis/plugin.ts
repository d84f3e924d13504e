/**
 * `svc_auth_redis`: authentication, superuser and ACL from Redis, as EMQ X 4.4's
 * `emqx_auth_redis` did, with its `auth.redis.*` keys and defaults (docs/auth/svc_auth_redis.md).
 *
 * - **Auth**: `auth_cmd` (`HMGET mqtt_user:%u password`) → `[password]` or `[password, salt]`
 *   (an `HGET` command's single reply is the password). No username, or a nil password →
 *   `ignore`; a password that matches under `password_hash` (default `plain`) → `allow`, with
 *   `superuser` from `super_cmd` (`HGET mqtt_user:%u is_superuser` = `"1"`); else `deny`.
 * - **ACL**: `acl_cmd` (`HGETALL mqtt_acl:%u`): field = topic filter (`%u`/`%c` inside),
 *   value = access bits (1 subscribe, 2 publish, 3 both). A match → `allow`; entries but no
 *   match → `deny` (EMQ X 4.4's `emqx_acl_redis`); no entries → `ignore`.
 * - Commands are compiled once at load into argument templates and sent as argv: a value
 *   (spaces and all) stays one argument, never a new one.
 * - An empty `super_cmd` or `acl_cmd` turns that query off.
 */
import { ConfigError, type ConfigSchema } from '../../../node/config/index.js'
import {
  compileRedisCommand, decideRedisAcl, defineAuthBackend, missingPlaceholders, parsePasswordHash, parseSuperuser,
  renderRedisCommand, type BackendClient, type BackendOpenContext, type RedisAclHash, type RedisCommandTemplate
} from '../backend/index.js'
import type { RedisPool, RedisPoolOptions } from '../../kit/pools/redis.js'
import { parseRedisServers } from '../../kit/pools/servers.js'
import { sslOptions, sslSchema } from '../backend/ssl-keys.js'

export const REDIS_PREFIX = 'auth.redis'
/** EMQ X 4.4's default `auth_cmd`, and the form used when `password_hash` needs a salt and `auth_cmd` is left at that default. */
export const DEFAULT_AUTH_CMD = 'HMGET mqtt_user:%u password'
export const DEFAULT_SALTED_AUTH_CMD = 'HMGET mqtt_user:%u password salt'

const when = 'Takes effect when the plugin is loaded (plugins reload).'

/** The keys of `etc/plugins/svc_auth_redis.conf`. */
export const redisConfigSchema: ConfigSchema = {
  'auth.redis.type': { type: 'enum', values: ['single', 'sentinel', 'cluster'], default: 'single', live: false, doc: `How Redis runs: one server, a sentinel group, or a cluster. ${when}` },
  'auth.redis.server': { type: 'string', default: '127.0.0.1:6379', live: false, doc: 'host:port of the server (single); for sentinel the sentinels, for cluster the seed nodes, as a comma-separated list.' },
  'auth.redis.sentinel': { type: 'string', default: 'mymaster', live: false, allowEmpty: true, doc: 'With type = sentinel: the name of the master the sentinels monitor.' },
  'auth.redis.pool': { type: 'int', default: '8', min: 1, max: 1024, live: false, doc: 'Number of connections, used in turn (each pipelines its commands).' },
  'auth.redis.database': { type: 'int', default: '0', min: 0, max: 1024, live: false, doc: 'Database number (single and sentinel; a cluster has only 0).' },
  'auth.redis.password': { type: 'string', default: '', allowEmpty: true, secret: true, live: false, doc: 'AUTH password (also given to the sentinels); empty: none.' },
  'auth.redis.query_timeout': { type: 'duration', default: '5s', min: 1, live: false, doc: 'Longest wait for one command\'s reply (and for a connection attempt in progress).' },
  ...sslSchema(REDIS_PREFIX, 'off'),
  'auth.redis.auth_cmd': { type: 'string', default: DEFAULT_AUTH_CMD, live: false, doc: 'Command returning the password [and salt] of %u: HMGET key password [salt], or HGET key password.' },
  'auth.redis.password_hash': { type: 'string', default: 'plain', live: false, doc: 'How passwords are stored: plain, md5, sha, sha256, sha512, bcrypt, salt,<hash>, <hash>,salt or pbkdf2,<macfun>,<iterations>,<dklen>.' },
  'auth.redis.super_cmd': { type: 'string', default: 'HGET mqtt_user:%u is_superuser', allowEmpty: true, live: false, doc: 'Command returning "1" for a superuser (no ACL checks); empty: no superusers.' },
  'auth.redis.acl_cmd': { type: 'string', default: 'HGETALL mqtt_acl:%u', allowEmpty: true, live: false, doc: 'Command returning the ACL hash of %u (field = topic filter, value = 1 sub, 2 pub, 3 both); empty: no ACL.' }
}

/** The pool options of `config` (the `auth.redis.*` keys); throws ConfigError for a bad server list or TLS file. */
export function redisPoolOptions (config: Record<string, any>, resolvePath: (path: string) => string): RedisPoolOptions {
  const type = config['auth.redis.type'] as 'single' | 'sentinel' | 'cluster'
  let servers
  try {
    servers = parseRedisServers(config['auth.redis.server'])
  } catch (err) {
    throw ConfigError.badValue('auth.redis.server', config['auth.redis.server'], `host:port, or a comma-separated list of them (${(err as Error).message})`, 'plugin config')
  }
  if (type === 'single' && servers.length > 1) {
    throw ConfigError.badValue('auth.redis.server', config['auth.redis.server'], 'one host:port with type = single (a list is for sentinel or cluster)', 'plugin config')
  }
  if (type === 'sentinel' && String(config['auth.redis.sentinel'] ?? '') === '') {
    throw ConfigError.badValue('auth.redis.sentinel', '', 'the master name the sentinels monitor (type = sentinel)', 'plugin config')
  }
  return {
    type,
    servers,
    sentinel: config['auth.redis.sentinel'],
    database: config['auth.redis.database'],
    password: config['auth.redis.password'],
    pool: config['auth.redis.pool'],
    commandTimeoutMs: config['auth.redis.query_timeout'],
    connectTimeoutMs: config['auth.redis.query_timeout'],
    tls: sslOptions(REDIS_PREFIX, config, resolvePath)
  }
}

/** The compiled commands and password check of `config`. */
export function compileRedisQueries (config: Record<string, any>): {
  auth: RedisCommandTemplate, superuser?: RedisCommandTemplate, acl?: RedisCommandTemplate, checker: ReturnType<typeof parsePasswordHash>
} {
  const checker = parsePasswordHash(config['auth.redis.password_hash'], 'auth.redis.password_hash')
  let authCmd: string = config['auth.redis.auth_cmd']
  if (checker.needsSalt && authCmd.trim() === DEFAULT_AUTH_CMD) authCmd = DEFAULT_SALTED_AUTH_CMD
  const compile = (key: string, text: string): RedisCommandTemplate | undefined =>
    text.trim() === '' ? undefined : compileRedisCommand(text, { key })
  return {
    auth: compileRedisCommand(authCmd, { key: 'auth.redis.auth_cmd' }),
    superuser: compile('auth.redis.super_cmd', config['auth.redis.super_cmd'] ?? ''),
    acl: compile('auth.redis.acl_cmd', config['auth.redis.acl_cmd'] ?? ''),
    checker
  }
}

/** A reply's text (bulk strings come as strings or buffers); undefined for nil. */
function replyText (value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  return String(value)
}

/** Opens the backend over `pool` (exported for tests). */
export function openRedisBackend (pool: RedisPool, config: Record<string, any>, logger?: BackendOpenContext['logger']): BackendClient {
  const q = compileRedisQueries(config)
  const client: BackendClient = {
    authenticate: async (ctx, request) => {
      // nothing asked (no username for %u ...): Redis was not heard from
      if (missingPlaceholders(q.auth, ctx).length > 0) return { verdict: 'ignore' }
      const reply = await pool.call(renderRedisCommand(q.auth, ctx))
      request.answered()
      const [stored, salt] = Array.isArray(reply) ? reply.map(replyText) : [replyText(reply)]
      if (stored === undefined) return { verdict: 'ignore' }
      const given = ctx.password === undefined ? undefined : Buffer.isBuffer(ctx.password) ? ctx.password : Buffer.from(ctx.password, 'utf8')
      if (!await q.checker.checkAsync(stored, salt, given)) return { verdict: 'deny' }
      return { verdict: 'allow', superuser: await isSuperuser(ctx) }
    },
    close: async () => await pool.close()
  }
  const isSuperuser = async (ctx: Parameters<NonNullable<BackendClient['authenticate']>>[0]): Promise<boolean> => {
    if (q.superuser === undefined || missingPlaceholders(q.superuser, ctx).length > 0) return false
    try {
      return parseSuperuser(await pool.call(renderRedisCommand(q.superuser, ctx)))
    } catch (err) {
      // EMQ X: a failed superuser query is "not a superuser"; the client is still authenticated
      logger?.warn({ err, clientId: ctx.clientId }, 'svc_auth_redis: super_cmd failed; not a superuser')
      return false
    }
  }
  if (q.acl !== undefined) {
    const acl = q.acl
    client.checkAcl = async (ctx, action, request) => {
      if (missingPlaceholders(acl, ctx).length > 0) return 'ignore'
      const reply = await pool.call(renderRedisCommand(acl, ctx))
      request.answered()
      if (reply === null || reply === undefined) return 'ignore'
      if (typeof reply !== 'object') throw new Error(`acl_cmd returned ${typeof reply}, not a hash`)
      return decideRedisAcl(reply as RedisAclHash, { clientId: ctx.clientId, username: ctx.username, peerhost: ctx.peerhost }, action, ctx.topic ?? '', 'deny')
    }
  }
  return client
}

export const svcAuthRedis = defineAuthBackend({
  name: 'svc_auth_redis',
  description: 'Authentication and ACL with Redis (EMQ X 4.4 emqx_auth_redis keys)',
  prefix: REDIS_PREFIX,
  configSchema: redisConfigSchema,
  open: async (ctx) => {
    compileRedisQueries(ctx.config) // a bad command or hash fails the load before a connection is made
    const options = redisPoolOptions(ctx.config, ctx.resolvePath)
    // ioredis is loaded by the first load of the plugin, not by every node (kit/pools/index.ts)
    const { createRedisPool } = await import('../../kit/pools/redis.js')
    const pool = createRedisPool({
      ...options,
      onError: (err) => ctx.logger.warn({ err: err.message }, 'svc_auth_redis: connection to Redis failed; reconnecting')
    })
    return openRedisBackend(pool, ctx.config, ctx.logger)
  }
})
