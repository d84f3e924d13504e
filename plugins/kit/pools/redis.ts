/**
 * A Redis client pool from an options object, for the auth backend (`svc_auth_redis`) and
 * later the data integrations: a single server, a sentinel group (`type` `sentinel`, the
 * master's name, the sentinels' addresses) or a cluster (`type` `cluster`, its seed nodes),
 * with a database, a password, TLS and reconnection.
 *
 * What `pool` means: ioredis pipelines every command of one client over one connection, so
 * one connection already serves many concurrent requests. A pool of `n` is `n` independent
 * clients (each its own connection, or its own cluster view), used in turn; a slow reply on
 * one connection then holds back only the requests queued on it. EMQ X's eredis pool had the
 * same meaning (one connection per worker).
 *
 * Invariants:
 * - Creating the pool never waits for the server: each client connects in the background and
 *   reconnects after a loss (backoff 100 ms per attempt, at most 2 s), forever until closed.
 * - A down server never makes a command wait: commands are not queued while a client is
 *   disconnected (`enableOfflineQueue` false). A command picks a connected client; when none
 *   is, it waits (bounded by `commandTimeoutMs`) for a client that is still coming up and
 *   otherwise fails at once. Every sent command is bounded by `commandTimeoutMs` as well.
 * - "Still coming up" is a client's connection attempt in progress (status `wait`,
 *   `connecting`, `connect`: the wait ends at its `ready`, `error` or `close`), or a client
 *   that was never ready and has reported no error (the wait ends at its `ready`, `error` or
 *   `end`, whatever its status). The second is the new pool's first calls: ioredis's Cluster
 *   client sends its ready check (`CLUSTER INFO`) to a node whose connection may still be
 *   opening, which fails without an error event, and then retries from `reconnecting`
 *   (100 ms later); without the wait a resource's creation probe or a first auth query would
 *   be refused. A client that was ready and dropped, or that reported an error before its
 *   first ready (a server refusing connections), is not waited for outside an attempt: a
 *   down backend fails fast, which the outage alarms (`<plugin>_unreachable`) and the
 *   buffered sinks' retries count on.
 * - RESP2 (`protocol: 2`): ioredis 6 opens with `HELLO 3`, which a password-protected Redis
 *   refuses before AUTH.
 * - `close()` ends every client (QUIT when connected); no timer outlives it by more than
 *   100 ms (`disconnectTimeout`: ioredis's 2 s default would hold the process open after a
 *   client that was reconnecting is disconnected), and a client whose status is `end` is
 *   not disconnected again.
 */
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis'
import type { ConnectionOptions } from 'node:tls'
import type { RedisAddress } from './servers.js'

export { parseRedisServers, type RedisAddress } from './servers.js'

/** How to reach Redis. */
export interface RedisPoolOptions {
  /** `single` (default), `sentinel` or `cluster`. */
  type?: 'single' | 'sentinel' | 'cluster'
  /** The server (`single`), the sentinels (`sentinel`) or the cluster's seed nodes (`cluster`). */
  servers: readonly RedisAddress[]
  /** The master's name a sentinel knows (`sentinel` only), e.g. `mymaster`. */
  sentinel?: string
  /** Database number (`single` and `sentinel`; a cluster has only database 0). */
  database?: number
  /** AUTH password; empty or undefined: none. Also used for the sentinels. */
  password?: string
  /** Number of clients used in turn (see the module comment); default 1. */
  pool?: number
  /** Longest wait for one command's reply, and for a connection attempt in progress (default 5000 ms). */
  commandTimeoutMs?: number
  /** Longest wait for a TCP/TLS connection (default 5000 ms). */
  connectTimeoutMs?: number
  /** TLS options (`ca`, `cert`, `key`, `rejectUnauthorized`, `servername`); undefined: plain TCP. */
  tls?: ConnectionOptions
  /** Called with connection errors (once per failing attempt), for the caller's log. */
  onError?: (err: Error) => void
}

/** A pool of Redis clients. */
export interface RedisPool {
  /** Sends one command (`['HMGET', 'mqtt_user:u', 'password']`) and resolves with its reply. */
  call: (argv: readonly string[]) => Promise<unknown>
  /**
   * Sends `commands` on one client, in order, and resolves with each one's outcome (an error
   * reply or a connection error in its place) once all are answered. A single server or a
   * sentinel's master gets them as one pipeline; a cluster gets each on its slot's node
   * (ioredis pipelines only keys of one slot), in order on each node's connection.
   */
  batch: (commands: ReadonlyArray<readonly string[]>) => Promise<Array<[Error | null, unknown]>>
  /** Whether a client is connected and ready now. */
  ready: () => boolean
  /** Ends every client. */
  close: () => Promise<void>
}

/** Raised when no client is connected: the command was not sent. */
export class RedisUnavailableError extends Error {
  readonly code = 'STARLING_REDIS_UNAVAILABLE'
  constructor (detail: string) {
    super(`Redis is not connected: ${detail}`)
    this.name = 'RedisUnavailableError'
  }
}

type Client = Redis | Cluster

/** The ioredis options of one client (shared by single, sentinel and cluster nodes). */
export function redisClientOptions (opts: RedisPoolOptions): RedisOptions {
  const type = opts.type ?? 'single'
  const password = opts.password === '' ? undefined : opts.password
  const base: RedisOptions = {
    password,
    db: type === 'cluster' ? 0 : (opts.database ?? 0),
    protocol: 2,
    connectTimeout: opts.connectTimeoutMs ?? 5000,
    commandTimeout: opts.commandTimeoutMs ?? 5000,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => Math.min(times * 100, 2000),
    lazyConnect: false,
    // the wait before a stream that was ended is destroyed; on an already closed stream
    // (a client reconnecting) nothing clears it, so keep it short
    disconnectTimeout: 100,
    tls: opts.tls
  }
  if (type === 'sentinel') {
    return {
      ...base,
      name: opts.sentinel ?? 'mymaster',
      sentinels: opts.servers.map((s) => ({ host: s.host, port: s.port })),
      sentinelPassword: password,
      sentinelRetryStrategy: (times: number) => Math.min(times * 100, 2000),
      enableTLSForSentinelMode: opts.tls !== undefined,
      sentinelTLS: opts.tls
    }
  }
  const server = opts.servers[0]
  return { ...base, host: server.host, port: server.port }
}

/** Creates the pool; it connects in the background. */
export function createRedisPool (opts: RedisPoolOptions): RedisPool {
  if (opts.servers.length === 0) throw new Error('no Redis server given')
  const size = Math.max(1, opts.pool ?? 1)
  const waitMs = opts.commandTimeoutMs ?? 5000
  const clients: Client[] = []
  /** The clients that have been ready, or reported an error, at least once: not "still coming up" once idle. */
  const settled = new Set<Client>()
  for (let i = 0; i < size; i++) {
    const client = newClient(opts)
    let reported = false
    client.on('error', (err: Error) => {
      settled.add(client)
      if (!reported) opts.onError?.(err)
      reported = true
    })
    client.on('ready', () => {
      settled.add(client)
      reported = false
    })
    clients.push(client)
  }
  let next = 0
  let closed = false

  const pick = (): Client | undefined => {
    for (let i = 0; i < clients.length; i++) {
      const c = clients[(next + i) % clients.length]
      if (c.status === 'ready') {
        next = (next + i + 1) % clients.length
        return c
      }
    }
    return undefined
  }

  /** Waits for a client still coming up (the module comment) to become ready or give up, bounded. */
  const awaitAttempt = async (): Promise<Client | undefined> => {
    const offs: Array<() => void> = []
    let timer: NodeJS.Timeout | undefined
    try {
      await new Promise<void>((resolve) => {
        let pending = 0
        const ready = (): void => resolve()
        for (const c of clients) {
          if (c.status === 'end') continue
          // never ready, no error: coming up through its first attempts (an ioredis Cluster
          // whose ready check failed closes and retries: its `close` does not end the wait)
          const first = !settled.has(c)
          if (!first && c.status !== 'connecting' && c.status !== 'connect' && c.status !== 'wait') continue
          const last = first ? 'end' : 'close'
          // this client gave up: the wait ends when every awaited client did (or one is ready)
          const gaveUp = (): void => {
            c.off('ready', ready).off('error', gaveUp).off(last, gaveUp)
            if (--pending === 0) resolve()
          }
          c.once('ready', ready).once('error', gaveUp).once(last, gaveUp)
          offs.push(() => { c.off('ready', ready).off('error', gaveUp).off(last, gaveUp) })
          pending++
        }
        if (pending === 0) resolve()
        else timer = setTimeout(resolve, waitMs)
      })
    } finally {
      clearTimeout(timer)
      for (const off of offs) off()
    }
    return pick()
  }

  return {
    call: async (argv) => {
      if (closed) throw new RedisUnavailableError('the pool is closed')
      const client = pick() ?? await awaitAttempt()
      if (client === undefined) throw new RedisUnavailableError(`no connection to ${describe(opts)} (reconnecting)`)
      const [name, ...args] = argv
      return await client.call(name, ...args)
    },
    batch: async (commands) => {
      if (closed) throw new RedisUnavailableError('the pool is closed')
      const client = pick() ?? await awaitAttempt()
      if (client === undefined) throw new RedisUnavailableError(`no connection to ${describe(opts)} (reconnecting)`)
      if (client instanceof Redis) {
        // call(): any command by name (pipeline([[name, ...]]) knows only ioredis's own methods)
        const pipeline = client.pipeline()
        for (const [name, ...args] of commands) pipeline.call(name, ...args)
        const replies = await pipeline.exec()
        if (replies === null) throw new RedisUnavailableError(`the pipeline to ${describe(opts)} was not run`)
        return replies
      }
      // every call written now, in order; each settles on its own
      return await Promise.all(commands.map(async ([name, ...args]) => await client.call(name, ...args).then(
        (reply): [null, unknown] => [null, reply],
        (err: Error): [Error, null] => [err, null])))
    },
    ready: () => clients.some((c) => c.status === 'ready'),
    close: async () => {
      if (closed) return
      closed = true
      await Promise.all(clients.map(async (c) => {
        if (c.status === 'end') return
        if (c.status === 'ready') {
          await c.quit().catch(() => { c.disconnect() })
        } else {
          c.disconnect()
        }
      }))
    }
  }
}

function newClient (opts: RedisPoolOptions): Client {
  if ((opts.type ?? 'single') !== 'cluster') return new Redis(redisClientOptions(opts))
  const nodes: ClusterNode[] = opts.servers.map((s) => ({ host: s.host, port: s.port }))
  const { host: _h, port: _p, db: _d, retryStrategy: _r, enableOfflineQueue: _e, ...redisOptions } = redisClientOptions({ ...opts, type: 'single' })
  return new Cluster(nodes, {
    redisOptions,
    enableOfflineQueue: false,
    clusterRetryStrategy: (times: number) => Math.min(times * 100, 2000),
    maxRedirections: 16,
    slotsRefreshTimeout: opts.connectTimeoutMs ?? 5000
  })
}

function describe (opts: RedisPoolOptions): string {
  const list = opts.servers.map((s) => `${s.host}:${s.port}`).join(',')
  const type = opts.type ?? 'single'
  return type === 'single' ? list : `${type} ${type === 'sentinel' ? `${opts.sentinel ?? 'mymaster'} via ` : ''}${list}`
}
