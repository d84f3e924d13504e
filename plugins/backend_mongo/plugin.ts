/**
 * `svc_backend_mongo` (EMQ X 4.4 Enterprise's MongoDB integration): while loaded, the rule
 * engine has the resource types `backend_mongo_single`, `backend_mongo_rs` and
 * `backend_mongo_sharded` and the action `data_to_mongo`, which inserts one document per run
 * (docs/integrations.md). The buffer, batching and retries are plugins/kit/data/'s; the
 * documents are document.ts's, the client client.ts's on the kit's MongoDB pool.
 */
import { WrongTypeError } from '../../node/errors.js'
import { resourceTls, resourceTlsParams } from '../../rules/resource-tls.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataAction, dataPlugin, dataResourceType, dataTlsOptions } from '../kit/data/index.js'
import { parseRedisServers } from '../kit/pools/servers.js'
import type { MongoPoolOptions } from '../kit/pools/mongo.js'
import type { ActionDefinition, ParamSpecs, ResourceComponents, ResourceTypeDefinition } from '../../rules/types.js'
import { compileMongoAction, mongoRow, type MongoAction, type MongoWrite } from './document.js'

/** The plugin's name, and the `provider` of what it registers. */
export const MONGO_PLUGIN = 'svc_backend_mongo'

/** The three topologies, as EMQ X 4.4 named their resource types. */
const TOPOLOGIES = { backend_mongo_single: 'single', backend_mongo_rs: 'rs', backend_mongo_sharded: 'sharded' } as const
type MongoType = keyof typeof TOPOLOGIES

/** A resource's pool options and database (checked: 108). */
export function mongoSettingsOf (type: MongoType, config: Record<string, unknown>, components?: Pick<ResourceComponents, 'config'>): { opts: MongoPoolOptions, database: string } {
  const refuse = (key: string, why: string): never => { throw new WrongTypeError(`resource type ${type} config: parameter ${key} ${why}`) }
  const text = (key: string): string => typeof config[key] === 'string' ? (config[key] as string).trim() : ''
  const srv = config.srv_record === true || config.srv_record === 'true'
  let servers: MongoPoolOptions['servers']
  try {
    servers = parseRedisServers(text('servers'), 27017)
  } catch (err) {
    return refuse('servers', `must be host:port, comma separated, got ${JSON.stringify(config.servers)} (${(err as Error).message})`)
  }
  if (servers.length === 0) refuse('servers', 'must name the MongoDB server(s), host:port')
  if (type === 'backend_mongo_single' && servers.length > 1) refuse('servers', 'must name one server for backend_mongo_single')
  if (srv && servers.length > 1) refuse('servers', 'must be one host name with srv_record')
  const rsSetName = text('rs_set_name')
  if (type === 'backend_mongo_rs' && rsSetName === '') refuse('rs_set_name', 'must name the replica set')
  const database = text('database')
  if (database === '' || /[/\\. "$]/.test(database)) refuse('database', `must name a database, got ${JSON.stringify(config.database)}`)
  const wMode = text('w_mode') === 'unsafe' ? 'unsafe' : 'safe'
  const connectTimeout = Number(config.connectTimeoutMS ?? 10_000)
  if (!Number.isInteger(connectTimeout) || connectTimeout < 1) refuse('connectTimeoutMS', `must be a whole number of ms, got ${JSON.stringify(config.connectTimeoutMS)}`)
  resourceTls(config)
  return {
    database,
    opts: {
      type: TOPOLOGIES[type],
      servers,
      srvRecord: srv,
      rsSetName,
      username: text('login'),
      password: typeof config.password === 'string' ? config.password : '',
      authSource: text('auth_source'),
      pool: Number(config.pool_size ?? 8),
      wMode,
      connectTimeoutMs: connectTimeout,
      tls: components === undefined ? undefined : dataTlsOptions(config, components, { type, rule: 'sni', host: servers[0].host })
    }
  }
}

const SHARED: ParamSpecs = {
  database: { type: 'string', required: true, default: 'mqtt', title: 'Database', description: 'The database of the actions\' collections' },
  login: { type: 'string', required: false, default: '', title: 'Username', description: 'The user to authenticate as; empty: none' },
  password: { type: 'string', required: false, default: '', secret: true, title: 'Password', description: 'The user\'s password; shown as ******' },
  auth_source: { type: 'string', required: false, default: 'admin', title: 'Auth Source', description: 'The database that holds the user' },
  srv_record: { type: 'boolean', required: false, default: false, title: 'SRV Record', description: 'Look servers up as a DNS SRV record (mongodb+srv://): servers is then one host name' },
  w_mode: {
    type: 'string', enum: ['safe', 'unsafe'], required: false, default: 'safe', title: 'Write Mode',
    description: 'safe: a document counts as written once the server acknowledged it (w 1); unsafe: once sent (w 0), refusals are then not seen'
  },
  connectTimeoutMS: { type: 'integer', required: false, default: 10_000, title: 'Connect Timeout', description: 'Longest wait (ms) for a connection to a server' },
  ...resourceTlsParams({ sslSwitch: true, verifyDefault: false })
}

function mongoType (name: MongoType, title: string, servers: string, extra: ParamSpecs = {}): ResourceTypeDefinition {
  return dataResourceType<MongoWrite>({
    name,
    provider: MONGO_PLUGIN,
    title,
    description: `${title}: rules insert documents into its collections (data_to_mongo), buffered while it is away`,
    params: {
      servers: { type: 'string', required: true, default: '127.0.0.1:27017', title: 'MongoDB Server', description: servers },
      ...extra,
      ...SHARED
    },
    checkConfig (config) { mongoSettingsOf(name, config) },
    async client (config, components) {
      const { opts, database } = mongoSettingsOf(name, config, components)
      const { mongoClient } = await import('./client.js')
      return await mongoClient(opts, database)
    }
  })
}

/** `backend_mongo_single`. */
export const BACKEND_MONGO_SINGLE = mongoType('backend_mongo_single', 'MongoDB Single Mode', 'The server, host:port (27017 when left out)')
/** `backend_mongo_rs`. */
export const BACKEND_MONGO_RS = mongoType('backend_mongo_rs', 'MongoDB Replica Set Mode', 'Members of the replica set, host:port, comma separated: writes go to its primary', {
  rs_set_name: { type: 'string', required: true, default: '', title: 'Replica Set Name', description: 'The replica set\'s name' }
})
/** `backend_mongo_sharded`. */
export const BACKEND_MONGO_SHARDED = mongoType('backend_mongo_sharded', 'MongoDB Sharded Mode', 'The mongos routers, host:port, comma separated')

/** `data_to_mongo`. */
export const DATA_TO_MONGO: ActionDefinition = dataAction<MongoWrite, MongoAction>({
  name: 'data_to_mongo',
  app: MONGO_PLUGIN,
  types: Object.keys(TOPOLOGIES),
  title: 'Data to MongoDB',
  description: 'Insert the selected data into a MongoDB collection, one document per message',
  params: {
    collection: { type: 'string', required: true, default: 'mqtt', title: 'Collection', description: 'The collection the documents are inserted into' },
    payload_tmpl: {
      type: 'string', format: 'template', required: false, default: '', title: 'Payload Template',
      description: 'The document, a JSON object whose strings may hold ${key} placeholders ("${payload.temp}" alone keeps the value\'s type); empty: every selected field'
    }
  },
  compile: compileMongoAction,
  row: mongoRow
})

/** The `svc_backend_mongo` plugin: its types and action while loaded. */
export const svcBackendMongo: StarlingPlugin = dataPlugin({ name: MONGO_PLUGIN, description: 'Starling MongoDB data integration', type: 'backend', types: [BACKEND_MONGO_SINGLE, BACKEND_MONGO_RS, BACKEND_MONGO_SHARDED], actions: [DATA_TO_MONGO] })
