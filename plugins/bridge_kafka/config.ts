/**
 * The `bridge_kafka` resource's own params, EMQ X 4.4 Enterprise's names, values and defaults
 * (as an EMQ X 4.4 export holds them: `"max_batch_bytes": "900KB"`, `"sync_timeout": "3s"`),
 * and their reading into the client's settings (docs/integrations.md, "Kafka"). Each key does
 * what its description says; the three whose meaning kafkajs or Node.js has no counterpart for
 * (`min_metadata_refresh_interval`, `query_api_versions`, `send_buffer`) are accepted, checked
 * and kept so that an EMQ X config imports, and say why they change nothing.
 */
import { WrongTypeError } from '../../node/errors.js'
import { parseSize } from '../../node/config/value-types.js'
import { paramDuration } from '../../rules/params.js'
import type { ParamSpecs } from '../../rules/types.js'
import { parseRedisServers } from '../kit/pools/servers.js'
import { COMPRESSIONS, type Compression } from './compressions.js'

/** The resource type's name. */
export const TYPE = 'bridge_kafka'

/** EMQ X 4.4's `authentication_mechanism` values, and kafkajs's SASL mechanism of each. */
export const SASL_MECHANISMS = { NONE: undefined, PLAIN: 'plain', SCRAM_SHA_256: 'scram-sha-256', SCRAM_SHA_512: 'scram-sha-512' } as const

/** A SASL mechanism kafkajs has. */
export type SaslMechanism = Exclude<typeof SASL_MECHANISMS[keyof typeof SASL_MECHANISMS], undefined>

/** kafkajs's `sasl` option. */
export interface KafkaSasl { mechanism: SaslMechanism, username: string, password: string }

/** The config keys {@link kafkaConfigOf} reads, beside the TLS params and the kit's. */
export const KAFKA_RESOURCE_PARAMS: ParamSpecs = {
  servers: { type: 'string', required: true, default: '127.0.0.1:9092', title: 'Kafka Servers', description: 'The bootstrap brokers, host:port, comma separated (port 9092 when left out)' },
  compression: {
    type: 'string', enum: [...COMPRESSIONS], required: false, default: 'no_compression', title: 'Compression',
    description: 'How message batches are compressed: no_compression, gzip or snappy'
  },
  authentication_mechanism: {
    type: 'string', enum: Object.keys(SASL_MECHANISMS), required: false, title: 'Authentication Mechanism',
    description: 'SASL authentication: NONE, PLAIN, SCRAM_SHA_256 or SCRAM_SHA_512, with username and password; absent: PLAIN when a username is given, else NONE (as EMQ X 4.4). KERBEROS is not offered'
  },
  username: { type: 'string', required: false, default: '', title: 'Username', description: 'The SASL user name' },
  password: { type: 'string', required: false, default: '', secret: true, title: 'Password', description: 'The SASL password; shown as ****** once stored' },
  max_batch_bytes: {
    type: 'string', required: false, default: '900KB', title: 'Max Batch Bytes',
    description: 'Most bytes of message keys and values in one produce request (900KB, 1MB or a number of bytes); a larger batch goes as several requests, in order, and a message larger than this alone'
  },
  sync_timeout: {
    type: 'string', format: 'duration', required: false, default: '3s', title: 'Sync Timeout',
    description: 'For the actions in sync mode (type sync): how long a QoS 1/2 publisher\'s acknowledgement waits for Kafka\'s, before the message counts as failed'
  },
  tcp_keepalive: {
    type: 'string', format: 'duration', required: false, default: '0s', title: 'TCP Keepalive',
    description: 'TCP keepalive on the connections to the brokers: the idle time before the first probe (the probes\' interval and count are the system\'s); 0s: off'
  },
  min_metadata_refresh_interval: {
    type: 'string', format: 'duration', required: false, default: '3s', title: 'Min Metadata Refresh Interval',
    description: 'Accepted for EMQ X configs and not used: kafkajs fetches metadata when a broker answers that the leadership moved and once it is 5 minutes old, and has no lower bound to set'
  },
  query_api_versions: {
    type: 'boolean', required: false, default: true, title: 'Query API Versions',
    description: 'Accepted for EMQ X configs and not used: kafkajs always asks a broker its API versions (false was for Kafka 0.9, which kafkajs does not support)'
  },
  send_buffer: {
    type: 'string', required: false, default: '1024KB', title: 'Socket Send Buffer',
    description: 'Accepted for EMQ X configs and not used: Node.js cannot set a TCP socket\'s send buffer (SO_SNDBUF); the system\'s size applies'
  }
}

/** What a resource's config says about its client (beside TLS). */
export interface KafkaConfig {
  /** `host:port` of each bootstrap broker. */
  brokers: string[]
  compression: Compression
  sasl: KafkaSasl | undefined
  /** Bytes of keys and values per produce request, at most. */
  maxBatchBytes: number
  /** The sync deadline of the resource's actions (ms). */
  syncTimeoutMs: number
  /** TCP keepalive's idle time (ms); 0: off. */
  tcpKeepaliveMs: number
}

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

/** A byte size param (`900KB`, or a number of bytes), at least `min`. */
function sizeOf (config: Record<string, unknown>, key: string, min: number): number {
  const value = config[key] ?? KAFKA_RESOURCE_PARAMS[key].default
  const bytes = typeof value === 'number' ? value : typeof value === 'string' ? parseSize(value) : undefined
  if (bytes === undefined || !Number.isInteger(bytes) || bytes < min) refuse(key, `must be a size of at least ${min} bytes such as 900KB or 1MB, got ${JSON.stringify(value)}`)
  return bytes as number
}

/** A duration param in ms (`3s`, or a number of ms), at least `min`. */
function durationOf (config: Record<string, unknown>, key: string, min: number): number {
  const value = config[key] ?? KAFKA_RESOURCE_PARAMS[key].default
  const ms = paramDuration(value)
  if (ms === undefined || ms < min) refuse(key, `must be a duration of at least ${min} ms such as 3s or 500ms, got ${JSON.stringify(value)}`)
  return ms as number
}

/** `authentication_mechanism` with `username` and `password`, as kafkajs's `sasl` (undefined: none). */
function saslOf (config: Record<string, unknown>): KafkaSasl | undefined {
  const username = typeof config.username === 'string' ? config.username : ''
  const password = typeof config.password === 'string' ? config.password : ''
  const given = config.authentication_mechanism
  const name = given === undefined || given === null || given === '' ? (username === '' ? 'NONE' : 'PLAIN') : String(given)
  if (!Object.hasOwn(SASL_MECHANISMS, name)) {
    refuse('authentication_mechanism', `must be one of ${Object.keys(SASL_MECHANISMS).join(', ')}, got ${JSON.stringify(given)}${name === 'KERBEROS' ? ' (kafkajs has no GSSAPI/Kerberos)' : ''}`)
  }
  const mechanism = SASL_MECHANISMS[name as keyof typeof SASL_MECHANISMS]
  if (mechanism === undefined) return undefined
  if (username === '') refuse('username', `must be given with authentication_mechanism ${name}`)
  return { mechanism, username, password }
}

/** Reads (and checks: 108 naming the key) a resource's config. */
export function kafkaConfigOf (config: Record<string, unknown>): KafkaConfig {
  const compression = String(config.compression ?? 'no_compression')
  if (!(COMPRESSIONS as readonly string[]).includes(compression)) refuse('compression', `must be one of ${COMPRESSIONS.join(', ')}, got ${JSON.stringify(config.compression)}`)
  // checked though not used: a value EMQ X would refuse is refused here too
  durationOf(config, 'min_metadata_refresh_interval', 0)
  sizeOf(config, 'send_buffer', 1)
  return {
    brokers: kafkaBrokersOf(config.servers),
    compression: compression as Compression,
    sasl: saslOf(config),
    maxBatchBytes: sizeOf(config, 'max_batch_bytes', 1024),
    syncTimeoutMs: durationOf(config, 'sync_timeout', 1),
    tcpKeepaliveMs: durationOf(config, 'tcp_keepalive', 0)
  }
}
