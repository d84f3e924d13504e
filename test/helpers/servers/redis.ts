/**
 * A real Redis (Debian package `redis-server`) for tests, on 127.0.0.1:<free port>, with an
 * optional password (`requirepass`). Every write is appended to an fsynced AOF in the
 * temporary directory, so a restart, even after SIGKILL, finds what the test seeded.
 */
import { Redis } from 'ioredis'
import { SERVER_HOST, spawnServer, type ServerProcess } from './core.js'
import { findBinary } from './system.js'

const PACKAGE = 'redis-server'

/** redis-server; throws {@link MissingServerError} naming `redis-server`. */
export function redisBinary (): string {
  return findBinary(['redis-server', '/usr/bin/redis-server'], PACKAGE)
}

/** Options of {@link startRedis}. */
export interface RedisOptions {
  /** `requirepass` (default none: no AUTH needed). */
  password?: string
}

/** A running Redis. */
export interface RedisServer extends ServerProcess {
  /** The `requirepass`, if one was set. */
  readonly password: string | undefined
  /** `redis://[:password@]127.0.0.1:port` */
  readonly url: string
  /** A connected ioredis client; the caller ends it (`quit()` or `disconnect()`). */
  connect: () => Promise<Redis>
  /** Runs one command (`command('HSET', 'mqtt_user:u1', 'password', 'p')`) and returns its reply. */
  command: (name: string, ...args: Array<string | number | Buffer>) => Promise<unknown>
}

/** Starts Redis; see {@link RedisServer}. */
export async function startRedis (opts: RedisOptions = {}): Promise<RedisServer> {
  const bin = redisBinary()
  const password = opts.password
  const client = async (port: number, timeoutMs = 10_000): Promise<Redis> => {
    // no reconnection and no offline queue: a stopped server is an error now, not a wait
    const c = new Redis({ host: SERVER_HOST, port, password, lazyConnect: true, connectTimeout: timeoutMs, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false })
    c.on('error', () => {}) // reported by the command that fails; unhandled, ioredis would print it
    try {
      await c.connect()
    } catch (err) {
      // a refused connection has ended already; disconnect() would then arm a 2 s timer
      // (disconnectTimeout) on the closed stream that nothing clears, holding the process open
      if (c.status !== 'end') c.disconnect()
      throw err
    }
    return c
  }
  const server = await spawnServer({
    name: 'Redis',
    debianPackage: PACKAGE,
    command: (ctx) => [bin, '--port', String(ctx.port), '--bind', ctx.host, '--dir', ctx.dir,
      '--daemonize', 'no', '--protected-mode', 'no', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always',
      ...(password !== undefined ? ['--requirepass', password] : [])],
    probe: async (ctx, timeoutMs) => {
      const c = await client(ctx.port, timeoutMs)
      try {
        await c.ping() // -LOADING while the AOF is read back after a restart
      } finally {
        c.disconnect()
      }
    }
  })
  const auth = password !== undefined ? `:${encodeURIComponent(password)}@` : ''
  return Object.assign(server, {
    password,
    url: `redis://${auth}${server.host}:${server.port}`,
    connect: async () => await client(server.port),
    command: async (name: string, ...args: Array<string | number | Buffer>) => {
      const c = await client(server.port)
      try {
        return await c.call(name, ...args)
      } finally {
        c.disconnect()
      }
    }
  })
}
