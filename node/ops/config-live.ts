/**
 * Which node keys a running node applies when they change (`PUT /api/v3/configs/starling`),
 * and how. A key is applied at run time only when the code that uses it reads it again:
 *
 * - the MQTT core's settings (`allow_anonymous`, `broker.shared_subscription_strategy`,
 *   the `mqtt.*` limits and timers the broker, its wires, its session limits and aedes read
 *   per connection, packet or timer tick)
 *   are written into the broker ({@link applyBrokerSettings});
 * - the ACL keys reload the ACL (rules file, `acl_nomatch`, cache, deny action);
 * - `log.level` sets the root logger's level;
 * - keys read from `node.config` each time they are used (alarm watermarks, the
 *   `sysmon.large_heap` threshold) need
 *   nothing beyond the node's new config.
 *
 * Every other key (listeners, cluster, timers set at start, keys no code reads yet) is
 * `restart_required`: changing it at run time would not change what the node does.
 * docs/api.md (Configs) lists both sets.
 */
import type { StarlingNode } from '../node.js'
import type { NodeServices } from '../services.js'
import type { ConfigKey } from '../config/index.js'
import { pinoLevel } from '../logger.js'
import { brokerSettingsFrom } from '../mqtt/settings.js'

/**
 * What the appliers use of the node: its (new) configuration, and what follows it: the
 * MQTT core, the root logger and the ACL service.
 */
export type LiveComponents = Pick<StarlingNode, 'config' | 'broker' | 'logger'> & { services: Pick<NodeServices, 'acl'> }

/** Makes the running node follow its (new) `node.config` for a group of keys; may throw to refuse. */
export type LiveApplier = (node: LiveComponents) => void

/** Writes the MQTT settings of `node.config` into the running broker (see Broker.applySettings). */
export function applyBrokerSettings (node: Pick<LiveComponents, 'broker' | 'config'>): void {
  node.broker.applySettings(brokerSettingsFrom(node.config))
}

/** Reloads the ACL from the node's config (throws, keeping the rules in force, when the file is bad). */
const reloadAcl: LiveApplier = (node) => node.services.acl.reload()

/** The root logger follows `log.level` (nothing is written with `log.to = off` anyway). */
const applyLogLevel: LiveApplier = (node) => {
  if (node.config['log.to'] !== 'off') node.logger.level = pinoLevel(node.config['log.level'])
}

/** Read from `node.config` where used: nothing to do. */
const readWhereUsed: LiveApplier = () => {}

const BROKER_KEYS = [
  'allow_anonymous', 'broker.shared_subscription_strategy', 'mqtt.max_packet_size', 'mqtt.max_clientid_len',
  'mqtt.max_topic_levels', 'mqtt.max_qos_allowed', 'mqtt.max_topic_alias', 'mqtt.retain_available',
  'mqtt.wildcard_subscription', 'mqtt.shared_subscription', 'mqtt.server_keepalive', 'mqtt.max_keepalive', 'mqtt.max_inflight',
  'mqtt.idle_timeout', 'mqtt.strict_mode', 'mqtt.max_mqueue_len', 'mqtt.mqueue_store_qos0',
  'mqtt.ignore_loop_deliver', 'mqtt.max_subscriptions', 'mqtt.max_awaiting_rel', 'mqtt.await_rel_timeout',
  'mqtt.retry_interval', 'mqtt.keepalive_backoff'
] as const
const ACL_KEYS = ['acl_nomatch', 'acl_file', 'enable_acl_cache', 'acl_cache_max_size', 'acl_cache_ttl', 'acl_deny_action'] as const
const READ_KEYS = [
  'sysmon.large_heap',
  'management.listener.http.max_conns',
  'os_mon.cpu_high_watermark', 'os_mon.cpu_low_watermark', 'os_mon.sysmem_high_watermark',
  'os_mon.procmem_high_watermark', 'vm_mon.process_high_watermark', 'vm_mon.process_low_watermark',
  'flapping_detect_policy', 'zone.external.enable_flapping_detect'
] as const

/** The keys a running node applies, each with what applies it. */
export const LIVE_APPLIERS: ReadonlyMap<ConfigKey, LiveApplier> = new Map<ConfigKey, LiveApplier>([
  ...BROKER_KEYS.map((k): [ConfigKey, LiveApplier] => [k, applyBrokerSettings]),
  ...ACL_KEYS.map((k): [ConfigKey, LiveApplier] => [k, reloadAcl]),
  ['log.level', applyLogLevel],
  ...READ_KEYS.map((k): [ConfigKey, LiveApplier] => [k, readWhereUsed])
])

/** Whether a change of `key` takes effect without a restart. */
export function isAppliedLive (key: string): boolean {
  return LIVE_APPLIERS.has(key as ConfigKey)
}
