/**
 * Example columns per event, which the SQL tester fills before merging the caller's `ctx`
 * over them (EMQ X 4.4 `emqx_rule_events:columns_with_exam/1`, as listed in the cases file's
 * `_meta.sqltester_defaults`), in both dialects:
 *
 * - EMQ X 4: EMQ X's own examples, column names and values as EMQ X 4.4 has them.
 * - spec: the same examples under the spec's column names (`client_id`, `peername` ...) and
 *   only the fields the spec lists per event (spec: Rule SQL, events table).
 */
import type { SqlDialect, SqlSource } from './sources.js'

/** What changes per test run: the node name, the time and a fresh message id. */
export interface ExampleInputs {
  node: string
  /** Milliseconds since the epoch, used for every timestamp. */
  now: number
  /** A 32-digit hex message id. */
  id: string
}

function userProps (props: Record<string, unknown>): Record<string, unknown> {
  return { ...props, 'User-Property': { foo: 'bar' }, 'User-Property-Pairs': [{ key: 'foo' }, { value: 'bar' }] }
}

const PAYLOAD = '{"msg": "hello"}'

function emqxMessage (event: string, x: ExampleInputs, delivered: boolean): Record<string, unknown> {
  const who = delivered
    ? { from_clientid: 'c_emqx_1', from_username: 'u_emqx_1', clientid: 'c_emqx_2', username: 'u_emqx_2' }
    : { clientid: 'c_emqx', username: 'u_emqx' }
  return {
    event,
    id: x.id,
    ...who,
    payload: PAYLOAD,
    peerhost: '192.168.0.10',
    topic: 't/a',
    qos: 1,
    flags: {},
    publish_received_at: x.now,
    pub_props: userProps({ 'Payload-Format-Indicator': 0, 'Message-Expiry-Interval': 30 }),
    timestamp: x.now,
    node: x.node
  }
}

function emqxExample (event: string, x: ExampleInputs): Record<string, unknown> {
  const client = { clientid: 'c_emqx', username: 'u_emqx' }
  switch (event) {
    case 'message.delivered': return emqxMessage(event, x, true)
    case 'message.acked': return { ...emqxMessage(event, x, true), puback_props: userProps({ 'Reason-String': 'OK' }) }
    case 'message.dropped': return { ...emqxMessage(event, x, false), reason: 'no_subscribers' }
    case 'client.connected': return {
      event,
      ...client,
      mountpoint: undefined,
      peername: '192.168.0.10:56431',
      sockname: '0.0.0.0:1883',
      proto_name: 'MQTT',
      proto_ver: 5,
      keepalive: 60,
      clean_start: true,
      expiry_interval: 3600,
      is_bridge: false,
      connected_at: x.now,
      conn_props: userProps({ 'Session-Expiry-Interval': 7200, 'Receive-Maximum': 32 }),
      timestamp: x.now,
      node: x.node
    }
    case 'client.disconnected': return {
      event,
      reason: 'normal',
      ...client,
      peername: '192.168.0.10:56431',
      sockname: '0.0.0.0:1883',
      proto_name: 'MQTT',
      proto_ver: 5,
      disconnected_at: x.now,
      disconn_props: userProps({
        'Session-Expiry-Interval': 7200,
        'Reason-String': 'Redirect to another server',
        'Server Reference': '192.168.22.129'
      }),
      timestamp: x.now,
      node: x.node
    }
    case 'session.subscribed':
    case 'session.unsubscribed': return {
      event,
      ...client,
      peerhost: '192.168.0.10',
      topic: 't/a',
      qos: 1,
      [event === 'session.subscribed' ? 'sub_props' : 'unsub_props']: userProps({}),
      timestamp: x.now,
      node: x.node
    }
    default: return emqxMessage('message.publish', x, false)
  }
}

function specExample (event: string, x: ExampleInputs): Record<string, unknown> {
  const common = { event, client_id: 'c_emqx', username: 'u_emqx' }
  const message = { ...common, id: x.id, topic: 't/a', payload: PAYLOAD, peername: '192.168.0.10:56431', qos: 1, timestamp: x.now }
  const session = { ...common, auth_result: 'success', mountpoint: undefined, peername: '192.168.0.10:56431' }
  switch (event) {
    case 'message.deliver': return { ...message, auth_result: 'success', mountpoint: undefined }
    case 'message.dropped': return { ...message, node: x.node }
    case 'client.connected': return {
      ...session,
      clean_start: true,
      connack: 0,
      connected_at: x.now,
      is_bridge: false,
      keepalive: 60,
      proto_ver: 4
    }
    case 'client.disconnected': return { ...session, reason_code: 'normal' }
    case 'client.subscribe':
    case 'client.unsubscribe': return { ...session, topic_filters: [{ topic: 't/a', qos: 1 }], topic: 't/a', qos: 1 }
    default: return message // message.publish, message.acked
  }
}

/** The EMQ X 4 example columns of event `eventName` (`message.publish`, `session.subscribed` ...). */
export function emqx4ExampleColumns (eventName: string, inputs: ExampleInputs): Record<string, unknown> {
  return emqxExample(eventName, inputs)
}

/**
 * The example columns of the event `source` names, in `dialect`'s names. Keys whose value
 * is undefined (EMQ X's `undefined`) are present but empty.
 */
export function exampleColumns (source: SqlSource, dialect: SqlDialect, inputs: ExampleInputs): Record<string, unknown> {
  return dialect === 'spec' ? specExample(source.event, inputs) : emqxExample(source.eventName, inputs)
}
