/**
 * `svc_bridge_kafka` (EMQ X 4.4 Enterprise's Kafka bridge): while loaded, the rule engine has
 * the resource type `bridge_kafka` and the action `data_to_kafka`, which publishes one message
 * per run to a topic (docs/integrations.md). The buffer, batching and retries are
 * plugins/kit/data/'s; the messages are message.ts's, the client (kafkajs) client.ts's.
 */
import { resourceTls, resourceTlsParams } from '../../rules/resource-tls.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataAction, dataPlugin, dataResourceType, dataTlsOptions } from '../kit/data/index.js'
import type { ActionDefinition, ResourceTypeDefinition } from '../../rules/types.js'
import { HEADER_ENCODINGS, OLD_KEY_DISPATCH, PRODUCE_TYPES, REQUIRED_ACKS, STRATEGIES, compileKafkaAction, kafkaRow, type KafkaAction, type KafkaWrite } from './message.js'
import { parseSize } from '../../node/config/value-types.js'
import { KAFKA_RESOURCE_PARAMS, TYPE, kafkaConfigOf } from './config.js'

export { kafkaBrokersOf } from './config.js'

/** The plugin's name, and the `provider` of what it registers. */
export const KAFKA_PLUGIN = 'svc_bridge_kafka'

/** `bridge_kafka`. */
export const BRIDGE_KAFKA: ResourceTypeDefinition = dataResourceType<KafkaWrite>({
  name: TYPE,
  provider: KAFKA_PLUGIN,
  title: 'Kafka',
  description: 'Apache Kafka (0.11 or later): rules publish messages to its topics (data_to_kafka), buffered while it is away',
  params: {
    ...KAFKA_RESOURCE_PARAMS,
    ...resourceTlsParams({ sslSwitch: true, verifyDefault: false })
  },
  // pool_size: one producer per resource and node (writes go one batch at a time)
  checkConfig (config) {
    kafkaConfigOf(config)
    resourceTls(config)
  },
  // EMQ X 4.4's sync_timeout is the resource's: the deadline of its actions' type sync
  syncTimeoutOf: (config) => kafkaConfigOf(config).syncTimeoutMs,
  async client (config, components) {
    const { syncTimeoutMs: _, ...settings } = kafkaConfigOf(config)
    const { kafkaClient } = await import('./client.js')
    return await kafkaClient({
      ...settings,
      tls: dataTlsOptions(config, components, { type: TYPE, rule: 'sni', host: settings.brokers[0].replace(/:\d+$/, '') }),
      clientId: `starling-${components.name}`
    })
  }
})

/** Accepted for EMQ X configs: why a buffer key of the action changes nothing by itself. */
const RESOURCE_BUFFER = 'Starling buffers per resource, not per action: the resource\'s local_buffer and max_buffer_bytes are the buffer (a data import moves this action\'s cache_mode and max_total_bytes onto its resource)'

/**
 * The resource buffer EMQ X's per-action buffer keys stand for (a data import merges it into
 * the bound resource): `cache_mode` Disk or Memory+Disk is `local_buffer` true, and
 * `max_total_bytes` is `max_buffer_bytes`.
 */
export function kafkaBufferOf (params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (params.cache_mode === 'Disk' || params.cache_mode === 'Memory+Disk') out.local_buffer = true
  const total = params.max_total_bytes
  const bytes = typeof total === 'number' ? total : typeof total === 'string' ? parseSize(total) : undefined
  if (bytes !== undefined && Number.isInteger(bytes) && bytes >= 1024) out.max_buffer_bytes = bytes
  return out
}

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
      description: 'The message key, ${key} placeholders allowed, e.g. ${clientid}; empty or none: no key. EMQ X 4.4\'s words clientid, username and topic are ${clientid}, ${username}, ${topic}'
    },
    strategy: {
      type: 'string', enum: [...STRATEGIES, OLD_KEY_DISPATCH], required: false, default: 'random', title: 'Produce Strategy',
      description: 'The partition of each message: random, roundrobin (the partitions in turn), or key_dispatch (the key\'s hash, as the Java client: messages of one key keep their order; first_key_dispatch, EMQ X 4.2\'s name, is the same)'
    },
    required_acks: {
      type: 'string', enum: Object.keys(REQUIRED_ACKS), required: false, default: 'all_isr', title: 'Required Acks',
      description: 'When Kafka acknowledges a message: all_isr (every in-sync replica has it), leader_only (the partition leader has it), none (no acknowledgement: success once sent)'
    },
    payload_tmpl: {
      type: 'string', format: 'template', required: false, default: '', title: 'Payload Template',
      description: 'The message value, ${key} placeholders allowed; empty: every selected field as one JSON object'
    },
    type: {
      type: 'string', enum: [...PRODUCE_TYPES], required: false, default: 'async', title: 'Produce Type',
      description: 'async: the publisher is acknowledged at once; sync: a QoS 1/2 publisher\'s acknowledgement waits until Kafka acknowledged the message or it counted failed, at most the resource\'s sync_timeout. Neither holds up delivery to subscribers'
    },
    kafka_headers: {
      type: 'string', required: false, default: '', title: 'Kafka Headers',
      description: 'One placeholder naming an object of the selected data, such as ${pub_props}: each of its entries becomes a message header; empty: none'
    },
    kafka_ext_headers: {
      type: 'array', required: false, default: [], title: 'More Kafka Headers', secretParts: 'headers',
      description: 'Headers as [{"key": ..., "value": ...}], ${key} placeholders allowed in both; after kafka_headers\' (the same name: this one). Values are shown as ****** (but content-type\'s and accept\'s)'
    },
    kafka_header_value_encode_mode: {
      type: 'string', enum: [...HEADER_ENCODINGS], required: false, default: 'NONE', title: 'Kafka Headers Value Encode Mode',
      description: 'A kafka_headers value that is not text: NONE, left out; JSON, sent as its JSON text'
    },
    cache_mode: {
      type: 'string', enum: ['Memory', 'Disk', 'Memory+Disk'], required: false, default: 'Memory', title: 'Cache Mode',
      description: `Accepted for EMQ X configs: ${RESOURCE_BUFFER}, Disk and Memory+Disk being local_buffer true`
    },
    max_total_bytes: { type: 'string', required: false, default: '2GB', title: 'Max Cache Bytes', description: `Accepted for EMQ X configs: ${RESOURCE_BUFFER}` },
    segments_bytes: { type: 'string', required: false, default: '100MB', title: 'Segment Bytes', description: 'Accepted for EMQ X configs and not used: the disk buffer\'s segment size is the kit\'s own' },
    highmem_drop: {
      type: 'boolean', required: false, default: false, title: 'Drop When High Memory',
      description: 'Accepted for EMQ X configs and not used: Node.js reports no system memory alarm to drop on; the buffer is bounded by the resource\'s max_buffer_bytes'
    },
    partition_count_refresh_interval: {
      type: 'string', format: 'duration', required: false, default: '60s', title: 'Partition Count Refresh Interval',
      description: 'Accepted for EMQ X configs and not used: kafkajs reads partition counts with the metadata, which it fetches again when a broker answers that leadership moved and once it is 5 minutes old'
    }
  },
  // EMQ X 4.4 calls the insert mode `type`, and its sync_timeout is the resource's; an action
  // stored before `type` was read keeps the insert_mode it was made with
  without: ['insert_mode', 'sync_timeout'],
  modeOf: (params) => (params.type ?? params.insert_mode) === 'sync' ? 'sync' : 'async',
  resourceConfigOf: kafkaBufferOf,
  compile: compileKafkaAction,
  row: kafkaRow
})

/** The `svc_bridge_kafka` plugin: its type and action while loaded. */
export const svcBridgeKafka: StarlingPlugin = dataPlugin({ name: KAFKA_PLUGIN, description: 'Starling Kafka data bridge', type: 'bridge', types: [BRIDGE_KAFKA], actions: [DATA_TO_KAFKA] })
