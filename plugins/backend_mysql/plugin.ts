/**
 * `svc_backend_mysql` (EMQ X 4.4 Enterprise's MySQL integration): while loaded, the rule
 * engine has the resource type `backend_mysql` and the action `data_to_mysql`, which writes
 * one row per message with the action's SQL, its `${key}` placeholders bound as parameters
 * (docs/integrations.md). MariaDB is served the same. The buffer, batching and retries are
 * plugins/kit/data/'s.
 */
import { VERSION } from '../../node/version.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { checkSqlServer, dataAction, dataResourceType, sqlActionParts, sqlDataClient, sqlPoolOptionsOf, sqlResourceParams } from '../kit/data/index.js'
import type { ActionDefinition, ResourceTypeDefinition } from '../../rules/types.js'

/** The plugin's name, and the `provider` of what it registers. */
export const MYSQL_PLUGIN = 'svc_backend_mysql'
const DEFAULT_PORT = 3306

/** Driver error codes about the connection, not the rows. */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'STARLING_SQL_QUERY_TIMEOUT'
])
/**
 * Server error numbers about the connection or the moment, not the rows: too many
 * connections (1040), access denied (1044, 1045), unknown database (1049), shutdown (1053),
 * host blocked (1129, 1130), lock wait timeout (1205), deadlock (1213), query interrupted (1317),
 * connection killed (1927), read-only (1290, 1836).
 */
const TRANSIENT_ERRNOS = new Set([1040, 1044, 1045, 1049, 1053, 1129, 1130, 1205, 1213, 1290, 1317, 1836, 1927])

/**
 * Whether a mysql2 error is about the connection (written again once connected) rather than
 * the rows: a fatal error (the connection is gone), a socket error, a timeout, one of
 * {@link TRANSIENT_ERRNOS}, or an error the server did not send (no errno).
 */
export function mysqlTransient (err: unknown): boolean {
  const e = err as { fatal?: unknown, code?: unknown, errno?: unknown, sqlState?: unknown }
  if (e?.fatal === true) return true
  if (typeof e?.code === 'string' && TRANSIENT_CODES.has(e.code)) return true
  if (typeof e?.errno !== 'number' || typeof e?.sqlState !== 'string') return true
  return TRANSIENT_ERRNOS.has(e.errno)
}

/** `backend_mysql`. */
export const BACKEND_MYSQL: ResourceTypeDefinition = dataResourceType({
  name: 'backend_mysql',
  provider: MYSQL_PLUGIN,
  title: 'MySQL',
  description: 'MySQL (or MariaDB) database: rules write rows into it (data_to_mysql), buffered while it is away',
  params: sqlResourceParams('MySQL', { server: '127.0.0.1:3306', username: 'root' }),
  checkConfig: (config) => { checkSqlServer('backend_mysql', config, DEFAULT_PORT) },
  async client (config, components) {
    const opts = sqlPoolOptionsOf(config, components, DEFAULT_PORT)
    // mysql2 is loaded at the first resource, not by every node (plugins/kit/pools/index.ts)
    const { createMysqlPool } = await import('../kit/pools/mysql.js')
    return sqlDataClient(createMysqlPool(opts), { dialect: 'mysql', address: `mysql ${opts.host}:${opts.port}`, transient: mysqlTransient })
  }
})

/** `data_to_mysql`. */
export const DATA_TO_MYSQL: ActionDefinition = dataAction({
  name: 'data_to_mysql',
  app: MYSQL_PLUGIN,
  types: ['backend_mysql'],
  title: 'Data to MySQL',
  description: 'Write the selected data into MySQL with an SQL template',
  ...sqlActionParts('mysql', 'MySQL', (b) => b ? 1 : 0)
})

/** The `svc_backend_mysql` plugin: its type and action while loaded. */
export const svcBackendMysql: StarlingPlugin = {
  name: MYSQL_PLUGIN,
  version: VERSION,
  description: 'Starling MySQL data integration',
  type: 'backend',
  configSchema: {},
  loadedByDefault: false,
  async load ({ parts }) {
    const withdraw = parts.rules.provide([BACKEND_MYSQL], [DATA_TO_MYSQL])
    return { unload: async () => { withdraw() } }
  }
}
