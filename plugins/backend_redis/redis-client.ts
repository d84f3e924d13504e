/**
 * What `svc_backend_redis` writes and how: one Redis command per row, compiled from the
 * action's `cmd` template (node/template/argv.ts: split into arguments first, then each filled,
 * so a value never adds or splits arguments), and a {@link DataClient} sending a batch's
 * commands through a pool from plugins/kit/pools/redis.ts (one pipeline on a single server or
 * a sentinel's master; each command on its slot's node in a cluster).
 *
 * Invariant: Redis has no all-or-none batch (MULTI/EXEC runs the other commands of a
 * transaction when one fails), so a batch is written command by command in order: an error
 * reply refuses that row for good and names it ({@link WriteRefused.rows}); the others are
 * written. A connection error (or a reply saying the server cannot take writes now: LOADING,
 * READONLY, CLUSTERDOWN ...) makes the whole batch be written again: at least once.
 */
import { isAbsolute, resolve } from 'node:path'
import type { ConnectionOptions } from 'node:tls'
import { WrongTypeError } from '../../node/errors.js'
import { configRoot } from '../../node/config/index.js'
import { buildTlsOptions } from '../../node/tls-options.js'
import { compileArgv, compileText, renderText, type ArgvTemplate, type TextTemplate } from '../../node/template/index.js'
import { resourceTls } from '../../rules/resource-tls.js'
import type { ResourceComponents } from '../../rules/types.js'
import { parseRedisServers, type RedisAddress } from '../kit/pools/servers.js'
import type { RedisPool, RedisPoolOptions } from '../kit/pools/redis.js'
import { WriteRefused, type DataClient } from '../kit/data/index.js'

/** One buffered Redis write: its commands (one per row), each an argv. */
export interface RedisWrite {
  cmds: string[][]
}

/** The three EMQ X 4.4 topologies. */
export type RedisKind = 'single' | 'sentinel' | 'cluster'

/** How long one command may take, in ms. */
const COMMAND_TIMEOUT_MS = 15_000
/** How long a new connection may take, in ms. */
const CONNECT_TIMEOUT_MS = 5000
/** How long the health check's PING may take, in ms. */
const PING_TIMEOUT_MS = 2000

/**
 * Error replies that say the server cannot take writes now, not that the command is wrong:
 * the batch is written again. `-LOADING` (reading its data back), `-BUSY` (a script),
 * `-MASTERDOWN` / `-READONLY` (a replica, during a failover), `-CLUSTERDOWN` / `-TRYAGAIN`,
 * `-NOAUTH` / `-WRONGPASS` (credentials), `-OOM` (maxmemory), `-MISCONF` (cannot persist).
 */
const TRANSIENT_REPLIES = /^(LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|NOAUTH|WRONGPASS|OOM|MISCONF|NOREPLICAS|MOVED|ASK)\b/

/** Whether `err` is about the connection or the moment (written again) rather than the command. */
export function redisTransient (err: Error): boolean {
  if (err.name !== 'ReplyError') return true
  return TRANSIENT_REPLIES.test(err.message)
}

/** The `cmd` param compiled: one template word per argument, its placeholders found once. */
export type RedisCommand = ArgvTemplate<TextTemplate>

/** Compiles `cmd`; throws a 108 for an empty one or a command name that is a placeholder. */
export function compileRedisCommand (cmd: string): RedisCommand {
  const template = compileArgv(cmd, compileText)
  if (template === undefined) throw new WrongTypeError('parameter cmd cannot be used: it is empty; give a Redis command such as HSET msgs:${clientid} ${id} ${payload}')
  if (template.args[0].text.includes('${')) throw new WrongTypeError(`parameter cmd cannot be used: the command name ${JSON.stringify(template.args[0].text)} holds a placeholder; a message's data may fill arguments, never choose the command`)
  return template
}

/** The row of one run: the command's argv, each argument filled on its own. */
export function redisRow (command: RedisCommand, selected: Record<string, unknown>): RedisWrite {
  const words = command.args
  const argv = new Array<string>(words.length)
  for (let i = 0; i < words.length; i++) argv[i] = renderText(words[i], selected)
  return { cmds: [argv] }
}

/** The servers of a config (`server` for single, `servers` otherwise). */
export function redisServersOf (kind: RedisKind, config: Record<string, unknown>): RedisAddress[] {
  const key = kind === 'single' ? 'server' : 'servers'
  const value = String(config[key] ?? '')
  let servers: RedisAddress[]
  try {
    servers = parseRedisServers(value, kind === 'sentinel' ? 26379 : 6379)
  } catch (err) {
    throw new WrongTypeError(`resource type backend_redis_${kind} config: parameter ${key} must be ${kind === 'single' ? 'host:port' : 'host:port[,host:port...]'}, got ${JSON.stringify(value)} (${(err as Error).message})`)
  }
  if (kind === 'single' && servers.length !== 1) throw new WrongTypeError(`resource type backend_redis_single config: parameter server must be one host:port, got ${JSON.stringify(value)}`)
  return servers
}

/** Checks (108) a resource config of `kind` beyond its param specs. */
export function checkRedisConfig (kind: RedisKind, config: Record<string, unknown>): void {
  redisServersOf(kind, config)
  if (kind !== 'cluster') {
    const db = Number(config.database)
    if (!Number.isInteger(db) || db < 0) throw new WrongTypeError(`resource type backend_redis_${kind} config: parameter database must be a whole number of at least 0, got ${JSON.stringify(config.database)}`)
  }
  if (kind === 'sentinel' && String(config.sentinel ?? '').trim() === '') {
    throw new WrongTypeError('resource type backend_redis_sentinel config: parameter sentinel must name the master the sentinels watch')
  }
  resourceTls(config)
}

/** The pool options of a resource config; relative TLS files are read from the configuration's root. */
export function redisPoolOptionsOf (kind: RedisKind, config: Record<string, unknown>, components: Pick<ResourceComponents, 'config'>): RedisPoolOptions {
  const servers = redisServersOf(kind, config)
  const settings = resourceTls(config)
  let tls: ConnectionOptions | undefined
  if (settings !== undefined) {
    const root = configRoot(components.config)
    const file = (path: string | undefined): string | undefined => path === undefined ? undefined : isAbsolute(path) ? path : resolve(root, path)
    // one host to name only for a single server: sentinels and cluster nodes are checked each by its own host
    tls = buildTlsOptions({ ...settings, cacertfile: file(settings.cacertfile), certfile: file(settings.certfile), keyfile: file(settings.keyfile) },
      { rule: 'check-name', host: kind === 'single' ? servers[0].host : undefined })
  }
  return {
    type: kind,
    servers,
    sentinel: kind === 'sentinel' ? String(config.sentinel) : undefined,
    database: kind === 'cluster' ? 0 : Number(config.database ?? 0),
    password: String(config.password ?? ''),
    pool: Number(config.pool_size ?? 8),
    commandTimeoutMs: COMMAND_TIMEOUT_MS,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    tls
  }
}

/** `redis 127.0.0.1:6379`, `redis sentinel mymaster via ...`, `redis cluster ...`. */
export function redisAddress (kind: RedisKind, opts: RedisPoolOptions): string {
  const list = opts.servers.map((s) => `${s.host}:${s.port}`).join(',')
  return kind === 'single' ? `redis ${list}` : kind === 'sentinel' ? `redis sentinel ${opts.sentinel ?? ''} via ${list}` : `redis cluster ${list}`
}

/** A {@link DataClient} writing {@link RedisWrite}s through a pool made by `createPool` (its driver loaded by the caller). */
export function redisDataClient (address: string, createPool: (onError: (err: Error) => void) => RedisPool): DataClient<RedisWrite> {
  let lastError: string | undefined
  const pool = createPool((err) => { lastError = err.message })
  const ping = async (timeoutMs: number): Promise<void> => {
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        pool.call(['PING']),
        new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`no PING answer within ${timeoutMs} ms`)), timeoutMs) })
      ])
    } finally {
      clearTimeout(timer)
    }
  }
  return {
    address,
    async connect () {
      try {
        await ping(CONNECT_TIMEOUT_MS)
      } catch (err) {
        const why = (err as Error).message
        throw new Error(lastError === undefined || why.includes(lastError) ? why : `${why}: ${lastError}`, { cause: err })
      }
    },
    async alive () {
      if (!pool.ready()) return false
      try {
        await ping(PING_TIMEOUT_MS)
        return true
      } catch {
        return false
      }
    },
    async write (writes) {
      const commands = writes.flatMap((w) => w.cmds)
      const replies = await pool.batch(commands)
      const refused: number[] = []
      let first: Error | undefined
      for (const [i, [err]] of replies.entries()) {
        if (err === null) continue
        if (redisTransient(err)) throw err
        refused.push(i)
        first ??= err
      }
      if (first !== undefined) throw new WriteRefused(`${first.message} (${refused.length} of ${commands.length} commands)`, { cause: first, rows: refused })
    },
    merge: (rows) => ({ cmds: rows.flatMap((r) => r.cmds) }),
    split: (w) => w.cmds.map((cmd) => ({ cmds: [cmd] })),
    rows: (w) => w.cmds.length,
    close: async () => { await pool.close() }
  }
}
