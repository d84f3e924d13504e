/**
 * A PostgreSQL connection pool (pg) for the auth plugin `svc_auth_pgsql` and, later, data
 * integration's PostgreSQL resources: one pool per user, built from {@link SqlPoolOptions}.
 *
 * Invariants:
 * - Creating the pool opens no connection: the first query does, so a plugin loads while the
 *   server is down, and its queries fail fast (connect timeout) until the server is back.
 * - A client that breaks (server restarted, backend terminated) is removed by pg's pool at its
 *   error, and the next query checks out a fresh one: reconnecting is per query. The pool's
 *   `error` event (an idle client's failure) is always handled, so it never crashes the node.
 * - Values are always bound by the server (`$n` parameters), never spliced into the text.
 * - Every query is bounded by `queryTimeoutMs` (when non-zero): pg's `query_timeout` rejects
 *   it and the server's `statement_timeout` cancels it.
 * - Besides the pool's `max` connections, one more for pipelined writes (pgsql-pipeline.ts),
 *   opened at the first of them.
 */
import pg from 'pg'
import { PgPipeline } from './pgsql-pipeline.js'
import { tlsConnectOptions, wrapSqlPool, type SqlPool, type SqlPoolOptions, type SqlRow } from './sql-pool.js'

/** Opens a PostgreSQL pool; see the module comment. Throws only for unreadable TLS files. */
export function createPgsqlPool (opts: SqlPoolOptions): SqlPool {
  const config: pg.PoolConfig = {
    host: opts.host,
    port: opts.port,
    user: opts.user,
    password: opts.password,
    database: opts.database,
    max: opts.size,
    connectionTimeoutMillis: opts.connectTimeoutMs,
    query_timeout: opts.queryTimeoutMs > 0 ? opts.queryTimeoutMs : undefined,
    statement_timeout: opts.queryTimeoutMs > 0 ? opts.queryTimeoutMs : undefined,
    client_encoding: opts.encoding,
    keepAlive: true,
    ssl: opts.tls === undefined ? false : tlsConnectOptions(opts.tls, opts.host) as pg.PoolConfig['ssl']
  }
  const pool = new pg.Pool(config)
  // ordered writes (data integration) go pipelined over one more connection, opened at the first
  const pipeline = new PgPipeline(config)
  // an idle client's connection failed (server restarted): pg drops it; nobody is waiting on it
  pool.on('error', () => {})
  return wrapSqlPool('PostgreSQL', opts, {
    query: async (text, values) => (await pool.query(text, values as any[])).rows as SqlRow[],
    transaction: async (queries) => {
      const client = await pool.connect()
      let broken: Error | undefined
      // the server dying under a checked-out client emits `error` on it: the query in flight rejects anyway
      const onError = (err: Error): void => { broken = err }
      client.on('error', onError)
      try {
        await client.query('BEGIN')
        for (const q of queries) await client.query(q.text, q.values as any[])
        await client.query('COMMIT')
      } catch (err) {
        // a connection that failed is not given back to the pool; a refused statement's is, once rolled back
        await client.query('ROLLBACK').catch((e: Error) => { broken = e })
        throw err
      } finally {
        client.off('error', onError)
        client.release(broken)
      }
    },
    pipelined: async (queries, after) => { await pipeline.transaction(queries, after) },
    end: async () => { await Promise.all([pipeline.close(), pool.end()]) }
  })
}
