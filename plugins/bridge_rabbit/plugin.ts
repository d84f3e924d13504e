/**
 * `svc_bridge_rabbit` (EMQ X 4.4 Enterprise's RabbitMQ integration): while loaded, the rule
 * engine has the resource type `bridge_rabbit` and the action `data_to_rabbit`, which
 * publishes one message per run to an exchange, with publisher confirms (docs/integrations.md).
 * The buffer, batching and retries are plugins/kit/data/'s; the messages and the client are
 * rabbit-client.ts's.
 */
import { isAbsolute, resolve } from 'node:path'
import type { ConnectionOptions } from 'node:tls'
import { VERSION } from '../../node/version.js'
import { configRoot } from '../../node/config/index.js'
import { buildTlsOptions } from '../../node/tls-options.js'
import { resourceTls, resourceTlsParams } from '../../rules/resource-tls.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataAction, dataResourceType } from '../kit/data/index.js'
import type { ActionDefinition, ResourceComponents, ResourceTypeDefinition } from '../../rules/types.js'
import { EXCHANGE_TYPES, compileRabbitAction, rabbitDataClient, rabbitRow, rabbitSettingsOf, type RabbitWrite } from './rabbit-client.js'

/** The plugin's name, and the `provider` of what it registers. */
export const RABBIT_PLUGIN = 'svc_bridge_rabbit'

/** Node's TLS options of a config (files relative to the configuration's folder), or undefined without `ssl`. */
function tlsOf (config: Record<string, unknown>, host: string, components: Pick<ResourceComponents, 'config'>): ConnectionOptions | undefined {
  const settings = resourceTls(config)
  if (settings === undefined) return undefined
  const root = configRoot(components.config)
  const file = (path: string | undefined): string | undefined => path === undefined ? undefined : isAbsolute(path) ? path : resolve(root, path)
  return buildTlsOptions({ ...settings, cacertfile: file(settings.cacertfile), certfile: file(settings.certfile), keyfile: file(settings.keyfile) }, { rule: 'check-name', host })
}

/** `bridge_rabbit`. */
export const BRIDGE_RABBIT: ResourceTypeDefinition = dataResourceType<RabbitWrite>({
  name: 'bridge_rabbit',
  provider: RABBIT_PLUGIN,
  title: 'RabbitMQ',
  description: 'RabbitMQ broker (AMQP 0-9-1): rules publish messages to its exchanges with publisher confirms (data_to_rabbit), buffered while it is away',
  params: {
    server: { type: 'string', required: true, default: '127.0.0.1:5672', title: 'RabbitMQ Server', description: 'The broker, host:port (port 5672 when left out)' },
    username: { type: 'string', required: true, default: 'guest', title: 'Username', description: 'The user the connection logs in as' },
    password: { type: 'string', required: true, default: 'guest', secret: true, title: 'Password', description: 'The user\'s password. Shown as ******' },
    virtual_host: { type: 'string', required: true, default: '/', title: 'Virtual Host', description: 'The virtual host the exchanges are in' },
    heartbeat: { type: 'string', required: false, default: '30s', title: 'Heartbeat', description: 'AMQP heartbeat interval (30s); 0: none. A broker silent for two of them is taken as gone and the batch in flight is published again' },
    timeout: { type: 'string', required: false, default: '5s', title: 'Connect Timeout', description: 'How long opening a connection may take' },
    ...resourceTlsParams({ sslSwitch: true, verifyDefault: false })
  },
  checkConfig: (config) => {
    rabbitSettingsOf(config)
    resourceTls(config)
  },
  async client (config, components) {
    const s = rabbitSettingsOf(config)
    // amqplib is loaded at the first resource, not by every node
    const { connect } = await import('amqplib')
    return rabbitDataClient({ ...s, tls: tlsOf(config, s.host, components) }, connect)
  }
})

/** `data_to_rabbit`. */
export const DATA_TO_RABBIT: ActionDefinition = dataAction({
  name: 'data_to_rabbit',
  app: RABBIT_PLUGIN,
  types: ['bridge_rabbit'],
  title: 'Data bridge to RabbitMQ',
  description: 'Publish a message to a RabbitMQ exchange for each run; it counts as success once the broker confirmed it',
  params: {
    exchange: { type: 'string', required: true, default: '', title: 'RabbitMQ Exchange', description: 'The exchange published to; declared (with exchange_type and durable) before the first message' },
    exchange_type: {
      type: 'string', enum: [...EXCHANGE_TYPES], required: true, default: 'topic', title: 'RabbitMQ Exchange Type',
      description: 'The exchange\'s type: direct, fanout, topic or headers. An exchange that already exists with another type (or durability) refuses the messages (counted failed, logged)'
    },
    routing_key: { type: 'string', format: 'template', required: true, default: '', title: 'RabbitMQ Routing Key', description: 'The routing key of each message, ${key} placeholders allowed, e.g. sensors.${clientid}' },
    durable: { type: 'boolean', required: false, default: false, title: 'Durable Exchange', description: 'Declare the exchange durable and publish messages persistent (delivery mode 2)' },
    payload_tmpl: {
      type: 'string', format: 'template', required: false, default: '', title: 'Payload Template',
      description: 'The message body, ${key} placeholders allowed; empty: every selected field as one JSON object'
    }
  },
  compile: compileRabbitAction,
  row: rabbitRow
})

/** The `svc_bridge_rabbit` plugin: its type and action while loaded. */
export const svcBridgeRabbit: StarlingPlugin = {
  name: RABBIT_PLUGIN,
  version: VERSION,
  description: 'Starling RabbitMQ data bridge',
  type: 'bridge',
  configSchema: {},
  loadedByDefault: false,
  async load ({ parts }) {
    const withdraw = parts.rules.provide([BRIDGE_RABBIT], [DATA_TO_RABBIT])
    return { unload: async () => { withdraw() } }
  }
}
