/**
 * `svc_backend_redis` (EMQ X 4.4 Enterprise's Redis integration): while loaded, the rule
 * engine has the resource types `backend_redis_single`, `backend_redis_sentinel` and
 * `backend_redis_cluster` and the action `data_to_redis`, which runs the action's `cmd`
 * template once per message (docs/integrations.md). The buffer, batching and retries are
 * plugins/kit/data/'s; the commands and the client are redis-client.ts's.
 */
import { VERSION } from '../../node/version.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataAction, dataResourceType } from '../kit/data/index.js'
import { resourceTlsParams } from '../../rules/resource-tls.js'
import type { ActionDefinition, ParamSpecs, ResourceTypeDefinition } from '../../rules/types.js'
import { checkRedisConfig, compileRedisCommand, redisAddress, redisDataClient, redisPoolOptionsOf, redisRow, type RedisKind, type RedisWrite } from './redis-client.js'

/** The plugin's name, and the `provider` of what it registers. */
export const REDIS_PLUGIN = 'svc_backend_redis'

const DATABASE: ParamSpecs[string] = { type: 'integer', required: false, default: 0, title: 'Redis Database', description: 'The database number the commands run in' }
const PASSWORD: ParamSpecs[string] = { type: 'string', required: false, default: '', secret: true, title: 'Redis Password', description: 'AUTH password; empty: none. Shown as ******' }
const TLS = resourceTlsParams({ sslSwitch: true, verifyDefault: false })

/** Each type's own params (EMQ X 4.4's names and defaults), before the kit's shared ones. */
const PARAMS: Record<RedisKind, ParamSpecs> = {
  single: {
    server: { type: 'string', required: true, default: '127.0.0.1:6379', title: 'Redis Server', description: 'The Redis server, host:port' },
    database: DATABASE,
    password: PASSWORD,
    ...TLS
  },
  sentinel: {
    servers: { type: 'string', required: true, default: '127.0.0.1:26379', title: 'Redis Sentinel Servers', description: 'The sentinels, host:port, comma separated (port 26379 when left out)' },
    sentinel: { type: 'string', required: true, default: 'mymaster', title: 'Sentinel Name', description: 'The name of the master the sentinels watch; commands go to its current master' },
    database: DATABASE,
    password: PASSWORD,
    ...TLS
  },
  cluster: {
    servers: { type: 'string', required: true, default: '127.0.0.1:6379', title: 'Redis Cluster Servers', description: 'Some nodes of the cluster, host:port, comma separated; the others are learnt from them' },
    password: PASSWORD,
    ...TLS
  }
}

const TITLES: Record<RedisKind, [string, string]> = {
  single: ['Redis Single Mode', 'One Redis server: rules run commands on it (data_to_redis), buffered while it is away'],
  sentinel: ['Redis Sentinel Mode', 'Redis with sentinels: rules run commands on the current master (data_to_redis), buffered while none answers'],
  cluster: ['Redis Cluster Mode', 'A Redis Cluster: rules run commands on the node of each key\'s slot (data_to_redis), buffered while the cluster is away']
}

function redisResourceType (kind: RedisKind): ResourceTypeDefinition {
  const name = `backend_redis_${kind}`
  return dataResourceType<RedisWrite>({
    name,
    provider: REDIS_PLUGIN,
    title: TITLES[kind][0],
    description: TITLES[kind][1],
    params: PARAMS[kind],
    // the cluster client follows the cluster by itself: EMQ X 4.4 has no auto_reconnect for it
    without: kind === 'cluster' ? ['auto_reconnect'] : [],
    checkConfig: (config) => { checkRedisConfig(kind, config) },
    async client (config, components) {
      const opts = redisPoolOptionsOf(kind, config, components)
      // ioredis is loaded at the first resource, not by every node (plugins/kit/pools/index.ts)
      const { createRedisPool } = await import('../kit/pools/redis.js')
      return redisDataClient(redisAddress(kind, opts), (onError) => createRedisPool({ ...opts, onError }))
    }
  })
}

/** `backend_redis_single`. */
export const BACKEND_REDIS_SINGLE: ResourceTypeDefinition = redisResourceType('single')
/** `backend_redis_sentinel`. */
export const BACKEND_REDIS_SENTINEL: ResourceTypeDefinition = redisResourceType('sentinel')
/** `backend_redis_cluster`. */
export const BACKEND_REDIS_CLUSTER: ResourceTypeDefinition = redisResourceType('cluster')

/** `data_to_redis`. */
export const DATA_TO_REDIS: ActionDefinition = dataAction({
  name: 'data_to_redis',
  app: REDIS_PLUGIN,
  types: ['backend_redis_single', 'backend_redis_sentinel', 'backend_redis_cluster'],
  title: 'Data to Redis',
  description: 'Run a Redis command for each message, with ${key} placeholders in its arguments',
  params: {
    cmd: {
      type: 'string', format: 'template', required: true, title: 'Redis CMD',
      description: 'The command run for each message, split into arguments at spaces before the ${key} placeholders are filled, so a value (spaces and all) is always one argument, e.g. HSET msgs:${clientid} ${id} ${payload}'
    }
  },
  compile: (params) => compileRedisCommand(String(params.cmd ?? '')),
  row: redisRow
})

/** The `svc_backend_redis` plugin: its types and action while loaded. */
export const svcBackendRedis: StarlingPlugin = {
  name: REDIS_PLUGIN,
  version: VERSION,
  description: 'Starling Redis data integration',
  type: 'backend',
  configSchema: {},
  loadedByDefault: false,
  async load ({ parts }) {
    const withdraw = parts.rules.provide([BACKEND_REDIS_SINGLE, BACKEND_REDIS_SENTINEL, BACKEND_REDIS_CLUSTER], [DATA_TO_REDIS])
    return { unload: async () => { withdraw() } }
  }
}
