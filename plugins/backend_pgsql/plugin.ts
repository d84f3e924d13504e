/**
 * `svc_backend_pgsql` (EMQ X 4.4 Enterprise's PostgreSQL integration): while loaded, the rule
 * engine has the resource type `backend_pgsql` and the action `data_to_pgsql`, which writes
 * one row per message with the action's SQL, its `${key}` placeholders bound as parameters
 * (docs/integrations.md). The buffer, batching and retries are plugins/kit/data/'s.
 */
import { VERSION } from '../../node/version.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { checkSqlServer, dataAction, dataResourceType, sqlActionParts, sqlDataClient, sqlPoolOptionsOf, sqlResourceParams } from '../kit/data/index.js'
import type { ActionDefinition, ResourceTypeDefinition } from '../../rules/types.js'

/** The plugin's name, and the `provider` of what it registers. */
export const PGSQL_PLUGIN = 'svc_backend_pgsql'
const DEFAULT_PORT = 5432

/**
 * Whether a pg error is about the connection (written again once connected) rather than the
 * rows: no SQLSTATE (a socket error, a timeout, a closed pool), or SQLSTATE classes 08
 * (connection), 28 (authorization), 3D (no such database), 40 (rolled back: serialization,
 * deadlock), 53 (insufficient resources), 57 (operator intervention: shutdown, cancel).
 */
export function pgsqlTransient (err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true
  return ['08', '28', '3D', '40', '53', '57'].includes(code.slice(0, 2))
}

/** `backend_pgsql`. */
export const BACKEND_PGSQL: ResourceTypeDefinition = dataResourceType({
  name: 'backend_pgsql',
  provider: PGSQL_PLUGIN,
  title: 'PostgreSQL',
  description: 'PostgreSQL database: rules write rows into it (data_to_pgsql), buffered while it is away',
  params: sqlResourceParams('PostgreSQL', { server: '127.0.0.1:5432', username: 'postgres' }),
  checkConfig: (config) => { checkSqlServer('backend_pgsql', config, DEFAULT_PORT) },
  async client (config, components) {
    const opts = sqlPoolOptionsOf(config, components, DEFAULT_PORT)
    // pg is loaded at the first resource, not by every node (plugins/kit/pools/index.ts)
    const { createPgsqlPool } = await import('../kit/pools/pgsql.js')
    return sqlDataClient(createPgsqlPool(opts), { dialect: 'postgresql', address: `pgsql ${opts.host}:${opts.port}`, transient: pgsqlTransient })
  }
})

/** `data_to_pgsql`. */
export const DATA_TO_PGSQL: ActionDefinition = dataAction({
  name: 'data_to_pgsql',
  app: PGSQL_PLUGIN,
  types: ['backend_pgsql'],
  title: 'Data to PostgreSQL',
  description: 'Write the selected data into PostgreSQL with an SQL template',
  ...sqlActionParts('postgresql', 'PostgreSQL', (b) => b ? 'true' : 'false')
})

/** The `svc_backend_pgsql` plugin: its type and action while loaded. */
export const svcBackendPgsql: StarlingPlugin = {
  name: PGSQL_PLUGIN,
  version: VERSION,
  description: 'Starling PostgreSQL data integration',
  type: 'backend',
  configSchema: {},
  loadedByDefault: false,
  async load ({ parts }) {
    const withdraw = parts.rules.provide([BACKEND_PGSQL], [DATA_TO_PGSQL])
    return { unload: async () => { withdraw() } }
  }
}
