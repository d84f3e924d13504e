/**
 * The columns a rule's SQL reads, built from a hooks-bus event, in the rule's dialect:
 *
 * - `spec`: the spec's names per event (section Rule SQL): `client_id`, `username`, `event`,
 *   and per event `id`, `topic`, `payload`, `peername`, `qos`, `timestamp`, `auth_result`,
 *   `mountpoint`, `clean_start`, `connack`, ... plus `node` and `timestamp` everywhere.
 * - `emqx4`: EMQ X 4.4's names and event names (`clientid`, `peerhost`, `flags`,
 *   `pub_props` with MQTT property names, `publish_received_at`, `message.delivered`,
 *   `session.subscribed` ...), as its `verify_event_fields` test asserts them.
 *
 * The payload is a UTF-8 string in both (the SQL decodes JSON when it reads
 * `payload.<key>` or calls `json_decode`), or a Buffer when its bytes are not UTF-8, so a
 * binary payload (avro, protobuf) reaches `schema_decode` intact. An absent username or
 * mountpoint is `null`.
 * The runtime builds them once per event and dialect, never per rule; rules must not change
 * them.
 */
import { isUtf8 } from 'node:buffer'
import type {
  ConnectedEvent, DeliverEvent, DisconnectedEvent, DroppedEvent, HookEventMap, HookName, MessageEvent, SubscribeEvent
} from '../node/hooks.js'

/** Columns of one event. */
export type Columns = Record<string, unknown>

/** EMQ X 4's event names for our hooks. */
export const EMQX4_EVENT_NAMES: Record<HookName, string> = {
  'message.publish': 'message.publish',
  'message.deliver': 'message.delivered',
  'message.acked': 'message.acked',
  'message.dropped': 'message.dropped',
  'client.connected': 'client.connected',
  'client.disconnected': 'client.disconnected',
  'client.subscribe': 'session.subscribed',
  'client.unsubscribe': 'session.unsubscribed'
}

const isMessage = (hook: HookName): boolean => hook.startsWith('message.')

/** The `payload` column: the text, or the bytes when they are not UTF-8 (decoding would lose them). */
const payloadColumn = (payload: Buffer): string | Buffer => isUtf8(payload) ? payload.toString('utf8') : payload

/** The spec-dialect columns of `event`. */
export function specColumns<K extends HookName> (hook: K, event: HookEventMap[K]): Columns {
  const e = event as HookEventMap[HookName]
  const cols: Columns = { event: hook, client_id: e.client_id, username: e.username ?? null, timestamp: e.timestamp, node: e.node }
  if (isMessage(hook)) {
    const m = e as MessageEvent
    cols.id = m.id
    cols.topic = m.topic
    cols.payload = payloadColumn(m.payload)
    cols.peername = m.peername
    cols.qos = m.qos
    if (hook === 'message.deliver') {
      cols.auth_result = (m as DeliverEvent).auth_result
      cols.mountpoint = (m as DeliverEvent).mountpoint ?? null
    }
    if (hook === 'message.dropped') cols.reason = (m as DroppedEvent).reason
    return cols
  }
  const c = e as ConnectedEvent & DisconnectedEvent & SubscribeEvent
  cols.auth_result = c.auth_result
  cols.mountpoint = c.mountpoint ?? null
  cols.peername = c.peername
  if (hook === 'client.connected') {
    cols.clean_start = c.clean_start
    cols.connack = c.connack
    cols.connected_at = c.connected_at
    cols.is_bridge = c.is_bridge
    cols.keepalive = c.keepalive
    cols.proto_ver = c.proto_ver
  } else if (hook === 'client.disconnected') {
    cols.reason_code = c.reason_code
  } else {
    cols.topic_filters = c.topic_filters
    cols.topic = c.topic
    cols.qos = c.qos
  }
  return cols
}

/** The broker's in-flight limit (`mqtt.max_inflight`), for `receive_maximum`; 32 when not given. */
export type MaxInflight = () => number

const DEFAULT_MAX_INFLIGHT: MaxInflight = () => 32

/**
 * The EMQ X 4 columns of `event` (EMQ X 4.4 `emqx_rule_events` `eventmsg_*`): one set per
 * event, except subscribe and unsubscribe, which give one set per topic filter (EMQ X 4 fired
 * `session.subscribed` per filter). Every message event has `headers`: the publisher's
 * `peerhost` and `username` (EMQ X's message headers, without its internal ones).
 */
export function emqx4Columns<K extends HookName> (hook: K, event: HookEventMap[K], maxInflight: MaxInflight = DEFAULT_MAX_INFLIGHT): Columns[] {
  const e = event as HookEventMap[HookName]
  if (hook === 'message.publish') {
    // the busiest event: one literal, the keys in the order below, and room for the
    // `metadata` the runtime sets per rule (no property added to the object afterwards)
    const m = e as MessageEvent
    const username = m.username ?? null
    return [{
      event: 'message.publish',
      clientid: m.client_id,
      username,
      timestamp: m.timestamp,
      node: m.node,
      id: m.id,
      payload: payloadColumn(m.payload),
      peerhost: m.peerhost,
      topic: m.topic,
      qos: m.qos,
      flags: m.flags,
      pub_props: mqttProperties(m.pub_props),
      publish_received_at: m.publish_received_at,
      headers: { peerhost: m.peerhost, username },
      metadata: undefined
    }]
  }
  const base: Columns = { event: EMQX4_EVENT_NAMES[hook], clientid: e.client_id, username: e.username ?? null, timestamp: e.timestamp, node: e.node }
  if (isMessage(hook)) {
    const m = e as MessageEvent
    base.id = m.id
    base.payload = payloadColumn(m.payload)
    base.peerhost = m.peerhost
    base.topic = m.topic
    base.qos = m.qos
    base.flags = m.flags
    base.pub_props = mqttProperties(m.pub_props)
    base.publish_received_at = m.publish_received_at
    if (hook === 'message.deliver' || hook === 'message.acked') {
      // peerhost, clientid and username are the receiver's; the headers are the publisher's
      base.from_clientid = m.from_client_id ?? null
      base.from_username = m.from_username ?? null
      base.headers = { peerhost: m.from_peerhost ?? null, username: m.from_username ?? null }
    } else {
      base.headers = { peerhost: m.peerhost, username: m.username ?? null }
    }
    if (hook === 'message.acked') base.puback_props = {}
    if (hook === 'message.dropped') base.reason = (m as DroppedEvent).reason
    return [base]
  }
  if (hook === 'client.connected') {
    const c = e as ConnectedEvent
    Object.assign(base, {
      mountpoint: c.mountpoint ?? null,
      peername: c.peername,
      sockname: c.sockname,
      proto_name: c.proto_name,
      proto_ver: c.proto_ver,
      keepalive: c.keepalive,
      clean_start: c.clean_start,
      // EMQ X: the client's Receive Maximum (the broker's in-flight limit when it sent none),
      // at most that limit
      receive_maximum: receiveMaximum(c.conn_props, maxInflight),
      expiry_interval: c.expiry_interval,
      is_bridge: c.is_bridge,
      conn_props: mqttProperties(c.conn_props),
      connected_at: c.connected_at
    })
    return [base]
  }
  if (hook === 'client.disconnected') {
    const d = e as DisconnectedEvent
    Object.assign(base, {
      reason: d.reason,
      peername: d.peername,
      sockname: d.sockname,
      proto_name: d.proto_name,
      proto_ver: d.proto_ver,
      disconn_props: {},
      disconnected_at: d.disconnected_at
    })
    return [base]
  }
  const s = e as SubscribeEvent
  const props = hook === 'client.subscribe' ? 'sub_props' : 'unsub_props'
  return s.topic_filters.map(f => ({ ...base, peerhost: s.peerhost, topic: f.topic, qos: f.qos, [props]: {} }))
}

function receiveMaximum (connProps: Record<string, unknown> | undefined, maxInflight: MaxInflight): number {
  const limit = maxInflight()
  const asked = connProps?.receiveMaximum
  return typeof asked === 'number' && asked < limit ? asked : limit
}

/** mqtt-packet's camelCase property names as MQTT 5 names them (`Message-Expiry-Interval`). */
export function mqttProperties (props: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (props === undefined || props === null) return out
  for (const key in props) {
    if (!Object.hasOwn(props, key)) continue
    const value = props[key]
    if (key === 'userProperties') out['User-Property'] = value
    else out[key.replace(/^[a-z]/, c => c.toUpperCase()).replace(/[A-Z]/g, (c, i: number) => i === 0 ? c : '-' + c)] = Buffer.isBuffer(value) ? value.toString('utf8') : value
  }
  return out
}
