/**
 * `svc_backend_cassa` (EMQ X 4.4 Enterprise's Cassandra integration): while loaded, the rule
 * engine has the resource type `backend_cassa` and the action `data_to_cassa`, which runs the
 * action's CQL statement once per run with the selected values bound (docs/integrations.md).
 * The buffer, batching and retries are plugins/kit/data/'s; the statement is statement.ts's, the
 * client (cassandra-driver) client.ts's.
 */
import { WrongTypeError } from '../../node/errors.js'
import type { SqlTemplate } from '../../node/template/index.js'
import { resourceTls, resourceTlsParams } from '../../rules/resource-tls.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataAction, dataPlugin, dataResourceType, dataTlsOptions } from '../kit/data/index.js'
import { parseRedisServers } from '../kit/pools/servers.js'
import type { ActionDefinition, ParamSpecs, ResourceComponents, ResourceTypeDefinition } from '../../rules/types.js'
import { cassaRow, compileCql, type CassaWrite } from './statement.js'
import type { CassaSettings } from './client.js'

/** The plugin's name, and the `provider` of what it registers. */
export const CASSA_PLUGIN = 'svc_backend_cassa'
const TYPE = 'backend_cassa'

/** The TLS params with EMQ X 4.4's `cafile` for the CA file (the other types' `cacertfile`). */
function cassaTlsParams (): ParamSpecs {
  const { cacertfile, ...rest } = resourceTlsParams({ sslSwitch: true, verifyDefault: false })
  const { ssl, ...files } = rest
  return { ssl, cafile: cacertfile, ...files }
}

/** The config as the shared TLS reader takes it (`cafile` read as `cacertfile`). */
const tlsConfig = (config: Record<string, unknown>): Record<string, unknown> => ({ ...config, cacertfile: config.cafile })

/** A resource's settings (checked: 108); TLS files are read when `components` is given. */
export function cassaSettingsOf (config: Record<string, unknown>, components?: Pick<ResourceComponents, 'config'>): CassaSettings {
  const refuse = (key: string, why: string): never => { throw new WrongTypeError(`resource type ${TYPE} config: parameter ${key} ${why}`) }
  const text = (key: string): string => typeof config[key] === 'string' ? (config[key] as string).trim() : ''
  let nodes: string[]
  try {
    nodes = parseRedisServers(text('nodes'), 9042).map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`)
  } catch (err) {
    return refuse('nodes', `must be host:port, comma separated, got ${JSON.stringify(config.nodes)} (${(err as Error).message})`)
  }
  if (nodes.length === 0) refuse('nodes', 'must name at least one Cassandra node, host:port')
  const keyspace = text('keyspace')
  if (!/^[A-Za-z0-9_]{1,48}$/.test(keyspace)) refuse('keyspace', `must name a keyspace (letters, digits, _), got ${JSON.stringify(config.keyspace)}`)
  const localDataCenter = text('local_datacenter')
  if (localDataCenter === '') refuse('local_datacenter', 'must name the datacenter of the nodes written to')
  resourceTls(tlsConfig(config))
  return {
    nodes,
    keyspace,
    localDataCenter,
    username: text('username'),
    password: typeof config.password === 'string' ? config.password : '',
    poolSize: Number(config.pool_size ?? 8),
    tls: components === undefined ? undefined : dataTlsOptions(tlsConfig(config), components, { type: TYPE, rule: 'sni', host: nodes[0].replace(/:\d+$/, '') })
  }
}

/** `backend_cassa`. */
export const BACKEND_CASSA: ResourceTypeDefinition = dataResourceType<CassaWrite>({
  name: TYPE,
  provider: CASSA_PLUGIN,
  title: 'Cassandra',
  description: 'Apache Cassandra (or ScyllaDB): rules run CQL statements with the selected values bound (data_to_cassa), buffered while it is away',
  params: {
    nodes: { type: 'string', required: true, default: '127.0.0.1:9042', title: 'Cassandra Nodes', description: 'Contact points, host:port, comma separated (9042 when left out); the driver finds the other nodes' },
    keyspace: { type: 'string', required: true, default: 'mqtt', title: 'Keyspace', description: 'The keyspace of the actions\' tables' },
    local_datacenter: {
      type: 'string', required: false, default: 'datacenter1', title: 'Local Datacenter',
      description: 'The datacenter whose nodes are written to (Cassandra\'s default name is datacenter1; nodetool status shows it)'
    },
    username: { type: 'string', required: false, default: '', title: 'Username', description: 'The user to authenticate as (PasswordAuthenticator); empty: none' },
    password: { type: 'string', required: false, default: '', secret: true, title: 'Password', description: 'The user\'s password; shown as ******' },
    ...cassaTlsParams()
  },
  checkConfig (config) { cassaSettingsOf(config) },
  async client (config, components) {
    const settings = cassaSettingsOf(config, components)
    const { cassaClient } = await import('./client.js')
    return await cassaClient(settings)
  }
})

/** `data_to_cassa`. */
export const DATA_TO_CASSA: ActionDefinition = dataAction<CassaWrite, SqlTemplate>({
  name: 'data_to_cassa',
  app: CASSA_PLUGIN,
  types: [TYPE],
  title: 'Data to Cassandra',
  description: 'Run a CQL statement for each message with the selected values bound, e.g. insert into t_mqtt_msg(msgid, topic, payload) values (${id}, ${topic}, ${payload})',
  params: {
    sql: {
      type: 'string', format: 'template', required: true, title: 'SQL Template',
      description: 'The CQL statement run for each message, with ${key} placeholders; each is bound as a parameter of a prepared statement, never pasted into the text: write it bare or as a whole string literal'
    }
  },
  compile: (params) => compileCql(params.sql),
  row: cassaRow
})

/** The `svc_backend_cassa` plugin: its type and action while loaded. */
export const svcBackendCassa: StarlingPlugin = dataPlugin({ name: CASSA_PLUGIN, description: 'Starling Cassandra data integration', type: 'backend', types: [BACKEND_CASSA], actions: [DATA_TO_CASSA] })
