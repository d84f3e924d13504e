/**
 * A MongoDB client from an options object, for the auth backend (`svc_auth_mongo`) and later
 * the data integrations: a single server, a replica set, a sharded cluster (mongos list) or
 * `unknown` (the driver discovers), with credentials, TLS, pool size and read/write modes.
 *
 * Invariants:
 * - Creating the client never waits for the server: the driver connects at the first
 *   operation and reconnects on its own (its monitors poll every `heartbeatFrequencyMS`).
 * - A down server never makes an operation wait longer than `queryTimeoutMs` for a server
 *   (`serverSelectionTimeoutMS`), and a running query is bounded by it too (`maxTimeMS` is
 *   set by the caller per query, `socketTimeoutMS` here).
 * - `close()` closes every pooled connection and monitor.
 */
import { MongoClient, type MongoClientOptions, type ReadPreferenceMode, type W } from 'mongodb'
import type { ConnectionOptions } from 'node:tls'

/** One server address. */
export interface MongoAddress {
  host: string
  port: number
}

/** How to reach MongoDB. */
export interface MongoPoolOptions {
  /** `single` (a direct connection), `rs` (replica set `rsSetName`), `sharded` (mongos list) or `unknown` (discover). */
  type: 'single' | 'unknown' | 'sharded' | 'rs'
  servers: readonly MongoAddress[]
  /** Look the hosts up as a DNS SRV record (`mongodb+srv://`): one host, no port. */
  srvRecord?: boolean
  /** Replica set name (`rs`). */
  rsSetName?: string
  username?: string
  password?: string
  /** Database that holds the user (default `admin`). */
  authSource?: string
  /** Connections per server (default 8). */
  pool?: number
  /** `safe`: writes acknowledged (w 1); `unsafe`: not (w 0). */
  wMode?: 'safe' | 'unsafe'
  /** `master`: read the primary; `slave_ok`: prefer secondaries. */
  rMode?: 'master' | 'slave_ok'
  queryTimeoutMs?: number
  connectTimeoutMs?: number
  heartbeatFrequencyMs?: number
  localThresholdMs?: number
  waitQueueTimeoutMs?: number
  tls?: ConnectionOptions
}

/** The connection string (hosts only: credentials and options go in the options object). */
export function mongoUrl (opts: MongoPoolOptions): string {
  if (opts.srvRecord === true) return `mongodb+srv://${opts.servers[0].host}/`
  return `mongodb://${opts.servers.map((s) => `${s.host.includes(':') ? `[${s.host}]` : s.host}:${s.port}`).join(',')}/`
}

/** The driver's options for `opts`. */
export function mongoClientOptions (opts: MongoPoolOptions): MongoClientOptions {
  const queryTimeout = opts.queryTimeoutMs ?? 5000
  const out: MongoClientOptions = {
    maxPoolSize: Math.max(1, opts.pool ?? 8),
    serverSelectionTimeoutMS: queryTimeout,
    connectTimeoutMS: opts.connectTimeoutMs ?? queryTimeout,
    socketTimeoutMS: queryTimeout * 2,
    readPreference: (opts.rMode === 'slave_ok' ? 'secondaryPreferred' : 'primary') as ReadPreferenceMode,
    writeConcern: { w: (opts.wMode === 'unsafe' ? 0 : 1) as W },
    appName: 'starling',
    retryReads: false
  }
  if (opts.type === 'single' && opts.srvRecord !== true) out.directConnection = true
  if (opts.type === 'rs' && opts.rsSetName !== undefined && opts.rsSetName !== '') out.replicaSet = opts.rsSetName
  if (opts.heartbeatFrequencyMs !== undefined) out.heartbeatFrequencyMS = opts.heartbeatFrequencyMs
  if (opts.localThresholdMs !== undefined) out.localThresholdMS = opts.localThresholdMs
  if (opts.waitQueueTimeoutMs !== undefined) out.waitQueueTimeoutMS = opts.waitQueueTimeoutMs
  if (opts.username !== undefined && opts.username !== '') {
    out.auth = { username: opts.username, password: opts.password ?? '' }
    out.authSource = opts.authSource === undefined || opts.authSource === '' ? 'admin' : opts.authSource
  }
  if (opts.tls !== undefined) {
    out.tls = true
    if (opts.tls.ca !== undefined) out.ca = opts.tls.ca as string | Buffer
    if (opts.tls.cert !== undefined) out.cert = opts.tls.cert as string | Buffer
    if (opts.tls.key !== undefined) out.key = opts.tls.key as string | Buffer
    if (opts.tls.rejectUnauthorized === false) out.tlsAllowInvalidCertificates = true
    if (opts.tls.servername !== undefined) out.servername = opts.tls.servername
  }
  return out
}

/** A MongoDB client that connects at its first operation. */
export function createMongoClient (opts: MongoPoolOptions): MongoClient {
  if (opts.servers.length === 0) throw new Error('no MongoDB server given')
  return new MongoClient(mongoUrl(opts), mongoClientOptions(opts))
}
