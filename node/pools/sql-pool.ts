/**
 * What the SQL pools (`mysql.ts`, `pgsql.ts`) share: the options a user of a pool gives (an
 * auth plugin, a data integration resource), the pool's interface, and the TLS options built
 * from EMQ X's `ssl.*` keys.
 */
import { readFileSync } from 'node:fs'
import { checkServerIdentity, type PeerCertificate, type SecureVersion } from 'node:tls'

/** TLS towards the database server; files are PEM paths already resolved by the caller. */
export interface SqlTlsOptions {
  /** CA certificates the server's certificate is checked against (with `verify`). */
  cacertfile?: string
  /** Client certificate (chain) and its key, for servers that ask for one. */
  certfile?: string
  keyfile?: string
  /** Check the server's certificate (EMQ X's `ssl.verify = true`, `verify_peer`). */
  verify: boolean
  /**
   * The name the server's certificate must carry (and the SNI sent): undefined checks the
   * host of the address; `'disable'` (EMQ X's word) skips the name check.
   */
  serverName?: string
  /** Allowed protocol versions (`tlsv1.2`, `tlsv1.3` ...); undefined: Node's defaults. */
  versions?: string[]
}

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
  /** Whether the server answers `SELECT 1` within `timeoutMs`: the health probe. */
  probe: (timeoutMs?: number) => Promise<boolean>
  /** Closes every connection; later queries reject. */
  close: () => Promise<void>
}

/** Raised when a query takes longer than the pool's query timeout. */
export class SqlQueryTimeoutError extends Error {
  readonly code = 'STARLING_SQL_QUERY_TIMEOUT'
  constructor (ms: number) {
    super(`the database did not answer within ${ms} ms`)
    this.name = 'SqlQueryTimeoutError'
  }
}

const VERSIONS: Readonly<Record<string, SecureVersion>> = {
  tlsv1: 'TLSv1', 'tlsv1.1': 'TLSv1.1', 'tlsv1.2': 'TLSv1.2', 'tlsv1.3': 'TLSv1.3'
}

/** The `tls.connect` options of {@link SqlTlsOptions}. Reads the files (throws when one cannot be read). */
export function tlsConnectOptions (tls: SqlTlsOptions, host: string): Record<string, unknown> {
  const out: Record<string, unknown> = { rejectUnauthorized: tls.verify }
  if (tls.cacertfile !== undefined) out.ca = readFileSync(tls.cacertfile, 'utf8')
  if (tls.certfile !== undefined) out.cert = readFileSync(tls.certfile, 'utf8')
  if (tls.keyfile !== undefined) out.key = readFileSync(tls.keyfile, 'utf8')
  if (tls.serverName === 'disable') {
    out.checkServerIdentity = () => undefined
  } else {
    const name = tls.serverName ?? host
    // SNI is for names only: an IP address is checked against the certificate's IP SANs
    if (!/^[\d.]+$|:/.test(name)) out.servername = name
    if (tls.serverName !== undefined) {
      out.checkServerIdentity = (_host: string, cert: PeerCertificate) => checkServerIdentity(name, cert)
    }
  }
  if (tls.versions !== undefined && tls.versions.length > 0) {
    const known = tls.versions.map((v) => VERSIONS[v.toLowerCase()])
    const order = Object.values(VERSIONS)
    const idx = known.map((v) => order.indexOf(v)).sort((a, b) => a - b)
    out.minVersion = order[idx[0]]
    out.maxVersion = order[idx[idx.length - 1]]
  }
  return out
}

/** Whether `v` is a TLS version word EMQ X's `ssl.tls_versions` takes. */
export function isTlsVersion (v: string): boolean {
  return VERSIONS[v.toLowerCase()] !== undefined
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
