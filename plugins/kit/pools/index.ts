/**
 * Connection pools to external servers, shared by the auth backends and data integration:
 * MySQL/MariaDB (mysql2) and PostgreSQL (pg), each built from a {@link SqlPoolOptions}, and the
 * one builder of TLS options from EMQ X's `ssl.*` keys that every pool and backend uses.
 */
export { createMysqlPool } from './mysql.js'
export { createPgsqlPool } from './pgsql.js'
export { SqlQueryTimeoutError, tlsConnectOptions } from './sql-pool.js'
export { buildTlsOptions, isTlsVersion } from './tls.js'
export type { ServerNameRule, TlsBuildContext, TlsFileKey, TlsSettings } from './tls.js'
export type { SqlPool, SqlPoolOptions, SqlTlsOptions, SqlRow } from './sql-pool.js'
