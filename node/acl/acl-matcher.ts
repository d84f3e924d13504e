/**
 * Deciding a publish or subscribe against compiled ACL rules, as EMQ X's
 * `emqx_access_rule:match/3` does: the rules for that action are tried in file order and
 * the first whose who and topics both match decides; when none matches, `acl_nomatch` does.
 *
 * A subscribe is decided on its filter: a rule topic matches a subscribed filter when the
 * rule topic, read as a filter, matches the subscribed filter read as a topic name
 * (`$SYS/#` matches the subscription `$SYS/brokers/+/clients/#`); `{eq, T}` matches only the
 * filter `T` itself. Shared subscriptions (`$share/<group>/t`, `$queue/t`) are decided on `t`.
 *
 * Hot path: one call per uncached publish. It splits the topic once, lazily, and allocates
 * nothing else.
 */
import type { AccessClient } from '../mqtt/broker.js'
import { parseShared } from '../mqtt/topic.js'
import type { AclPermission, AclRule, AclTopic, AclWho } from './acl-rules.js'
import { cidrContains, parseIpAddress, type IpAddress } from './ip-address.js'

/** What a check is about. */
export type AclAction = 'publish' | 'subscribe'

/** Rules ready to decide. */
export interface AclRuleSet {
  /** The rules, in file order. */
  readonly rules: readonly AclRule[]
  /** The decision when no rule matches (`acl_nomatch`). */
  readonly nomatch: AclPermission
  /** The first matching rule's permission, else `nomatch`. */
  decide: (client: AccessClient, action: AclAction, topic: string) => AclPermission
  /** The first matching rule (null when none matches): for tests and tracing. */
  matchingRule: (client: AccessClient, action: AclAction, topic: string) => AclRule | null
}

const DOLLAR = 36

/** Builds the rule set; `nomatch` is the `acl_nomatch` setting. */
export function createAclRuleSet (rules: readonly AclRule[], nomatch: AclPermission): AclRuleSet {
  // EMQ X keeps one list per action (emqx_mod_acl_internal); a pubsub rule is in both
  const publish = rules.filter(r => r.access !== 'subscribe')
  const subscribe = rules.filter(r => r.access !== 'publish')

  function matchingRule (client: AccessClient, action: AclAction, topic: string): AclRule | null {
    const list = action === 'publish' ? publish : subscribe
    let levels: string[] | null = null
    const name = action === 'subscribe' ? realFilter(topic) : topic
    for (let i = 0; i < list.length; i++) {
      const rule = list[i]
      if (rule.who === null) return rule
      if (!matchWho(rule.who, client)) continue
      levels ??= name.split('/')
      if (matchTopics(rule.topics, name, levels, client)) return rule
    }
    return null
  }

  return {
    rules,
    nomatch,
    matchingRule,
    decide: (client, action, topic) => matchingRule(client, action, topic)?.permission ?? nomatch
  }
}

/** The filter a (possibly shared) subscription really subscribes to. */
function realFilter (filter: string): string {
  if (filter.charCodeAt(0) !== DOLLAR) return filter
  try {
    return parseShared(filter)?.filter ?? filter
  } catch {
    return filter // malformed shared filters are refused before the ACL runs
  }
}

/** Whether `client` is the rule's who. */
function matchWho (who: AclWho, client: AccessClient): boolean {
  switch (who.kind) {
    case 'all': return true
    case 'user': return who.name === null || who.name === client.username
    case 'client': return who.id === null || who.id === client.clientId
    case 'ipaddr': {
      const ip = peerAddress(client.peerhost)
      if (ip === null) return false
      for (const block of who.blocks) if (cidrContains(block, ip)) return true
      return false
    }
    case 'and':
      for (const item of who.items) if (!matchWho(item, client)) return false
      return true
    case 'or':
      for (const item of who.items) if (matchWho(item, client)) return true
      return false
  }
}

function matchTopics (topics: readonly AclTopic[], name: string, levels: string[], client: AccessClient): boolean {
  for (let i = 0; i < topics.length; i++) {
    const t = topics[i]
    if (t.eq ? t.text === name : matchLevels(t, levels, client)) return true
  }
  return false
}

/**
 * MQTT filter matching on levels, with the rule's `%u`/`%c` levels standing for the
 * client's username/client id. A client without a username never matches a `%u` level, and
 * a username or client id that is `+` or `#` never matches one (it would act as a wildcard).
 * A wildcard first level never matches a name starting with `$` [MQTT-4.7.2-1].
 */
function matchLevels (topic: AclTopic, name: string[], client: AccessClient): boolean {
  const filter = topic.levels
  const first = filter[0]
  if ((first === '#' || first === '+') && name[0].charCodeAt(0) === DOLLAR) return false
  for (let i = 0; i < filter.length; i++) {
    const f = filter[i]
    if (f === '#') return true
    if (i >= name.length) return false
    if (f === '+') continue
    if (topic.placeholders) {
      // a username or client id that is itself a wildcard level stands for nothing: `users/%u/#`
      // must not let the client named `#` subscribe to every user's topics
      if (f === '%u') {
        if (client.username === undefined || client.username !== name[i] || isWildcardLevel(name[i])) return false
        continue
      }
      if (f === '%c') {
        if (client.clientId !== name[i] || isWildcardLevel(name[i])) return false
        continue
      }
    }
    if (f !== name[i]) return false
  }
  return filter.length === name.length
}

function isWildcardLevel (level: string): boolean {
  return level === '#' || level === '+'
}

/** Parsed peer addresses by text: clients reconnect from the same few addresses. */
const peerAddresses = new Map<string, IpAddress | null>()
const PEER_ADDRESS_MEMO_SIZE = 4096

function peerAddress (peerhost: string): IpAddress | null {
  let ip = peerAddresses.get(peerhost)
  if (ip === undefined) {
    if (peerAddresses.size >= PEER_ADDRESS_MEMO_SIZE) peerAddresses.clear()
    ip = parseIpAddress(peerhost)
    peerAddresses.set(peerhost, ip)
  }
  return ip
}
