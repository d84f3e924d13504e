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
import { missingServer, type ServerKind } from './missing.js'

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

export { missingServer, type ServerKind }

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
