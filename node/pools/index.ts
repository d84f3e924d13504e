/**
 * Connection pools to external servers, shared by the auth backends and data integration:
 * MySQL/MariaDB (mysql2) and PostgreSQL (pg), each built from a {@link SqlPoolOptions}.
 */
export { createMysqlPool } from './mysql.js'
export { createPgsqlPool } from './pgsql.js'
export { SqlQueryTimeoutError, tlsConnectOptions, isTlsVersion } from './sql-pool.js'
export type { SqlPool, SqlPoolOptions, SqlTlsOptions, SqlRow } from './sql-pool.js'
