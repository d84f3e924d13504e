/**
 * Real servers for tests, from their Debian packages: PostgreSQL, MariaDB, Redis, OpenLDAP,
 * InfluxDB 1.x, RabbitMQ and ClickHouse (and DynamoDB from npm's dynalite), each started on
 * free ephemeral ports in a fresh temporary directory, as its own process, returned once a real
 * client was answered, and stopped by PID. See docs/testing.md.
 *
 * ```ts
 * describeWithServer('postgres', 'auth_pgsql', () => {
 *   let pg: PostgresServer
 *   beforeAll(async () => { pg = await startPostgres() })
 *   afterAll(async () => { await pg?.close() })
 *   it('...', async () => { await pg.query('CREATE TABLE mqtt_user (...)') })
 * })
 * ```
 */
import { clickhouseBinary } from './clickhouse.js'
import { dynaliteCli } from './dynamodb.js'
import { influxdbBinary } from './influxdb.js'
import { ldapBinaries } from './ldap.js'
import { mariadbBinaries } from './mariadb.js'
import { postgresBinaries } from './postgres.js'
import { rabbitmqBinaries } from './rabbitmq.js'
import { redisBinary } from './redis.js'
import { MissingServerError } from './system.js'

export { spawnServer, startTimeoutMs, SERVER_HOST, type ServerContext, type ServerDefinition, type ServerProcess } from './core.js'
export { startPostgres, postgresBinaries, type PostgresOptions, type PostgresServer } from './postgres.js'
export { startMariadb, mariadbBinaries, type MariadbOptions, type MariadbServer } from './mariadb.js'
export { startRedis, redisBinary, type RedisOptions, type RedisServer } from './redis.js'
export { startRedisCluster, redisCliBinary, type RedisClusterOptions, type RedisCluster } from './redis-cluster.js'
export { makeTestCa, makeTestCert, opensslBinary, type TestCertificate } from './certs.js'
export { startLdap, ldapBinaries, type LdapOptions, type LdapServer } from './ldap.js'
export { startInfluxdb, influxdbBinary, type InfluxdbOptions, type InfluxdbServer, type InfluxSeries } from './influxdb.js'
export { startRabbitmq, rabbitmqBinaries, type RabbitmqBinaries, type RabbitmqServer } from './rabbitmq.js'
export { startClickhouse, clickhouseBinary, type ClickhouseOptions, type ClickhouseServer } from './clickhouse.js'
export { startDynamodb, dynaliteCli, type DynamodbOptions, type DynamodbServer } from './dynamodb.js'
export { MissingServerError, descendants, findBinary, freePort, pidAlive, runCommand } from './system.js'

/** The servers the harness starts. */
export type ServerKind = 'postgres' | 'mariadb' | 'redis' | 'ldap' | 'influxdb' | 'rabbitmq' | 'clickhouse' | 'dynamodb'

const BINARIES: Record<ServerKind, () => unknown> = {
  postgres: postgresBinaries,
  mariadb: mariadbBinaries,
  redis: redisBinary,
  ldap: ldapBinaries,
  influxdb: influxdbBinary,
  rabbitmq: rabbitmqBinaries,
  clickhouse: clickhouseBinary,
  // an npm devDependency: missing, it is a broken `npm install`, not a reason to skip
  dynamodb: dynaliteCli
}

/**
 * Why `kind` cannot be started here (a sentence naming the Debian package to install), or
 * undefined when its programs are installed.
 */
export function missingServer (kind: ServerKind): string | undefined {
  try {
    BINARIES[kind]()
    return undefined
  } catch (err) {
    if (err instanceof MissingServerError) return err.message
    throw err
  }
}

/** True when `kind`'s programs are installed. */
export function available (kind: ServerKind): boolean {
  return missingServer(kind) === undefined
}

/**
 * `describe` for tests that need a real server. Where the server is not installed, the suite
 * is skipped with a warning naming the package, except on CI (`CI` set): there a missing
 * server is a failure of .ci/run's install step, so the suite runs and its start fails with
 * that same message.
 */
export function describeWithServer (kind: ServerKind, title: string, fn: () => void): void {
  const missing = missingServer(kind)
  if (missing !== undefined && !process.env.CI) {
    console.warn(`skipping "${title}": ${missing}`)
    describe.skip(title, fn)
    return
  }
  describe(title, fn)
}
