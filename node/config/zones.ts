/**
 * Zones, as EMQ X 4 had them: `zone.<name>.<key>` sets a key for the clients of the listeners
 * whose `listener.<kind>.external.zone` names that zone (`external` by default, the zone of
 * EMQ X's public listeners). Any zone name is accepted; a zone key that is not set falls
 * back to the node-wide key it refines (`zone.internal.max_qos_allowed` to
 * `mqtt.max_qos_allowed`), else to its default.
 *
 * Three kinds of zone keys (docs/migration.md, "Zones"):
 * - per zone: enforced for each connection by its listener's zone ({@link ZONE_KEYS} with
 *   `perZone`): the MQTT capabilities, anonymous access, ACL and banned checks, the rate
 *   limits and force-shutdown policy, and the mountpoint;
 * - node-wide: Starling holds them once per node (`mqtt.<key>`), so zone `external`'s value
 *   is the node's (it stands for `mqtt.<key>`, as the zone of EMQ X's own listeners) and
 *   another zone's value that differs is accepted with one warning line saying it does not
 *   apply;
 * - the rest: accepted when their value is what Starling always does (`upgrade_qos = off`),
 *   else with one warning line ({@link ZONE_ONLY}).
 */
import { convertValue } from './convert-value.js'
import { CONFIG_SCHEMA, MOUNTPOINT, type ConfigKey } from './schema.js'
import type { ConfigValue, KeySpec } from './schema-types.js'

/** A zone key enforced per connection by the zone of its listener. */
export interface PerZoneKey {
  readonly perZone: true
  /** The node-wide key it refines (its value when the zone does not set it), if any. */
  readonly node?: ConfigKey
  readonly spec: KeySpec
}

/** A zone key Starling holds once per node: `node` is the key `zone.external.<key>` stands for. */
export interface NodeWideZoneKey {
  readonly perZone: false
  readonly node: ConfigKey
  readonly spec: KeySpec
}

/** A zone key Starling has no setting for: `same` are the values that say what Starling always does. */
export interface FixedZoneKey {
  readonly same: readonly string[]
  /** Why another value has no effect: `erlang` (a VM setting) or what Starling does instead. */
  readonly erlang?: true
  readonly why: string
}

const node = (key: ConfigKey): KeySpec => CONFIG_SCHEMA[key]

/** The zone keys Starling applies, by the part after `zone.<name>.`. */
export const ZONE_KEYS: Readonly<Record<string, PerZoneKey | NodeWideZoneKey>> = {
  // per zone (enforced per connection)
  allow_anonymous: { perZone: true, node: 'allow_anonymous', spec: node('allow_anonymous') },
  acl_deny_action: { perZone: true, node: 'acl_deny_action', spec: node('acl_deny_action') },
  max_qos_allowed: { perZone: true, node: 'mqtt.max_qos_allowed', spec: node('mqtt.max_qos_allowed') },
  retain_available: { perZone: true, node: 'mqtt.retain_available', spec: node('mqtt.retain_available') },
  wildcard_subscription: { perZone: true, node: 'mqtt.wildcard_subscription', spec: node('mqtt.wildcard_subscription') },
  shared_subscription: { perZone: true, node: 'mqtt.shared_subscription', spec: node('mqtt.shared_subscription') },
  max_topic_levels: { perZone: true, node: 'mqtt.max_topic_levels', spec: node('mqtt.max_topic_levels') },
  strict_mode: { perZone: true, node: 'mqtt.strict_mode', spec: node('mqtt.strict_mode') },
  enable_acl: { perZone: true, spec: { type: 'bool', default: 'on', live: false, doc: 'Check the ACL for the zone\'s clients; off: every publish and subscribe is allowed (EMQ X\'s internal zone).' } },
  enable_ban: { perZone: true, spec: { type: 'bool', default: 'on', live: false, doc: 'Check the banned list when the zone\'s clients connect.' } },
  bypass_auth_plugins: { perZone: true, spec: { type: 'bool', default: 'false', live: false, doc: 'Skip the auth plugins for the zone\'s clients: allow_anonymous (the zone\'s) alone decides.' } },
  mountpoint: { perZone: true, spec: { type: 'string', default: '', allowEmpty: true, pattern: MOUNTPOINT, hint: 'a topic prefix without wildcards, such as devicebound/ or user/%u/', live: false, doc: 'Topic prefix of the zone\'s clients (%c client id, %u username): added to what they publish and subscribe, taken off what they receive. A listener\'s own mountpoint wins.' } },
  'rate_limit.conn_messages_in': { perZone: true, spec: node('zone.external.rate_limit.conn_messages_in') },
  'rate_limit.conn_bytes_in': { perZone: true, spec: node('zone.external.rate_limit.conn_bytes_in') },
  force_shutdown_policy: { perZone: true, spec: node('zone.external.force_shutdown_policy') },
  // node-wide (zone external's value is the node's)
  enable_flapping_detect: { perZone: false, node: 'zone.external.enable_flapping_detect', spec: node('zone.external.enable_flapping_detect') },
  idle_timeout: { perZone: false, node: 'mqtt.idle_timeout', spec: node('mqtt.idle_timeout') },
  max_packet_size: { perZone: false, node: 'mqtt.max_packet_size', spec: node('mqtt.max_packet_size') },
  max_clientid_len: { perZone: false, node: 'mqtt.max_clientid_len', spec: node('mqtt.max_clientid_len') },
  max_topic_alias: { perZone: false, node: 'mqtt.max_topic_alias', spec: node('mqtt.max_topic_alias') },
  server_keepalive: { perZone: false, node: 'mqtt.server_keepalive', spec: node('mqtt.server_keepalive') },
  keepalive_backoff: { perZone: false, node: 'mqtt.keepalive_backoff', spec: node('mqtt.keepalive_backoff') },
  max_subscriptions: { perZone: false, node: 'mqtt.max_subscriptions', spec: node('mqtt.max_subscriptions') },
  max_inflight: { perZone: false, node: 'mqtt.max_inflight', spec: node('mqtt.max_inflight') },
  retry_interval: { perZone: false, node: 'mqtt.retry_interval', spec: node('mqtt.retry_interval') },
  max_awaiting_rel: { perZone: false, node: 'mqtt.max_awaiting_rel', spec: node('mqtt.max_awaiting_rel') },
  await_rel_timeout: { perZone: false, node: 'mqtt.await_rel_timeout', spec: node('mqtt.await_rel_timeout') },
  session_expiry_interval: { perZone: false, node: 'mqtt.session_expiry_interval', spec: node('mqtt.session_expiry_interval') },
  max_mqueue_len: { perZone: false, node: 'mqtt.max_mqueue_len', spec: node('mqtt.max_mqueue_len') },
  mqueue_store_qos0: { perZone: false, node: 'mqtt.mqueue_store_qos0', spec: node('mqtt.mqueue_store_qos0') },
  ignore_loop_deliver: { perZone: false, node: 'mqtt.ignore_loop_deliver', spec: node('mqtt.ignore_loop_deliver') }
}

/** EMQ X 4.4's zone keys Starling has no setting for. */
export const ZONE_ONLY: Readonly<Record<string, FixedZoneKey>> = {
  force_gc_policy: { same: [], erlang: true, why: 'forces an Erlang process\'s garbage collection' },
  enable_stats: { same: ['on', 'true'], why: 'Starling always keeps each connection\'s statistics' },
  upgrade_qos: { same: ['off', 'false'], why: 'Starling delivers at the subscription\'s QoS at most, never upgraded' },
  mqueue_priorities: { same: ['none'], why: 'Starling\'s session queues have no topic priorities' },
  mqueue_default_priority: { same: ['highest', 'lowest'], why: 'Starling\'s session queues have no topic priorities' },
  exclusive_subscription: { same: ['false', 'off'], why: 'Starling has no exclusive subscriptions ($exclusive/)' },
  use_username_as_clientid: { same: ['false', 'off'], why: 'Starling keeps the client\'s own client id' },
  tcp_keepalive: { same: ['none'], why: 'Starling does not set TCP keepalive on MQTT sockets' },
  response_information: { same: [], why: 'Starling sends no Response Information in CONNACK' },
  'conn_congestion.alarm': { same: ['off', 'false'], why: 'Starling raises no conn_congestion alarm' },
  'conn_congestion.min_alarm_sustain_duration': { same: [], why: 'Starling raises no conn_congestion alarm' },
  'quota.conn_messages_routing': { same: [], why: 'Starling has no routing quotas (see zone.<name>.rate_limit.*)' },
  'quota.overall_messages_routing': { same: [], why: 'Starling has no routing quotas (see zone.<name>.rate_limit.*)' }
}

/** A zone name: EMQ X's atoms, letters, digits and `_`. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_]*$/

/** `zone.internal.max_inflight` -> `{ zone: 'internal', key: 'max_inflight' }`; undefined for another key. */
export function parseZoneKey (key: string): { zone: string, key: string } | undefined {
  if (!key.startsWith('zone.')) return undefined
  const rest = key.slice('zone.'.length)
  const dot = rest.indexOf('.')
  if (dot <= 0) return undefined
  const zone = rest.slice(0, dot)
  return ZONE_NAME.test(zone) ? { zone, key: rest.slice(dot + 1) } : undefined
}

/**
 * The value of zone key `key` for clients of `zone`: the zone's own, else the node-wide
 * key it refines, else the key's default. `cfg` is a loaded config (its zone keys are
 * concrete keys, `zone.internal.allow_anonymous`).
 */
export function zoneValue (cfg: Readonly<Record<string, unknown>>, zone: string, key: string): ConfigValue {
  const own = cfg[`zone.${zone}.${key}`]
  if (own !== undefined) return own as ConfigValue
  const entry = ZONE_KEYS[key]
  if (entry === undefined) throw new Error(`${key} is not a zone key`)
  if (entry.node !== undefined) return cfg[entry.node] as ConfigValue
  return convertValue(`zone.${zone}.${key}`, entry.spec, entry.spec.default ?? '', `default of zone.<name>.${key}`)
}

/** The zone names a config uses: `external`, every listener's, and every zone a key sets. */
export function zoneNames (cfg: Readonly<Record<string, unknown>>): string[] {
  const names = new Set<string>(['external'])
  for (const key of Object.keys(cfg)) {
    const z = parseZoneKey(key)
    if (z !== undefined) names.add(z.zone)
    if (/^listener\.[a-z]+\.[A-Za-z][A-Za-z0-9_]*\.zone$/.test(key) && typeof cfg[key] === 'string') names.add(cfg[key])
  }
  return [...names]
}
