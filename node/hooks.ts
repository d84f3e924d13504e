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
}

/** Event name -> payload. */
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

export type HookName = keyof HookEventMap
export const HOOK_NAMES: readonly HookName[] = [
  'client.connected', 'client.disconnected', 'client.subscribe', 'client.unsubscribe',
  'message.publish', 'message.deliver', 'message.acked', 'message.dropped'
]

export type HookListener<K extends HookName> = (event: HookEventMap[K]) => void

/**
 * A typed bus. `has(name)` lets the broker skip building a payload nobody listens to
 * (the per-message events are on the hot path).
 */
export class HooksBus {
  private readonly listeners = new Map<HookName, Array<HookListener<any>>>()

  constructor (private readonly logger: Logger) {}

  /** Adds a listener; returns a function that removes it. */
  on<K extends HookName> (name: K, fn: HookListener<K>): () => void {
    const list = this.listeners.get(name) ?? []
    this.listeners.set(name, [...list, fn])
    return () => this.off(name, fn)
  }

  off<K extends HookName> (name: K, fn: HookListener<K>): void {
    const list = this.listeners.get(name)
    if (list === undefined) return
    const next = list.filter(l => l !== fn)
    if (next.length === 0) this.listeners.delete(name)
    else this.listeners.set(name, next)
  }

  /** True when some listener waits for `name`. */
  has (name: HookName): boolean {
    return this.listeners.has(name)
  }

  /** Calls every listener of `name` with `event`, isolating failures. */
  emit<K extends HookName> (name: K, event: HookEventMap[K]): void {
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
