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
 * The outgoing QoS 1/2 queues of persistent sessions: in memory, in order, written through
 * to the `outgoing` table under `<client>/<seq>` keys. Entries are matched the way
 * aedes-persistence matches them (brokerId + brokerCounter, else packet identifier).
 *
 * Invariant: every method that changes an entry resolves after the store committed it.
 */
export class OutgoingQueues {
  private readonly queues = new Map<string, OutgoingEntry[]>()
  private seq = 0

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
   */
  enqueue (targets: QueueTarget[], packet: Record<string, any>): Promise<unknown> {
    const stored = toQueuedPacket(packet)
    const writes = new Array<Promise<void>>(targets.length)
    for (let i = 0; i < targets.length; i++) {
      const target = targets[i]
      const queued = i === 0 ? stored : copyStoredPacket(stored)
      if (target.qos !== undefined && target.qos > 0 && target.qos < (queued.qos ?? 0)) queued.qos = target.qos
      if (target.topic !== undefined && target.rap !== true && queued.retain === true) queued.retain = false
      const seq = ++this.seq
      const entry: OutgoingEntry = { clientId: target.clientId, seq, key: outgoingKey(target.clientId, seq), packet: queued }
      this.queueOf(target.clientId).push(entry)
      writes[i] = this.write(entry)
    }
    return Promise.all(writes)
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

  /** Clients with a non-empty queue. */
  clientIds (): Iterable<string> {
    return this.queues.keys()
  }

  /** Queue length, and how many of those were sent with an identifier and await an ack. */
  stats (clientId: string): { queued: number, inflight: number } {
    const queue = this.queues.get(clientId) ?? []
    let inflight = 0
    for (const entry of queue) if (entry.packet.messageId !== undefined) inflight++
    return { queued: queue.length, inflight }
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
