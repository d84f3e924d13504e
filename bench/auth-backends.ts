/**
 * The backends of bench/auth.ts: how each one's server is started (the real-server harness of
 * test/helpers/servers, or in the bench process), seeded with the bench's users, and which
 * plugin keys (as `STARLING_` variables) point a node at it.
 *
 * Every backend stores the same users with salted SHA-256 where it can: the SQL tables and
 * Redis hashes of EMQ X 4.4 with `password_hash = salt,sha256` (salt column / field), the
 * built-in `svc_auth_username` with its own salted sha256, LDAP `{SSHA256}` userPassword
 * values (EMQ X's emqx.schema entries), the HTTP service salted SHA-256 in a map. JWT has no
 * store: each user's password is an HS256 token.
 */
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { SignJWT } from 'jose'
import { computePasswordHash, parsePasswordHash } from '../plugins/auth/backend/index.js'
import { formatLdapPassword } from '../plugins/auth/ldap/password.js'
import { startLdap, ldapBinaries } from '../test/helpers/servers/ldap.js'
import { startMariadb, mariadbBinaries } from '../test/helpers/servers/mariadb.js'
import { startPostgres, postgresBinaries } from '../test/helpers/servers/postgres.js'
import { startRedis, redisBinary } from '../test/helpers/servers/redis.js'
import { MissingServerError } from '../test/helpers/servers/system.js'
import type { Credentials } from './auth-clients.js'
import { HttpAuthService } from './auth-http-service.js'

/** One user as seeded: the CONNECT credentials and the salt its entry was hashed with. */
export interface BenchUser extends Credentials {
  salt: string
}

/** A backend the bench can measure. */
export interface Backend {
  /** The plugin's name (`svc_auth_mysql`). */
  plugin: string
  /** The key of its pool size, when it has one (`auth.mysql.pool`). */
  poolKey?: string
  /** What the server is, for the report (`MariaDB 10.11 (harness)`). */
  server: string
  /** Why it cannot run here (server not installed), or undefined. */
  missing: () => string | undefined
  /** Starts the server and seeds `users`; returns the CONNECT credentials of each user. */
  start: (users: BenchUser[]) => Promise<Credentials[]>
  /** The node's `STARLING_` variables for the plugin, with the pool size when it has one. */
  env: (pool: number | undefined) => Record<string, string>
  /** The server's PID, for CPU per CONNECT (undefined: in the bench process or none). */
  serverPid: () => number | undefined
  /** A password the backend must refuse (CONNACK 4) for `user`. */
  wrongPassword: (user: Credentials) => Promise<string>
  stop: () => Promise<void>
}

/** `STARLING_` variable of a plugin key: `auth.mysql.pool` → `STARLING_AUTH__MYSQL__POOL`. */
export function envName (key: string): string {
  return 'STARLING_' + key.toUpperCase().replaceAll('.', '__')
}

function keys (entries: Record<string, string | number | undefined>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(entries)) if (v !== undefined) out[envName(k)] = String(v)
  return out
}

/** Why a harness server cannot start here, from its binary look-up. */
function missingBinary (lookup: () => unknown): string | undefined {
  try {
    lookup()
    return undefined
  } catch (err) {
    if (err instanceof MissingServerError) return err.message
    throw err
  }
}

const SALTED_SHA256 = parsePasswordHash('salt,sha256', 'bench').spec
/** Hex SHA-256 of salt ‖ password: what `password_hash = salt,sha256` checks. */
function saltedSha256 (user: BenchUser): string {
  return computePasswordHash(SALTED_SHA256, Buffer.from(user.password), user.salt) as string
}

/** `count` users `bench<i>` with random passwords and 8-character hex salts. */
export function makeUsers (count: number): BenchUser[] {
  return Array.from({ length: count }, (_v, i) => ({
    username: `bench${i}`,
    password: randomBytes(9).toString('base64url'),
    salt: randomBytes(4).toString('hex')
  }))
}

const wrong = async (): Promise<string> => 'not-the-password'

/** The built-in reference: entries added from `auth.user.<name>.*` keys when the plugin loads (salted sha256). */
export function usernameBackend (): Backend {
  let seeded: BenchUser[] = []
  return {
    plugin: 'svc_auth_username',
    server: 'built-in (node store)',
    missing: () => undefined,
    start: async (users) => { seeded = users; return users },
    env: () => {
      const out: Record<string, string> = keys({ 'auth.user.password_hash': 'sha256' })
      seeded.forEach((u, i) => Object.assign(out, keys({ [`auth.user.u${i}.username`]: u.username, [`auth.user.u${i}.password`]: u.password })))
      return out
    },
    serverPid: () => undefined,
    wrongPassword: wrong,
    stop: async () => {}
  }
}

/** EMQ X 4.4's mqtt_user (emqx_auth_mysql's mqtt.sql), on MariaDB. */
export function mysqlBackend (): Backend {
  let db: Awaited<ReturnType<typeof startMariadb>> | undefined
  return {
    plugin: 'svc_auth_mysql',
    poolKey: 'auth.mysql.pool',
    server: 'MariaDB (harness)',
    missing: () => missingBinary(mariadbBinaries),
    start: async (users) => {
      db = await startMariadb()
      await db.query(`CREATE TABLE mqtt_user (
        id int(11) unsigned NOT NULL AUTO_INCREMENT, username varchar(100) DEFAULT NULL, password varchar(100) DEFAULT NULL,
        salt varchar(35) DEFAULT NULL, is_superuser tinyint(1) DEFAULT 0, created datetime DEFAULT NULL,
        PRIMARY KEY (id), UNIQUE KEY mqtt_username (username)) ENGINE=MyISAM DEFAULT CHARSET=utf8`)
      await db.query('INSERT INTO mqtt_user (username, password, salt, is_superuser) VALUES ?',
        [users.map((u) => [u.username, saltedSha256(u), u.salt, 0])])
      return users
    },
    env: (pool) => {
      const d = db as NonNullable<typeof db>
      return keys({
        'auth.mysql.server': `${d.host}:${d.port}`,
        'auth.mysql.username': d.user,
        'auth.mysql.password': d.password,
        'auth.mysql.database': d.database,
        'auth.mysql.pool': pool,
        'auth.mysql.auth_query': "select password, salt from mqtt_user where username = '%u' limit 1",
        'auth.mysql.password_hash': 'salt,sha256'
      })
    },
    serverPid: () => db?.pid,
    wrongPassword: wrong,
    stop: async () => { await db?.close() }
  }
}

/** EMQ X 4.4's mqtt_user (emqx_auth_pgsql's pgsql.sql, password widened to 128), on PostgreSQL. */
export function pgsqlBackend (): Backend {
  let db: Awaited<ReturnType<typeof startPostgres>> | undefined
  return {
    plugin: 'svc_auth_pgsql',
    poolKey: 'auth.pgsql.pool',
    server: 'PostgreSQL (harness)',
    missing: () => missingBinary(postgresBinaries),
    start: async (users) => {
      db = await startPostgres()
      await db.query(`CREATE TABLE mqtt_user (id SERIAL primary key, is_superuser boolean, username character varying(100),
        password character varying(128), salt character varying(40))`)
      const values: unknown[] = []
      const rows = users.map((u, i) => {
        values.push(u.username, saltedSha256(u), u.salt)
        return `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3}, false)`
      })
      await db.query(`INSERT INTO mqtt_user (username, password, salt, is_superuser) VALUES ${rows.join(', ')}`, values)
      // EMQ X's table has no index on username: a lookup scans the table (1000 rows: 1 page or so)
      await db.query('ANALYZE mqtt_user')
      return users
    },
    env: (pool) => {
      const d = db as NonNullable<typeof db>
      return keys({
        'auth.pgsql.server': `${d.host}:${d.port}`,
        'auth.pgsql.username': d.user,
        'auth.pgsql.password': d.password,
        'auth.pgsql.database': d.database,
        'auth.pgsql.pool': pool,
        'auth.pgsql.auth_query': "select password, salt from mqtt_user where username = '%u' limit 1",
        'auth.pgsql.password_hash': 'salt,sha256'
      })
    },
    serverPid: () => db?.pid,
    wrongPassword: wrong,
    stop: async () => { await db?.close() }
  }
}

/** EMQ X 4.4's `mqtt_user:<username>` hashes with a salt field, on Redis. */
export function redisBackend (): Backend {
  let redis: Awaited<ReturnType<typeof startRedis>> | undefined
  return {
    plugin: 'svc_auth_redis',
    poolKey: 'auth.redis.pool',
    server: 'Redis (harness)',
    missing: () => missingBinary(redisBinary),
    start: async (users) => {
      redis = await startRedis()
      const client = await redis.connect()
      try {
        const batch = client.pipeline()
        for (const u of users) batch.hset(`mqtt_user:${u.username}`, 'password', saltedSha256(u), 'salt', u.salt, 'is_superuser', '0')
        await batch.exec()
      } finally {
        client.disconnect()
      }
      return users
    },
    env: (pool) => keys({
      'auth.redis.server': `127.0.0.1:${(redis as NonNullable<typeof redis>).port}`,
      'auth.redis.pool': pool,
      'auth.redis.auth_cmd': 'HMGET mqtt_user:%u password salt',
      'auth.redis.password_hash': 'salt,sha256'
    }),
    serverPid: () => redis?.pid,
    wrongPassword: wrong,
    stop: async () => { await redis?.close() }
  }
}

/** The in-process HTTP service (bench/auth-http-service.ts). */
export function httpBackend (service: HttpAuthService): Backend {
  return {
    plugin: 'svc_auth_http',
    poolKey: 'auth.http.pool_size',
    server: 'node:http in the bench process',
    missing: () => undefined,
    start: async (users) => {
      for (const u of users) service.addUser(u.username, u.password, u.salt)
      await service.start()
      return users
    },
    env: (pool) => keys({
      'auth.http.auth_req.url': service.url('/mqtt/auth'),
      'auth.http.acl_req.url': service.url('/mqtt/acl'),
      'auth.http.pool_size': pool
    }),
    serverPid: () => undefined,
    wrongPassword: wrong,
    stop: async () => { await service.stop() }
  }
}

/** HS256 tokens in the password (`auth.jwt.from = password`), verified with the shared secret. */
export function jwtBackend (): Backend {
  const secret = randomBytes(32).toString('hex')
  const sign = async (username: string, key: string): Promise<string> =>
    await new SignJWT({ username }).setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('1d').setIssuedAt(Math.floor(Date.now() / 1000) - 60).sign(new TextEncoder().encode(key))
  return {
    plugin: 'svc_auth_jwt',
    server: 'none (HS256 secret in the node)',
    missing: () => undefined,
    start: async (users) => await Promise.all(users.map(async (u) => ({ username: u.username, password: await sign(u.username, secret) }))),
    env: () => keys({ 'auth.jwt.secret': secret, 'auth.jwt.from': 'password' }),
    serverPid: () => undefined,
    // signed with another secret: a token that is there but invalid is denied
    wrongPassword: async (user) => await sign(user.username, secret + 'x'),
    stop: async () => {}
  }
}

/** EMQ X's emqx.schema device entries (`uid=<username>,ou=device,dc=emqx,dc=io`), search-then-compare. */
export function ldapBackend (repoRoot: string): Backend {
  let ldap: Awaited<ReturnType<typeof startLdap>> | undefined
  return {
    plugin: 'svc_auth_ldap',
    poolKey: 'auth.ldap.pool',
    server: 'OpenLDAP slapd (harness)',
    missing: () => missingBinary(ldapBinaries),
    start: async (users) => {
      ldap = await startLdap({ schemas: [path.join(repoRoot, 'etc/ldap/emqx.schema')] })
      const entries = ['dn: ou=device,dc=emqx,dc=io\nobjectClass: top\nobjectClass: organizationalUnit\nou: device\n']
      for (const u of users) {
        entries.push([`dn: uid=${u.username},ou=device,dc=emqx,dc=io`, 'objectClass: top', 'objectClass: mqttDevice',
          'objectClass: mqttUser', 'objectClass: mqttSecurity', `uid: ${u.username}`,
          `userPassword: ${formatLdapPassword('SSHA256', u.password, Buffer.from(u.salt))}`, ''].join('\n'))
      }
      await ldap.addLdif(entries.join('\n'))
      return users
    },
    env: (pool) => {
      const l = ldap as NonNullable<typeof ldap>
      return keys({
        'auth.ldap.servers': '127.0.0.1',
        'auth.ldap.port': l.port,
        'auth.ldap.bind_dn': l.bindDn,
        'auth.ldap.bind_password': l.password,
        'auth.ldap.pool': pool
      })
    },
    serverPid: () => ldap?.pid,
    wrongPassword: wrong,
    stop: async () => { await ldap?.close() }
  }
}

/** Every backend the bench knows, in the table's order. */
export const BACKEND_NAMES = ['svc_auth_username', 'svc_auth_mysql', 'svc_auth_pgsql', 'svc_auth_redis', 'svc_auth_http', 'svc_auth_jwt', 'svc_auth_ldap'] as const

/** Builds the backend of `plugin`. */
export function backendFor (plugin: string, repoRoot: string, service: HttpAuthService): Backend {
  switch (plugin) {
    case 'svc_auth_username': return usernameBackend()
    case 'svc_auth_mysql': return mysqlBackend()
    case 'svc_auth_pgsql': return pgsqlBackend()
    case 'svc_auth_redis': return redisBackend()
    case 'svc_auth_http': return httpBackend(service)
    case 'svc_auth_jwt': return jwtBackend()
    case 'svc_auth_ldap': return ldapBackend(repoRoot)
    default: throw new Error(`unknown backend ${plugin}; known: ${BACKEND_NAMES.join(', ')}`)
  }
}
