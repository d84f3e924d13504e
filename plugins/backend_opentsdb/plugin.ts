/**
 * `svc_backend_opentsdb` (EMQ X 4.4 Enterprise's OpenTSDB integration): while loaded, the rule
 * engine has the resource type `backend_opentsdb` and the action `data_to_opentsdb`, which
 * writes one data point per run (the selected `metric`, `tags`, `value` and `timestamp`) with
 * OpenTSDB's `/api/put` (docs/integrations.md). The buffer, batching and retries are
 * plugins/kit/data/'s; the points are point.ts's, the HTTP client client.ts's.
 */
import { WrongTypeError } from '../../node/errors.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataAction, dataPlugin, dataResourceType } from '../kit/data/index.js'
import type { ActionDefinition, ResourceTypeDefinition } from '../../rules/types.js'
import { compileOpentsdbAction, opentsdbRow, type OpentsdbAction, type OpentsdbWrite } from './point.js'

/** The plugin's name, and the `provider` of what it registers. */
export const OPENTSDB_PLUGIN = 'svc_backend_opentsdb'
const TYPE = 'backend_opentsdb'

/** `server` read: `http(s)://host:port`, or `host:port` (http); port 4242 when left out. */
export function opentsdbOriginOf (server: unknown): string {
  const refuse = (why: string): never => { throw new WrongTypeError(`resource type ${TYPE} config: parameter server ${why}`) }
  if (typeof server !== 'string' || server.trim() === '') refuse('must be the OpenTSDB server, such as http://127.0.0.1:4242')
  const text = (server as string).trim()
  let url: URL
  try {
    url = new URL(/^[a-z]+:\/\//i.test(text) ? text : `http://${text}`)
  } catch {
    return refuse(`must be the OpenTSDB server, such as http://127.0.0.1:4242, got ${JSON.stringify(server)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') refuse(`must start with http:// or https://, got ${JSON.stringify(server)}`)
  if (url.pathname !== '/' || url.search !== '' || url.username !== '') refuse(`must be scheme, host and port only, got ${JSON.stringify(server)}`)
  if (url.port === '') url.port = '4242'
  return url.origin
}

/** `backend_opentsdb`. */
export const BACKEND_OPENTSDB: ResourceTypeDefinition = dataResourceType<OpentsdbWrite>({
  name: TYPE,
  provider: OPENTSDB_PLUGIN,
  title: 'OpenTSDB',
  description: 'OpenTSDB over its HTTP API: rules write data points (data_to_opentsdb), buffered while it is away',
  params: {
    server: { type: 'string', required: true, default: 'http://127.0.0.1:4242', title: 'OpenTSDB Server', description: 'The HTTP API\'s address: http://host:port (host:port alone is http; port 4242 when left out)' }
  },
  checkConfig (config) { opentsdbOriginOf(config.server) },
  async client (config) {
    const { opentsdbClient } = await import('./client.js')
    return await opentsdbClient({ origin: opentsdbOriginOf(config.server), poolSize: Number(config.pool_size ?? 8) })
  }
})

/** `data_to_opentsdb`. */
export const DATA_TO_OPENTSDB: ActionDefinition = dataAction<OpentsdbWrite, OpentsdbAction>({
  name: 'data_to_opentsdb',
  app: OPENTSDB_PLUGIN,
  types: [TYPE],
  title: 'Data to OpenTSDB',
  description: 'Write a data point per message from the selected metric, tags (an object), value (a number) and timestamp (ms; the node\'s time when not selected)',
  params: {
    details: {
      type: 'boolean', required: false, default: false, title: 'Details',
      description: 'Ask OpenTSDB for the failed points and their reasons (/api/put?details): a refused point is then named by the server and the others of its request are not sent again'
    },
    summary: {
      type: 'boolean', required: false, default: true, title: 'Summary',
      description: 'Ask OpenTSDB for the success and failure counts of each request (/api/put?summary); a refusal\'s log line shows them'
    },
    max_batch_size: { type: 'integer', required: false, default: 20, title: 'Max Batch Size', description: 'Most data points in one /api/put request' },
    sync: {
      type: 'boolean', required: false, default: false, title: 'Sync Call',
      description: 'Ask OpenTSDB to answer only once the points are flushed to storage (/api/put?sync)'
    },
    sync_timeout: {
      type: 'integer', required: false, default: 0, title: 'Sync Timeout',
      description: 'With sync: how long (ms) OpenTSDB waits for the flush; the points not flushed by then are reported failed by OpenTSDB and counted failed; 0: no limit'
    }
  },
  without: ['insert_mode', 'sync_timeout'],
  compile: compileOpentsdbAction,
  row: opentsdbRow
})

/** The `svc_backend_opentsdb` plugin: its type and action while loaded. */
export const svcBackendOpentsdb: StarlingPlugin = dataPlugin({ name: OPENTSDB_PLUGIN, description: 'Starling OpenTSDB data integration', type: 'backend', types: [BACKEND_OPENTSDB], actions: [DATA_TO_OPENTSDB] })
