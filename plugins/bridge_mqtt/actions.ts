/**
 * The bridge resource types `bridge_mqtt` and `bridge_rpc` and their action
 * `data_to_mqtt_broker` (spec: actions table, "MQTT or RPC bridge: resource only"; EMQ X 4.4's
 * emqx_bridge_mqtt_actions), so a rule sends what it selected to another broker through a
 * bridge: a connection to a remote MQTT broker, or the cluster transport to another Starling
 * cluster's node, with its buffer (plugins/bridge_mqtt/, docs/bridges.md).
 *
 * Invariants:
 * - Each resource of these types runs one bridge per node while the rule engine runs
 *   (resource-instances.ts): created with no forwards and no subscriptions, it sends only
 *   what the action gives it, in the order the action gives it.
 * - `disk_cache = on`: the buffer is a replay queue in `<node.data_dir>/replayq/rule_<id>/`
 *   (`:` of the id written `_`), kept when the engine or the node stops (read back at the next
 *   start, so nothing the action queued is lost to a restart) and removed with the resource.
 *   Off: memory only, capped at {@link MEMORY_BUFFER_BYTES}.
 * - An action run succeeds once its message is in the bridge's buffer (durable with a disk
 *   cache), connected or not; delivery to the remote follows, retried until acknowledged.
 *   With a disk cache the triggering QoS 1/2 publish is held until then (`holdsPublish`).
 * - The resource's status (`is_alive`) is whether its bridge is connected now.
 */
import { rm } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { randomBytes } from 'node:crypto'
import { WrongTypeError } from '../../node/errors.js'
import { topicNameError } from '../../node/mqtt/topic.js'
import { parseDuration } from '../../node/config/value-types.js'
import { configRoot } from '../../node/config/index.js'
import type { PublishMessage } from '../../node/mqtt/core.js'
import type { Bridge, BridgeConfig } from './types.js'
import { createBridge, type BridgeComponents, type BridgeLinkSource } from './bridge.js'
import { createMqttLink } from './mqtt-link.js'
import { fillString, lookup } from '../../node/template/index.js'
import type { ActionDefinition, ParamSpec, ParamSpecs, Resource, ResourceComponents, ResourceInstance, ResourceTypeDefinition } from '../../rules/types.js'

/** The application providing the bridge types (EMQ X's emqx_bridge_mqtt). */
export const BRIDGE_APP = 'svc_bridge_mqtt'
/** Cap of a memory-only buffer (`disk_cache = off`); beyond it the oldest messages are dropped, counted. */
export const MEMORY_BUFFER_BYTES = 256 * 1024 * 1024
/** Cap of a disk buffer: EMQ X's `queue.max_total_size` default (5 GB). */
export const DISK_BUFFER_BYTES = 5 * 1024 * 1024 * 1024
/** In-flight batches of a rule bridge (EMQ X hard-coded `max_inflight_batches` 32 for it). */
const MAX_INFLIGHT_BATCHES = 32
/** Items per batch of an MQTT rule bridge (EMQ X's default `batch_size`). */
const MQTT_BATCH_SIZE = 32

const ON_OFF = ['on', 'off']

function duration (title: string, def: string, description: string): ParamSpec {
  return { type: 'string', required: false, default: def, title, description: `${description} (a duration: 30s, 1m, 500ms)` }
}

const MOUNTPOINT_DESCRIPTION = 'Prefix of the topics sent to the remote, `${node}` replaced by this node\'s name: a message on topic1 goes to bridge/aws/<node>/topic1; empty: no prefix'
const DISK_CACHE: ParamSpec = {
  type: 'string', enum: ON_OFF, required: false, default: 'off', title: 'Disk Cache',
  description: 'on: messages wait for the remote in a replay queue under the node\'s data directory, kept across restarts; off: in memory'
}
const POOL_SIZE: ParamSpec = {
  type: 'number', required: false, default: 8, title: 'Pool Size',
  description: 'Accepted for EMQ X compatibility; Starling keeps one connection per resource and node, which keeps the order of messages'
}

/** `bridge_mqtt`'s config (EMQ X 4.4's names and defaults). */
export const BRIDGE_MQTT_PARAMS: ParamSpecs = {
  address: { type: 'string', required: true, default: '127.0.0.1:1883', title: 'Broker Address', description: 'The remote MQTT broker, host:port' },
  pool_size: POOL_SIZE,
  clientid: { type: 'string', required: true, default: 'client', title: 'ClientId', description: 'Client id for the connection to the remote broker' },
  client_id: { type: 'string', required: false, title: 'ClientId (EMQ X 3.4 name)', description: 'The same as clientid, EMQ X 3.4\'s and the spec\'s name; used when given' },
  append: { type: 'boolean', required: false, default: true, title: 'Append GUID', description: 'Append _<random hex> to the client id, so that several nodes can bridge at once' },
  username: { type: 'string', required: false, default: '', title: 'Username', description: 'Username for the remote broker; empty: none' },
  password: { type: 'string', required: false, default: '', secret: true, title: 'Password', description: 'Password for the remote broker; empty: none. Shown as ******' },
  mountpoint: { type: 'string', required: false, default: 'bridge/aws/${node}/', title: 'Bridge MountPoint', description: MOUNTPOINT_DESCRIPTION },
  disk_cache: DISK_CACHE,
  proto_ver: { type: 'string', enum: ['mqttv3', 'mqttv4', 'mqttv5'], required: false, default: 'mqttv4', title: 'Protocol Version', description: 'mqttv3 (3.1), mqttv4 (3.1.1) or mqttv5' },
  keepalive: duration('Keepalive', '60s', 'Keepalive of the connection'),
  reconnect_interval: duration('Reconnect Interval', '30s', 'Wait between two connection attempts'),
  retry_interval: duration('Retry interval', '20s', 'How long a connection attempt may take'),
  bridge_mode: { type: 'boolean', required: false, default: false, title: 'Bridge Mode', description: 'MQTT v3/v4: connect with the bridge flag (brokers that know it do not send the bridge its own messages back)' },
  ssl: { type: 'string', enum: ON_OFF, required: false, default: 'off', title: 'Bridge SSL', description: 'on: TLS to the remote broker' },
  cacertfile: { type: 'string', required: false, default: 'etc/certs/cacert.pem', title: 'CA certificates', description: 'CA certificates file (PEM) the server certificate is checked against when verify is true' },
  certfile: { type: 'string', required: false, default: 'etc/certs/client-cert.pem', title: 'SSL Certfile', description: 'Client certificate file (PEM); used when it exists' },
  keyfile: { type: 'string', required: false, default: 'etc/certs/client-key.pem', title: 'SSL Keyfile', description: 'Client key file (PEM); used when it exists' },
  ciphers: { type: 'string', required: false, default: '', title: 'SSL Ciphers', description: 'OpenSSL cipher list, comma separated; empty: Node.js\'s defaults' },
  verify: { type: 'boolean', required: false, default: false, title: 'Verify Server Certfile', description: 'Check the server certificate against cacertfile' },
  server_name_indication: { type: 'string', required: false, title: 'Server Name Indication', description: 'Host name sent (SNI) and checked in the server certificate; disable: none; absent: the address\'s host' }
}

/** `bridge_rpc`'s config (EMQ X 4.4's names and defaults). */
export const BRIDGE_RPC_PARAMS: ParamSpecs = {
  address: { type: 'string', required: true, default: 'starling2@127.0.0.1', title: 'Node Name', description: 'The remote Starling node, name@host; both clusters share node.cookie' },
  mountpoint: { type: 'string', required: false, default: 'bridge/starling/${node}/', title: 'Bridge MountPoint', description: MOUNTPOINT_DESCRIPTION },
  pool_size: POOL_SIZE,
  reconnect_interval: duration('Reconnect Interval', '30s', 'Wait between two connection attempts'),
  batch_size: { type: 'integer', required: false, default: 32, title: 'Batch Size', description: 'Messages sent per batch (at least 1)' },
  disk_cache: DISK_CACHE
}

/** What a rule bridge is built with: its link (a fake in tests) and the bridge runtime. */
export interface BridgeRuntime {
  /** The link of a bridge: plugins/bridge_mqtt/mqtt-link.ts, or the cluster's RPC bridge transport. */
  link: (config: BridgeConfig, components: ResourceComponents) => BridgeLinkSource
  /** plugins/bridge_mqtt/bridge.ts `createBridge` (the bridge not started). */
  createBridge: (config: BridgeConfig, components: BridgeComponents, link: BridgeLinkSource) => Promise<Bridge>
}

/** A rule bridge on one node: what the action sends through and what the status reads. */
export class BridgeResource implements ResourceInstance {
  constructor (readonly bridge: Bridge, private readonly dir: string | undefined) {}

  alive (): boolean {
    return this.bridge.info().status === 'connected'
  }

  /** Queues `message`; resolves once it is in the buffer. */
  async send (message: PublishMessage): Promise<void> {
    if (this.bridge.forward === undefined) throw new Error(`bridge ${this.bridge.name} cannot take messages from rules (the bridge runtime has no forward)`)
    await this.bridge.forward(message)
  }

  async close (removed: boolean): Promise<void> {
    await this.bridge.close()
    if (removed && this.dir !== undefined) await rm(this.dir, { recursive: true, force: true })
  }
}

/** Where the disk buffer of resource `id` lives. */
export function replayDirOf (dataDir: string, id: string): string {
  return join(dataDir, 'replayq', `rule_${id.replace(/[^A-Za-z0-9_.-]/g, '_')}`)
}

/** Milliseconds of a duration param; the config was checked, so it parses. */
function ms (value: unknown): number {
  return parseDuration(String(value)) ?? 0
}

function refuse (type: string, key: string, why: string): never {
  throw new WrongTypeError(`resource type ${type} config: parameter ${key} ${why}`)
}

function checkCommon (type: string, config: Record<string, unknown>): void {
  const mountpoint = String(config.mountpoint ?? '')
  if (mountpoint !== '') {
    const err = topicNameError(mountpoint.replace(/\$\{node\}/g, 'node'))
    if (err !== null) refuse(type, 'mountpoint', `is not a topic prefix (${err})`)
  }
  for (const key of ['keepalive', 'reconnect_interval', 'retry_interval']) {
    if (config[key] === undefined) continue
    const value = parseDuration(String(config[key]))
    if (value === undefined) refuse(type, key, `must be a duration such as 30s, got ${JSON.stringify(config[key])}`)
    if (key === 'reconnect_interval' && value === 0) refuse(type, key, 'must be more than 0')
  }
}

/** `host:port` with a port of 1 to 65535, or why not. */
function hostPortError (address: string): string | null {
  const m = /^(\[[^\]]+\]|[^:\s]+):(\d+)$/.exec(address)
  if (m === null) return 'must be host:port'
  const port = Number(m[2])
  return port >= 1 && port <= 65535 ? null : 'has a port outside 1-65535'
}

/** Where a rule bridge's settings come from beside its resource. */
export interface BridgePlace {
  /** This node's name (`${node}` in the mountpoint). */
  node: string
  /** `node.data_dir`, resolved (the disk buffer). */
  dataDir: string
  /** What relative certificate paths resolve against (the configuration's root). */
  root: string
}

/**
 * The bridge settings of a `bridge_mqtt` or `bridge_rpc` resource at `place`. Certificate and
 * key files are resolved against the configuration's root and left out when absent (EMQ X's
 * defaults name etc/certs files that may not exist).
 */
export function bridgeConfigOf (resource: Resource, place: BridgePlace): BridgeConfig {
  const { node, dataDir, root } = place
  const c = resource.config
  const rpc = resource.type === 'bridge_rpc'
  const disk = c.disk_cache === 'on'
  const given = (key: string): string | undefined => typeof c[key] === 'string' && c[key] !== '' ? c[key] as string : undefined
  const baseId = given('client_id') ?? given('clientid') ?? 'client'
  const clientId = c.append !== false && !rpc ? `${baseId}_${randomBytes(8).toString('hex')}` : baseId
  const sni = given('server_name_indication')
  const file = (key: string): string | undefined => {
    const path = given(key)
    if (path === undefined) return undefined
    const full = isAbsolute(path) ? path : resolve(root, path)
    return existsSync(full) ? full : undefined
  }
  return {
    name: resource.id,
    address: String(c.address),
    kind: rpc ? 'rpc' : 'mqtt',
    protoVer: rpc ? 'mqttv4' : c.proto_ver as BridgeConfig['protoVer'],
    clientId,
    cleanStart: true, // as EMQ X's rule bridges: the buffer, not a session, keeps what is pending
    username: rpc ? undefined : given('username'),
    password: rpc ? undefined : given('password'),
    keepaliveMs: rpc ? 60_000 : ms(c.keepalive),
    bridgeMode: !rpc && c.bridge_mode === true,
    ssl: {
      enabled: !rpc && c.ssl === 'on',
      cacertfile: file('cacertfile'),
      certfile: file('certfile'),
      keyfile: file('keyfile'),
      ciphers: given('ciphers'),
      verify: c.verify === true,
      serverNameIndication: sni
    },
    reconnectIntervalMs: ms(c.reconnect_interval),
    retryIntervalMs: rpc ? 20_000 : ms(c.retry_interval),
    maxInflightBatches: MAX_INFLIGHT_BATCHES,
    mountpoint: String(c.mountpoint ?? '').replace(/\$\{node\}/g, node),
    forwards: [],
    subscriptions: [],
    queue: {
      batchCountLimit: rpc ? Number(c.batch_size) : MQTT_BATCH_SIZE,
      batchBytesLimit: 1024 * 1024,
      replayqDir: disk ? replayDirOf(dataDir, resource.id) : undefined,
      replayqSegBytes: 10 * 1024 * 1024,
      maxTotalBytes: disk ? DISK_BUFFER_BYTES : MEMORY_BUFFER_BYTES
    },
    startType: 'auto'
  }
}

/** Starts the bridge of a resource on this node. */
async function openBridge (resource: Resource, components: ResourceComponents, runtime: BridgeRuntime): Promise<BridgeResource> {
  const config = bridgeConfigOf(resource, { node: components.name, dataDir: components.dataDir, root: configRoot(components.config) })
  const logger = components.logger.child({ resource_id: resource.id })
  // no store table: a rule bridge has no forwards or subscriptions to change at run time
  const bridge = await runtime.createBridge(config, { core: components.broker.core, nodeName: components.name, logger, alarms: components.services.alarms }, runtime.link(config, components))
  await bridge.start()
  return new BridgeResource(bridge, config.queue.replayqDir)
}

/** The two bridge resource types, building their bridges with `runtime`. */
export function createBridgeResourceTypes (runtime: () => BridgeRuntime): [ResourceTypeDefinition, ResourceTypeDefinition] {
  const mqtt: ResourceTypeDefinition = {
    name: 'bridge_mqtt',
    provider: BRIDGE_APP,
    title: 'MQTT Bridge',
    description: 'MQTT Message Bridge: sends what rules select to a remote MQTT broker (v3.1, 3.1.1, 5), buffered while it is away',
    params: BRIDGE_MQTT_PARAMS,
    checkConfig (config) {
      const bad = hostPortError(String(config.address))
      if (bad !== null) refuse('bridge_mqtt', 'address', `${bad}, got ${JSON.stringify(config.address)} (a node name is bridge_rpc's)`)
      if (typeof config.pool_size === 'number' && (!Number.isInteger(config.pool_size) || config.pool_size < 1)) refuse('bridge_mqtt', 'pool_size', 'must be a whole number of at least 1')
      checkCommon('bridge_mqtt', config)
    },
    open: async (resource, components) => await openBridge(resource, components, runtime())
  }
  const rpc: ResourceTypeDefinition = {
    name: 'bridge_rpc',
    provider: BRIDGE_APP,
    title: 'RPC Bridge',
    description: 'Starling RPC Bridge: sends what rules select to a node of another Starling cluster over the cluster transport, buffered while it is away',
    params: BRIDGE_RPC_PARAMS,
    checkConfig (config) {
      if (!/^[^@\s]+@[^@\s]+$/.test(String(config.address))) refuse('bridge_rpc', 'address', `must be a node name name@host, got ${JSON.stringify(config.address)}`)
      if (!Number.isInteger(config.batch_size) || (config.batch_size as number) < 1) refuse('bridge_rpc', 'batch_size', 'must be at least 1')
      checkCommon('bridge_rpc', config)
    },
    open: async (resource, components) => await openBridge(resource, components, runtime())
  }
  return [mqtt, rpc]
}

/**
 * `data_to_mqtt_broker`: the selected data, as `payload_tmpl` renders it (empty: the whole
 * selection as JSON), to `forward_topic` (empty: the triggering message's topic; `${key}`
 * placeholders allowed), at the triggering message's QoS (or `qos`) and retain flag, through
 * the bound bridge.
 */
export const dataToMqttBrokerAction: ActionDefinition = {
  name: 'data_to_mqtt_broker',
  aliases: ['bridge_mqtt:data_to_mqtt_broker'],
  app: BRIDGE_APP,
  for: 'message.publish',
  types: ['bridge_mqtt', 'bridge_rpc'],
  title: 'Data bridge to MQTT Broker',
  description: 'Bridge Data to MQTT Broker: the selected data to a remote broker through an MQTT or RPC bridge resource',
  params: {
    $resource: { type: 'string', required: true, title: 'Resource ID', description: 'Bind a resource to this action (a bridge_mqtt or bridge_rpc resource)' },
    forward_topic: {
      type: 'string', format: 'topic', required: false, default: '', title: 'Forward Topic',
      description: 'The topic used when forwarding the message (${key} placeholders allowed); empty: the topic of the message that triggered the rule. The resource\'s mountpoint is prefixed'
    },
    payload_tmpl: {
      type: 'string', format: 'template', required: false, default: '', title: 'Payload Template',
      description: 'The payload, with ${key} placeholders; empty: all the selected fields as JSON'
    },
    qos: {
      type: 'integer', enum: [-1, 0, 1, 2], required: false, default: -1, title: 'QoS',
      description: 'QoS of the message sent; -1: the QoS of the message that triggered the rule'
    }
  },
  // with a disk buffer, a QoS 1/2 publisher's PUBACK/PUBREC waits until the message is in it
  // (rules/runtime.ts): what was acknowledged survives a SIGKILL of the node
  holdsPublish: (_params, resource) => resource?.config.disk_cache === 'on',
  async run (selected, ctx) {
    const instance = await ctx.instance()
    if (!(instance instanceof BridgeResource)) throw new Error(`resource ${String(ctx.params.$resource)} is not running on this node`)
    const forwardTopic = String(ctx.params.forward_topic ?? '')
    const topic = forwardTopic === '' ? String(ctx.env.topic ?? '') : fillString(forwardTopic, selected)
    const bad = topicNameError(topic)
    if (bad !== null) throw new Error(`forward topic ${JSON.stringify(topic)} is not a topic name (${bad})`)
    const template = String(ctx.params.payload_tmpl ?? '')
    const payload = template === '' ? JSON.stringify(selected) : fillString(template, selected)
    const wanted = Number(ctx.params.qos ?? -1)
    const qos = wanted >= 0 ? wanted : Number(ctx.env.qos ?? 0)
    const clientId = ctx.env.clientid ?? ctx.env.client_id
    await instance.send({
      cmd: 'publish',
      topic,
      payload: Buffer.from(payload),
      qos: qos === 1 || qos === 2 ? qos : 0,
      retain: lookup(ctx.env, 'flags.retain') === true,
      dup: false,
      ...(typeof clientId === 'string' ? { clientId } : {})
    })
  }
}

/** The bridge runtime of plugins/bridge_mqtt/: its MQTT link, or the cluster's RPC bridge transport. */
const NODE_BRIDGE_RUNTIME: BridgeRuntime = {
  link (config, components) {
    if (config.kind === 'mqtt') return (hooks) => createMqttLink(config, hooks, { logger: components.logger.child({ bridge: config.name }) })
    const transport = components.cluster?.bridgeTransport
    if (transport === undefined) throw new Error(`RPC bridge ${config.name}: this node has no cluster transport to reach ${config.address}`)
    return transport.link(config.address)
  },
  createBridge
}

/** `bridge_mqtt` and `bridge_rpc`, on plugins/bridge_mqtt/. */
export const BRIDGE_RESOURCE_TYPES: readonly ResourceTypeDefinition[] = createBridgeResourceTypes(() => NODE_BRIDGE_RUNTIME)

/** Every bridge action. */
export const BRIDGE_ACTIONS: readonly ActionDefinition[] = [dataToMqttBrokerAction]
