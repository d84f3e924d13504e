/**
 * The JSON bodies svc_web_hook POSTs, field for field those of EMQ X 4.4's emqx_web_hook
 * (docs/web-hook.md lists them): one body per event, and one per topic filter of a
 * subscribe or unsubscribe. `username` is null when the client gave none; `ipaddress` is the
 * client's IP; message events carry `ts` in milliseconds and the payload encoded as
 * `web.hook.body.encoding_of_payload_field` says.
 */
import type {
  BusEventMap, ConnackEvent, ConnectedEvent, ConnectEvent, DeliverEvent, DisconnectedEvent, DroppedEvent,
  MessageEvent, SessionSubscriptionEvent, SessionTerminatedEvent, SubscribeEvent, SubscriptionOpts
} from '../../node/hooks.js'
import type { WebHookEvent } from './config.js'
import { WEB_HOOK_EVENTS } from './config.js'

/** How the payload field is written. */
export type PayloadEncoding = 'plain' | 'base64' | 'base62'

/** One body and the topic a rule's filter is matched against (undefined: no topic). */
export interface HookBody {
  topic: string | undefined
  body: Record<string, unknown>
}

/** EMQ X's base62 digits: A-Z, a-z, 0-8; 61..63 are written `9A`, `9B`, `9C`. */
function base62Char (v: number): string {
  if (v < 26) return String.fromCharCode(65 + v)
  if (v < 52) return String.fromCharCode(97 + v - 26)
  if (v < 61) return String.fromCharCode(48 + v - 52)
  return '9' + String.fromCharCode(65 + v - 61)
}

/**
 * EMQ X's `emqx_base62:encode/1`: the bytes read as 6-bit groups, each written as a base62
 * digit; a last group of 4 or 2 bits is written as its own value (no padding).
 */
export function base62 (bytes: Buffer): string {
  let out = ''
  let i = 0
  for (; i + 3 <= bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2]
    out += base62Char(n >> 18) + base62Char((n >> 12) & 63) + base62Char((n >> 6) & 63) + base62Char(n & 63)
  }
  const rest = bytes.length - i
  if (rest === 2) {
    const n = (bytes[i] << 8) | bytes[i + 1]
    out += base62Char(n >> 10) + base62Char((n >> 4) & 63) + base62Char(n & 15)
  } else if (rest === 1) {
    out += base62Char(bytes[i] >> 2) + base62Char(bytes[i] & 3)
  }
  return out
}

/** The payload field. */
export function encodePayload (payload: Buffer, encoding: PayloadEncoding): string {
  if (encoding === 'base64') return payload.toString('base64')
  if (encoding === 'base62') return base62(payload)
  return payload.toString('utf8')
}

/** EMQ X 4 parses `$share/<group>/<filter>` into the filter and a `share` option. */
function parseShared (filter: string): { topic: string, share: string | undefined } {
  if (!filter.startsWith('$share/')) return { topic: filter, share: undefined }
  const slash = filter.indexOf('/', 7)
  if (slash === -1) return { topic: filter, share: undefined }
  return { topic: filter.slice(slash + 1), share: filter.slice(7, slash) }
}

function withShare (opts: Record<string, unknown>, share: string | undefined): Record<string, unknown> {
  return share === undefined ? opts : { ...opts, share }
}

const who = (e: { node: string, client_id: string, username: string | undefined }): Record<string, unknown> =>
  ({ node: e.node, clientid: e.client_id, username: e.username ?? null })

function messageBody (action: string, m: MessageEvent, encoding: PayloadEncoding, receiver: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { action, node: m.node }
  if (receiver) {
    body.clientid = m.client_id
    body.username = m.username ?? null
  }
  const from = receiver ? m.from_client_id : m.client_id
  body.from_client_id = from === undefined || from === '' ? null : from
  body.from_username = (receiver ? m.from_username : m.username) ?? null
  body.topic = m.topic
  body.qos = m.qos
  body.retain = m.flags.retain
  body.payload = encodePayload(m.payload, encoding)
  body.ts = m.publish_received_at
  return body
}

function subscriptionBodies (action: string, e: SubscribeEvent, withOpts: boolean): HookBody[] {
  return e.topic_filters.map((f, i) => {
    const { topic, share } = parseShared(f.topic)
    const opts: SubscriptionOpts = e.sub_opts?.[i] ?? { qos: f.qos, rh: 0, rap: 0, nl: 0 }
    return { topic, body: { action, ...who(e), topic, opts: withShare(withOpts ? { ...opts } : {}, share) } }
  })
}

/** The bodies of one event of `event` (several for a subscribe or unsubscribe of several filters). */
export function bodiesOf<E extends WebHookEvent> (event: E, e: BusEventMap[typeof WEB_HOOK_EVENTS[E]], encoding: PayloadEncoding): HookBody[] {
  const action = event.replace('.', '_')
  switch (event) {
    case 'client.connect': {
      const c = e as ConnectEvent
      return [{ topic: undefined, body: { action, ...who(c), ipaddress: c.peerhost, keepalive: c.keepalive, proto_ver: c.proto_ver } }]
    }
    case 'client.connack': {
      const c = e as ConnackEvent
      const body: Record<string, unknown> = { action, ...who(c), ipaddress: c.peerhost, keepalive: c.keepalive, proto_ver: c.proto_ver, conn_ack: c.conn_ack }
      if (c.connected_at !== undefined) body.connected_at = c.connected_at
      return [{ topic: undefined, body }]
    }
    case 'client.connected': {
      const c = e as ConnectedEvent
      return [{ topic: undefined, body: { action, ...who(c), ipaddress: c.peerhost, keepalive: c.keepalive, proto_ver: c.proto_ver, connected_at: c.connected_at } }]
    }
    case 'client.disconnected': {
      const c = e as DisconnectedEvent
      return [{ topic: undefined, body: { action, ...who(c), reason: c.reason, connected_at: c.connected_at, disconnected_at: c.disconnected_at } }]
    }
    case 'client.subscribe':
      return subscriptionBodies(action, e as SubscribeEvent, true)
    case 'client.unsubscribe':
      return subscriptionBodies(action, e as SubscribeEvent, false)
    case 'session.subscribed':
    case 'session.unsubscribed': {
      const s = e as SessionSubscriptionEvent
      const { topic, share } = parseShared(s.topic)
      const body: Record<string, unknown> = { action, ...who(s), topic }
      if (event === 'session.subscribed') body.opts = withShare({ ...s.opts }, share)
      return [{ topic, body }]
    }
    case 'session.terminated': {
      const s = e as SessionTerminatedEvent
      return [{ topic: undefined, body: { action, ...who(s), reason: s.reason } }]
    }
    case 'message.publish': {
      const m = e as MessageEvent
      return [{ topic: m.topic, body: messageBody(action, m, encoding, false) }]
    }
    case 'message.delivered':
    case 'message.acked': {
      const m = e as DeliverEvent
      return [{ topic: m.topic, body: messageBody(action, m, encoding, true) }]
    }
    case 'message.dropped': {
      const m = e as DroppedEvent
      return [{ topic: m.topic, body: { ...messageBody(action, m, encoding, false), reason: m.reason } }]
    }
  }
  return []
}
