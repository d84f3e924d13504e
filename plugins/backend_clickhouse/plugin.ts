/**
 * `svc_backend_clickhouse` (EMQ X 4.4 Enterprise's ClickHouse integration): while loaded, the
 * rule engine has the resource type `backend_clickhouse` (the HTTP interface, over TLS when
 * `server` is https) and the action `data_to_clickhouse`, which takes EMQ X's `sql` template
 * but writes its values as JSONEachRow rows, never as SQL text (template.ts,
 * docs/integrations.md). The buffer, batching and retries are plugins/kit/data/'s.
 */
import { isAbsolute, resolve } from 'node:path'
import type { ConnectionOptions } from 'node:tls'
import { VERSION } from '../../node/version.js'
import { WrongTypeError } from '../../node/errors.js'
import { configRoot } from '../../node/config/index.js'
import { buildTlsOptions } from '../../node/tls-options.js'
import { resourceTls, resourceTlsParams } from '../../rules/resource-tls.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataAction, dataResourceType } from '../kit/data/index.js'
import type { ActionDefinition, ResourceComponents, ResourceTypeDefinition } from '../../rules/types.js'
import { compileClickhouseInsert, type ClickhouseInsert } from './template.js'
import { clickhouseRow, type ClickhouseWrite } from './write.js'

/** The plugin's name, and the `provider` of what it registers. */
export const CLICKHOUSE_PLUGIN = 'svc_backend_clickhouse'
const TYPE = 'backend_clickhouse'

function refuse (key: string, why: string): never {
  throw new WrongTypeError(`resource type ${TYPE} config: parameter ${key} ${why}`)
}

/** `server` read: `http(s)://host:port` (without a port, ClickHouse's: 8123, https 8443; a path is refused). */
export function serverUrlOf (server: unknown): URL {
  if (typeof server !== 'string' || server.trim() === '') refuse('server', 'must be the HTTP interface\'s URL, such as http://127.0.0.1:8123')
  let url: URL
  try {
    url = new URL(server.trim())
  } catch {
    return refuse('server', `must be the HTTP interface's URL, such as http://127.0.0.1:8123, got ${JSON.stringify(server)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') refuse('server', `must start with http:// or https://, got ${JSON.stringify(server)}`)
  if (url.pathname !== '/' || url.search !== '' || url.username !== '' || url.password !== '') refuse('server', `must be scheme, host and port only (user and key are their own params), got ${JSON.stringify(server)}`)
  if (url.port === '') url.port = url.protocol === 'https:' ? '8443' : '8123'
  return url
}

/** Node's TLS options for an https `server` (files read now, relative to the configuration's folder), or undefined. */
function tlsOf (config: Record<string, unknown>, https: boolean, components: Pick<ResourceComponents, 'config'>): ConnectionOptions | undefined {
  const tls = resourceTls(config, https)
  if (tls === undefined) return undefined
  const root = configRoot(components.config)
  const file = (path: string | undefined): string | undefined => path === undefined ? undefined : isAbsolute(path) ? path : resolve(root, path)
  return buildTlsOptions({ ...tls, cacertfile: file(tls.cacertfile), certfile: file(tls.certfile), keyfile: file(tls.keyfile) }, {
    rule: 'sni',
    unreadable: (key, path, err) => refuse(key, `names a file that cannot be read (${path}: ${(err as NodeJS.ErrnoException).code ?? err.message})`)
  })
}

/** `backend_clickhouse`. */
export const BACKEND_CLICKHOUSE: ResourceTypeDefinition = dataResourceType<ClickhouseWrite>({
  name: TYPE,
  provider: CLICKHOUSE_PLUGIN,
  title: 'ClickHouse',
  description: 'ClickHouse over its HTTP interface: rules write rows into its tables (data_to_clickhouse), buffered while it is away',
  params: {
    server: { type: 'string', required: true, default: 'http://127.0.0.1:8123', title: 'ClickHouse Server', description: 'The HTTP interface\'s URL: http://host:port, or https://host:port for TLS (with the certificate params below)' },
    user: { type: 'string', required: false, default: 'default', title: 'ClickHouse User', description: 'The user the rows are written as' },
    key: { type: 'string', required: false, default: '', secret: true, title: 'ClickHouse Key', description: 'The user\'s password; shown as ******' },
    database: { type: 'string', required: true, default: 'mqtt', title: 'ClickHouse Database', description: 'The database of the actions\' tables (a table written db.table names its own)' },
    ...resourceTlsParams({ sslSwitch: false, verifyDefault: false })
  },
  checkConfig (config) {
    const url = serverUrlOf(config.server)
    if (typeof config.database !== 'string' || config.database.trim() === '') refuse('database', 'must be a database name')
    resourceTls(config, url.protocol === 'https:')
  },
  async client (config, components) {
    const url = serverUrlOf(config.server)
    const { clickhouseClient } = await import('./client.js')
    return await clickhouseClient({
      url: url.origin,
      user: String(config.user ?? 'default'),
      password: String(config.key ?? ''),
      database: String(config.database).trim(),
      poolSize: Number(config.pool_size ?? 8),
      tls: tlsOf(config, url.protocol === 'https:', components)
    })
  }
})

/** `data_to_clickhouse`. */
export const DATA_TO_CLICKHOUSE: ActionDefinition = dataAction<ClickhouseWrite, ClickhouseInsert>({
  name: 'data_to_clickhouse',
  app: CLICKHOUSE_PLUGIN,
  types: [TYPE],
  title: 'Data to ClickHouse',
  description: 'Write the selected data into a ClickHouse table, one row per message',
  params: {
    sql: {
      type: 'string', format: 'template', required: true, title: 'SQL Template',
      description: 'insert into <table>(<columns>) values (<one ${key} or literal per column>), e.g. insert into t(clientid, temp) values (${clientid}, ${payload.temp}). The values are sent as data (JSONEachRow rows), never as SQL: numbers as numbers, strings as they are, booleans as 1/0, objects as JSON text, an absent key as the column\'s default'
    }
  },
  compile: (params) => compileClickhouseInsert(params.sql),
  row: clickhouseRow
})

/** The `svc_backend_clickhouse` plugin: its type and action while loaded. */
export const svcBackendClickhouse: StarlingPlugin = {
  name: CLICKHOUSE_PLUGIN,
  version: VERSION,
  description: 'Starling ClickHouse data integration',
  type: 'backend',
  configSchema: {},
  loadedByDefault: false,
  async load ({ parts }) {
    const withdraw = parts.rules.provide([BACKEND_CLICKHOUSE], [DATA_TO_CLICKHOUSE])
    return { unload: async () => { withdraw() } }
  }
}
