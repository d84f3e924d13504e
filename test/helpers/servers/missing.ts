/**
 * Which harness servers can start here: each kind's programs looked up (without jest, so the
 * benches, built with the server code, use it too: bench/integrations-backends.ts).
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
