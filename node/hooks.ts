/**
 * The node's hooks bus: the spec's event names ("Rule-engine trigger events") with typed
 * payloads. Rules, `$SYS`, metrics, trace, web_hook, bridges and the cluster listen here;
 * nothing else taps aedes. Events are fire-and-forget: a listener that throws is logged and
 * never affects the broker or the other listeners.
 *
 * Field names are the spec's (`client_id`, `peername`, ...). Extra fields that EMQ X 4's rule
 * dialect needs (`peerhost`, `flags`, `pub_props`, `from_client_id` ...) travel too.
 */
import type { Logger } from './logger.js'

/** Fields every event carries. */
export interface BaseEvent {
  /** The event name, fixed, e.g. `message.publish`. */
  event: string
  client_id: string
  /** `undefined` when the client gave none. */
  username: string | undefined
  /** Event time, ms since epoch. */
  timestamp: number
  /** `node.name`. */
  node: string
}

/** A message as message events carry it. */
export interface MessageEvent extends BaseEvent {
  /** Message id (hex), unique per message on this node. */
  id: string
  topic: string
  payload: Buffer
  qos: 0 | 1 | 2
  /** `ip:port` of the client (publisher for publish/dropped, subscriber for deliver/acked). */
  peername: string
  peerhost: string
  flags: { retain: boolean, dup: boolean }
  /** MQTT 5 PUBLISH properties, camelCase as mqtt-packet names them. */
  pub_props: Record<string, unknown>
  /** When the broker received the message, ms since epoch. */
  publish_received_at: number
  /** Publisher, for deliver/acked/dropped. */
  from_client_id?: string
  from_username?: string
  /** The publisher's IP address, for deliver (EMQ X 4's message `headers`). */
  from_peerhost?: string
}

export interface DeliverEvent extends MessageEvent {
  auth_result: 'success'
  mountpoint: string | undefined
}

export interface DroppedEvent extends MessageEvent {
  /** `no_subscribers`, `expired`, `queue_full`, `denied` ... */
  reason: string
}

export interface ClientEvent extends BaseEvent {
  peername: string
  peerhost: string
  sockname: string
  mountpoint: string | undefined
  auth_result: 'success'
  proto_ver: number
  proto_name: string
}

export interface ConnectedEvent extends ClientEvent {
  clean_start: boolean
  /** CONNACK code, 0 when connected. */
  connack: number
  connected_at: number
  is_bridge: boolean
  keepalive: number
  expiry_interval: number
  conn_props: Record<string, unknown>
}

export interface DisconnectedEvent extends ClientEvent {
  /** Why: `normal`, `closed`, `keepalive_timeout`, `takeovered`, `kicked`, `protocol_error`, `shutdown`. */
  reason_code: string
  reason: string
  disconnected_at: number
  connected_at: number
}

export interface SubscribeEvent extends ClientEvent {
  /** Every (filter, options) pair of the packet, filters as the client wrote them. */
  topic_filters: Array<{ topic: string, qos: number }>
  /** The first pair's filter and QoS (spec: aliases of the first pair). */
  topic: string
  qos: number
  /** `client.subscribe`: each pair's options, in the order of `topic_filters` (EMQ X 4's `opts`). */
  sub_opts?: SubscriptionOpts[]
}

/** Subscription options as EMQ X 4 reports them (`#{qos, rh, rap, nl}`, flags as 0/1). */
export interface SubscriptionOpts { qos: number, rh: number, rap: number, nl: number }

/** The CONNECT as it arrived, before authentication (`client.connect`). */
export interface ConnectEvent extends ClientEvent {
  keepalive: number
  clean_start: boolean
}

/** The CONNACK sent, accepted or refused (`client.connack`). */
export interface ConnackEvent extends ConnectEvent {
  /**
   * EMQ X's reason name of the CONNACK's code (MQTT 5 names for every protocol level, as
   * EMQ X 4's `emqx_reason_codes:name/1`): `success`, `not_authorized`, `banned` ...
   */
  conn_ack: string
  /** When the connection was accepted, ms since epoch; undefined when refused. */
  connected_at: number | undefined
}

/** One subscription a session gained or lost (`session.subscribed`, `session.unsubscribed`). */
export interface SessionSubscriptionEvent extends ClientEvent {
  /** The filter as the client wrote it (`$share/g/t` for a shared one). */
  topic: string
  /** The subscription's options (none for `session.unsubscribed`). */
  opts: SubscriptionOpts | undefined
}

/** A session ended (`session.terminated`): its connection closed (no session kept), or it expired or was discarded. */
export interface SessionTerminatedEvent extends BaseEvent {
  /** `normal`, `closed`, `keepalive_timeout`, `takeovered` ... for a session ending with its connection; `expired`; `discarded`. */
  reason: string
}

/**
 * Events of the connection and session lifecycle that are not rule-engine triggers (the
 * spec's table has none of them); EMQ X 4's hooks of the same names, for svc_web_hook.
 */
export interface LifecycleEventMap {
  'client.connect': ConnectEvent
  'client.connack': ConnackEvent
  'session.subscribed': SessionSubscriptionEvent
  'session.unsubscribed': SessionSubscriptionEvent
  'session.terminated': SessionTerminatedEvent
}

/** Event name -> payload of the rule-engine trigger events. */
export interface HookEventMap {
  'client.connected': ConnectedEvent
  'client.disconnected': DisconnectedEvent
  'client.subscribe': SubscribeEvent
  'client.unsubscribe': SubscribeEvent
  'message.publish': MessageEvent
  'message.deliver': DeliverEvent
  'message.acked': DeliverEvent
  'message.dropped': DroppedEvent
}

/** The rule-engine trigger events (the rule engine, trace and `$SYS` read these). */
export type HookName = keyof HookEventMap
export const HOOK_NAMES: readonly HookName[] = [
  'client.connected', 'client.disconnected', 'client.subscribe', 'client.unsubscribe',
  'message.publish', 'message.deliver', 'message.acked', 'message.dropped'
]

/** Every event of the bus: the trigger events and the lifecycle events. */
export type BusEventMap = HookEventMap & LifecycleEventMap
export type BusEventName = keyof BusEventMap
export const LIFECYCLE_EVENT_NAMES: ReadonlyArray<keyof LifecycleEventMap> = [
  'client.connect', 'client.connack', 'session.subscribed', 'session.unsubscribed', 'session.terminated'
]

export type HookListener<K extends BusEventName> = (event: BusEventMap[K]) => void

/**
 * A typed bus. `has(name)` lets the broker skip building a payload nobody listens to:
 * every emitter checks it first, so an event without listeners costs one map lookup (the
 * per-message events are on the hot path).
 */
export class HooksBus {
  private readonly listeners = new Map<BusEventName, Array<HookListener<any>>>()

  constructor (private readonly logger: Logger) {}

  /** Adds a listener; returns a function that removes it. */
  on<K extends BusEventName> (name: K, fn: HookListener<K>): () => void {
    const list = this.listeners.get(name) ?? []
    this.listeners.set(name, [...list, fn])
    return () => this.off(name, fn)
  }

  off<K extends BusEventName> (name: K, fn: HookListener<K>): void {
    const list = this.listeners.get(name)
    if (list === undefined) return
    const next = list.filter(l => l !== fn)
    if (next.length === 0) this.listeners.delete(name)
    else this.listeners.set(name, next)
  }

  /** True when some listener waits for `name`. */
  has (name: BusEventName): boolean {
    return this.listeners.has(name)
  }

  /** Calls every listener of `name` with `event`, isolating failures. */
  emit<K extends BusEventName> (name: K, event: BusEventMap[K]): void {
    const list = this.listeners.get(name)
    if (list === undefined) return
    for (let i = 0; i < list.length; i++) {
      try {
        list[i](event)
      } catch (err) {
        this.logger.warn({ err, hook: name }, 'hook listener failed')
      }
    }
  }
}
