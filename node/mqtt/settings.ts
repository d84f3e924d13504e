import type { SharedStrategy } from './router.js'
import type { WireLimits } from './wire.js'
import type { RateLimits } from './read-gate.js'
import { parseRate, parseForceShutdown } from '../config/value-types.js'
import type { ForceShutdown } from './wire-types.js'
import { zonesFrom, type ZoneSettings } from './zone.js'

/**
 * The MQTT core's settings, taken from the node configuration (keys in comments).
 * Kept separate from the config object so the core can be started in tests without a file.
 */
export interface BrokerSettings {
  /** `node.name`; also aedes' id, so its internal `$SYS/<id>/...` topics are ours to hide. */
  nodeName: string
  /** `allow_anonymous`: decision when no auth provider has an opinion. */
  allowAnonymous: boolean
  /** `mqtt.max_packet_size`, bytes. */
  maxPacketSize: number
  /** `mqtt.max_clientid_len`. */
  maxClientIdLen: number
  /** `mqtt.max_topic_levels`; 0 = no limit (aedes' ceiling of 100 applies). */
  maxTopicLevels: number
  /** `mqtt.max_qos_allowed`. */
  maxQos: number
  /** `mqtt.max_topic_alias`: aliases a client may set towards the broker. */
  maxTopicAlias: number
  /** `mqtt.retain_available`. */
  retainAvailable: boolean
  /** `mqtt.wildcard_subscription`. */
  wildcardSubscription: boolean
  /** `mqtt.shared_subscription`. */
  sharedSubscription: boolean
  /** `broker.shared_subscription_strategy`. */
  sharedStrategy: SharedStrategy
  /** `mqtt.server_keepalive`, seconds; 0 = v5 clients keep what they ask. */
  serverKeepalive: number
  /** `mqtt.max_keepalive`, seconds: the most a client may ask (v5 told to use it, v3 refused above it); 0 = no cap. See keepalive.ts. */
  maxKeepalive: number
  /** `mqtt.max_inflight`: the Receive Maximum advertised to and enforced on v5 clients. */
  maxInflight: number
  /** `mqtt.session_expiry_interval`, ms: cap on a v5 client's Session Expiry Interval. */
  sessionExpiryMs: number
  /** `mqtt.strict_mode`: checks beyond the MQTT standard on what clients send (see docs/mqtt.md). */
  strictMode: boolean
  /** `mqtt.idle_timeout`, ms: time allowed between accepting a socket and its CONNECT. */
  idleTimeoutMs: number
  /** `mqtt.max_mqueue_len`: unsent messages an away session keeps (oldest dropped beyond); 0 = no limit. */
  maxMqueueLen: number
  /** `mqtt.mqueue_store_qos0`: queue QoS 0 messages for away persistent sessions. */
  mqueueStoreQos0: boolean
  /** `mqtt.ignore_loop_deliver`: MQTT 3.1/3.1.1 clients do not get their own messages back. */
  ignoreLoopDeliver: boolean
  /** `mqtt.max_subscriptions`: subscriptions per client; 0 = no limit. */
  maxSubscriptions: number
  /** `mqtt.max_awaiting_rel`: incoming QoS 2 messages awaiting PUBREL per client; 0 = no limit. */
  maxAwaitingRel: number
  /** `mqtt.await_rel_timeout`, ms: an incoming QoS 2 message awaiting PUBREL longer is forgotten. */
  awaitRelTimeoutMs: number
  /** `mqtt.retry_interval`, ms: an unacknowledged QoS 1/2 delivery is sent again after this. */
  retryIntervalMs: number
  /** `mqtt.keepalive_backoff`: a client is dropped after keepalive x backoff x 2 of silence. */
  keepaliveBackoff: number
  /** `zone.external.rate_limit.*`: a connection above them is not read until its rate allows; null when both are off. */
  rateLimits: RateLimits | null
  /** `zone.external.force_shutdown_policy`: a client with more waiting for it is disconnected; null when off. */
  forceShutdown: ForceShutdown | null
  /** Every zone the config uses (`external` always), by name: what a listener's `zone` holds its clients to. */
  zones: Record<string, ZoneSettings>
}

/** Reads the broker settings from a loaded node configuration. */
export function brokerSettingsFrom (cfg: Record<string, any>): BrokerSettings {
  return {
    nodeName: cfg['node.name'],
    allowAnonymous: cfg.allow_anonymous,
    maxPacketSize: cfg['mqtt.max_packet_size'],
    maxClientIdLen: cfg['mqtt.max_clientid_len'],
    maxTopicLevels: cfg['mqtt.max_topic_levels'],
    maxQos: cfg['mqtt.max_qos_allowed'],
    maxTopicAlias: cfg['mqtt.max_topic_alias'],
    retainAvailable: cfg['mqtt.retain_available'],
    wildcardSubscription: cfg['mqtt.wildcard_subscription'],
    sharedSubscription: cfg['mqtt.shared_subscription'],
    sharedStrategy: cfg['broker.shared_subscription_strategy'],
    serverKeepalive: Math.floor(cfg['mqtt.server_keepalive'] / 1000),
    maxKeepalive: Math.floor(cfg['mqtt.max_keepalive'] / 1000),
    maxInflight: cfg['mqtt.max_inflight'],
    sessionExpiryMs: cfg['mqtt.session_expiry_interval'],
    strictMode: cfg['mqtt.strict_mode'],
    idleTimeoutMs: cfg['mqtt.idle_timeout'],
    maxMqueueLen: cfg['mqtt.max_mqueue_len'],
    mqueueStoreQos0: cfg['mqtt.mqueue_store_qos0'],
    ignoreLoopDeliver: cfg['mqtt.ignore_loop_deliver'],
    maxSubscriptions: cfg['mqtt.max_subscriptions'],
    maxAwaitingRel: cfg['mqtt.max_awaiting_rel'],
    awaitRelTimeoutMs: cfg['mqtt.await_rel_timeout'],
    retryIntervalMs: cfg['mqtt.retry_interval'],
    keepaliveBackoff: cfg['mqtt.keepalive_backoff'],
    rateLimits: rateLimitsFrom(cfg),
    forceShutdown: parseForceShutdown(cfg['zone.external.force_shutdown_policy'] ?? '') ?? null,
    zones: zonesFrom(cfg)
  }
}

/**
 * The broker settings as the clients of `zone` see them: the node's, with what the zone sets
 * per connection in their place (the MQTT capabilities, anonymous access, rate limits and
 * force-shutdown policy).
 */
export function settingsOfZone (settings: BrokerSettings, zone: ZoneSettings): BrokerSettings {
  return {
    ...settings,
    allowAnonymous: zone.allowAnonymous,
    maxQos: zone.maxQos,
    retainAvailable: zone.retainAvailable,
    wildcardSubscription: zone.wildcardSubscription,
    sharedSubscription: zone.sharedSubscription,
    maxTopicLevels: zone.maxTopicLevels,
    strictMode: zone.strictMode,
    rateLimits: zone.rateLimits,
    forceShutdown: zone.forceShutdown
  }
}

/** The connection rate limits (the schema's pattern has checked the text; empty is off). */
function rateLimitsFrom (cfg: Record<string, any>): RateLimits | null {
  const messagesIn = parseRate(cfg['zone.external.rate_limit.conn_messages_in'] ?? '', false) ?? null
  const bytesIn = parseRate(cfg['zone.external.rate_limit.conn_bytes_in'] ?? '', true) ?? null
  return messagesIn === null && bytesIn === null ? null : { messagesIn, bytesIn }
}

/** What the wires enforce, from the broker settings. */
export function limitsFrom (settings: BrokerSettings): WireLimits {
  return {
    receiveMaximum: settings.maxInflight,
    maxQos: settings.maxQos,
    retainAvailable: settings.retainAvailable,
    maxPacketSize: settings.maxPacketSize,
    strictMode: settings.strictMode,
    highWaterMark: 64 * 1024, // bytes buffered per socket before writers wait for 'drain'
    dropThreshold: 8 * 1024 * 1024, // unsent bytes per socket above which QoS 0 is dropped
    rateLimits: settings.rateLimits,
    forceShutdown: settings.forceShutdown,
    sharedSubscription: settings.sharedSubscription,
    wildcardSubscription: settings.wildcardSubscription,
    maxTopicLevels: settings.maxTopicLevels
  }
}
