/**
 * `svc_backend_influxdb` (EMQ X 4.4 Enterprise's InfluxDB integration): while loaded, the rule
 * engine has the resource types `backend_influxdb_http` (1.x `/write`),
 * `backend_influxdb_http_v2` (2.x: org, bucket, token) and `backend_influxdb_udp` (the UDP
 * listener), and the action `data_to_influxdb` (action.ts) for all three
 * (docs/integrations.md). The buffer, batching and retries are plugins/kit/data/'s.
 */
import { isAbsolute, resolve } from 'node:path'
import type { ConnectionOptions } from 'node:tls'
import { VERSION } from '../../node/version.js'
import { WrongTypeError } from '../../node/errors.js'
import { configRoot } from '../../node/config/index.js'
import { buildTlsOptions } from '../../node/tls-options.js'
import { resourceTls, resourceTlsParams } from '../../rules/resource-tls.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataResourceType } from '../kit/data/index.js'
import type { ActionDefinition, ParamSpecs, ResourceComponents, ResourceTypeDefinition } from '../../rules/types.js'
import { isPrecision, type Precision } from './line-protocol.js'
import { influxAction } from './action.js'
import type { InfluxHttpSettings } from './http-client.js'
import type { InfluxWrite } from './write.js'

/** The plugin's name, and the `provider` of what it registers. */
export const INFLUXDB_PLUGIN = 'svc_backend_influxdb'

const V1_PRECISIONS: Precision[] = ['ns', 'us', 'ms', 's', 'm', 'h']
/** InfluxDB 2.x's `/api/v2/write` takes no minutes or hours. */
const V2_PRECISIONS: Precision[] = ['ns', 'us', 'ms', 's']

function refuse (type: string, key: string, why: string): never {
  throw new WrongTypeError(`resource type ${type} config: parameter ${key} ${why}`)
}

const hostParam = (what: string): ParamSpecs[string] => ({ type: 'string', required: true, default: '127.0.0.1', title: 'InfluxDB Host', description: `The InfluxDB ${what} host (name or address)` })
const portParam = (port: number, what: string): ParamSpecs[string] => ({ type: 'integer', required: true, default: port, title: 'InfluxDB Port', description: `The InfluxDB ${what} port` })
const precisionParam = (values: Precision[], dflt: Precision, extra: string): ParamSpecs[string] => ({
  type: 'string', enum: values, required: false, default: dflt, title: 'Precision of Timestamp',
  description: `The unit of the actions' timestamps (${values.join(', ')})${extra}`
})
const httpsParams: ParamSpecs = {
  https_enabled: { type: 'boolean', required: false, default: false, title: 'Enable HTTPS', description: 'Connect over HTTPS (TLS)' },
  ...resourceTlsParams({ sslSwitch: false, verifyDefault: false })
}

/** Checks host, port and precision (108 naming the key). */
function checkAddress (type: string, config: Record<string, unknown>, precisions: Precision[]): void {
  if (typeof config.host !== 'string' || config.host.trim() === '') refuse(type, 'host', 'must be a host name or address')
  const port = config.port
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) refuse(type, 'port', `must be a port number (1-65535), got ${JSON.stringify(port)}`)
  if (!isPrecision(config.precision) || !precisions.includes(config.precision)) refuse(type, 'precision', `must be one of ${precisions.join(', ')}, got ${JSON.stringify(config.precision)}`)
}

/** Node's TLS options of an HTTP resource (files read now, relative to the configuration's folder), or undefined without HTTPS. */
function tlsOf (type: string, config: Record<string, unknown>, components: Pick<ResourceComponents, 'config'>): ConnectionOptions | undefined {
  const https = config.https_enabled === true || config.https_enabled === 'true'
  const tls = resourceTls(config, https)
  if (tls === undefined) return undefined
  const root = configRoot(components.config)
  const file = (path: string | undefined): string | undefined => path === undefined ? undefined : isAbsolute(path) ? path : resolve(root, path)
  return buildTlsOptions({ ...tls, cacertfile: file(tls.cacertfile), certfile: file(tls.certfile), keyfile: file(tls.keyfile) }, {
    rule: 'sni',
    unreadable: (key, path, err) => refuse(type, key, `names a file that cannot be read (${path}: ${(err as NodeJS.ErrnoException).code ?? err.message})`)
  })
}

function httpSettings (type: string, config: Record<string, unknown>, components: ResourceComponents, api: InfluxHttpSettings['api']): InfluxHttpSettings {
  return {
    host: String(config.host).trim(),
    port: Number(config.port),
    https: config.https_enabled === true || config.https_enabled === 'true',
    tls: tlsOf(type, config, components),
    poolSize: Number(config.pool_size ?? 8),
    precision: config.precision as Precision,
    api
  }
}

/** `backend_influxdb_http`. */
export const BACKEND_INFLUXDB_HTTP: ResourceTypeDefinition = dataResourceType<InfluxWrite>({
  name: 'backend_influxdb_http',
  provider: INFLUXDB_PLUGIN,
  title: 'InfluxDB HTTP',
  description: 'InfluxDB 1.x over HTTP(S) (/write): rules write points into a database (data_to_influxdb), buffered while it is away',
  params: {
    host: hostParam('HTTP'),
    port: portParam(8086, 'HTTP'),
    database: { type: 'string', required: true, default: 'mydb', title: 'InfluxDB Database', description: 'The database the points are written to' },
    username: { type: 'string', required: false, default: '', title: 'InfluxDB Username', description: 'User name (HTTP basic authentication); empty: none' },
    password: { type: 'string', required: false, default: '', secret: true, title: 'InfluxDB Password', description: 'Password; shown as ******' },
    precision: precisionParam(V1_PRECISIONS, 'ms', '; sent to InfluxDB converted to ns'),
    ...httpsParams
  },
  checkConfig (config) {
    checkAddress('backend_influxdb_http', config, V1_PRECISIONS)
    if (typeof config.database !== 'string' || config.database === '') refuse('backend_influxdb_http', 'database', 'must be a database name')
    resourceTls(config, config.https_enabled === true)
  },
  async client (config, components) {
    const { influxHttpClient } = await import('./http-client.js')
    return await influxHttpClient(httpSettings('backend_influxdb_http', config, components, {
      version: 1, database: String(config.database), username: String(config.username ?? ''), password: String(config.password ?? '')
    }))
  }
})

/** `backend_influxdb_http_v2`. */
export const BACKEND_INFLUXDB_HTTP_V2: ResourceTypeDefinition = dataResourceType<InfluxWrite>({
  name: 'backend_influxdb_http_v2',
  provider: INFLUXDB_PLUGIN,
  title: 'InfluxDB HTTP v2',
  description: 'InfluxDB 2.x over HTTP(S) (/api/v2/write): rules write points into a bucket (data_to_influxdb), buffered while it is away',
  params: {
    host: hostParam('HTTP'),
    port: portParam(8086, 'HTTP'),
    org: { type: 'string', required: true, default: '', title: 'InfluxDB Organization', description: 'The organization of the bucket' },
    bucket: { type: 'string', required: true, default: '', title: 'InfluxDB Bucket', description: 'The bucket the points are written to' },
    token: { type: 'string', required: true, default: '', secret: true, title: 'InfluxDB Token', description: 'An API token allowed to write to the bucket; shown as ******' },
    precision: precisionParam(V2_PRECISIONS, 'ms', '; sent to InfluxDB converted to ns'),
    ...httpsParams
  },
  checkConfig (config) {
    checkAddress('backend_influxdb_http_v2', config, V2_PRECISIONS)
    for (const key of ['org', 'bucket', 'token']) {
      if (typeof config[key] !== 'string' || config[key] === '') refuse('backend_influxdb_http_v2', key, 'is required')
    }
    resourceTls(config, config.https_enabled === true)
  },
  async client (config, components) {
    const { influxHttpClient } = await import('./http-client.js')
    return await influxHttpClient(httpSettings('backend_influxdb_http_v2', config, components, {
      version: 2, org: String(config.org), bucket: String(config.bucket), token: String(config.token)
    }))
  }
})

/** `backend_influxdb_udp`. */
export const BACKEND_INFLUXDB_UDP: ResourceTypeDefinition = dataResourceType<InfluxWrite>({
  name: 'backend_influxdb_udp',
  provider: INFLUXDB_PLUGIN,
  title: 'InfluxDB UDP',
  description: 'InfluxDB\'s UDP listener: rules send points in datagrams (data_to_influxdb); no acknowledgement, so a datagram lost on the way is lost unseen',
  params: {
    host: hostParam('UDP'),
    port: portParam(8089, 'UDP'),
    batch_size: { type: 'integer', required: false, default: 1000, title: 'Batch Size', description: 'Most points per datagram (and at most 65000 bytes)' },
    precision: precisionParam(V1_PRECISIONS, 'ms', '; must be the precision of the server\'s [[udp]] listener, as a datagram carries no unit (EMQ X\'s guide sets it to ms; InfluxDB\'s default is ns)')
  },
  checkConfig (config) {
    checkAddress('backend_influxdb_udp', config, V1_PRECISIONS)
    const size = config.batch_size
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 1) refuse('backend_influxdb_udp', 'batch_size', `must be a whole number of at least 1, got ${JSON.stringify(size)}`)
  },
  async client (config) {
    const { influxUdpClient } = await import('./udp-client.js')
    return influxUdpClient({ host: String(config.host).trim(), port: Number(config.port), batchSize: Number(config.batch_size), precision: config.precision as Precision })
  }
})

/** `data_to_influxdb`, for the three types. */
export const DATA_TO_INFLUXDB: ActionDefinition = influxAction(INFLUXDB_PLUGIN, ['backend_influxdb_http', 'backend_influxdb_http_v2', 'backend_influxdb_udp'])

/** The `svc_backend_influxdb` plugin: its types and action while loaded. */
export const svcBackendInfluxdb: StarlingPlugin = {
  name: INFLUXDB_PLUGIN,
  version: VERSION,
  description: 'Starling InfluxDB data integration',
  type: 'backend',
  configSchema: {},
  loadedByDefault: false,
  async load ({ parts }) {
    const withdraw = parts.rules.provide([BACKEND_INFLUXDB_HTTP, BACKEND_INFLUXDB_HTTP_V2, BACKEND_INFLUXDB_UDP], [DATA_TO_INFLUXDB])
    return { unload: async () => { withdraw() } }
  }
}
