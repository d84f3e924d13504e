/**
 * Publish, subscribe and unsubscribe on behalf of clients (spec: Endpoints, Publish,
 * subscribe, unsubscribe): the service functions the `/api/v3/mqtt/*` handlers call, and
 * the node operations behind them (`mqtt.publish`, `mqtt.subscribe`, `mqtt.unsubscribe`).
 *
 * - A publish runs on the node that got the request; the cluster forwards it to the nodes
 *   with matching routes, as for any publish.
 * - A subscribe or unsubscribe acts on the named client's session wherever the client is
 *   connected: every node is asked, the one that has the client acts, and code 112 means
 *   no node had it connected (EMQ X 4 answered the same for an offline persistent session).
 *
 * Choices where the spec is open are in docs/api.md (Publish, subscribe, unsubscribe).
 */
import type { StarlingNode } from '../node.js'
import type { NodeRpc } from '../rpc.js'
import type { StarlingConfig } from '../config/index.js'
import type { Broker } from '../mqtt/broker.js'
import { AclDeniedError, ApiError, BadTopicError, ClientOfflineError, InternalError, MissingParameterError, WrongTypeError } from '../errors.js'
import { SHARE_MARKER, filterError, parseShared, topicNameError } from '../mqtt/topic.js'
import type { ClientView, PublishMessage } from '../mqtt/core.js'

/** Client id a publish is made as when the request names none (EMQ X's `http`). */
export const DEFAULT_PUBLISHER_ID = 'http'

/** aedes' own topic-level ceiling, which applies when `mqtt.max_topic_levels` is 0. */
const AEDES_MAX_LEVELS = 100

/** The body of `POST /mqtt/publish` (after its schema): `topic` and/or `topics` is required. */
export interface PublishRequest {
  topic?: string
  /** EMQ X's alternative: several topics separated by commas. */
  topics?: string
  /** Default `''`. */
  payload?: string
  /** How `payload` is written: `plain` (UTF-8 text, default) or `base64` (binary). */
  encoding?: 'plain' | 'base64'
  qos?: 0 | 1 | 2
  retain?: boolean
  /** The client id the message is published as; default {@link DEFAULT_PUBLISHER_ID}. */
  client_id?: string
}

/** The body of `POST /mqtt/subscribe` and `/mqtt/unsubscribe` (after its schema). */
export interface SubscribeRequest {
  topic?: string
  topics?: string
  /** Subscribe only; default 0. */
  qos?: 0 | 1 | 2
  client_id: string
}

/**
 * What the service functions use of the node: its configuration (the topic checks), its
 * RPC and its name (a publish runs on this node, a subscribe on the client's).
 */
export type MqttComponents = Pick<StarlingNode, 'config' | 'rpc' | 'name'>

/** What the `mqtt.*` operations use of the node: its configuration (the topic checks) and its MQTT core. */
export type MqttOperationComponents = Pick<StarlingNode, 'config' | 'broker'>

/** Arguments of the `mqtt.publish` operation (JSON: the payload travels as base64). */
interface PublishArgs { topic: string, payload: string, qos: 0 | 1 | 2, retain: boolean, client_id: string }
/** Arguments of `mqtt.subscribe` / `mqtt.unsubscribe`. */
interface SessionArgs { client_id: string, topics: string[], qos?: 0 | 1 | 2 }

/** The topics of a request: `topic`, then each of the comma-separated `topics`; 107 when none. */
export function requestTopics (req: { topic?: string, topics?: string }): string[] {
  const topics: string[] = []
  if (req.topic !== undefined) topics.push(req.topic)
  if (req.topics !== undefined) for (const t of req.topics.split(',')) topics.push(t.trim())
  if (topics.length === 0) throw new MissingParameterError('missing parameter topic (or topics, a comma-separated list)')
  return topics
}

function maxLevels (config: StarlingConfig): number {
  const configured = config['mqtt.max_topic_levels']
  return configured > 0 ? configured : AEDES_MAX_LEVELS
}

/** Throws 115 unless `topic` is a topic name a client could publish to. */
export function checkTopicName (config: StarlingConfig, topic: string): void {
  const problem = topicNameError(topic, maxLevels(config)) ??
    (topic.startsWith('$SYS/') ? '$SYS/ topics are published by the broker only' : null)
  if (problem !== null) throw new BadTopicError(`bad topic ${JSON.stringify(topic)}: ${problem}`)
}

/**
 * Throws 115 unless `filter` is a filter this node accepts: valid [MQTT-4.7.1], within
 * `mqtt.max_topic_levels`, and, for a subscribe, using only the features that are on
 * (`mqtt.shared_subscription`, `mqtt.wildcard_subscription`; an unsubscribe may still remove
 * a filter subscribed before a feature was turned off).
 */
export function checkTopicFilter (config: StarlingConfig, filter: string, subscribe = true): void {
  const bad = (why: string): ApiError => new BadTopicError(`bad topic filter ${JSON.stringify(filter)}: ${why}`)
  let shared
  try {
    shared = parseShared(filter)
  } catch (err) {
    throw bad((err as Error).message)
  }
  const real = shared === null ? filter : shared.filter
  const problem = filterError(real, maxLevels(config))
  if (problem !== null) throw bad(problem)
  if (!subscribe) return
  if (shared !== null && !config['mqtt.shared_subscription']) throw bad('shared subscriptions are turned off (mqtt.shared_subscription)')
  if (!config['mqtt.wildcard_subscription'] && /[+#]/.test(real)) throw bad('wildcard subscriptions are turned off (mqtt.wildcard_subscription)')
}

/** The payload bytes; 108 for `base64` text that is not base64. */
export function decodePayload (payload: string, encoding: 'plain' | 'base64' = 'plain'): Buffer {
  if (encoding === 'plain') return Buffer.from(payload, 'utf8')
  const bytes = Buffer.from(payload, 'base64')
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(payload) || bytes.toString('base64').replace(/=+$/, '') !== payload.replace(/=+$/, '')) {
    throw new WrongTypeError('parameter payload is not base64 text (encoding is base64)')
  }
  return bytes
}

/**
 * Publishes a message as `client_id` on this node (to each topic of the request). Every
 * topic is checked before anything is published: 115 for a bad one, 108 for a payload
 * that does not decode, and nothing is sent.
 */
export async function publishMessage (node: MqttComponents, req: PublishRequest): Promise<void> {
  const topics = requestTopics(req)
  for (const topic of topics) checkTopicName(node.config, topic)
  const payload = decodePayload(req.payload ?? '', req.encoding).toString('base64')
  const base = { payload, qos: req.qos ?? 0, retain: req.retain ?? false, client_id: req.client_id ?? DEFAULT_PUBLISHER_ID }
  for (const topic of topics) await node.rpc.call(node.name, 'mqtt.publish', { ...base, topic } satisfies PublishArgs)
}

/**
 * Subscribes the connected client `client_id` to the request's filters (QoS `qos`,
 * default 0), on the node it is connected to. 115 for a bad filter (nothing subscribed),
 * 112 when the client is not connected anywhere.
 */
export async function subscribeClient (node: MqttComponents, req: SubscribeRequest): Promise<void> {
  const topics = requestTopics(req)
  for (const filter of topics) checkTopicFilter(node.config, filter)
  await onClientNode(node.rpc, 'mqtt.subscribe', { client_id: req.client_id, topics, qos: req.qos ?? 0 })
}

/** Unsubscribes the connected client `client_id` from the request's filters; 115, 112 as subscribe. */
export async function unsubscribeClient (node: MqttComponents, req: SubscribeRequest): Promise<void> {
  const topics = requestTopics(req)
  for (const filter of topics) checkTopicFilter(node.config, filter, false)
  await onClientNode(node.rpc, 'mqtt.unsubscribe', { client_id: req.client_id, topics })
}

/**
 * Runs session operation `op` on every node; the node where the client is connected acts
 * and answers true, the others false. A refusal from that node is thrown as it is.
 */
async function onClientNode (rpc: NodeRpc, op: string, args: SessionArgs): Promise<void> {
  const answers = await rpc.callAll<boolean>(op, args)
  if (answers.some(a => a.ok && a.result)) return
  for (const a of answers) if (!a.ok) throw a.error
  throw new ClientOfflineError(`client ${args.client_id} is not online`)
}

/** The connected client of `clientId` on this node, or undefined. */
function connectedClient (broker: Broker, clientId: string): ClientView | undefined {
  const client = broker.core.client(clientId)
  return client !== undefined && client.connected && !client.closed ? client : undefined
}

/** A filter as aedes must see it: `$share/` becomes the wire layer's marker (see wire-subscribe.ts). */
function aedesFilter (filter: string): string {
  return filter.startsWith('$share/') ? SHARE_MARKER + filter.slice('$share/'.length) : filter
}

async function publishOp (node: MqttOperationComponents, args: PublishArgs): Promise<void> {
  checkTopicName(node.config, args.topic)
  const packet: PublishMessage = {
    cmd: 'publish',
    topic: args.topic,
    payload: Buffer.from(args.payload, 'base64'),
    qos: args.qos,
    retain: args.retain,
    dup: false,
    // the publisher: message events report it and No Local [MQTT-3.8.3-3] skips it
    clientId: args.client_id
  }
  await node.broker.core.publish(packet).catch((err: Error) => { throw new InternalError(`publish failed: ${err.message}`) })
}

async function subscribeOp (node: MqttOperationComponents, args: SessionArgs): Promise<boolean> {
  for (const filter of args.topics) checkTopicFilter(node.config, filter)
  const client = connectedClient(node.broker, args.client_id)
  if (client === undefined) return false
  // the ACL applies as to the client's own SUBSCRIBE; refused: nothing is subscribed
  const acl = node.broker.accessControl
  for (const filter of args.topics) {
    if (acl !== null && await acl.check(client.access, 'subscribe', filter) === 'deny') {
      throw new AclDeniedError(args.client_id, filter)
    }
  }
  const subscriptions = args.topics.map(topic => ({ topic: aedesFilter(topic), qos: args.qos ?? 0 }))
  await client.subscribe(subscriptions).catch((err: Error) => { throw new InternalError(`subscribe failed: ${err.message}`) })
  return true
}

async function unsubscribeOp (node: MqttOperationComponents, args: SessionArgs): Promise<boolean> {
  for (const filter of args.topics) checkTopicFilter(node.config, filter, false)
  const client = connectedClient(node.broker, args.client_id)
  if (client === undefined) return false
  const filters = args.topics.map(aedesFilter)
  // a persistent session's stored subscriptions go too (ClientView.unsubscribe)
  await client.unsubscribe(filters).catch((err: Error) => { throw new InternalError(`unsubscribe failed: ${err.message}`) })
  return true
}

/** Registers `mqtt.publish`, `mqtt.subscribe` (true when the client was here) and `mqtt.unsubscribe`. */
export function registerMqttOperations (node: StarlingNode): void {
  node.rpc.register('mqtt.publish', (args) => publishOp(node, args))
  node.rpc.register('mqtt.subscribe', (args) => subscribeOp(node, args))
  node.rpc.register('mqtt.unsubscribe', (args) => unsubscribeOp(node, args))
}
