/**
 * A MySQL/MariaDB connection pool (mysql2) for the auth plugin `svc_auth_mysql` and, later,
 * data integration's MySQL resources: one pool per user, built from {@link SqlPoolOptions}.
 *
 * Invariants:
 * - Creating the pool opens no connection: the first query does, so a plugin loads while the
 *   server is down, and its queries fail fast (connect timeout) until the server is back.
 * - A connection that breaks (server restarted, network cut) is dropped by mysql2's pool at
 *   its error, and the next query opens a fresh one: reconnecting is per query, never a loop
 *   in the background.
 * - Values are always bound by the server (`execute`, a prepared statement), never spliced
 *   into the text.
 * - Every query is bounded by `queryTimeoutMs` (when non-zero): the promise rejects then, and
 *   mysql2 closes the connection whose query timed out.
 */
import mysql from 'mysql2/promise'
import { SqlQueryTimeoutError, tlsConnectOptions, withTimeout, wrapSqlPool, type SqlPool, type SqlPoolOptions, type SqlRow } from './sql-pool.js'

/** Opens a MySQL pool; see the module comment. Throws only for unreadable TLS files. */
export function createMysqlPool (opts: SqlPoolOptions): SqlPool {
  const pool = mysql.createPool({
    host: opts.host,
    port: opts.port,
    user: opts.user,
    password: opts.password,
    database: opts.database,
    connectionLimit: opts.size,
    maxIdle: opts.size,
    connectTimeout: opts.connectTimeoutMs,
    enableKeepAlive: true,
    // the server's types as JavaScript values: TINYINT a number, BIGINT a number while it fits
    supportBigNumbers: true,
    ssl: opts.tls === undefined ? undefined : mysqlSsl(opts)
  })
  // an idle connection the server closed: the pool drops it; the error is not the caller's
  pool.pool.on('connection', (c) => { c.on('error', () => {}) })
  return wrapSqlPool('MySQL', opts, {
    query: async (text, values) => {
      const run = pool.execute({ sql: text, timeout: opts.queryTimeoutMs > 0 ? opts.queryTimeoutMs : undefined }, values as any[])
      const [rows] = await withTimeout(run.catch((err: any) => {
        if (err?.code === 'PROTOCOL_SEQUENCE_TIMEOUT') throw new SqlQueryTimeoutError(opts.queryTimeoutMs)
        throw err
      }), opts.queryTimeoutMs > 0 ? opts.queryTimeoutMs + opts.connectTimeoutMs : 0)
      return Array.isArray(rows) ? rows as SqlRow[] : []
    },
    transaction: async (queries) => {
      const conn = await pool.getConnection()
      let broken = false
      try {
        await conn.beginTransaction()
        for (const q of queries) await conn.execute({ sql: q.text, timeout: opts.queryTimeoutMs > 0 ? opts.queryTimeoutMs : undefined }, q.values as any[])
        await conn.commit()
      } catch (err) {
        // a connection that failed is destroyed; a refused statement's goes back once rolled back
        await conn.rollback().catch(() => { broken = true })
        throw err
      } finally {
        if (broken) conn.destroy()
        else conn.release()
      }
    },
    end: async () => { await pool.end() }
  })
}

/** mysql2's `ssl` option: its own verifyIdentity flag stands for the server name check. */
function mysqlSsl (opts: SqlPoolOptions): Record<string, unknown> {
  const tls = opts.tls!
  const { ca, cert, key, minVersion, maxVersion } = tlsConnectOptions({ ...tls, serverName: undefined }, opts.host)
  return {
    ca, cert, key, minVersion, maxVersion,
    rejectUnauthorized: tls.verify,
    verifyIdentity: tls.verify && tls.serverName !== 'disable'
  }
}
