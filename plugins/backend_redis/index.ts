/** svc_backend_redis: the `backend_redis_single|_sentinel|_cluster` resource types and the `data_to_redis` action (docs/integrations.md). */
export { svcBackendRedis, BACKEND_REDIS_CLUSTER, BACKEND_REDIS_SENTINEL, BACKEND_REDIS_SINGLE, DATA_TO_REDIS, REDIS_PLUGIN } from './plugin.js'
export { compileRedisCommand, redisRow, redisTransient, type RedisWrite } from './redis-client.js'
