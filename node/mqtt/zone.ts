/**
 * Zones and mountpoints in the MQTT core (EMQ X 4's `zone.<name>.*`, docs/migration.md):
 * each connection belongs to the zone of its listener (`listener.<kind>.external.zone`),
 * whose settings it is held to; and a client with a mountpoint (its listener's, else its
 * zone's) has it put before every topic it publishes and every filter it subscribes to, and
 * taken off every topic delivered to it, as EMQ X's `emqx_mountpoint` did: the client sees
 * its own topic space, the rest of the broker (rules, bridges, other clients, the API) the
 * mounted topics.
 */
import { parseForceShutdown, parseRate } from '../config/value-types.js'
import { zoneNames, zoneValue } from '../config/zones.js'
import type { RateLimits } from './read-gate.js'
import { SHARE_MARKER } from './topic.js'
import type { ForceShutdown } from './wire-types.js'

/** What a zone sets for its connections (each falls back to the node-wide key when the zone does not set it). */
export interface ZoneSettings {
  readonly name: string
  /** `zone.<name>.allow_anonymous`. */
  readonly allowAnonymous: boolean
  /** `zone.<name>.acl_deny_action`; undefined: the node's (`acl_deny_action`, which the ACL service keeps). */
  readonly aclDenyAction: 'ignore' | 'disconnect' | undefined
  readonly maxQos: number
  readonly retainAvailable: boolean
  readonly wildcardSubscription: boolean
  readonly sharedSubscription: boolean
  /** 0 = no limit. */
  readonly maxTopicLevels: number
  readonly strictMode: boolean
  /** `zone.<name>.enable_acl`: off, the zone's clients may publish and subscribe to anything. */
  readonly enableAcl: boolean
  /** `zone.<name>.enable_ban`: off, the banned list is not checked at CONNECT. */
  readonly enableBan: boolean
  /** `zone.<name>.bypass_auth_plugins`: the auth chain is skipped, allow_anonymous decides. */
  readonly bypassAuthPlugins: boolean
  /** `zone.<name>.mountpoint`, with `%c` / `%u` unexpanded; empty: none. */
  readonly mountpoint: string
  readonly rateLimits: RateLimits | null
  readonly forceShutdown: ForceShutdown | null
}

/** The settings of every zone a loaded config uses (`external` always), by name. */
export function zonesFrom (cfg: Record<string, any>): Record<string, ZoneSettings> {
  const zones: Record<string, ZoneSettings> = {}
  for (const name of zoneNames(cfg)) zones[name] = zoneFrom(cfg, name)
  return zones
}

function zoneFrom (cfg: Record<string, any>, name: string): ZoneSettings {
  const v = (key: string): any => zoneValue(cfg, name, key)
  const messagesIn = parseRate(String(v('rate_limit.conn_messages_in')), false) ?? null
  const bytesIn = parseRate(String(v('rate_limit.conn_bytes_in')), true) ?? null
  return {
    name,
    allowAnonymous: v('allow_anonymous'),
    aclDenyAction: cfg[`zone.${name}.acl_deny_action`],
    maxQos: v('max_qos_allowed'),
    retainAvailable: v('retain_available'),
    wildcardSubscription: v('wildcard_subscription'),
    sharedSubscription: v('shared_subscription'),
    maxTopicLevels: v('max_topic_levels'),
    strictMode: v('strict_mode'),
    enableAcl: v('enable_acl'),
    enableBan: v('enable_ban'),
    bypassAuthPlugins: v('bypass_auth_plugins'),
    mountpoint: v('mountpoint'),
    rateLimits: messagesIn === null && bytesIn === null ? null : { messagesIn, bytesIn },
    forceShutdown: parseForceShutdown(String(v('force_shutdown_policy'))) ?? null
  }
}

/**
 * A mountpoint for one client: `%c` its client id, `%u` its username (left as `%u` when it
 * has none, as EMQ X 4.4 did). Empty stays empty (no mountpoint).
 */
export function expandMountpoint (mountpoint: string, clientId: string, username: string | undefined): string {
  if (mountpoint === '' || !mountpoint.includes('%')) return mountpoint
  return mountpoint.replaceAll('%c', clientId).replaceAll('%u', username ?? '%u')
}

/** A published topic with the mountpoint put before it. */
export function mountTopic (mountpoint: string, topic: string): string {
  return mountpoint + topic
}

/**
 * A subscription filter with the mountpoint put before it; for a shared subscription, before
 * the filter inside it (`$share/g/t` -> `$share/g/<mp>t`, `$queue/t` -> `$queue/<mp>t`), in
 * whichever form the wire left it (its `$share` marker).
 */
export function mountFilter (mountpoint: string, filter: string): string {
  if (filter.startsWith('$queue/')) return '$queue/' + mountpoint + filter.slice(7)
  for (const prefix of ['$share/', SHARE_MARKER]) {
    if (!filter.startsWith(prefix)) continue
    const slash = filter.indexOf('/', prefix.length)
    if (slash === -1) return filter
    return filter.slice(0, slash + 1) + mountpoint + filter.slice(slash + 1)
  }
  return mountpoint + filter
}

/** A delivered topic with the mountpoint taken off (a topic outside it is left as it is). */
export function unmountTopic (mountpoint: string, topic: string): string {
  return topic.startsWith(mountpoint) ? topic.slice(mountpoint.length) : topic
}
