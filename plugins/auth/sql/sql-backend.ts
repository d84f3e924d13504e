/**
 * What `svc_auth_mysql` and `svc_auth_pgsql` share: EMQ X 4.4's `auth.<db>.*` keys, their
 * mapping onto a SQL pool (plugins/kit/pools), and the three queries:
 *
 * - `auth_query`: no row → `ignore`; a row → its `password` column (and `salt` if the query
 *   selects one) is checked with `password_hash`: match → `allow`, else `deny`. Several rows:
 *   the first is used.
 * - `super_query` (after an `allow` only): the first column of the first row, read by
 *   `parseSuperuser` (MySQL `1`, PostgreSQL `true`); no row or a failed query → not a superuser.
 * - `acl_query`: the rows (`allow, ipaddr, username, clientid, access, topic`) decided by
 *   `decideAclRows`, **last row first**, as EMQ X 4.4 did (it built its rule list reversed,
 *   and its seed data relies on that): so a table and a query carried over from EMQ X decide
 *   the same. No row or no match → `ignore`; a row the ACL cannot read → `ignore`, logged.
 *
 * An empty `auth_query`, `super_query` or `acl_query` turns that part off (EMQ X: the key
 * left out), so a plugin can be ACL-only or authentication-only.
 *
 * Invariant: every value of a query comes from compileSqlTemplate/renderSql, bound by the
 * driver; the SQL text is fixed when the plugin loads.
 */
import {
  AclRowError, compileSqlTemplate, decideAclRows, parsePasswordHash, parseSuperuser, renderSql,
  type AclRow, type AuthContext, type BackendClient, type BackendOpenContext, type BackendRequest, type BackendVerdict,
  type SqlDialect, type SqlTemplate
} from '../backend/index.js'
import type { ConfigSchema } from '../../../node/config/index.js'
import { ConfigError } from '../../../node/config/index.js'
import type { SqlPool, SqlPoolOptions, SqlRow } from '../../kit/pools/index.js'
import { sslSettingsOf } from '../backend/ssl-keys.js'

/** EMQ X 4.4's default queries, the same for MySQL and PostgreSQL. */
export const DEFAULT_QUERIES = {
  auth_query: "select password from mqtt_user where username = '%u' limit 1",
  super_query: "select is_superuser from mqtt_user where username = '%u' limit 1",
  acl_query: "select allow, ipaddr, username, clientid, access, topic from mqtt_acl where ipaddr = '%a' or username = '%u' or username = '$all' or clientid = '%c'"
} as const

/** What differs between the two databases' keys. */
export interface SqlBackendDefaults {
  /** `auth.mysql` or `auth.pgsql`. */
  prefix: string
  /** `MySQL` or `PostgreSQL`, for docs. */
  product: string
  server: string
  username: string
  /** What the superuser column holds for yes. */
  superuserDoc: string
}

const SERVER = /^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]]+)(:\d{1,5})?$/

/** The keys both plugins have (EMQ X 4.4's names and defaults), under `d.prefix`. */
export function sqlBackendSchema (d: SqlBackendDefaults): ConfigSchema {
  const p = d.prefix
  return {
    [`${p}.server`]: { type: 'string', default: d.server, pattern: SERVER, hint: 'host:port such as 127.0.0.1:3306', live: false, doc: `Address of the ${d.product} server.` },
    [`${p}.pool`]: { type: 'int', default: '8', min: 1, max: 1024, live: false, doc: 'Most connections open to the server at once; opened at the first queries, reopened after a failure.' },
    [`${p}.username`]: { type: 'string', default: d.username, allowEmpty: true, live: false, doc: `User name to log in to ${d.product} with.` },
    [`${p}.password`]: { type: 'string', default: '', allowEmpty: true, secret: true, live: false, doc: `Password to log in to ${d.product} with.` },
    [`${p}.database`]: { type: 'string', default: 'mqtt', live: false, doc: 'Database the queries run in.' },
    [`${p}.query_timeout`]: { type: 'duration', default: '5s', min: 0, live: false, doc: 'Longest a query may run on the server (0: no limit of its own; the plugin\'s timeout still bounds the wait).' },
    [`${p}.auth_query`]: { type: 'string', default: DEFAULT_QUERIES.auth_query, allowEmpty: true, live: false, doc: 'Query selecting the password (and optionally salt) of a user; empty: no authentication. Placeholders %u %c %a %C %d %P %p %r are bound parameters.' },
    [`${p}.password_hash`]: { type: 'string', default: 'sha256', live: false, doc: 'How the password column is hashed: plain, md5, sha, sha256, sha512, bcrypt; salt,<hash> or <hash>,salt; pbkdf2,<macfun>,<iterations>,<dklen>.' },
    [`${p}.super_query`]: { type: 'string', default: DEFAULT_QUERIES.super_query, allowEmpty: true, live: false, doc: `Query selecting whether a user is a superuser (${d.superuserDoc}); empty: nobody is.` },
    [`${p}.acl_query`]: { type: 'string', default: DEFAULT_QUERIES.acl_query, allowEmpty: true, live: false, doc: 'Query selecting the ACL rows of a client (allow, ipaddr, username, clientid, access, topic); the last row returned is matched first, as in EMQ X 4.4. Empty: no ACL.' },
    [`${p}.ssl`]: { type: 'bool', default: 'off', live: false, doc: 'Connect to the server over TLS.' },
    [`${p}.ssl.cacertfile`]: { type: 'string', default: '', allowEmpty: true, live: false, doc: 'PEM CA certificates the server\'s certificate is checked against (with ssl.verify); empty: the system\'s.' },
    [`${p}.ssl.certfile`]: { type: 'string', default: '', allowEmpty: true, live: false, doc: 'PEM client certificate, for servers that ask for one.' },
    [`${p}.ssl.keyfile`]: { type: 'string', default: '', allowEmpty: true, live: false, doc: 'PEM key of the client certificate.' },
    [`${p}.ssl.verify`]: { type: 'bool', default: 'false', live: false, doc: 'Check the server\'s certificate (verify_peer); false accepts any certificate, as EMQ X\'s default.' },
    [`${p}.ssl.server_name_indication`]: { type: 'string', default: '', allowEmpty: true, live: false, doc: 'Name the server\'s certificate must carry (with ssl.verify): empty checks the host of server; disable skips the name check.' }
  }
}

/** `host:port` (or `[v6]:port`, or a host alone with `defaultPort`). */
export function parseServer (value: string, key: string, defaultPort: number): { host: string, port: number } {
  const m = SERVER.exec(value.trim())
  const port = m?.[2] === undefined ? defaultPort : Number(m[2].slice(1))
  if (m === null || port < 1 || port > 65535) throw ConfigError.badValue(key, value, 'host:port such as 127.0.0.1:3306', 'plugin config')
  return { host: m[1].replace(/^\[|\]$/g, ''), port }
}

/** The pool options of a plugin's keys (`auth.<db>.*`). */
export function sqlPoolOptionsOf (ctx: BackendOpenContext, prefix: string, defaultPort: number): SqlPoolOptions {
  const c = ctx.config
  const { host, port } = parseServer(c[`${prefix}.server`], `${prefix}.server`, defaultPort)
  return {
    host,
    port,
    user: c[`${prefix}.username`],
    password: c[`${prefix}.password`],
    database: c[`${prefix}.database`],
    size: c[`${prefix}.pool`],
    connectTimeoutMs: c[`${prefix}.timeout`] ?? 5000,
    queryTimeoutMs: c[`${prefix}.query_timeout`] ?? 0,
    encoding: c[`${prefix}.encoding`],
    tls: c[`${prefix}.ssl`] !== true ? undefined : sslSettingsOf(prefix, c, ctx.resolvePath, c[`${prefix}.ssl.verify`] === true)
  }
}

/** Opens the backend client of a SQL plugin on `pool` (which it closes). */
export function openSqlBackend (ctx: BackendOpenContext, prefix: string, dialect: SqlDialect, pool: SqlPool): BackendClient {
  const c = ctx.config
  const compile = (key: string): SqlTemplate | undefined => {
    const source: string = c[`${prefix}.${key}`] ?? ''
    return source.trim() === '' ? undefined : compileSqlTemplate(source, dialect, { key: `${prefix}.${key}`, source: 'plugin config' })
  }
  const checker = parsePasswordHash(c[`${prefix}.password_hash`], `${prefix}.password_hash`)
  const authQuery = compile('auth_query')
  const superQuery = compile('super_query')
  const aclQuery = compile('acl_query')
  /** Runs `template` for `ctx`; the rows mark `request` answered (a missing value is bound as NULL: still a query). */
  const run = async (template: SqlTemplate, ctx: AuthContext, request: BackendRequest): Promise<SqlRow[]> => {
    const q = renderSql(template, ctx)
    const rows = await pool.query(q.text, q.values)
    request.answered()
    return rows
  }

  const isSuperuser = async (auth: AuthContext, request: BackendRequest): Promise<boolean> => {
    if (superQuery === undefined) return false
    try {
      const rows = await run(superQuery, auth, request)
      return rows.length > 0 && parseSuperuser(Object.values(rows[0])[0])
    } catch (err) {
      ctx.logger.warn({ err, clientId: auth.clientId }, `${prefix}.super_query failed: not a superuser`)
      return false
    }
  }

  return {
    authenticate: authQuery === undefined
      ? undefined
      : async (auth, request) => {
        const rows = await run(authQuery, auth, request)
        if (rows.length === 0) return { verdict: 'ignore' }
        const row = rows[0]
        const stored = textOf(row.password)
        const salt = 'salt' in row ? textOf(row.salt) : undefined
        const given = typeof auth.password === 'string' ? Buffer.from(auth.password, 'utf8') : auth.password
        if (stored === undefined || !await checker.checkAsync(stored, salt, given)) return { verdict: 'deny' }
        return { verdict: 'allow', superuser: await isSuperuser(auth, request) }
      },
    checkAcl: aclQuery === undefined
      ? undefined
      : async (auth, action, request): Promise<BackendVerdict> => {
        const rows = await run(aclQuery, auth, request) as unknown as AclRow[]
        try {
          // EMQ X 4.4 built its rule list reversed: the last row returned is matched first
          return decideAclRows([...rows].reverse(), { clientId: auth.clientId, username: auth.username, peerhost: auth.peerhost }, action, auth.topic ?? '')
        } catch (err) {
          if (!(err instanceof AclRowError)) throw err
          ctx.logger.error({ err, clientId: auth.clientId }, `${prefix}.acl_query returned a row the ACL cannot read; answering ignore`)
          return 'ignore'
        }
      },
    close: async () => { await pool.close() }
  }
}

/** A column's text: strings as they are, buffers as UTF-8, NULL as undefined. */
function textOf (value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  return String(value)
}
