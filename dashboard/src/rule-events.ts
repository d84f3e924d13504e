/**
 * The events a rule's SQL can name after FROM, and the context form of the SQL tester for
 * each: which columns a user may set and sensible values to start from (docs/rules.md,
 * "Events and columns", both dialects). The tester (`POST /rules?test=true`) fills every
 * column it is not given with its own example, so these are the ones worth changing.
 * The fields are parameter specs, so the page draws them with ParamsForm like any params.
 */
import type { ParamSpecs } from './components/params'

/** What the first FROM item of a statement names. */
export interface RuleEvent {
  /** The event's name, as `GET /actions?for=` takes it (`message.publish`, `client.connected` ...). */
  event: string
  /** What the page says it is. */
  label: string
  /** The tester's context fields. */
  fields: ParamSpecs
}

const str = (title: string, value: string, description = ''): ParamSpecs[string] =>
  ({ type: 'string', required: false, title, description, default: value })
const int = (title: string, value: number, description = ''): ParamSpecs[string] =>
  ({ type: 'integer', required: false, title, description, default: value })
const bool = (title: string, value: boolean): ParamSpecs[string] =>
  ({ type: 'boolean', required: false, title, description: '', default: value })
const obj = (title: string, value: unknown, description = ''): ParamSpecs[string] =>
  ({ type: 'object', required: false, title, description, default: value })

const PAYLOAD = '{"msg": "hello"}'

/** EMQ X 4 dialect: `$events/<name>` and topic filters. */
function emqxFields (name: string, topic: string): ParamSpecs {
  const client = { clientid: str('Client ID', 'c_emqx'), username: str('Username', 'u_emqx') }
  const message = {
    ...client,
    topic: str('Topic', topic),
    qos: { ...int('QoS', 1), enum: [0, 1, 2] },
    payload: { ...str('Payload', PAYLOAD, 'The message payload as text (JSON for payload.<key>)'), format: 'template' as const },
    peerhost: str('Peer host', '192.168.0.10')
  }
  switch (name) {
    case 'message.delivered':
    case 'message.acked':
      return { ...message, from_clientid: str('From client ID', 'c_emqx_1'), from_username: str('From username', 'u_emqx_1') }
    case 'message.dropped':
      return { ...message, reason: str('Reason', 'no_subscribers') }
    case 'client.connected':
      return {
        ...client,
        peername: str('Peer name', '192.168.0.10:56431'),
        sockname: str('Socket name', '0.0.0.0:1883'),
        proto_name: str('Protocol name', 'MQTT'),
        proto_ver: { ...int('Protocol version', 5), enum: [3, 4, 5] },
        keepalive: int('Keepalive', 60),
        clean_start: bool('Clean start', true),
        expiry_interval: int('Expiry interval', 3600),
        is_bridge: bool('Is bridge', false)
      }
    case 'client.disconnected':
      return {
        ...client,
        reason: str('Reason', 'normal'),
        peername: str('Peer name', '192.168.0.10:56431'),
        sockname: str('Socket name', '0.0.0.0:1883'),
        proto_name: str('Protocol name', 'MQTT'),
        proto_ver: { ...int('Protocol version', 5), enum: [3, 4, 5] }
      }
    case 'session.subscribed':
    case 'session.unsubscribed':
      return { ...client, peerhost: str('Peer host', '192.168.0.10'), topic: str('Topic', topic), qos: { ...int('QoS', 1), enum: [0, 1, 2] } }
    default:
      return message
  }
}

/** Spec dialect: `"message.publish"`, `"client.connected"` ... */
function specFields (name: string): ParamSpecs {
  const common = { client_id: str('Client ID', 'c_emqx'), username: str('Username', 'u_emqx') }
  const session = { ...common, peername: str('Peer name', '192.168.0.10:56431'), auth_result: str('Auth result', 'success') }
  const message = {
    ...common,
    topic: str('Topic', 't/a'),
    qos: { ...int('QoS', 1), enum: [0, 1, 2] },
    payload: { ...str('Payload', PAYLOAD, 'The message payload as text'), format: 'template' as const },
    peername: str('Peer name', '192.168.0.10:56431')
  }
  switch (name) {
    case 'message.dropped': return { ...message, reason: str('Reason', 'no_subscribers') }
    case 'client.connected': return {
      ...session,
      clean_start: bool('Clean start', true),
      connack: int('CONNACK code', 0),
      is_bridge: bool('Is bridge', false),
      keepalive: int('Keepalive', 60),
      proto_ver: { ...int('Protocol version', 4), enum: [3, 4, 5] }
    }
    case 'client.disconnected': return { ...session, reason_code: str('Reason code', 'normal') }
    case 'client.subscribe':
    case 'client.unsubscribe': return {
      ...session,
      topic_filters: obj('Topic filters', [{ topic: 't/a', qos: 1 }], 'JSON: [{"topic": ..., "qos": ...}]'),
      topic: str('Topic', 't/a'),
      qos: { ...int('QoS', 1), enum: [0, 1, 2] }
    }
    default: return message
  }
}

/** The spec dialect's events (FROM "<event>"). */
const SPEC_EVENTS = new Set(['message.publish', 'message.deliver', 'message.acked', 'message.dropped',
  'client.connected', 'client.disconnected', 'client.subscribe', 'client.unsubscribe'])

/** A topic in the filter `filter` (wildcards replaced), for the tester's `topic`. */
export function topicIn (filter: string): string {
  return filter.split('/').map(level => level === '#' ? '1' : level === '+' ? 'a' : level).join('/')
}

/** The first FROM item of `sql` (what is between the double quotes), or null. */
export function firstFrom (sql: string): string | null {
  const m = /\bfrom\s+"([^"]*)"/i.exec(sql.replace(/--[^\n]*/g, ''))
  return m === null ? null : m[1]
}

/** The event the first FROM item of `sql` names, with its tester fields; null when there is none yet. */
export function ruleEvent (sql: string): RuleEvent | null {
  const from = firstFrom(sql)
  if (from === null || from === '') return null
  if (SPEC_EVENTS.has(from)) return { event: from, label: `${from} (spec dialect)`, fields: specFields(from) }
  if (from.startsWith('$events/')) {
    const name = from.slice('$events/'.length)
    const event = name === 'message_publish' ? 'message.publish' : name.replace('_', '.')
    return { event, label: `${event} (${from})`, fields: emqxFields(event, 't/a') }
  }
  return { event: 'message.publish', label: `message.publish on topics matching ${from}`, fields: emqxFields('message.publish', topicIn(from)) }
}
