/**
 * Connection pools to external servers, shared by the auth backends and data integration:
 * MySQL/MariaDB (`mysql.ts`, mysql2) and PostgreSQL (`pgsql.ts`, pg), each built from a
 * {@link SqlPoolOptions}, Redis (`redis.ts`), LDAP (`ldap.ts`), MongoDB (`mongo.ts`), and the one
 * builder of TLS options from EMQ X's `ssl.*` keys that every pool and backend uses.
 *
 * The pool modules are not re-exported here, because each loads its driver: a plugin imports
 * its pool module with `await import()` where it opens a connection, so a node that does not
 * use a database never loads its driver (about 10 to 30 MB of memory each).
 */
export { parseRedisServers, type RedisAddress } from './servers.js'
export { SqlQueryTimeoutError, tlsConnectOptions } from './sql-pool.js'
export { buildTlsOptions, isTlsVersion } from '../../../node/tls-options.js'
export type { ServerNameRule, TlsBuildContext, TlsFileKey, TlsSettings } from '../../../node/tls-options.js'
export type { SqlPool, SqlPoolOptions, SqlTlsOptions, SqlRow } from './sql-pool.js'
