/**
 * A real Redis Cluster (Debian package `redis-server`, whose `redis-tools` dependency brings
 * `redis-cli`) for tests: `nodes` (default 3) redis-server processes with
 * `cluster-enabled yes`, each on its own free ports (client port and cluster bus port, given
 * with `cluster-port`: port + 10000, its default, is no port the harness checked) in its own
 * temporary directory, joined by `redis-cli --cluster create ... --cluster-replicas 0`, and
 * returned once every node reports `cluster_state:ok`.
 *
 * Every node is a master owning a third of the slots, without replicas: a node killed takes
 * its slots with it until it is restarted (same ports, same `nodes.conf` and AOF, so it
 * rejoins with its slots and data). With `requireFullCoverage` false (the default here, not
 * Redis's) the other nodes go on serving their slots meanwhile, so a test sees commands for
 * the dead node's keys fail and the others succeed.
 */
import { Cluster, Redis } from 'ioredis'
import { SERVER_HOST, spawnServer, type ServerProcess } from './core.js'
import { redisBinary } from './redis.js'
import { findBinary, runCommand } from './system.js'

const PACKAGE = 'redis-server'

/** redis-cli (package `redis-tools`, installed with `redis-server`). */
export function redisCliBinary (): string {
  return findBinary(['redis-cli', '/usr/bin/redis-cli'], 'redis-tools')
}

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /** How many masters (default 3, the least `redis-cli --cluster create` takes). */
  nodes?: number
  /** `requirepass` and `masterauth` of every node (default none). */
  password?: string
  /** `cluster-require-full-coverage` (default false: the live nodes serve their slots while one is down). */
  requireFullCoverage?: boolean
  /** `cluster-node-timeout`, after which an unreachable node is marked failed (default 1000 ms). */
  nodeTimeoutMs?: number
}

/** A running Redis Cluster. */
export interface RedisCluster {
  /** The nodes, in the order their slots were assigned (node 0 has the lowest slots); each can be stopped, killed and restarted. */
  readonly nodes: readonly ServerProcess[]
  readonly host: string
  /** Every node's `host:port`, comma-separated: the seed list a cluster client (`auth.redis.server`) takes. */
  readonly seeds: string
  readonly password: string | undefined
  /** How long the start took (ms): processes, `--cluster create` and the wait for `cluster_state:ok`. */
  readonly startedInMs: number
  /** A connected ioredis Cluster client; the caller ends it (`quit()` or `disconnect()`). */
  connect: () => Promise<Cluster>
  /** Runs one command through a cluster client (routed by its key) and returns its reply. */
  command: (name: string, ...args: Array<string | number | Buffer>) => Promise<unknown>
  /** The slot of `key` (`CLUSTER KEYSLOT`, asked of a live node). */
  slotOf: (key: string) => Promise<number>
  /** The index in {@link nodes} of the node that owns `key`'s slot. */
  nodeOf: (key: string) => Promise<number>
  /** Waits until every running node reports `cluster_state:ok` and knows every running node as connected. */
  waitHealthy: (timeoutMs?: number) => Promise<void>
  /** Stops every node and removes their directories. */
  close: () => Promise<void>
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/** Starts a Redis Cluster; see {@link RedisCluster}. Every node runs as the test process's user. */
export async function startRedisCluster (opts: RedisClusterOptions = {}): Promise<RedisCluster> {
  const bin = redisBinary()
  const cli = redisCliBinary()
  const count = opts.nodes ?? 3
  if (count < 3) throw new Error('startRedisCluster: a cluster needs at least 3 masters')
  const password = opts.password
  const began = Date.now()
  /** One node's client, no reconnection, no offline queue: a stopped node is an error now. */
  const nodeClient = async (port: number, timeoutMs = 5000): Promise<Redis> => {
    const c = new Redis({ host: SERVER_HOST, port, password, lazyConnect: true, connectTimeout: timeoutMs, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false, protocol: 2 })
    c.on('error', () => {})
    try {
      await c.connect()
    } catch (err) {
      if (c.status !== 'end') c.disconnect()
      throw err
    }
    return c
  }
  const onNode = async <T>(port: number, fn: (c: Redis) => Promise<T>, timeoutMs?: number): Promise<T> => {
    const c = await nodeClient(port, timeoutMs)
    try {
      return await fn(c)
    } finally {
      c.disconnect()
    }
  }
  const started: ServerProcess[] = []
  try {
    for (let i = 0; i < count; i++) {
      started.push(await spawnServer({
        name: 'Redis cluster node',
        debianPackage: PACKAGE,
        portCount: 2,
        command: (ctx) => [bin, '--port', String(ctx.ports[0]), '--cluster-port', String(ctx.ports[1]), '--bind', ctx.host,
          '--dir', ctx.dir, '--daemonize', 'no', '--protected-mode', 'no', '--save', '',
          '--appendonly', 'yes', '--appendfsync', 'always',
          '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
          '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 1000),
          '--cluster-require-full-coverage', opts.requireFullCoverage === true ? 'yes' : 'no',
          ...(password !== undefined ? ['--requirepass', password, '--masterauth', password] : [])],
        probe: async (ctx, timeoutMs) => { await onNode(ctx.port, async (c) => await c.ping(), timeoutMs) }
      }))
    }
    await runCommand([cli, ...(password !== undefined ? ['-a', password, '--no-auth-warning'] : []),
      '--cluster', 'create', ...started.map((s) => `${s.host}:${s.port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeoutMs: 30_000 })
  } catch (err) {
    await Promise.all(started.map(async (s) => await s.close()))
    throw err
  }

  const waitHealthy = async (timeoutMs = 15_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs
    let last = ''
    for (;;) {
      const live = started.filter((s) => s.pid !== undefined)
      try {
        const states = await Promise.all(live.map(async (s) => await onNode(s.port, async (c) => {
          const info = String(await c.call('CLUSTER', 'INFO'))
          const nodes = String(await c.call('CLUSTER', 'NODES'))
          return { port: s.port, ok: /cluster_state:ok/.test(info), nodes }
        })))
        const bad = states.find((st) => !st.ok ||
          // every live node is seen connected, not failing, by every live node
          live.some((other) => !st.nodes.split('\n').some((line) => line.includes(`:${other.port}@`) && / connected/.test(line) && !/fail/.test(line))))
        if (bad === undefined) return
        last = `node ${bad.port}: ${bad.nodes.trim()}`
      } catch (err) {
        last = (err as Error).message
      }
      if (Date.now() > deadline) throw new Error(`Redis cluster not healthy within ${timeoutMs} ms: ${last}`)
      await sleep(50)
    }
  }
  try {
    await waitHealthy()
  } catch (err) {
    await Promise.all(started.map(async (s) => await s.close()))
    throw err
  }

  // slot ranges at creation, by node: without replicas no failover moves them
  const owners: Array<{ from: number, to: number, node: number }> = []
  const slots = await onNode(started[0].port, async (c) => await c.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>
  for (const [from, to, [, port]] of slots) owners.push({ from, to, node: started.findIndex((s) => s.port === Number(port)) })

  const connect = async (): Promise<Cluster> => {
    const c = new Cluster(started.map((s) => ({ host: s.host, port: s.port })), {
      redisOptions: { password, protocol: 2, connectTimeout: 5000 },
      lazyConnect: true,
      enableOfflineQueue: true,
      clusterRetryStrategy: () => null
    })
    c.on('error', () => {})
    await c.connect()
    return c
  }
  const slotOf = async (key: string): Promise<number> => {
    for (const s of started.filter((n) => n.pid !== undefined)) {
      try {
        return Number(await onNode(s.port, async (c) => await c.call('CLUSTER', 'KEYSLOT', key)))
      } catch { /* the next live node */ }
    }
    throw new Error('no live Redis cluster node to ask CLUSTER KEYSLOT')
  }
  return {
    nodes: started,
    host: SERVER_HOST,
    seeds: started.map((s) => `${s.host}:${s.port}`).join(','),
    password,
    startedInMs: Date.now() - began,
    connect,
    command: async (name, ...args) => {
      const c = await connect()
      try {
        return await c.call(name, ...args)
      } finally {
        c.disconnect()
      }
    },
    slotOf,
    nodeOf: async (key) => {
      const slot = await slotOf(key)
      const owner = owners.find((o) => slot >= o.from && slot <= o.to)
      if (owner === undefined) throw new Error(`no node owns slot ${slot}`)
      return owner.node
    },
    waitHealthy,
    close: async () => { await Promise.all(started.map(async (s) => await s.close())) }
  }
}
