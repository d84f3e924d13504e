/**
 * EMQ X 4.x's session limits and timers, around aedes (which has none of them):
 *
 * - `mqtt.max_mqueue_len` and `mqtt.mqueue_store_qos0`: the queues of away persistent
 *   sessions ({@link installQueuePolicy});
 * - `mqtt.max_subscriptions`: SUBSCRIBE filters over the quota are refused ({@link SubscriptionQuota});
 * - `mqtt.max_awaiting_rel`: a QoS 2 PUBLISH over the limit is refused ({@link AwaitingRelLimit});
 * - `mqtt.await_rel_timeout`: QoS 2 state awaiting a PUBREL too long is forgotten ({@link AwaitRelSweeper});
 * - `mqtt.keepalive_backoff`: the keep alive timeout factor ({@link applyKeepaliveBackoff}).
 *
 * Each reads the broker's settings object when it acts, so a value changed through the
 * configs API applies at once. docs/mqtt.md (Queues and session limits) says what each does
 * and where it differs from EMQ X.
 */
import type { BrokerSettings } from './settings.js'
import type { StorePersistence, StoredPacket } from './persistence.js'
import type { MessageRouter } from './router.js'
import type { Wire } from './wire.js'
import { combineTaps, type PacketTap } from '../sys/packet-tap.js'
import { DeliveryRetry } from './retry.js'
import { useKeepaliveWheel } from './keepalive-wheel.js'

/** Reports a message the broker gives up on (the broker's `dropped`). */
export type DropReporter = (packet: any, reason: string) => void

/** The session limits of one broker; see the file comment. */
export interface SessionLimits {
  readonly quota: SubscriptionQuota
  /** `mqtt.retry_interval`; a tap every wire gets (see {@link SessionLimits.tapWith}). */
  readonly retry: DeliveryRetry
  /** The tap a wire gets: the retry's, then `tap`'s. */
  tapWith: (tap: PacketTap | null) => PacketTap
  /** Refuses a QoS 2 PUBLISH over `mqtt.max_awaiting_rel` (see {@link AwaitingRelLimit}); true when it did. */
  refusesAwaitingRel: (wire: Wire | undefined, client: any, packet: any) => boolean
  stop: () => void
}

/**
 * Starts the session limits of a broker: the queue policy (when the persistence is ours),
 * the await-rel sweeper, the keep alive backoff, the subscription quota and the retries.
 */
export function startSessionLimits (aedes: any, router: MessageRouter, persistence: StorePersistence | undefined,
  settings: BrokerSettings, dropped: DropReporter, failed: (err: Error) => void): SessionLimits {
  // a bare aedes persistence (unit tests) has none of the state these need
  const store = persistence?.offlineQueue !== undefined ? persistence : null
  if (store !== null) installQueuePolicy(aedes, router, store, settings, dropped, failed)
  const sweeper = store !== null ? new AwaitRelSweeper(settings, store, dropped) : null
  const awaitingRel = store !== null ? new AwaitingRelLimit(settings, store, dropped) : null
  sweeper?.start()
  aedes.on('client', (client: any) => applyKeepaliveBackoff(client, settings.keepaliveBackoff))
  const retry = new DeliveryRetry(settings, (wire, frame) => { (wire as Wire).writeFrame(frame) })
  return {
    quota: new SubscriptionQuota(settings, aedes),
    retry,
    tapWith: (tap) => combineTaps(retry, tap),
    refusesAwaitingRel: (wire, client, packet) => awaitingRel !== null && awaitingRel.refuses(wire, client, packet),
    stop: () => { sweeper?.stop(); retry.stop() }
  }
}

/**
 * Bounds the queues of away sessions (oldest unsent message dropped beyond
 * `mqtt.max_mqueue_len`, reason `queue_full`) and lets the router queue QoS 0 messages for
 * them while `mqtt.mqueue_store_qos0` is on.
 */
export function installQueuePolicy (aedes: any, router: MessageRouter, persistence: StorePersistence,
  settings: BrokerSettings, dropped: DropReporter, failed: (err: Error) => void): void {
  const online = (clientId: string): boolean => aedes.clients[clientId] !== undefined
  persistence.outgoing.policy = {
    maxLen: () => settings.maxMqueueLen,
    online,
    dropped: (_clientId: string, packet: StoredPacket) => dropped(packet, 'queue_full')
  }
  const queue = persistence.offlineQueue
  queue.target = {
    storeQos0: () => settings.mqueueStoreQos0,
    online,
    enqueue: (targets, packet) => persistence.outgoing.enqueue(targets, packet),
    wasQueued: (packet) => persistence.wasQueued(packet),
    failed
  }
  router.offline = queue
}

/**
 * `mqtt.max_subscriptions`: a client holds at most this many subscriptions. A filter the
 * client already holds is a replacement and always allowed; the filters of one SUBSCRIBE
 * count in order, so a packet that crosses the limit gets the first ones and is refused the
 * rest (SUBACK 0x97 Quota exceeded for MQTT 5, 0x80 for 3.1.1), as EMQ X does. Subscriptions
 * restored with a session are not counted against it (they were granted before).
 */
export class SubscriptionQuota {
  /** Filters granted but not yet in `client.subscriptions` (aedes adds them asynchronously). */
  private readonly pending = new WeakMap<object, Set<string>>()

  constructor (private readonly settings: BrokerSettings, aedes: any) {
    aedes.on('subscribe', (subs: Array<{ topic: string }>, client: any) => {
      const pending = this.pending.get(client)
      if (pending === undefined) return
      for (const sub of subs) pending.delete(sub.topic)
    })
  }

  /** Whether `topic` is over the client's quota; when not, counts it as granted. */
  refuses (client: any, topic: string): boolean {
    const max = this.settings.maxSubscriptions
    if (max <= 0 || client.connackSent !== true) return false
    const subs = client.subscriptions as Record<string, unknown>
    if (subs[topic] !== undefined) return false
    let pending = this.pending.get(client)
    let count = Object.keys(subs).length
    if (pending !== undefined) for (const filter of pending) if (subs[filter] === undefined) count++
    if (count >= max) return true
    if (pending === undefined) this.pending.set(client, pending = new Set())
    pending.add(topic)
    return false
  }
}

/**
 * `mqtt.max_awaiting_rel`: when a client already has this many incoming QoS 2 messages
 * awaiting their PUBREL, a new one (not a retransmission of one of them) is refused: it is
 * not published and counted as dropped (reason `awaiting_rel_full`). MQTT 5 gets PUBREC 0x97
 * (Quota exceeded): the client knows. EMQ X 4.x answers 0x93 (Receive Maximum exceeded),
 * which is not a PUBREC reason code [MQTT-3.5.2.1]: mqtt.js and other clients that check it
 * drop the connection. MQTT 3.1.1 has no way to refuse a PUBLISH: EMQ X answers a plain
 * PUBREC and drops the message, which tells the publisher it was received. Starling never
 * acknowledges what it did not keep, so a 3.1.1 client over the limit is disconnected
 * instead, its refused message unacknowledged (it sends it again on a persistent session).
 *
 * aedes stores a QoS 2 message's state a few promise hops after authorizing it, so PUBLISHes
 * read in one batch would all pass a check of the stored state alone: the ones admitted in
 * this turn are counted from `admitted` until the next turn, by which time they are stored.
 */
export class AwaitingRelLimit {
  private readonly admitted = new Map<string, Set<number>>()
  private clearing = false

  constructor (private readonly settings: BrokerSettings, private readonly persistence: StorePersistence,
    private readonly dropped: DropReporter) {}

  /** Refuses `packet` (a QoS 2 PUBLISH from `client`) when over the limit; true when it did. */
  refuses (wire: Wire | undefined, client: any, packet: any): boolean {
    const max = this.settings.maxAwaitingRel
    if (max <= 0) return false
    const id = packet.messageId as number
    const admitted = this.admitted.get(client.id)
    if (this.persistence.isAwaitingRel(client.id, id) || admitted?.has(id) === true) return false
    let count = this.persistence.awaitingRel(client.id)
    if (admitted !== undefined) for (const other of admitted) if (!this.persistence.isAwaitingRel(client.id, other)) count++
    if (count < max) {
      this.admit(client.id, id)
      return false
    }
    refuse(wire, client, packet, this.dropped)
    return true
  }

  private admit (clientId: string, id: number): void {
    let ids = this.admitted.get(clientId)
    if (ids === undefined) this.admitted.set(clientId, ids = new Set())
    ids.add(id)
    if (this.clearing) return
    this.clearing = true
    setImmediate(() => { this.admitted.clear(); this.clearing = false })
  }
}

function refuse (wire: Wire | undefined, client: any, packet: any, dropped: DropReporter): void {
  packet._notAuthorized = true // aedes' own flag: enqueuePublish skips the message
  dropped(packet, 'awaiting_rel_full')
  if (wire === undefined) return
  if (client.version === 5) {
    const id = packet.messageId as number
    wire.writeFrame(Buffer.from([0x50, 3, id >> 8, id & 0xff, 0x97]))
    return
  }
  // 3.1.1: no PUBREC for a message not kept; the connection closes (see the class comment)
  wire.closeReason = 'awaiting_rel_full'
  wire.socket.destroy()
}

/**
 * `mqtt.await_rel_timeout`: incoming QoS 2 messages (already published, as aedes and EMQ X do
 * on PUBLISH) whose PUBREL has not come within the timeout are forgotten, each counted as
 * dropped with reason `await_rel_timeout` (`messages/qos2/expired`). Checked on a timer a
 * quarter of the timeout apart (between 100 ms and 5 s), so a message goes at most that late.
 */
export class AwaitRelSweeper {
  private timer: NodeJS.Timeout | null = null
  private stopped = false

  constructor (private readonly settings: BrokerSettings, private readonly persistence: StorePersistence,
    private readonly dropped: DropReporter) {}

  start (): void {
    this.schedule()
  }

  stop (): void {
    this.stopped = true
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }

  private schedule (): void {
    if (this.stopped) return
    const period = Math.min(5000, Math.max(100, Math.floor(this.settings.awaitRelTimeoutMs / 4)))
    this.timer = setTimeout(() => { void this.sweep() }, period)
    this.timer.unref()
  }

  private async sweep (): Promise<void> {
    try {
      const expired = await this.persistence.expireAwaitingRel(Date.now() - this.settings.awaitRelTimeoutMs)
      for (const packet of expired) this.dropped(packet, 'await_rel_timeout')
    } catch {
      // the store logged the failed delete; the next sweep tries the rest
    }
    this.schedule()
  }
}

/**
 * `mqtt.keepalive_backoff`: a client is disconnected after keepalive x backoff x 2 without a
 * packet (EMQ X's rule; 0.75 gives aedes' own 1.5 x keepalive). aedes arms its timer at
 * CONNECT with a fixed 1.5 factor and refreshes it on every packet; this replaces it, before
 * CONNACK, by an entry of the shared keep alive wheel (keepalive-wheel.ts) with the
 * configured factor, keeping the keep alive aedes chose (the client's, or the MQTT 5 Server
 * Keep Alive). The only place that touches aedes' keep alive fields.
 */
export function applyKeepaliveBackoff (client: any, backoff: number): void {
  if (!(client._keepaliveInterval > 0) || client._keepaliveTimer === null) return
  const keepaliveMs = (client._keepaliveInterval - 1) / 1.5 // aedes sets keepalive x 1500 + 1
  useKeepaliveWheel(client, Math.max(1, Math.round(keepaliveMs * backoff * 2)))
}
