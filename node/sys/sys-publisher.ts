/**
 * The `$SYS` publisher (spec: "System topics"), as EMQ X 4's `emqx_sys` and
 * `emqx_mod_presence` publish them:
 *
 * - every `broker.sys_interval`: `version`, `sysdescr` and `$SYS/brokers` (retained), then
 *   `stats/<name>` and `metrics/<name>` for every stat and metric (not retained);
 * - every `broker.sys_heartbeat`: `uptime` and `datetime` (not retained);
 * - at once, on the hooks bus events: `clients/<clientid>/connected` and `/disconnected`.
 *
 * Unlike EMQ X, which waits one interval, one round of each is published at start so the
 * retained topics exist from the beginning. A 0 interval turns that series off.
 */
import type { Logger } from '../logger.js'
import type { HooksBus, ConnectedEvent, DisconnectedEvent } from '../hooks.js'
import type { Metrics } from '../metrics.js'
import { metricNames } from '../metrics.js'
import type { StatsSnapshot } from '../stats.js'
import type { MqttCore } from '../mqtt/core.js'
import { VERSION } from '../version.js'
import { SYSDESCR, formatDatetime, formatUptime } from './sys-info.js'
import { publishSys, sysTopicPrefix, isTopicSafe, type SysPublishTarget } from './sys-publish.js'

/** What the `$SYS` publisher uses from the node. */
export interface SysNode {
  readonly name: string
  readonly config: { readonly 'broker.sys_interval': number, readonly 'broker.sys_heartbeat': number }
  readonly broker: { readonly core: SysPublishTarget['broker']['core'] & Pick<MqttCore, 'isHeard'> }
  readonly hooks: HooksBus
  readonly metrics: Metrics
  readonly logger: Logger
  /** ms since epoch. */
  readonly startedAt: number
}

/** What else the publisher reads. */
export interface SysServiceInit {
  /** The stats to publish (`createStats(node).snapshot`). */
  stats: () => StatsSnapshot
  /** Running nodes of the cluster for `$SYS/brokers`; default this node only. */
  runningNodes?: () => readonly string[]
}

/** A node service: started after the node, stopped before it. */
export interface NodeService {
  start(): void
  stop(): void
}

/** The `$SYS` publisher service. */
export interface SysService extends NodeService {
  /** Publishes the `broker.sys_interval` round now (version ... metrics). */
  tick(): void
  /** Publishes the `broker.sys_heartbeat` round now (uptime, datetime). */
  heartbeat(): void
}

/** Payload of `$SYS/brokers/<node>/clients/<clientid>/connected`. */
export interface ConnectedPresence {
  clientid: string
  /** `undefined` (the text) when the client gave none, as EMQ X writes it. */
  username: string
  ipaddress: string
  connack: number
  /** ms since epoch. */
  ts: number
  proto_ver: number
  proto_name: string
  clean_start: boolean
  keepalive: number
  /** Seconds (EMQ X 4 adds it too). */
  expiry_interval: number
}

/** Payload of `$SYS/brokers/<node>/clients/<clientid>/disconnected`. */
export interface DisconnectedPresence {
  clientid: string
  username: string
  /** `normal`, `closed`, `keepalive_timeout`, `takeovered`, `kicked`, `protocol_error`, `shutdown` ... */
  reason: string
  ts: number
}

/** Builds the `connected` presence payload from the hooks event. */
export function connectedPresence (e: ConnectedEvent): ConnectedPresence {
  return {
    clientid: e.client_id,
    username: e.username ?? 'undefined',
    ipaddress: e.peerhost,
    connack: e.connack,
    ts: e.timestamp,
    proto_ver: e.proto_ver,
    proto_name: e.proto_name,
    clean_start: e.clean_start,
    keepalive: e.keepalive,
    expiry_interval: e.expiry_interval
  }
}

/** Builds the `disconnected` presence payload from the hooks event. */
export function disconnectedPresence (e: DisconnectedEvent): DisconnectedPresence {
  return { clientid: e.client_id, username: e.username ?? 'undefined', reason: e.reason, ts: e.timestamp }
}

/** Creates the `$SYS` publisher of a node. */
export function createSysService (node: SysNode, init: SysServiceInit): SysService {
  const logger = node.logger.child({ component: 'sys' })
  const target = { broker: node.broker, logger }
  const prefix = sysTopicPrefix(node.name)
  const timers: Array<ReturnType<typeof setInterval>> = []
  const unhook: Array<() => void> = []
  const runningNodes = init.runningNodes ?? (() => [node.name])

  function tick (): void {
    publishSys(target, prefix + 'version', VERSION, true)
    publishSys(target, prefix + 'sysdescr', SYSDESCR, true)
    publishSys(target, '$SYS/brokers', runningNodes().join(','), true)
    const stats = init.stats()
    for (const name in stats) publishSys(target, `${prefix}stats/${name}`, String(stats[name as keyof StatsSnapshot]))
    for (const name of metricNames(node.metrics)) publishSys(target, `${prefix}metrics/${name}`, String(node.metrics[name]))
  }

  function heartbeat (): void {
    publishSys(target, prefix + 'uptime', formatUptime(Date.now() - node.startedAt))
    publishSys(target, prefix + 'datetime', formatDatetime())
  }

  function every (ms: number, fn: () => void): void {
    if (ms <= 0) return
    const timer = setInterval(() => {
      try { fn() } catch (err) { logger.warn({ err }, '$SYS round failed') }
    }, ms)
    timer.unref?.()
    timers.push(timer)
  }

  function presence<E> (clientId: string, what: 'connected' | 'disconnected', event: E, payload: (event: E) => object): void {
    // a client id with + or # cannot be a topic level; EMQ X would publish an unroutable topic
    if (!isTopicSafe(clientId)) return
    const topic = `${prefix}clients/${clientId}/${what}`
    // no subscriber of a `$` filter here or on another node, no listener: nobody would see it,
    // so neither the payload nor the publish is made (a CONNECT's largest share of these events)
    if (!node.broker.core.isHeard(topic)) return
    publishSys(target, topic, JSON.stringify(payload(event)))
  }

  return {
    tick,
    heartbeat,
    start () {
      if (timers.length > 0 || unhook.length > 0) return
      unhook.push(node.hooks.on('client.connected', (e) => { presence(e.client_id, 'connected', e, connectedPresence) }))
      unhook.push(node.hooks.on('client.disconnected', (e) => { presence(e.client_id, 'disconnected', e, disconnectedPresence) }))
      const interval = node.config['broker.sys_interval']
      const beat = node.config['broker.sys_heartbeat']
      if (interval > 0) tick()
      if (beat > 0) heartbeat()
      every(interval, tick)
      every(beat, heartbeat)
    },
    stop () {
      for (const timer of timers.splice(0)) clearInterval(timer)
      for (const off of unhook.splice(0)) off()
    }
  }
}
