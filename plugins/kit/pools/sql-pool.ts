/**
 * What the SQL pools (`mysql.ts`, `pgsql.ts`) share: the options a user of a pool gives (an
 * auth plugin, a data integration resource), the pool's interface, the TLS options built
 * from EMQ X's `ssl.*` keys (plugins/kit/pools/tls.ts), and the wrapper both drivers' pools share.
 */
import type { ConnectionOptions } from 'node:tls'
import { buildTlsOptions, type TlsSettings } from '../../../node/tls-options.js'

/** TLS towards the database server: EMQ X's `ssl.*` keys; files are PEM paths already resolved by the caller. */
export type SqlTlsOptions = TlsSettings

/** How to reach one database and how large the pool is. */
export interface SqlPoolOptions {
  host: string
  port: number
  user: string
  password: string
  database: string
  /** Most connections open at once (EMQ X's `pool`). */
  size: number
  /** Longest wait for a new connection, in ms. */
  connectTimeoutMs: number
  /** Longest wait for one query, in ms (0: none; the caller bounds it). */
  queryTimeoutMs: number
  /** TLS; undefined: plain TCP. */
  tls?: SqlTlsOptions
  /** PostgreSQL only: the client encoding (EMQ X's `auth.pgsql.encoding`, `utf8`). */
  encoding?: string
}

/** A row as the driver returns it: column name -> value. */
export type SqlRow = Record<string, unknown>

/**
 * A pool of connections to one database. Connections open lazily, at the first query, and a
 * broken one is dropped and replaced at the next query, so a pool created while the server is
 * down works once it is back.
 */
export interface SqlPool {
  /** `text` with `values` bound by the driver (`?` for MySQL, `$n` for PostgreSQL); resolves with the rows. */
  query: (text: string, values: ReadonlyArray<string | number | null>) => Promise<SqlRow[]>
  /**
   * Runs `queries` in order in one transaction on one connection (BEGIN ... COMMIT): all of
   * them are written or none (a failure rolls back and rejects with the first error). Each
   * is bounded by the query timeout. Data integration writes a batch with it.
   */
  transaction: (queries: ReadonlyArray<{ text: string, values: ReadonlyArray<string | number | null> }>) => Promise<void>
  /**
   * PostgreSQL only (absent for MySQL): {@link transaction}, on the one connection the pool
   * keeps for ordered writes, sent at once behind the transaction before it (pipelined: the
   * statements go out without waiting for the answers before them, and the server runs them in
   * the order sent). It commits only if `after` resolves true (the caller's write before it was
   * stored); otherwise it rolls back and rejects with {@link NotCommitted}. Without `after` it
   * commits as {@link transaction} does.
   */
  pipelined?: (queries: ReadonlyArray<{ text: string, values: ReadonlyArray<string | number | null> }>, after?: Promise<boolean>) => Promise<void>
  /** Whether the server answers `SELECT 1` within `timeoutMs`: the health probe. */
  probe: (timeoutMs?: number) => Promise<boolean>
  /** Closes every connection; later queries reject. */
  close: () => Promise<void>
}

/**
 * A pipelined transaction ({@link SqlPool.pipelined}) rolled back because the write before it
 * was not stored: nothing of it was written; it may be sent again.
 */
export class NotCommitted extends Error {
  constructor () {
    super('rolled back: the write sent before it was not stored')
    this.name = 'NotCommitted'
  }
}

/** Raised when a query takes longer than the pool's query timeout. */
export class SqlQueryTimeoutError extends Error {
  readonly code = 'STARLING_SQL_QUERY_TIMEOUT'
  constructor (ms: number) {
    super(`the database did not answer within ${ms} ms`)
    this.name = 'SqlQueryTimeoutError'
  }
}

/**
 * The `tls.connect` options of {@link SqlTlsOptions} for a server at `host` (plugins/kit/pools/tls.ts,
 * rule `check-name`: pg and mysql2 neither send SNI nor check a name of their own). Reads the
 * files (throws the fs error when one cannot be read).
 */
export function tlsConnectOptions (tls: SqlTlsOptions, host: string): ConnectionOptions {
  return buildTlsOptions(tls, { rule: 'check-name', host })
}

/** Rejects with {@link SqlQueryTimeoutError} when `promise` takes longer than `ms` (0: waits). */
export async function withTimeout<T> (promise: Promise<T>, ms: number): Promise<T> {
  if (ms <= 0) return await promise
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new SqlQueryTimeoutError(ms)), ms) })])
  } finally {
    clearTimeout(timer)
  }
}

/** What a driver's pool gives {@link wrapSqlPool}: one query and the end of every connection. */
export interface SqlDriverPool {
  /** Runs `text` with `values` bound by the driver; resolves with the rows. */
  query: (text: string, values: ReadonlyArray<string | number | null>) => Promise<SqlRow[]>
  /** Runs the queries in one transaction on one connection; rejects (rolled back) with the first error. */
  transaction: SqlPool['transaction']
  /** {@link SqlPool.pipelined}, when the driver can. */
  pipelined?: SqlPool['pipelined']
  /** Closes every connection. */
  end: () => Promise<void>
}

/**
 * The {@link SqlPool} of a driver's pool, what `mysql.ts` and `pgsql.ts` share: a closed pool
 * refuses queries (`the <product> pool is closed`), the probe is `SELECT 1` bounded by
 * `timeoutMs` (default: the connect timeout), and `close()` ends the driver's pool once.
 */
export function wrapSqlPool (product: string, opts: SqlPoolOptions, driver: SqlDriverPool): SqlPool {
  let closed = false
  const query = async (text: string, values: ReadonlyArray<string | number | null>): Promise<SqlRow[]> => {
    if (closed) throw new Error(`the ${product} pool is closed`)
    return await driver.query(text, values)
  }
  return {
    query,
    transaction: async (queries) => {
      if (closed) throw new Error(`the ${product} pool is closed`)
      await driver.transaction(queries)
    },
    pipelined: driver.pipelined === undefined
      ? undefined
      : async (queries, after) => {
        if (closed) throw new Error(`the ${product} pool is closed`)
        await driver.pipelined!(queries, after)
      },
    probe: async (timeoutMs = opts.connectTimeoutMs) => {
      try {
        await withTimeout(query('SELECT 1', []), timeoutMs)
        return true
      } catch {
        return false
      }
    },
    close: async () => {
      if (closed) return
      closed = true
      await driver.end()
    }
  }
}
