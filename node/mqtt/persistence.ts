import { Readable } from 'node:stream'
import MemoryPersistence from 'aedes-persistence/asyncPersistence.js'
import type { Logger } from '../logger.js'
import { Signal } from '../signal.js'
import type { Store, StoreTable } from '../store/index.js'
import { incomingKey, nameKey, sameSubscription, toStoredPacket, toStoredSubscription, type StoredPacket, type StoredSubscription } from './persistence-codec.js'
import { OutgoingQueues, type OutgoingRecord, type QueueTarget } from './persistence-outgoing.js'
import { OfflineQueue } from './offline-queue.js'
import { stateOf } from './client-state.js'
import { unmountTopic } from './zone.js'

export type { StoredPacket, StoredSubscription } from './persistence-codec.js'

/** A client as aedes hands it to the persistence; `clean` is absent on bare `{ id }` refs. */
export interface PersistenceClient { id: string, clean?: boolean }

/** The broker fields the persistence reads and sets at `setup()`. */
export interface PersistenceBroker { id: string, counter: number }

/** One persistent session, for the sessions API. */
export interface PersistentSessionInfo {
  clientId: string
  /** Stored subscriptions. */
  subscriptions: number
  /** Queued QoS 1/2 packets (and PUBRELs), in flight ones included. */
  queued: number
  /** Of `queued`, the ones already sent with a packet identifier and not yet acknowledged. */
  inflight: number
  /** Messages dropped from the queue because it was full (`mqueue_dropped`). */
  dropped: number
}

/** Store table names used by the MQTT persistence. */
export const PERSISTENCE_TABLES = {
  retained: 'retained',
  subscriptions: 'subscriptions',
  outgoing: 'outgoing',
  incoming: 'incoming',
  wills: 'wills'
} as const

/** What {@link createStorePersistence} needs. */
export interface StorePersistenceInit { store: Store, logger: Logger }

interface SubscriptionsRecord { clientId: string, subs: Record<string, StoredSubscription> }
interface IncomingRecord { clientId: string, packet: StoredPacket }
/**
 * A packet kept in memory; `persisted` when it belongs to a persistent session; `at` (ms)
 * when an incoming QoS 2 message began awaiting its PUBREL (`mqtt.await_rel_timeout`).
 */
interface Held { packet: StoredPacket, persisted: boolean, at?: number }

/**
 * aedes persistence that keeps everything in memory (aedes-persistence's implementation,
 * which also owns the subscription trie) and writes through to the node's {@link Store},
 * so retained messages and persistent sessions survive a restart or SIGKILL.
 *
 * Invariants:
 * - Every write method resolves only after its store write has committed.
 * - Only persistent sessions (`client.clean === false`) and retained messages reach the
 *   store: clean sessions never write (their QoS 2 and will state stays in memory).
 * - The outgoing queue is keyed by a monotonic sequence of ours, never by `brokerCounter`,
 *   which aedes restarts at 0; `setup()` moves `broker.counter` past every stored one.
 */
export class StorePersistence extends MemoryPersistence {
  private readonly retainedTable: StoreTable<StoredPacket>
  private readonly subsTable: StoreTable<SubscriptionsRecord>
  private readonly incomingTable: StoreTable<IncomingRecord>
  private readonly willsTable: StoreTable<StoredPacket>
  private readonly store: Store
  private readonly log: Logger
  private readonly retainedTopics = new Set<string>()
  private readonly sessionSubs = new Map<string, Map<string, StoredSubscription>>()
  /** Last subscriptions write per client: a no-op add/remove still waits for it. */
  private readonly subsWrites = new Map<string, Promise<void>>()
  /** @internal the queues; the broker sets their {@link OutgoingQueues.policy}. */
  readonly outgoing: OutgoingQueues
  /** Every subscription of persistent sessions, for queueing QoS 0 (see offline-queue.ts). */
  readonly offlineQueue = new OfflineQueue()
  /** Messages aedes queued for persistent sessions: not "no subscribers" when none is online. */
  private readonly queuedPackets = new WeakSet<object>()
  private readonly incoming = new Map<string, Map<number, Held>>()
  private readonly wills = new Map<string, Held>()
  private loaded = false
  /** How many sessions hold each filter (what the cluster routes for offline sessions). */
  private readonly filterCounts = new Map<string, number>()
  /** A filter got its first persistent subscriber (`true`), or lost its last (what the cluster routes for away sessions). */
  readonly filterChanged = new Signal<[filter: string, present: boolean]>()

  constructor (init: StorePersistenceInit) {
    super()
    const { store } = init
    this.store = store
    this.retainedTable = store.table(PERSISTENCE_TABLES.retained)
    this.subsTable = store.table(PERSISTENCE_TABLES.subscriptions)
    this.incomingTable = store.table(PERSISTENCE_TABLES.incoming)
    this.willsTable = store.table(PERSISTENCE_TABLES.wills)
    this.log = init.logger.child({ component: 'mqtt:persistence' })
    this.outgoing = new OutgoingQueues(store.table<OutgoingRecord>(PERSISTENCE_TABLES.outgoing), this.log)
  }

  /** Loads the stored state into memory, then moves `broker.counter` past stored packets. */
  override async setup (broker: PersistenceBroker): Promise<void> {
    if (this.loaded) throw new Error('persistence setup() called twice: create one persistence per broker start')
    this.loaded = true
    await super.setup(broker)
    let maxCounter = 0
    const seen = (packet: StoredPacket): void => { maxCounter = Math.max(maxCounter, packet.brokerCounter ?? 0) }
    for (const [, packet] of this.retainedTable.entries()) {
      this.retainedTopics.add(packet.topic as string)
      await super.storeRetained(packet)
      seen(packet)
    }
    for (const [, record] of this.subsTable.entries()) {
      this.sessionSubs.set(record.clientId, new Map(Object.entries(record.subs)))
      for (const [topic, sub] of Object.entries(record.subs)) {
        this.countFilter(topic, 1)
        this.offlineQueue.add(record.clientId, topic, sub)
      }
      await super.addSubscriptions({ id: record.clientId }, Object.entries(record.subs).map(([topic, sub]) => ({ topic, ...sub })))
    }
    maxCounter = Math.max(maxCounter, this.outgoing.load())
    for (const [, record] of this.incomingTable.entries()) {
      this.incomingOf(record.clientId).set(record.packet.messageId as number, { packet: record.packet, persisted: true })
      seen(record.packet)
    }
    for (const [, packet] of this.willsTable.entries()) {
      this.wills.set(packet.clientId as string, { packet, persisted: true })
      seen(packet)
    }
    broker.counter = Math.max(broker.counter, maxCounter)
    this.log.info({ retained: this.retainedTopics.size, sessions: this.sessionSubs.size, queues: [...this.outgoing.clientIds()].length, brokerCounter: broker.counter }, 'persistence loaded')
  }

  /**
   * Stores (or deletes, for an empty payload) a retained message in aedes-persistence's
   * memory only: nothing goes to the store and this class's bookkeeping is not told
   * (`retainer.storage_type = ram`, whose retainer keeps its own count).
   */
  storeRetainedInMemory (packet: Record<string, any>): Promise<void> {
    return super.storeRetained(packet)
  }

  override async storeRetained (packet: Record<string, any>): Promise<void> {
    const memory = super.storeRetained(packet)
    const topic: string = packet.topic
    let write: Promise<void> | undefined
    if (packet.payload.length === 0) {
      if (this.retainedTopics.delete(topic)) write = this.retainedTable.del(nameKey(topic))
    } else {
      this.retainedTopics.add(topic)
      write = this.retainedTable.put(nameKey(topic), toStoredPacket(packet))
    }
    await Promise.all([memory, write && this.logged(write, 'retained', topic)])
  }

  override async addSubscriptions (client: PersistenceClient, subs: Array<Record<string, any>>): Promise<void> {
    const memory = super.addSubscriptions(client, subs)
    let record = this.sessionSubs.get(client.id)
    let changed = false
    for (const sub of subs) {
      const stored = toStoredSubscription(sub)
      if (record === undefined) {
        record = new Map()
        this.sessionSubs.set(client.id, record)
      }
      if (!sameSubscription(record.get(sub.topic), stored)) {
        if (!record.has(sub.topic)) this.countFilter(sub.topic, 1)
        record.set(sub.topic, stored)
        this.offlineQueue.add(client.id, sub.topic, stored)
        changed = true
      }
    }
    // aedes calls this once per topic of a SUBSCRIBE, each time with all its topics:
    // only the first call changes anything; the others wait for that write.
    await Promise.all([memory, changed ? this.writeSubscriptions(client.id) : this.subsWrites.get(client.id)])
  }

  override async removeSubscriptions (client: PersistenceClient, topics: string[]): Promise<void> {
    const memory = super.removeSubscriptions(client, topics)
    const record = this.sessionSubs.get(client.id)
    let changed = false
    for (const topic of topics) {
      const removed = record?.delete(topic) ?? false
      if (removed) {
        this.countFilter(topic, -1)
        this.offlineQueue.remove(client.id, topic)
      }
      changed = removed || changed
    }
    await Promise.all([memory, changed ? this.writeSubscriptions(client.id) : this.subsWrites.get(client.id)])
  }

  /** Ends a session's subscriptions and its pending incoming QoS 2 state [MQTT-3.1.2-4]. */
  override async cleanSubscriptions (client: PersistenceClient): Promise<void> {
    const writes: Array<Promise<void> | undefined> = [super.cleanSubscriptions(client)]
    const record = this.sessionSubs.get(client.id)
    if (record !== undefined) {
      for (const topic of record.keys()) {
        this.countFilter(topic, -1)
        this.offlineQueue.remove(client.id, topic)
      }
      this.sessionSubs.delete(client.id)
      this.outgoing.forget(client.id)
      writes.push(this.writeSubscriptions(client.id))
    }
    const held = this.incoming.get(client.id)
    if (held !== undefined) {
      this.incoming.delete(client.id)
      for (const [messageId, { persisted }] of held) {
        if (persisted) writes.push(this.logged(this.incomingTable.del(incomingKey(client.id, messageId)), 'incoming', client.id))
      }
    }
    await Promise.all(writes)
  }

  override async outgoingEnqueue (sub: QueueTarget, packet: Record<string, any>): Promise<void> {
    await this.outgoing.enqueue([sub], packet)
  }

  /** See {@link OutgoingQueues.enqueue}: QoS and RETAIN are fitted to each subscription. */
  override async outgoingEnqueueCombi (subs: QueueTarget[], packet: Record<string, any>): Promise<void> {
    if (subs.length === 0) return
    this.queuedPackets.add(packet)
    await this.outgoing.enqueue(subs, packet)
  }

  /** Whether aedes queued `packet` (the very object it routes) for a persistent session. */
  wasQueued (packet: object): boolean {
    return this.queuedPackets.has(packet)
  }

  override outgoingUpdate (client: PersistenceClient, packet: Record<string, any>): Promise<void> {
    return this.outgoing.update(client.id, packet)
  }

  override outgoingClearMessageId (client: PersistenceClient, packet: { messageId?: number, brokerId?: string | null, brokerCounter?: number }): Promise<StoredPacket | undefined> {
    return this.outgoing.clear(client.id, packet)
  }

  /** Whether anything is queued for `clientId` (connect.ts skips the stream of an empty queue). */
  hasQueued (clientId: string): boolean {
    return this.outgoing.hasQueued(clientId)
  }

  /**
   * What was queued for `client`, to send on its reconnect. aedes writes these as they come
   * (its forward filter is asked, its packet not used), so a client's mountpoint comes off
   * here, on copies: the queue keeps the mounted topics.
   */
  override outgoingStream (client: PersistenceClient): Readable {
    const packets = this.outgoing.packets(client.id)
    const mountpoint = stateOf(client)?.mountpoint
    if (mountpoint === undefined) return Readable.from(packets)
    return Readable.from(packets.map((p) => p.topic?.startsWith(mountpoint) === true ? { ...p, topic: unmountTopic(mountpoint, p.topic) } : p))
  }

  override async incomingStorePacket (client: PersistenceClient, packet: Record<string, any>): Promise<void> {
    const stored = toStoredPacket(packet)
    const persisted = client.clean === false
    this.incomingOf(client.id).set(packet.messageId, { packet: stored, persisted, at: Date.now() })
    if (persisted) {
      await this.logged(this.incomingTable.put(incomingKey(client.id, packet.messageId), { clientId: client.id, packet: stored }), 'incoming', client.id)
    }
  }

  override async incomingGetPacket (client: PersistenceClient, packet: { messageId: number }): Promise<StoredPacket> {
    const held = this.incoming.get(client.id)?.get(packet.messageId)
    if (held === undefined) throw new Error('no such packet')
    return held.packet
  }

  /**
   * Forgets an incoming QoS 2 message once its PUBREL came. Already gone is not an error: two
   * PUBRELs for one id in one read are handled at once by aedes (both find the message, then
   * both delete it), and aedes chains this call with `.finally`, so a rejection here is an
   * unhandled one that ends the process (found by the fuzzer's ws door).
   */
  override async incomingDelPacket (client: PersistenceClient, packet: { messageId: number }): Promise<void> {
    const packets = this.incoming.get(client.id)
    const held = packets?.get(packet.messageId)
    if (packets === undefined || held === undefined) return
    packets.delete(packet.messageId)
    if (packets.size === 0) this.incoming.delete(client.id)
    if (held.persisted) await this.logged(this.incomingTable.del(incomingKey(client.id, packet.messageId)), 'incoming', client.id)
  }

  /** Incoming QoS 2 messages of `clientId` awaiting their PUBREL (`awaiting_rel`). */
  awaitingRel (clientId: string): number {
    return this.incoming.get(clientId)?.size ?? 0
  }

  /** Whether the incoming QoS 2 message `messageId` of `clientId` awaits its PUBREL. */
  isAwaitingRel (clientId: string, messageId: number): boolean {
    return this.incoming.get(clientId)?.has(messageId) ?? false
  }

  /**
   * Forgets the incoming QoS 2 messages received before `before` (ms) and still awaiting
   * their PUBREL (`mqtt.await_rel_timeout`); returns them. A late PUBREL gets its PUBCOMP all
   * the same (aedes answers a PUBREL it has no state for), as in EMQ X.
   */
  async expireAwaitingRel (before: number): Promise<StoredPacket[]> {
    const expired: StoredPacket[] = []
    const writes: Array<Promise<void>> = []
    for (const [clientId, packets] of this.incoming) {
      for (const [messageId, held] of packets) {
        // restored from the store: awaiting since the load, when no time was recorded
        held.at ??= Date.now()
        if (held.at >= before) continue
        packets.delete(messageId)
        expired.push(held.packet)
        if (held.persisted) writes.push(this.logged(this.incomingTable.del(incomingKey(clientId, messageId)), 'incoming', clientId))
      }
      if (packets.size === 0) this.incoming.delete(clientId)
    }
    await Promise.all(writes)
    return expired
  }

  /** Stores a will, tagged with this broker and the client as aedes-persistence does. */
  override async putWill (client: PersistenceClient, packet: Record<string, any>): Promise<void> {
    packet.brokerId = this.broker.id
    packet.clientId = client.id
    const persisted = client.clean === false
    const previous = this.wills.get(client.id)
    const stored = toStoredPacket(packet)
    this.wills.set(client.id, { packet: stored, persisted })
    if (persisted) await this.logged(this.willsTable.put(nameKey(client.id), stored), 'wills', client.id)
    else if (previous?.persisted === true) await this.logged(this.willsTable.del(nameKey(client.id)), 'wills', client.id)
  }

  override async getWill (client: PersistenceClient): Promise<StoredPacket | undefined> {
    return this.wills.get(client.id)?.packet
  }

  override async delWill (client: PersistenceClient): Promise<StoredPacket | undefined> {
    const held = this.wills.get(client.id)
    if (held === undefined) return undefined
    this.wills.delete(client.id)
    if (held.persisted) await this.logged(this.willsTable.del(nameKey(client.id)), 'wills', client.id)
    return held.packet
  }

  /** Wills whose broker is not in `brokers` (aedes' map of live brokers). */
  override streamWill (brokers: Record<string, unknown> = {}): Readable {
    const wills = [...this.wills.values()].map(({ packet }) => packet)
    return Readable.from(wills.filter((will) => brokers[will.brokerId as string] === undefined))
  }

  /**
   * Removes everything a session kept: subscriptions, queued and in-flight messages, QoS 2
   * state and will. Used when a session expires without a client to hand aedes (MQTT 3.1.1
   * sessions, and sessions restored after a restart).
   */
  async dropSession (clientId: string): Promise<void> {
    const client = { id: clientId, clean: false }
    await Promise.all([this.cleanSubscriptions(client), this.outgoing.drop(clientId), this.delWill(client)])
  }

  /** Waits for every write issued so far; the store stays open (the node owns it). */
  override async destroy (): Promise<void> {
    await super.destroy()
    await this.store.flushed()
  }

  /** Persistent sessions with stored subscriptions or queued packets. */
  * persistentSessions (): Iterable<PersistentSessionInfo> {
    for (const clientId of new Set([...this.sessionSubs.keys(), ...this.outgoing.clientIds()])) {
      yield { clientId, subscriptions: this.sessionSubs.get(clientId)?.size ?? 0, ...this.outgoing.stats(clientId) }
    }
  }

  /** The filters of persistent sessions' subscriptions. */
  sessionFilters (): Iterable<string> {
    return this.filterCounts.keys()
  }

  /** The subscriptions a persistent session holds (for a cluster takeover). */
  subscriptionsOf (clientId: string): Array<Record<string, any>> {
    return [...(this.sessionSubs.get(clientId) ?? [])].map(([topic, sub]) => ({ topic, ...sub }))
  }

  /** The messages queued for a persistent session, in order (for a cluster takeover). */
  queuedOf (clientId: string): Array<Record<string, any>> {
    return this.outgoing.packets(clientId)
  }

  /**
   * Installs a session taken over from another node: its subscriptions and its queued
   * messages (in order), before aedes restores the session for the connecting client.
   */
  async importSession (clientId: string, subs: Array<Record<string, any>>, queued: Array<Record<string, any>>): Promise<void> {
    if (subs.length > 0) await this.addSubscriptions({ id: clientId }, subs)
    for (const packet of queued) await this.outgoing.enqueue([{ clientId }], packet)
  }

  private countFilter (filter: string, delta: number): void {
    const count = (this.filterCounts.get(filter) ?? 0) + delta
    if (count <= 0) {
      if (this.filterCounts.delete(filter)) this.filterChanged.emit(filter, false)
    } else {
      this.filterCounts.set(filter, count)
      if (count === 1 && delta > 0) this.filterChanged.emit(filter, true)
    }
  }

  /** The retained messages (for a node joining the cluster). */
  * retainedPackets (): Iterable<StoredPacket> {
    for (const [, packet] of this.retainedTable.entries()) yield packet
  }

  /** Whether a retained message is stored for `topic`. */
  hasRetained (topic: string): boolean {
    return this.retainedTopics.has(topic)
  }

  /** Number of retained messages. */
  retainedCount (): number {
    return this.retainedTopics.size
  }

  private incomingOf (clientId: string): Map<number, Held> {
    let packets = this.incoming.get(clientId)
    if (packets === undefined) this.incoming.set(clientId, packets = new Map())
    return packets
  }

  /** Writes (or deletes, when empty) a client's subscriptions record. */
  private writeSubscriptions (clientId: string): Promise<void> {
    const record = this.sessionSubs.get(clientId)
    const key = nameKey(clientId)
    let write: Promise<void>
    if (record === undefined || record.size === 0) {
      this.sessionSubs.delete(clientId)
      write = this.subsTable.del(key)
    } else {
      write = this.subsTable.put(key, { clientId, subs: Object.fromEntries(record) })
    }
    write = this.logged(write, 'subscriptions', clientId)
    this.subsWrites.set(clientId, write)
    const forget = (): void => { if (this.subsWrites.get(clientId) === write) this.subsWrites.delete(clientId) }
    write.then(forget, forget)
    return write
  }

  /** `write`, logging a failure with the table and the client or topic it was for. */
  private logged (write: Promise<void>, table: string, name: string): Promise<void> {
    return write.catch((err: Error) => {
      this.log.error({ err, table, name }, 'store write failed')
      throw err
    })
  }
}

/** Creates the aedes persistence over `init.store`; pass it as `persistence` to aedes. */
export function createStorePersistence (init: StorePersistenceInit): StorePersistence {
  return new StorePersistence(init)
}
