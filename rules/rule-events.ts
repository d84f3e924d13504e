/**
 * `GET /api/v3/rule_events` (EMQ X 4.4's `emqx_rule_events:event_info/0`): the events a rule
 * can hang on, as the dashboard's rule editor lists them. Each is `{event, title, description,
 * test_columns, columns, sql_example}`: `event` is the FROM topic (`$events/message_delivered`;
 * `$events/message_publish` for messages, which a FROM names by topic filter), `title` and
 * `description` in English and Chinese, `test_columns` the columns the SQL tester's form
 * offers with example values, `columns` every column the event has (rules/sql/event-examples.ts,
 * the ones the runtime builds), `sql_example` a rule on it.
 *
 * EMQ X 4.4's later releases also listed `client.connack`, `client.check_acl_complete` and
 * `delivery.dropped`; Starling's hooks bus has no such events, so a rule cannot hang on them
 * and they are not listed (docs/rules.md).
 */
import { emqx4ExampleColumns } from './sql/event-examples.js'

/** A text in the dashboard's two languages. */
export interface I18nText {
  en: string
  zh: string
}

/** One event as `GET /rule_events` lists it. */
export interface RuleEventInfo {
  event: string
  title: I18nText
  description: I18nText
  /** Column name to example value: what the SQL tester's form is filled with. */
  test_columns: Record<string, unknown>
  columns: string[]
  sql_example: string
}

interface EventSpec {
  name: string
  title: I18nText
  description: I18nText
  test: Record<string, unknown>
  sql: string
}

const PAYLOAD = '{"msg": "hello"}'
const PUBLISHED = { clientid: 'c_emqx', username: 'u_emqx', topic: 't/a', qos: 1, payload: PAYLOAD }
const DELIVERED = { from_clientid: 'c_emqx_1', from_username: 'u_emqx_1', clientid: 'c_emqx_2', username: 'u_emqx_2', topic: 't/a', qos: 1, payload: PAYLOAD }
const SUBSCRIBED = { clientid: 'c_emqx', username: 'u_emqx', topic: 't/a', qos: 1 }

/** The events in EMQ X 4.4's order. */
const EVENTS: readonly EventSpec[] = [
  {
    name: 'message.publish',
    title: { en: 'message publish', zh: '消息发布' },
    description: { en: 'a client published a message (FROM names its topic filters)', zh: '客户端发布了一条消息（FROM 写主题过滤器）' },
    test: PUBLISHED,
    sql: 'SELECT payload.msg as msg FROM "t/#" WHERE msg = \'hello\''
  },
  {
    name: 'message.delivered',
    title: { en: 'message delivered', zh: '消息已投递' },
    description: { en: 'a message was delivered to a subscriber', zh: '消息已投递给订阅者' },
    test: DELIVERED,
    sql: 'SELECT * FROM "$events/message_delivered" WHERE topic =~ \'t/#\''
  },
  {
    name: 'message.acked',
    title: { en: 'message acked', zh: '消息已确认' },
    description: { en: 'a subscriber acknowledged a QoS 1 or 2 message', zh: '订阅者确认了一条 QoS 1 或 2 的消息' },
    test: DELIVERED,
    sql: 'SELECT * FROM "$events/message_acked" WHERE topic =~ \'t/#\''
  },
  {
    name: 'message.dropped',
    title: { en: 'message routing-drop', zh: '消息转发丢弃' },
    description: { en: 'a message was dropped while being routed, usually because nobody subscribes to its topic', zh: '消息在转发时被丢弃，通常因为主题没有订阅者' },
    test: { reason: 'no_subscribers', ...PUBLISHED },
    sql: 'SELECT * FROM "$events/message_dropped" WHERE topic =~ \'t/#\''
  },
  {
    name: 'client.connected',
    title: { en: 'client connected', zh: '客户端连接' },
    description: { en: 'a client connected', zh: '客户端建立了连接' },
    test: { clientid: 'c_emqx', username: 'u_emqx', peername: '127.0.0.1:52918' },
    sql: 'SELECT * FROM "$events/client_connected"'
  },
  {
    name: 'client.disconnected',
    title: { en: 'client disconnected', zh: '客户端断开' },
    description: { en: 'a client disconnected', zh: '客户端断开了连接' },
    test: { clientid: 'c_emqx', username: 'u_emqx', reason: 'normal' },
    sql: 'SELECT * FROM "$events/client_disconnected"'
  },
  {
    name: 'session.subscribed',
    title: { en: 'session subscribed', zh: '会话订阅' },
    description: { en: 'a session subscribed to a topic filter', zh: '会话订阅了一个主题过滤器' },
    test: SUBSCRIBED,
    sql: 'SELECT * FROM "$events/session_subscribed" WHERE topic =~ \'t/#\''
  },
  {
    name: 'session.unsubscribed',
    title: { en: 'session unsubscribed', zh: '会话取消订阅' },
    description: { en: 'a session unsubscribed from a topic filter', zh: '会话取消了一个主题过滤器的订阅' },
    test: SUBSCRIBED,
    sql: 'SELECT * FROM "$events/session_unsubscribed" WHERE topic =~ \'t/#\''
  }
]

/** The FROM topic of EMQ X 4 event `name`: `$events/<name with _ for .>`. */
function eventTopic (name: string): string {
  return `$events/${name.replace('.', '_')}`
}

/** Every event with its columns, in EMQ X 4.4's order (the columns' names do not depend on the node). */
export function ruleEvents (): RuleEventInfo[] {
  const inputs = { node: 'starling@127.0.0.1', now: 0, id: '' }
  return EVENTS.map(e => ({
    event: eventTopic(e.name),
    title: e.title,
    description: e.description,
    test_columns: { ...e.test },
    columns: Object.keys(emqx4ExampleColumns(e.name, inputs)),
    sql_example: e.sql
  }))
}
