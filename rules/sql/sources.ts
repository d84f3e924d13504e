/**
 * What FROM names, and which dialect that makes the statement.
 *
 * - The spec's dialect: FROM names hook events in double quotes (`"message.publish"`,
 *   `"client.connected"` ...); columns carry the spec's names (`client_id`, `peername` ...).
 * - EMQ X 4's dialect: FROM names topic filters (`"t/#"`: message.publish on a matching
 *   topic) and `$events/<name>` for the other events; columns carry EMQ X 4's names
 *   (`clientid`, `peerhost`, `publish_received_at`, `pub_props` ...).
 *
 * A FROM item that is one of the spec's event names is that event even though it is also a
 * valid topic name; the two dialects cannot be mixed in one statement.
 */
import { filterError } from '../../node/mqtt/topic.js'
import type { FromItem } from './ast.js'
import { SqlError } from './errors.js'

/** The hook events of the node's hooks bus (spec: Rule-engine trigger events). */
export const HOOK_EVENTS = [
  'message.publish', 'message.deliver', 'message.acked', 'message.dropped',
  'client.connected', 'client.disconnected', 'client.subscribe', 'client.unsubscribe'
] as const

/** A hook event name. */
export type HookEvent = typeof HOOK_EVENTS[number]

/** The dialect a statement is written in, decided by its FROM. */
export type SqlDialect = 'spec' | 'emqx4'

/**
 * EMQ X 4's `$events/...` topics, the hook each listens to and EMQ X's event name (the
 * `event` column). `session_subscribed` fires once per topic filter of a SUBSCRIBE.
 */
export const EMQX_EVENT_TOPICS: Readonly<Record<string, { hook: HookEvent, emqxEvent: string }>> = {
  '$events/message_publish': { hook: 'message.publish', emqxEvent: 'message.publish' },
  '$events/message_delivered': { hook: 'message.deliver', emqxEvent: 'message.delivered' },
  '$events/message_acked': { hook: 'message.acked', emqxEvent: 'message.acked' },
  '$events/message_dropped': { hook: 'message.dropped', emqxEvent: 'message.dropped' },
  '$events/client_connected': { hook: 'client.connected', emqxEvent: 'client.connected' },
  '$events/client_disconnected': { hook: 'client.disconnected', emqxEvent: 'client.disconnected' },
  '$events/session_subscribed': { hook: 'client.subscribe', emqxEvent: 'session.subscribed' },
  '$events/session_unsubscribed': { hook: 'client.unsubscribe', emqxEvent: 'session.unsubscribed' }
}

/** One FROM item, resolved. */
export interface SqlSource {
  /** As written between the quotes. */
  text: string
  /** The hook event it listens to. */
  event: HookEvent
  /** EMQ X 4's name of the event (`session.subscribed` ...); the hook name in the spec's dialect. */
  eventName: string
  /** For an EMQ X 4 topic filter: the filter a publish's topic must match. */
  topicFilter?: string
}

/** FROM resolved: dialect, sources, the hooks listened to and the topic filters. */
export interface ResolvedFrom {
  dialect: SqlDialect
  sources: SqlSource[]
  /** Distinct hook events, in FROM order. */
  events: HookEvent[]
  /**
   * The topic filters a publish must match (EMQ X 4 dialect), or null when publishes are
   * not restricted by topic (spec dialect, `$events/message_publish`) or not listened to.
   */
  topicFilters: string[] | null
}

const SPEC_EVENTS: ReadonlySet<string> = new Set(HOOK_EVENTS)

/** Resolves the FROM items; throws {@link SqlError} for an unknown event or a bad filter. */
export function resolveFrom (sql: string, items: FromItem[]): ResolvedFrom {
  const sources: SqlSource[] = []
  let dialect: SqlDialect | null = null
  for (const item of items) {
    const spec = SPEC_EVENTS.has(item.text)
    const itemDialect: SqlDialect = spec ? 'spec' : 'emqx4'
    if (dialect !== null && dialect !== itemDialect) {
      throw new SqlError(`cannot mix spec events ("message.publish" ...) with topic filters or $events/ in FROM: "${item.text}"`, sql, item.at)
    }
    dialect = itemDialect
    sources.push(spec ? { text: item.text, event: item.text as HookEvent, eventName: item.text } : emqxSource(sql, item))
  }
  const events: HookEvent[] = []
  for (const s of sources) if (!events.includes(s.event)) events.push(s.event)
  const filters = sources.filter(s => s.topicFilter !== undefined).map(s => s.topicFilter as string)
  const allPublishes = sources.some(s => s.event === 'message.publish' && s.topicFilter === undefined)
  return {
    dialect: dialect as SqlDialect,
    sources,
    events,
    topicFilters: filters.length > 0 && !allPublishes ? filters : null
  }
}

function emqxSource (sql: string, item: FromItem): SqlSource {
  if (item.text.startsWith('$events/')) {
    const known = EMQX_EVENT_TOPICS[item.text]
    if (known === undefined) {
      const names = Object.keys(EMQX_EVENT_TOPICS).join(', ')
      throw new SqlError(`unknown event "${item.text}" in FROM; known: ${names}`, sql, item.at)
    }
    return { text: item.text, event: known.hook, eventName: known.emqxEvent }
  }
  const problem = filterError(item.text)
  if (problem !== null) {
    const hint = item.text.includes('.') ? ` (events of the spec: ${HOOK_EVENTS.join(', ')})` : ''
    throw new SqlError(`invalid topic filter "${item.text}" in FROM: ${problem}${hint}`, sql, item.at)
  }
  return { text: item.text, event: 'message.publish', eventName: 'message.publish', topicFilter: item.text }
}
