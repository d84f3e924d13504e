/**
 * The search filters of the connection and subscription lists (EMQ X 4.4's query
 * parameters `_like_clientid`, `_like_username`, `ip_address`, `proto_name`, `proto_ver`;
 * `clientid`, `topic`, `qos`, `_match_topic`): read from a query string once, checked, and
 * applied by each node to its own items, so a search over a large cluster sends only what
 * matches. The API reads them (api/routes/monitoring-clients.ts); docs/api.md lists them.
 */
import { BadQosError, BadTopicError, WrongTypeError } from '../errors.js'
import { topicMatches, topicNameError } from '../mqtt/topic.js'
import type { Connection } from './connections.js'
import type { Subscription } from './subscriptions.js'

/** What a connection list may be narrowed to (every field given must match). */
export interface ConnectionSearch {
  /** Part of the client id (case-sensitive). */
  like_clientid?: string
  /** Part of the user name (case-sensitive). */
  like_username?: string
  /** The client's IP address, exactly. */
  ip_address?: string
  /** `MQTT` or `MQIsdp`. */
  proto_name?: string
  /** 3, 4 or 5. */
  proto_ver?: number
}

/** What a subscription list may be narrowed to (every field given must match). */
export interface SubscriptionSearch {
  /** The client id, exactly. */
  clientid?: string
  /** The topic filter, exactly as listed (`$share/g/t` for a shared one). */
  topic?: string
  qos?: number
  /** A topic name the subscription's filter matches (its real filter for a shared one). */
  match_topic?: string
}

type Query = Record<string, string | undefined>

/** `query[name]` when given and not empty. */
function text (query: Query, name: string): string | undefined {
  const v = query[name]
  return v === undefined || v === '' ? undefined : v
}

/** Reads a connection search from a query string; 108 for a `proto_ver` that is not 3, 4 or 5. */
export function connectionSearchOf (query: Query): ConnectionSearch {
  const search: ConnectionSearch = {}
  for (const [param, field] of [['_like_clientid', 'like_clientid'], ['_like_username', 'like_username'], ['ip_address', 'ip_address'], ['proto_name', 'proto_name']] as const) {
    const v = text(query, param)
    if (v !== undefined) search[field] = v
  }
  const ver = text(query, 'proto_ver')
  if (ver !== undefined) {
    if (!/^[345]$/.test(ver)) throw new WrongTypeError(`proto_ver must be 3, 4 or 5, not '${ver}'`)
    search.proto_ver = Number(ver)
  }
  return search
}

/** Reads a subscription search from a query string; 116 for a bad `qos`, 115 for a `_match_topic` that is no topic name. */
export function subscriptionSearchOf (query: Query): SubscriptionSearch {
  const search: SubscriptionSearch = {}
  const clientid = text(query, 'clientid')
  if (clientid !== undefined) search.clientid = clientid
  const topic = text(query, 'topic')
  if (topic !== undefined) search.topic = topic
  const qos = text(query, 'qos')
  if (qos !== undefined) {
    if (!/^[012]$/.test(qos)) throw new BadQosError('parameter qos must be 0, 1 or 2')
    search.qos = Number(qos)
  }
  const match = text(query, '_match_topic')
  if (match !== undefined) {
    const why = topicNameError(match)
    if (why !== null) throw new BadTopicError(`bad topic "${match}" in _match_topic: ${why}`)
    search.match_topic = match
  }
  return search
}

/** True when `search` has no field: the whole list. */
export function isEmptySearch (search: object): boolean {
  return Object.keys(search).length === 0
}

/** True when connection `c` matches every field of `search`. */
export function connectionMatches (c: Connection, search: ConnectionSearch): boolean {
  if (search.like_clientid !== undefined && !c.client_id.includes(search.like_clientid)) return false
  if (search.like_username !== undefined && (c.username === 'undefined' || !c.username.includes(search.like_username))) return false
  if (search.ip_address !== undefined && c.ipaddress !== search.ip_address) return false
  if (search.proto_name !== undefined && c.proto_name !== search.proto_name) return false
  if (search.proto_ver !== undefined && c.proto_ver !== search.proto_ver) return false
  return true
}

/** The filter a subscription's messages are matched with: a shared one's real filter. */
function realFilter (topic: string): string {
  if (topic.startsWith('$share/')) {
    const rest = topic.slice(7)
    const slash = rest.indexOf('/')
    return slash < 0 ? rest : rest.slice(slash + 1)
  }
  return topic.startsWith('$queue/') ? topic.slice(7) : topic
}

/** True when subscription `s` matches every field of `search`. */
export function subscriptionMatches (s: Subscription, search: SubscriptionSearch): boolean {
  if (search.clientid !== undefined && s.client_id !== search.clientid) return false
  if (search.topic !== undefined && s.topic !== search.topic) return false
  if (search.qos !== undefined && s.qos !== search.qos) return false
  if (search.match_topic !== undefined && !topicMatches(realFilter(s.topic), search.match_topic)) return false
  return true
}
