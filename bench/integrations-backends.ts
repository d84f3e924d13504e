/**
 * The backends of bench/integrations.ts: each one's real server (test/helpers/servers, the
 * tests' harness), its plugin, resource type and action (the plugin's own definitions, so the
 * bench's ceiling uses the very client and row the rule uses), the resource config and action
 * params, and what the server is given before a run (a table, a queue).
 *
 * Every backend gets the same selection, the one the rule's SQL makes of a bench message:
 * `{ clientid, topic, seq, temp }`.
 */
import type { ActionDefinition, ResourceTypeDefinition } from '../rules/types.js'
import type { DataActionDefinition, DataResourceTypeDefinition } from '../plugins/kit/data/index.js'
import { BACKEND_PGSQL, DATA_TO_PGSQL, PGSQL_PLUGIN } from '../plugins/backend_pgsql/index.js'
import { BACKEND_MYSQL, DATA_TO_MYSQL, MYSQL_PLUGIN } from '../plugins/backend_mysql/index.js'
import { BACKEND_REDIS_SINGLE, DATA_TO_REDIS, REDIS_PLUGIN } from '../plugins/backend_redis/index.js'
import { BACKEND_INFLUXDB_HTTP, DATA_TO_INFLUXDB, INFLUXDB_PLUGIN } from '../plugins/backend_influxdb/index.js'
import { BRIDGE_RABBIT, DATA_TO_RABBIT, RABBIT_PLUGIN } from '../plugins/bridge_rabbit/index.js'
import { startPostgres } from '../test/helpers/servers/postgres.js'
import { startMariadb } from '../test/helpers/servers/mariadb.js'
import { startRedis } from '../test/helpers/servers/redis.js'
import { startInfluxdb } from '../test/helpers/servers/influxdb.js'
import { startRabbitmq } from '../test/helpers/servers/rabbitmq.js'
import { missingServer } from '../test/helpers/servers/missing.js'

/** The rule's SQL: what every action gets of a message on `bench/...`. */
export const BENCH_SQL = 'SELECT clientid, topic, payload.seq as seq, payload.temp as temp FROM "bench/#"'

/** Message `seq`'s temperature: never a whole number, so InfluxDB always sees a float field. */
export function benchTemp (seq: number): number {
  return 20.25 + (seq % 100) / 10
}

/** The selection the rule makes of message `seq` (the ceiling's rows are made of the same). */
export function benchSelection (seq: number): Record<string, unknown> {
  return { clientid: 'bench-pub', topic: 'bench/a', seq, temp: benchTemp(seq) }
}

/** A started server, ready for runs. */
export interface BackendServer {
  /** The resource's config (the type's defaults are added by the API and by the bench). */
  config: Record<string, unknown>
  /** The action's params, without `$resource` and the batch params. */
  params: Record<string, unknown>
  /** Empties what runs wrote (between runs). */
  reset: () => Promise<void>
  /** The server's PID (for its CPU), or undefined. */
  pid: () => number | undefined
  stop: () => Promise<void>
}

/** A backend the bench measures. */
export interface Backend {
  name: string
  plugin: string
  type: DataResourceTypeDefinition
  action: DataActionDefinition
  /** Why its server cannot start here, or undefined. */
  missing: () => string | undefined
  start: () => Promise<BackendServer>
}

/** The kit's definitions behind a plugin's exports (typed there as plain definitions). */
function data (type: ResourceTypeDefinition, action: ActionDefinition): Pick<Backend, 'type' | 'action'> {
  return { type: type as DataResourceTypeDefinition, action: action as DataActionDefinition }
}

const SQL_INSERT = 'insert into bench_rows (clientid, topic, seq, temp) values (${clientid}, ${topic}, ${seq}, ${temp})'

/** The backends, by name. */
export const BACKENDS: Record<string, Backend> = {
  pgsql: {
    name: 'pgsql',
    plugin: PGSQL_PLUGIN,
    ...data(BACKEND_PGSQL, DATA_TO_PGSQL),
    missing: () => missingServer('postgres'),
    start: async () => {
      const pg = await startPostgres()
      await pg.query('CREATE TABLE bench_rows (id serial PRIMARY KEY, clientid text, topic text, seq int, temp double precision)')
      return {
        config: { server: `${pg.host}:${pg.port}`, database: pg.database, username: pg.user, password: pg.password },
        params: { sql: SQL_INSERT },
        reset: async () => { await pg.query('TRUNCATE bench_rows') },
        pid: () => pg.pid,
        stop: async () => { await pg.close() }
      }
    }
  },
  mysql: {
    name: 'mysql',
    plugin: MYSQL_PLUGIN,
    ...data(BACKEND_MYSQL, DATA_TO_MYSQL),
    missing: () => missingServer('mariadb'),
    start: async () => {
      const db = await startMariadb()
      await db.query('CREATE TABLE bench_rows (id int AUTO_INCREMENT PRIMARY KEY, clientid varchar(64), topic varchar(255), seq int, temp double)')
      return {
        config: { server: `${db.host}:${db.port}`, database: db.database, username: db.user, password: db.password },
        params: { sql: SQL_INSERT },
        reset: async () => { await db.query('TRUNCATE TABLE bench_rows') },
        pid: () => db.pid,
        stop: async () => { await db.close() }
      }
    }
  },
  redis: {
    name: 'redis',
    plugin: REDIS_PLUGIN,
    ...data(BACKEND_REDIS_SINGLE, DATA_TO_REDIS),
    missing: () => missingServer('redis'),
    start: async () => {
      const redis = await startRedis()
      return {
        config: { server: `${redis.host}:${redis.port}` },
        params: { cmd: 'RPUSH bench:${clientid} ${seq}' },
        reset: async () => { await redis.command('DEL', 'bench:bench-pub') },
        pid: () => redis.pid,
        stop: async () => { await redis.close() }
      }
    }
  },
  influxdb: {
    name: 'influxdb',
    plugin: INFLUXDB_PLUGIN,
    ...data(BACKEND_INFLUXDB_HTTP, DATA_TO_INFLUXDB),
    missing: () => missingServer('influxdb'),
    start: async () => {
      const influx = await startInfluxdb()
      return {
        config: { host: influx.host, port: influx.httpPort, database: influx.database },
        params: { measurement: 'bench', fields: { seq: '${seq}', temp: '${temp}' }, tags: { client: '${clientid}' } },
        reset: async () => { await influx.query('DROP MEASUREMENT "bench"').catch(() => {}) },
        pid: () => influx.pid,
        stop: async () => { await influx.close() }
      }
    }
  },
  rabbitmq: {
    name: 'rabbitmq',
    plugin: RABBIT_PLUGIN,
    ...data(BRIDGE_RABBIT, DATA_TO_RABBIT),
    missing: () => missingServer('rabbitmq'),
    start: async () => {
      const rabbit = await startRabbitmq()
      // a queue takes what the exchange routes, as a consumer's would; purged between runs
      const setUp = await rabbit.connect()
      const ch = await setUp.createChannel()
      await ch.assertExchange('bench', 'topic', { durable: false })
      await ch.assertQueue('bench', { durable: false })
      await ch.bindQueue('bench', 'bench', 'bench.#')
      return {
        config: { server: `${rabbit.host}:${rabbit.port}`, username: rabbit.user, password: rabbit.password },
        params: { exchange: 'bench', exchange_type: 'topic', routing_key: 'bench.${clientid}', payload_tmpl: '${seq}' },
        reset: async () => { await ch.purgeQueue('bench') },
        pid: () => rabbit.pid,
        stop: async () => { await setUp.close().catch(() => {}); await rabbit.close() }
      }
    }
  }
}
