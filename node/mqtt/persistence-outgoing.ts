import type { Logger } from '../logger.js'
import type { StoreTable } from '../store/index.js'
import { copyStoredPacket, outgoingKey, toQueuedPacket, toStoredPacket, type StoredPacket } from './persistence-codec.js'

/** One queued packet as stored in the `outgoing` table. */
export interface OutgoingRecord {
  clientId: string
  /** Our monotonic sequence: the queue order, and the key suffix. */
  seq: number
  packet: StoredPacket
}

/** A queued packet in memory: its record, its store key, its last write. */
interface OutgoingEntry extends OutgoingRecord { key: string, write?: Promise<void> }

/** A subscription as aedes' trie returns it for `outgoingEnqueueCombi`, or a bare `{ clientId }`. */
export interface QueueTarget { clientId: string, topic?: string, qos?: number, rap?: boolean }

/**
 * How an away session's queue is bounded (`mqtt.max_mqueue_len`), read at each enqueue so
 * that a changed setting applies at once.
 */
export interface QueuePolicy {
  /** Messages not yet sent an away session keeps; 0 = no limit. */
  maxLen: () => number
  /** Whether the client of this session is connected (its queue then only holds in-flight messages). */
  online: (clientId: string) => boolean
  /** A queued message was dropped to make room (the oldest not yet sent goes, as in EMQ X). */
  dropped: (clientId: string, packet: StoredPacket) => void
}

/** No limit, no one told: what a persistence gets until the broker sets its policy. */
const UNBOUNDED: QueuePolicy = { maxLen: () => 0, online: () => false, dropped: () => {} }

/**
 * The outgoing QoS 1/2 queues of persistent sessions: in memory, in order, written through
 * to the `outgoing` table under `<client>/<seq>` keys. Entries are matched the way
 * aedes-persistence matches them (brokerId + brokerCounter, else packet identifier).
 *
 * Invariant: every method that changes an entry resolves after the store committed it.
 */
export class OutgoingQueues {
  private readonly queues = new Map<string, OutgoingEntry[]>()
  /** Messages dropped from each session's queue since the session began (`mqueue_dropped`). */
  private readonly droppedCounts = new Map<string, number>()
  private seq = 0
  /** Set by the broker; see {@link QueuePolicy}. */
  policy: QueuePolicy = UNBOUNDED

  constructor (private readonly table: StoreTable<OutgoingRecord>, private readonly log: Logger) {}

  /** Loads the stored queues; returns the largest stored brokerCounter. */
  load (): number {
    let maxCounter = 0
    for (const [key, record] of this.table.entries()) {
      this.queueOf(record.clientId).push({ ...record, key })
      this.seq = Math.max(this.seq, record.seq)
      maxCounter = Math.max(maxCounter, record.packet.brokerCounter ?? 0)
    }
    for (const queue of this.queues.values()) queue.sort((a, b) => a.seq - b.seq)
    return maxCounter
  }

  /**
   * Queues `packet` once per target. aedes sends a queue as stored, so the entry takes the
   * lower of the packet's and the subscription's QoS [MQTT-3.8.4-8] and a cleared RETAIN
   * flag unless the subscription has Retain As Published [MQTT-3.3.1-9]. A client with two
   * matching subscriptions gets two entries, as aedes expects: its dedupe clears one.
   * An away session's queue holds at most `policy.maxLen` messages not yet sent: beyond it
   * the oldest of them is dropped (EMQ X's mqueue does the same).
   */
  enqueue (targets: QueueTarget[], packet: Record<string, any>): Promise<unknown> {
    const stored = toQueuedPacket(packet)
    const writes = new Array<Promise<unknown>>(targets.length)
    const maxLen = this.policy.maxLen()
    for (let i = 0; i < targets.length; i++) {
      const target = targets[i]
      const queued = i === 0 ? stored : copyStoredPacket(stored)
      if (target.qos !== undefined && target.qos < (queued.qos ?? 0)) queued.qos = target.qos
      if (target.topic !== undefined && target.rap !== true && queued.retain === true) queued.retain = false
      const seq = ++this.seq
      const entry: OutgoingEntry = { clientId: target.clientId, seq, key: outgoingKey(target.clientId, seq), packet: queued }
      const queue = this.queueOf(target.clientId)
      queue.push(entry)
      writes[i] = this.write(entry)
      if (maxLen > 0 && queue.length > maxLen && !this.policy.online(target.clientId)) {
        const drop = this.dropOldest(target.clientId, queue, maxLen)
        if (drop !== undefined) writes[i] = Promise.all([writes[i], drop])
      }
    }
    return Promise.all(writes)
  }

  /**
   * Drops the oldest unsent message once more than `maxLen` wait in `queue` (in-flight ones,
   * sent before the client left, and PUBRELs are not counted and stay).
   */
  private dropOldest (clientId: string, queue: OutgoingEntry[], maxLen: number): Promise<void> | undefined {
    let unsent = 0
    let oldest = -1
    for (let i = 0; i < queue.length; i++) {
      const packet = queue[i].packet
      if (packet.messageId === undefined && packet.cmd !== 'pubrel') {
        if (oldest === -1) oldest = i
        unsent++
      }
    }
    if (unsent <= maxLen) return undefined
    const [entry] = queue.splice(oldest, 1)
    this.droppedCounts.set(clientId, (this.droppedCounts.get(clientId) ?? 0) + 1)
    this.policy.dropped(clientId, entry.packet)
    return this.logged(this.table.del(entry.key), clientId)
  }

  /**
   * Records the packet identifier aedes gave a queued packet, or replaces a packet by
   * identifier (with its PUBREL). A packet is matched by brokerId and brokerCounter,
   * preferring an entry without an identifier (or with this one), so two entries of one
   * packet (overlapping subscriptions) get one identifier each. A packet no entry matches
   * was not queued through the session's own subscriptions — a shared subscription picks one
   * member at delivery time — so it joins the queue now, in flight, and is redelivered if the
   * client leaves before acknowledging it.
   */
  async update (clientId: string, packet: Record<string, any>): Promise<void> {
    let sameCounter: OutgoingEntry | undefined
    for (const entry of this.queues.get(clientId) ?? []) {
      const queued = entry.packet
      if (queued.brokerId === packet.brokerId) {
        if (queued.brokerCounter === packet.brokerCounter) {
          if (queued.messageId === packet.messageId) return await entry.write
          // a queued QoS 0 message is done once sent: no acknowledgement will clear it
          if (queued.messageId === undefined && queued.qos === 0) return await this.remove(clientId, entry)
          if (queued.messageId === undefined) return await this.setMessageId(entry, packet.messageId)
          sameCounter ??= entry
        }
      } else if (queued.messageId === packet.messageId) {
        entry.packet = toStoredPacket(packet)
        return await this.write(entry)
      }
    }
    if (sameCounter !== undefined) return await this.setMessageId(sameCounter, packet.messageId)
    const seq = ++this.seq
    const entry: OutgoingEntry = { clientId, seq, key: outgoingKey(clientId, seq), packet: toStoredPacket(packet) }
    this.queueOf(clientId).push(entry)
    return await this.write(entry)
  }

  /** Removes every queued packet of a client (its session ended). */
  async drop (clientId: string): Promise<void> {
    this.droppedCounts.delete(clientId)
    const queue = this.queues.get(clientId)
    if (queue === undefined) return
    this.queues.delete(clientId)
    await Promise.all(queue.map((entry) => this.logged(this.table.del(entry.key), clientId)))
  }

  /**
   * Removes and returns the queued packet with this identifier. Without an identifier
   * (aedes' dedupe or no-local dropped a delivery), removes the entry of that same packet
   * (brokerId + brokerCounter) that has none, rather than the first entry without one.
   */
  async clear (clientId: string, packet: { messageId?: number, brokerId?: string | null, brokerCounter?: number }): Promise<StoredPacket | undefined> {
    const queue = this.queues.get(clientId)
    if (queue === undefined) return undefined
    let i = -1
    if (packet.messageId === undefined && packet.brokerId !== undefined && packet.brokerId !== null) {
      i = queue.findIndex(({ packet: queued }) => queued.messageId === undefined &&
        queued.brokerId === packet.brokerId && queued.brokerCounter === packet.brokerCounter)
    }
    if (i === -1) i = queue.findIndex((entry) => entry.packet.messageId === packet.messageId)
    if (i === -1) return undefined
    const [entry] = queue.splice(i, 1)
    if (queue.length === 0) this.queues.delete(clientId)
    await this.logged(this.table.del(entry.key), clientId)
    return entry.packet
  }

  /** The client's queued packets, in order (a copy of the list; the packets themselves). */
  packets (clientId: string): StoredPacket[] {
    return (this.queues.get(clientId) ?? []).map((entry) => entry.packet)
  }

  /** Whether the client's queue holds anything. */
  hasQueued (clientId: string): boolean {
    return (this.queues.get(clientId)?.length ?? 0) > 0
  }

  /** Clients with a non-empty queue. */
  clientIds (): Iterable<string> {
    return this.queues.keys()
  }

  /**
   * Queue length, how many of those were sent with an identifier and await an ack, and how
   * many messages the queue dropped since the session began.
   */
  stats (clientId: string): { queued: number, inflight: number, dropped: number } {
    const queue = this.queues.get(clientId) ?? []
    let inflight = 0
    for (const entry of queue) if (entry.packet.messageId !== undefined) inflight++
    return { queued: queue.length, inflight, dropped: this.droppedCounts.get(clientId) ?? 0 }
  }

  /** Forgets the drop count of a session that ended while its queue was empty. */
  forget (clientId: string): void {
    this.droppedCounts.delete(clientId)
  }

  private async remove (clientId: string, entry: OutgoingEntry): Promise<void> {
    const queue = this.queues.get(clientId)
    const i = queue?.indexOf(entry) ?? -1
    if (queue === undefined || i === -1) return
    queue.splice(i, 1)
    if (queue.length === 0) this.queues.delete(clientId)
    await this.logged(this.table.del(entry.key), clientId)
  }

  private queueOf (clientId: string): OutgoingEntry[] {
    let queue = this.queues.get(clientId)
    if (queue === undefined) this.queues.set(clientId, queue = [])
    return queue
  }

  private setMessageId (entry: OutgoingEntry, messageId: number): Promise<void> {
    entry.packet.messageId = messageId
    return this.write(entry)
  }

  private write (entry: OutgoingEntry): Promise<void> {
    const { clientId, seq, packet } = entry
    return (entry.write = this.logged(this.table.put(entry.key, { clientId, seq, packet }), clientId))
  }

  private logged (write: Promise<void>, clientId: string): Promise<void> {
    return write.catch((err: Error) => {
      this.log.error({ err, table: 'outgoing', clientId }, 'store write failed')
      throw err
    })
  }
}
