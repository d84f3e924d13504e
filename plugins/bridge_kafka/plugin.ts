/**
 * `svc_bridge_kafka` (EMQ X 4.4 Enterprise's Kafka bridge): while loaded, the rule engine has
 * the resource type `bridge_kafka` and the action `data_to_kafka`, which publishes one message
 * per run to a topic (docs/integrations.md). The buffer, batching and retries are
 * plugins/kit/data/'s; the messages are message.ts's, the client (kafkajs) client.ts's.
 */
import { WrongTypeError } from '../../node/errors.js'
import { resourceTls, resourceTlsParams } from '../../rules/resource-tls.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataAction, dataPlugin, dataResourceType, dataTlsOptions } from '../kit/data/index.js'
import { parseRedisServers } from '../kit/pools/servers.js'
import type { ActionDefinition, ResourceTypeDefinition } from '../../rules/types.js'
import { REQUIRED_ACKS, STRATEGIES, compileKafkaAction, kafkaRow, type KafkaAction, type KafkaWrite } from './message.js'
import { COMPRESSIONS, type Compression } from './compressions.js'

/** The plugin's name, and the `provider` of what it registers. */
export const KAFKA_PLUGIN = 'svc_bridge_kafka'
const TYPE = 'bridge_kafka'

function refuse (key: string, why: string): never {
  throw new WrongTypeError(`resource type ${TYPE} config: parameter ${key} ${why}`)
}

/** `servers` read: `host:port` of each bootstrap broker (port 9092 when left out). */
export function kafkaBrokersOf (servers: unknown): string[] {
  if (typeof servers !== 'string' || servers.trim() === '') refuse('servers', 'must list the bootstrap brokers, such as 127.0.0.1:9092,127.0.0.2:9092')
  try {
    return parseRedisServers(servers as string, 9092).map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`)
  } catch (err) {
    return refuse('servers', `must list the bootstrap brokers as host:port, comma separated, got ${JSON.stringify(servers)} (${(err as Error).message})`)
  }
}

function compressionOf (config: Record<string, unknown>): Compression {
  const c = String(config.compression ?? 'no_compression')
  if (!(COMPRESSIONS as readonly string[]).includes(c)) refuse('compression', `must be one of ${COMPRESSIONS.join(', ')}, got ${JSON.stringify(config.compression)}`)
  return c as Compression
}

/** `bridge_kafka`. */
export const BRIDGE_KAFKA: ResourceTypeDefinition = dataResourceType<KafkaWrite>({
  name: TYPE,
  provider: KAFKA_PLUGIN,
  title: 'Kafka',
  description: 'Apache Kafka (0.11 or later): rules publish messages to its topics (data_to_kafka), buffered while it is away',
  params: {
    servers: { type: 'string', required: true, default: '127.0.0.1:9092', title: 'Kafka Servers', description: 'The bootstrap brokers, host:port, comma separated (port 9092 when left out)' },
    compression: {
      type: 'string', enum: [...COMPRESSIONS], required: false, default: 'no_compression', title: 'Compression',
      description: 'How message batches are compressed: no_compression, gzip or snappy'
    },
    ...resourceTlsParams({ sslSwitch: true, verifyDefault: false })
  },
  // pool_size: one producer per resource and node (writes go one batch at a time)
  checkConfig (config) {
    kafkaBrokersOf(config.servers)
    compressionOf(config)
    resourceTls(config)
  },
  async client (config, components) {
    const brokers = kafkaBrokersOf(config.servers)
    const { kafkaClient } = await import('./client.js')
    return await kafkaClient({
      brokers,
      compression: compressionOf(config),
      tls: dataTlsOptions(config, components, { type: TYPE, rule: 'sni', host: brokers[0].replace(/:\d+$/, '') }),
      clientId: `starling-${components.name}`
    })
  }
})

/** `data_to_kafka`. */
export const DATA_TO_KAFKA: ActionDefinition = dataAction<KafkaWrite, KafkaAction>({
  name: 'data_to_kafka',
  app: KAFKA_PLUGIN,
  types: [TYPE],
  title: 'Data bridge to Kafka',
  description: 'Publish a message to a Kafka topic for each run; it counts as success once Kafka acknowledged it as required_acks says',
  params: {
    topic: { type: 'string', required: true, default: '', title: 'Kafka Topic', description: 'The topic published to (it must exist: topics are not created)' },
    key: {
      type: 'string', format: 'template', required: false, default: '', title: 'Key',
      description: 'The message key, ${key} placeholders allowed, e.g. ${clientid}; empty: no key'
    },
    strategy: {
      type: 'string', enum: [...STRATEGIES], required: false, default: 'random', title: 'Produce Strategy',
      description: 'The partition of each message: random, or key_dispatch (the key\'s hash, as the Java client: messages of one key keep their order)'
    },
    required_acks: {
      type: 'string', enum: Object.keys(REQUIRED_ACKS), required: false, default: 'all_isr', title: 'Required Acks',
      description: 'When Kafka acknowledges a message: all_isr (every in-sync replica has it), leader_only (the partition leader has it), none (no acknowledgement: success once sent)'
    },
    payload_tmpl: {
      type: 'string', format: 'template', required: false, default: '', title: 'Payload Template',
      description: 'The message value, ${key} placeholders allowed; empty: every selected field as one JSON object'
    }
  },
  compile: compileKafkaAction,
  row: kafkaRow
})

/** The `svc_bridge_kafka` plugin: its type and action while loaded. */
export const svcBridgeKafka: StarlingPlugin = dataPlugin({ name: KAFKA_PLUGIN, description: 'Starling Kafka data bridge', type: 'bridge', types: [BRIDGE_KAFKA], actions: [DATA_TO_KAFKA] })
