/**
 * `svc_auth_mongo`: authentication, superuser and ACL from MongoDB, as EMQ X 4.4's
 * `emqx_auth_mongo` did, with its `auth.mongo.*` keys and defaults
 * (docs/auth/svc_auth_mongo.md).
 *
 * - **Auth**: `findOne(auth_query.selector)` in `auth_query.collection` (`mqtt_user`,
 *   `username=%u`): no document, or no `password_field` in it → `ignore`; the password
 *   (and the salt, `password_field = password,salt`) checked under `password_hash` (default
 *   `sha256`) → `allow`, with `superuser` from `super_query` (`is_superuser: true`); else `deny`.
 * - **ACL**: the documents of `acl_query.collection` (`mqtt_acl`) matching any of the
 *   selectors (`acl_query.selector`, `acl_query.selector.<n>`, ORed), each
 *   `{publish: [...], subscribe: [...], pubsub: [...]}` topic filters (`%u`/`%c` levels):
 *   one matching → `allow`; documents but none matching → `deny` (EMQ X 4.4); none → `ignore`.
 * - **Selectors** (`field=value, field=value`) are parsed once at load into fields and value
 *   templates; per request each value is rendered as a string and put in the filter object
 *   as data. A value never becomes a field, an operator or another pair.
 */
import type { Collection, Document, Filter, MongoClient } from 'mongodb'
import { ConfigError, type ConfigSchema } from '../../../node/config/index.js'
import {
  decideJwtAcl, defineAuthBackend, missingPlaceholders, parsePasswordHash, parseSuperuser, parseTemplate, renderString,
  type AuthContext, type BackendClient, type BackendOpenContext, type BackendVerdict, type PlaceholderKey, type Template
} from '../backend/index.js'
import type { AclAction } from '../../../node/acl/acl-matcher.js'
import type { MongoPoolOptions } from '../../kit/pools/mongo.js'
import { parseRedisServers } from '../../kit/pools/servers.js'
import { sslOptions, sslSchema } from '../backend/ssl-keys.js'

export const MONGO_PREFIX = 'auth.mongo'

/** The keys of `etc/plugins/svc_auth_mongo.conf`. */
export const mongoConfigSchema: ConfigSchema = {
  'auth.mongo.type': { type: 'enum', values: ['single', 'unknown', 'sharded', 'rs'], default: 'single', live: false, doc: 'single: one server; rs: a replica set (rs_set_name); sharded: mongos routers; unknown: the driver discovers.' },
  'auth.mongo.srv_record': { type: 'bool', default: 'false', live: false, doc: 'Look the server up as a DNS SRV record (mongodb+srv): server is then one host name.' },
  'auth.mongo.rs_set_name': { type: 'string', default: '', allowEmpty: true, live: false, doc: 'With type = rs: the replica set name.' },
  'auth.mongo.server': { type: 'string', default: '127.0.0.1:27017', live: false, doc: 'host:port, or a comma-separated list of them (rs, sharded, unknown).' },
  'auth.mongo.pool': { type: 'int', default: '8', min: 1, max: 1024, live: false, doc: 'Connections per server.' },
  'auth.mongo.login': { type: 'string', default: '', allowEmpty: true, live: false, doc: 'User name to authenticate as; empty: no authentication.' },
  'auth.mongo.username': { type: 'string', default: '', allowEmpty: true, live: false, doc: 'Alias of login (EMQ X accepted both); login wins when both are set.' },
  'auth.mongo.password': { type: 'string', default: '', allowEmpty: true, secret: true, live: false, doc: 'Password of login.' },
  'auth.mongo.auth_source': { type: 'string', default: 'admin', live: false, doc: 'Database that holds the login user.' },
  'auth.mongo.database': { type: 'string', default: 'mqtt', live: false, doc: 'Database of the collections.' },
  'auth.mongo.query_timeout': { type: 'duration', default: '5s', min: 1, live: false, doc: 'Longest run of one query (maxTimeMS), and longest wait for a server.' },
  ...sslSchema(MONGO_PREFIX, 'off'),
  'auth.mongo.w_mode': { type: 'enum', values: ['unsafe', 'safe'], default: 'unsafe', live: false, doc: 'Write mode: safe waits for acknowledgement (w 1), unsafe does not (w 0). The plugin only reads.' },
  'auth.mongo.r_mode': { type: 'enum', values: ['master', 'slave_ok'], default: 'master', live: false, doc: 'Read mode: master reads the primary, slave_ok prefers secondaries.' },
  'auth.mongo.topology.pool_size': { type: 'int', default: '1', min: 1, live: false, doc: 'Accepted for EMQ X compatibility; the pool size is auth.mongo.pool.' },
  'auth.mongo.topology.local_threshold_ms': { type: 'int', default: '1000', min: 0, live: false, doc: 'Latency window for choosing among suitable servers (ms).' },
  'auth.mongo.topology.connect_timeout_ms': { type: 'int', default: '20000', min: 1, live: false, doc: 'Longest wait for a TCP/TLS connection (ms).' },
  'auth.mongo.topology.heartbeat_frequency_ms': { type: 'int', default: '10000', min: 500, live: false, doc: 'How often each server is checked (ms).' },
  'auth.mongo.topology.wait_queue_timeout_ms': { type: 'int', default: '1000', min: 1, live: false, doc: 'Longest wait for a free connection of the pool (ms).' },
  'auth.mongo.auth_query.collection': { type: 'string', default: 'mqtt_user', live: false, doc: 'Collection of the users.' },
  'auth.mongo.auth_query.password_field': { type: 'string', default: 'password', live: false, doc: 'Field of the password, or password,salt for the password and salt fields.' },
  'auth.mongo.auth_query.password_hash': { type: 'string', default: 'sha256', live: false, doc: 'How passwords are stored: plain, md5, sha, sha256, sha512, bcrypt, salt,<hash>, <hash>,salt or pbkdf2,<macfun>,<iterations>,<dklen>.' },
  'auth.mongo.auth_query.selector': { type: 'string', default: 'username=%u', live: false, doc: 'Which document is the user: field=value pairs, comma-separated (placeholders %u %c %C %d ...).' },
  'auth.mongo.super_query': { type: 'bool', default: 'on', live: false, doc: 'Look up superusers.' },
  'auth.mongo.super_query.collection': { type: 'string', default: 'mqtt_user', live: false, doc: 'Collection of the superuser flag.' },
  'auth.mongo.super_query.super_field': { type: 'string', default: 'is_superuser', live: false, doc: 'Field that is true for a superuser.' },
  'auth.mongo.super_query.selector': { type: 'string', default: 'username=%u', live: false, doc: 'Which document holds the flag.' },
  'auth.mongo.acl_query': { type: 'bool', default: 'on', live: false, doc: 'Decide publish and subscribe from the ACL collection.' },
  'auth.mongo.acl_query.collection': { type: 'string', default: 'mqtt_acl', live: false, doc: 'Collection of the ACL documents.' },
  'auth.mongo.acl_query.selector': { type: 'string', default: 'username=%u', live: false, doc: 'Which ACL documents apply; with acl_query.selector.<n>, documents matching any selector apply.' },
  'auth.mongo.acl_query.selector.<name>': { type: 'string', live: false, doc: 'More ACL selectors (ORed with acl_query.selector), e.g. acl_query.selector.2 = username=$all.' }
}

/** One `field=value` of a selector, the value a template. */
export interface SelectorPair {
  field: string
  value: Template
}

/** A compiled selector. */
export interface Selector {
  source: string
  pairs: SelectorPair[]
  keys: PlaceholderKey[]
}

/** Parses `username=%u, clientid=%c` (the text before each pair's first `=` is the field). */
export function compileSelector (source: string, key: string): Selector {
  const items = source.split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (items.length === 0) throw ConfigError.badValue(key, source, 'field=value pairs, comma-separated (username=%u)', 'plugin config')
  const pairs = items.map((item) => {
    const at = item.indexOf('=')
    const field = at < 0 ? '' : item.slice(0, at).trim()
    if (field === '' || field.startsWith('$') || field.includes('\0')) {
      throw ConfigError.badValue(key, source, 'field=value pairs, comma-separated (username=%u); a field cannot be empty or start with $', 'plugin config')
    }
    return { field, value: parseTemplate(item.slice(at + 1).trim()) }
  })
  return { source, pairs, keys: [...new Set(pairs.flatMap((p) => p.value.keys))] }
}

/** The filter of `selector` for `ctx`: each value a string, placed as data. */
export function renderSelector (selector: Selector, ctx: AuthContext): Filter<Document> {
  const filter: Record<string, string> = {}
  for (const pair of selector.pairs) filter[pair.field] = renderString(pair.value, ctx)
  return filter
}

/** EMQ X's ACL documents decided for one request (exported for tests). */
export function decideMongoAcl (docs: readonly Document[], ctx: AuthContext, action: AclAction, topic: string): BackendVerdict {
  if (docs.length === 0) return 'ignore'
  const list = (v: unknown): string[] => Array.isArray(v) ? v.filter((t): t is string => typeof t === 'string') : []
  const acl = {
    sub: docs.flatMap((d) => list(d.subscribe)),
    pub: docs.flatMap((d) => list(d.publish)),
    all: docs.flatMap((d) => list(d.pubsub))
  }
  return decideJwtAcl({ acl }, 'acl', { clientId: ctx.clientId, username: ctx.username, peerhost: ctx.peerhost }, action, topic)
}

/** The pool options of `config`. */
export function mongoPoolOptions (config: Record<string, any>, resolvePath: (path: string) => string): MongoPoolOptions {
  const type = config['auth.mongo.type'] as MongoPoolOptions['type']
  const srv = config['auth.mongo.srv_record'] === true
  let servers
  try {
    servers = parseRedisServers(config['auth.mongo.server'], 27017)
  } catch (err) {
    throw ConfigError.badValue('auth.mongo.server', config['auth.mongo.server'], `host:port, or a comma-separated list of them (${(err as Error).message})`, 'plugin config')
  }
  if ((type === 'single' || srv) && servers.length > 1) {
    throw ConfigError.badValue('auth.mongo.server', config['auth.mongo.server'], 'one host:port with type = single or srv_record = true', 'plugin config')
  }
  if (type === 'rs' && String(config['auth.mongo.rs_set_name'] ?? '') === '') {
    throw ConfigError.badValue('auth.mongo.rs_set_name', '', 'the replica set name (type = rs)', 'plugin config')
  }
  const login = String(config['auth.mongo.login'] ?? '') !== '' ? config['auth.mongo.login'] : config['auth.mongo.username']
  return {
    type,
    servers,
    srvRecord: srv,
    rsSetName: config['auth.mongo.rs_set_name'],
    username: login,
    password: config['auth.mongo.password'],
    authSource: config['auth.mongo.auth_source'],
    pool: config['auth.mongo.pool'],
    wMode: config['auth.mongo.w_mode'],
    rMode: config['auth.mongo.r_mode'],
    queryTimeoutMs: config['auth.mongo.query_timeout'],
    connectTimeoutMs: config['auth.mongo.topology.connect_timeout_ms'],
    heartbeatFrequencyMs: config['auth.mongo.topology.heartbeat_frequency_ms'],
    localThresholdMs: config['auth.mongo.topology.local_threshold_ms'],
    waitQueueTimeoutMs: config['auth.mongo.topology.wait_queue_timeout_ms'],
    tls: sslOptions(MONGO_PREFIX, config, resolvePath)
  }
}

/** The compiled queries of `config`. */
export function compileMongoQueries (config: Record<string, any>): {
  checker: ReturnType<typeof parsePasswordHash>, passwordField: string, saltField?: string, auth: Selector,
  superuser?: Selector, acl: Selector[]
} {
  const checker = parsePasswordHash(config['auth.mongo.auth_query.password_hash'], 'auth.mongo.auth_query.password_hash')
  const fields = String(config['auth.mongo.auth_query.password_field']).split(',').map((s) => s.trim())
  if (fields.length > 2 || fields.some((f) => f === '')) {
    throw ConfigError.badValue('auth.mongo.auth_query.password_field', config['auth.mongo.auth_query.password_field'], 'a field name, or password,salt', 'plugin config')
  }
  const extra: Record<string, string> = config['auth.mongo.acl_query.selector.<name>'] ?? {}
  const acl = config['auth.mongo.acl_query'] === false
    ? []
    : [compileSelector(config['auth.mongo.acl_query.selector'], 'auth.mongo.acl_query.selector'),
        ...Object.keys(extra).sort().map((n) => compileSelector(extra[n], `auth.mongo.acl_query.selector.${n}`))]
  return {
    checker,
    passwordField: fields[0],
    saltField: fields[1],
    auth: compileSelector(config['auth.mongo.auth_query.selector'], 'auth.mongo.auth_query.selector'),
    superuser: config['auth.mongo.super_query'] === false ? undefined : compileSelector(config['auth.mongo.super_query.selector'], 'auth.mongo.super_query.selector'),
    acl
  }
}

/** A field's text (strings as they are, buffers/binary as UTF-8); undefined when absent or null. */
function fieldText (value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  if (typeof value === 'object' && 'buffer' in value && Buffer.isBuffer((value as any).buffer)) return (value as any).buffer.toString('utf8')
  return typeof value === 'string' ? value : String(value)
}

/** Opens the backend over `client` (exported for tests). */
export function openMongoBackend (client: MongoClient, config: Record<string, any>, logger?: BackendOpenContext['logger']): BackendClient {
  const q = compileMongoQueries(config)
  const db = client.db(config['auth.mongo.database'])
  const maxTimeMS: number = config['auth.mongo.query_timeout']
  const users: Collection = db.collection(config['auth.mongo.auth_query.collection'])
  const supers: Collection = db.collection(config['auth.mongo.super_query.collection'])
  const acls: Collection = db.collection(config['auth.mongo.acl_query.collection'])
  const superField: string = config['auth.mongo.super_query.super_field']

  const isSuperuser = async (ctx: AuthContext): Promise<boolean> => {
    if (q.superuser === undefined || missingPlaceholders(q.superuser, ctx).length > 0) return false
    try {
      const doc = await supers.findOne(renderSelector(q.superuser, ctx), { projection: { [superField]: 1 }, maxTimeMS })
      return parseSuperuser(doc?.[superField])
    } catch (err) {
      logger?.warn({ err, clientId: ctx.clientId }, 'svc_auth_mongo: super_query failed; not a superuser')
      return false
    }
  }

  const backend: BackendClient = {
    authenticate: async (ctx, request) => {
      // nothing asked (no username for %u ...): MongoDB was not heard from
      if (missingPlaceholders(q.auth, ctx).length > 0) return { verdict: 'ignore' }
      const projection: Record<string, 1> = { [q.passwordField]: 1 }
      if (q.saltField !== undefined) projection[q.saltField] = 1
      const doc = await users.findOne(renderSelector(q.auth, ctx), { projection, maxTimeMS })
      request.answered()
      const stored = fieldText(doc?.[q.passwordField])
      if (doc === null || stored === undefined) return { verdict: 'ignore' }
      const salt = q.saltField === undefined ? undefined : fieldText(doc[q.saltField])
      const given = ctx.password === undefined ? undefined : Buffer.isBuffer(ctx.password) ? ctx.password : Buffer.from(ctx.password, 'utf8')
      if (!await q.checker.checkAsync(stored, salt, given)) return { verdict: 'deny' }
      return { verdict: 'allow', superuser: await isSuperuser(ctx) }
    },
    close: async () => await client.close()
  }
  if (q.acl.length > 0) {
    backend.checkAcl = async (ctx, action, request) => {
      const filters = q.acl.filter((s) => missingPlaceholders(s, ctx).length === 0).map((s) => renderSelector(s, ctx))
      if (filters.length === 0) return 'ignore'
      const filter = filters.length === 1 ? filters[0] : { $or: filters }
      const docs = await acls.find(filter, { projection: { publish: 1, subscribe: 1, pubsub: 1 }, maxTimeMS, limit: 1000 }).toArray()
      request.answered()
      return decideMongoAcl(docs, ctx, action, ctx.topic ?? '')
    }
  }
  return backend
}

export const svcAuthMongo = defineAuthBackend({
  name: 'svc_auth_mongo',
  description: 'Authentication and ACL with MongoDB (EMQ X 4.4 emqx_auth_mongo keys)',
  prefix: MONGO_PREFIX,
  configSchema: mongoConfigSchema,
  // EMQ X's MongoDB ACL had no `$`-username rule (its HTTP, SQL, Redis and LDAP ones did)
  skipDollarUsernames: false,
  open: async (ctx) => {
    compileMongoQueries(ctx.config) // a bad selector or hash fails the load before a connection is made
    // the driver is loaded by the first load of the plugin, not by every node (kit/pools/index.ts)
    const { createMongoClient } = await import('../../kit/pools/mongo.js')
    const client = createMongoClient(mongoPoolOptions(ctx.config, ctx.resolvePath))
    client.on('error', (err) => ctx.logger.warn({ err: err.message }, 'svc_auth_mongo: MongoDB error'))
    return openMongoBackend(client, ctx.config, ctx.logger)
  }
})
