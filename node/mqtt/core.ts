/**
 * The MQTT core as the rest of the node sees it: connected clients, sessions, retained
 * messages and publishing, typed, without aedes' objects.
 *
 * Invariant: node/mqtt/ is the only folder that imports aedes or aedes-persistence or reads
 * their fields (eslint.config.js fails a change that reaches past it). Everything else goes
 * through {@link MqttCore}, so an aedes upgrade that renames a field is fixed here once.
 * A {@link ClientView} is made once per aedes client and kept while the client object lives,
 * so two lookups of the same connection give the same view (`===` compares connections).
 */
import type { Readable } from 'node:stream'
import type { AccessClient } from './broker-types.js'
import { stateOf, type ClientState } from './client-state.js'
import type { PersistentSessionInfo, StoredPacket } from './persistence.js'
import type { Wire } from './wire.js'
import type { MessageRouter } from './router.js'
import type { Signal } from '../signal.js'
import type { MessageEvent } from '../hooks.js'
import type { PublishHold } from './publish-hold.js'

/** Options of one subscription, as the core keeps them (MQTT 5 §3.8.3.1). */
export interface SubscriptionOptions {
  qos: number
  /** Retain Handling. */
  rh?: number
  /** Retain As Published. */
  rap?: boolean
  /** No Local. */
  nl?: boolean
}

/** A subscription given to {@link ClientView.subscribe}, or stored for an away session. */
export interface SubscriptionRequest extends SubscriptionOptions { topic: string }

/** A connected (or connecting) client, as the API, stats and the cluster read it. */
export interface ClientView {
  readonly id: string
  /** MQTT protocol level from CONNECT: 3, 4 or 5. */
  readonly version: number
  /** aedes' session flag: false when the session outlives the connection. */
  readonly clean: boolean
  /** CONNACK sent and the connection open. */
  readonly connected: boolean
  /** The connection has been closed (the client may still be listed for a moment). */
  readonly closed: boolean
  /** What Starling keeps per client (CONNECT values, peer, connected-at), undefined before CONNECT was seen. */
  readonly state: ClientState | undefined
  /** The connection's wire (counters, close reason, socket), undefined for a client without one. */
  readonly wire: Wire | undefined
  /** The client's subscriptions, filter (aedes' form: `$share/` marked) to options. Read only. */
  readonly subscriptions: Readonly<Record<string, Readonly<SubscriptionOptions>>>
  /** Who the client is, for ACL and banned checks. */
  readonly access: AccessClient
  /** Subscribes as a SUBSCRIBE from the client would (the filters in aedes' form). */
  subscribe (subscriptions: SubscriptionRequest[]): Promise<void>
  /** Unsubscribes, also forgetting a persistent session's stored subscriptions. */
  unsubscribe (filters: string[]): Promise<void>
  /** Sends DISCONNECT with `reasonCode` (MQTT 5) and closes the connection; resolves once closed. */
  disconnect (reasonCode: number): Promise<void>
  /** Closes the connection without a DISCONNECT; resolves once closed. */
  close (): Promise<void>
}

/** A message given to the core to route as if a client had published it. */
export interface PublishMessage {
  cmd: 'publish'
  topic: string
  payload: Buffer
  qos: number
  retain: boolean
  dup: boolean
  /** The publisher, when it is a client: message events report it and No Local skips it. */
  clientId?: string
  /** MQTT 5 PUBLISH properties. */
  properties?: Record<string, unknown>
  /** Set for a message forwarded by another node: its origin broker and counter (one id per message). */
  brokerId?: string
  brokerCounter?: number
}

/** The session store (persistent sessions, their subscriptions and queues) the node's services use. */
export interface SessionStore {
  /** Every persistent session with its counts. */
  persistentSessions (): Iterable<PersistentSessionInfo>
  /** Incoming QoS 2 messages of `clientId` waiting for their PUBREL. */
  awaitingRel (clientId: string): number
  /** Number of retained messages. */
  retainedCount (): number
  /** Whether a retained message is stored for `topic`. */
  hasRetained (topic: string): boolean
  /** The retained messages (for a node joining the cluster). */
  retainedPackets (): Iterable<StoredPacket>
  /** Ends a persistent session: subscriptions, queue and QoS 2 state. */
  dropSession (clientId: string): Promise<void>
  /** The will a session keeps (Will Delay Interval), or undefined. */
  getWill (client: { id: string }): Promise<any>
  /** Forgets the will a session keeps. */
  delWill (client: { id: string }): Promise<any>
  /** The stored subscriptions of an away session. */
  subscriptionsByClient (client: { id: string }): Promise<SubscriptionRequest[]>
  /** The subscriptions of a persistent session, synchronously (cluster takeover). */
  subscriptionsOf (clientId: string): Array<Record<string, any>>
  /** The messages queued for a persistent session, in order (cluster takeover). */
  queuedOf (clientId: string): Array<Record<string, any>>
  /** Installs a session taken over from another node. */
  importSession (clientId: string, subs: Array<Record<string, any>>, queued: Array<Record<string, any>>): Promise<void>
  /** The filters of persistent sessions' subscriptions. */
  sessionFilters (): Iterable<string>
  /** A filter gained its first (`true`) or lost its last persistent session (the cluster's routes). */
  readonly filterChanged: Signal<[filter: string, present: boolean]>
}

/**
 * The retained-message methods aedes calls on its persistence, which the retainer
 * (svc_retainer) decides for: it replaces them on this object while attached.
 */
export interface RetainedStore {
  storeRetained (packet: any): Promise<void>
  createRetainedStream (pattern: string): Readable
  createRetainedStreamCombi (patterns: string[]): Readable
  retainedCount? (): number
  /** Stores (or, with an empty payload, deletes) in memory only, not in the node's store (`retainer.storage_type = ram`). */
  storeRetainedInMemory? (packet: any): Promise<void>
}

/** The MQTT core of one node. */
export interface MqttCore {
  /** The broker id (the node name): the origin of the messages published here. */
  readonly id: string
  /** True once the core is closing. */
  readonly closed: boolean
  /** Clients whose CONNECT was accepted and that have not left (aedes' count). */
  readonly clientCount: number
  /** The client with id `id` (own ids only: `__proto__` finds nothing), or undefined. */
  client (id: string): ClientView | undefined
  /** Every client the core holds, in connection order. */
  clients (): IterableIterator<ClientView>
  /**
   * What the stats count of every client the core holds, in connection order, without making
   * a view of each (a view is kept as long as its client: memory per idle connection).
   */
  tallies (): IterableIterator<ClientTally>
  /** The {@link ClientTally} of the client with id `id`, or undefined. */
  tallyOf (id: string): ClientTally | undefined
  /** Routes `message` as a publish (retained, stored for sessions, delivered); resolves when done. */
  publish (message: PublishMessage): Promise<void>
  /** The same with a callback, for hot paths (no promise per message). */
  publishWith (message: PublishMessage, done: (err?: Error | null) => void): void
  /**
   * Whether a non-retained message the broker publishes on `topic` (a `$` topic such as
   * `$SYS/...`, no publishing client) could now be seen by anyone: a subscriber on this node
   * or another, an away session's queue, a hooks-bus `message.publish` listener or a publish
   * tap. False means publishing it would change nothing anyone can observe, so a caller may
   * skip building it. Cheap (counts, no topic lookup) and conservative: true may be said of a
   * topic nobody would get, false never of one somebody would.
   */
  isHeard (topic: string): boolean
  /** Persistent sessions and their subscriptions and queues. */
  readonly sessions: SessionStore
  /** The retained-message methods of the persistence, for the retainer. */
  readonly retained: RetainedStore
  /**
   * Hands every client-visible message routed on this node whose topic matches `filter` to
   * `handler`, as a subscription would (it is a route: the cluster forwards matching messages
   * from other nodes here). The message's publish completes, and a QoS 1/2 publisher's
   * PUBACK/PUBREC goes out, only once the handler calls `done`: a part that takes messages
   * elsewhere (a bridge's disk buffer, data integration) calls it when the message is safe.
   * Returns the function that removes the sink. The handler must not modify the message.
   */
  sink (filter: string, handler: (message: Readonly<PublishMessage>, done: (err?: Error | null) => void) => void): () => void
  /**
   * Holds the publish of the QoS 1/2 message whose `message.publish` event `event` is (its
   * PUBACK/PUBREC) until the returned hold's `release`; a listener asks while the event is
   * being dispatched (synchronously), as a sink's `done` would, without a route. Undefined for
   * any other event (QoS 0, a message from another node, after the dispatch): nothing is held.
   */
  holdPublish (event: MessageEvent): PublishHold | undefined
}

/** The part of an aedes 2.0.0-beta.1 client the core reads: nothing outside this file does. */
interface AedesClient {
  id: string
  version: number
  clean: boolean
  connected: boolean
  closed: boolean
  subscriptions: Record<string, SubscriptionOptions>
  subscribe (subs: SubscriptionRequest[], cb: (err?: Error | null) => void): void
  unsubscribe (filters: string[], cb: (err?: Error | null) => void): void
  disconnect (opts: { reasonCode: number }, cb: () => void): void
  close (cb: () => void): void
}

/** The part of the aedes instance the core reads. */
export interface AedesInstance {
  id: string
  closed: boolean
  connectedClients: number
  clients: Record<string, AedesClient>
  publish (packet: PublishMessage, cb: (err?: Error | null) => void): void
}

/** A client's subscriptions and session kind, read without a {@link ClientView} (see {@link MqttCore.tallies}). */
export interface ClientTally {
  readonly id: string
  readonly subscriptions: Readonly<Record<string, unknown>>
  /** False for a session that outlives its connection. */
  readonly clean: boolean
}

/** The persistence the core was built with: the session store and the retained methods. */
export type CorePersistence = SessionStore & RetainedStore & {
  removeSubscriptions (client: { id: string }, filters: string[]): Promise<void>
}

class AedesClientView implements ClientView {
  constructor (private readonly client: AedesClient, private readonly persistence: CorePersistence, private readonly wireOf: (client: unknown) => Wire | undefined) {}

  get id (): string { return this.client.id }
  get version (): number { return this.client.version }
  get clean (): boolean { return this.client.clean }
  get connected (): boolean { return this.client.connected === true }
  get closed (): boolean { return this.client.closed === true }
  get state (): ClientState | undefined { return stateOf(this.client) }
  get wire (): Wire | undefined { return this.wireOf(this.client) }
  get subscriptions (): Readonly<Record<string, SubscriptionOptions>> { return this.client.subscriptions ?? {} }
  get access (): AccessClient {
    return this.state?.access ?? { clientId: this.client.id, username: undefined, peerhost: '' }
  }

  subscribe (subscriptions: SubscriptionRequest[]): Promise<void> {
    return new Promise((resolve, reject) => this.client.subscribe(subscriptions, (err) => err ? reject(err) : resolve()))
  }

  async unsubscribe (filters: string[]): Promise<void> {
    // aedes forgets a persistent session's subscription only for an UNSUBSCRIBE packet
    if (this.client.clean !== true) await this.persistence.removeSubscriptions(this.client, filters)
    await new Promise<void>((resolve, reject) => this.client.unsubscribe(filters, (err) => err ? reject(err) : resolve()))
  }

  disconnect (reasonCode: number): Promise<void> {
    return new Promise(resolve => this.client.disconnect({ reasonCode }, () => resolve()))
  }

  close (): Promise<void> {
    return new Promise(resolve => this.client.close(() => resolve()))
  }
}

/** The {@link MqttCore} over one aedes instance. */
export class AedesCore implements MqttCore {
  /** One view per aedes client object, so views compare as their connections do. */
  private readonly views = new WeakMap<AedesClient, ClientView>()

  constructor (private readonly aedes: AedesInstance, private readonly persistence: CorePersistence, private readonly wireOf: (client: unknown) => Wire | undefined,
    private readonly router: Pick<MessageRouter, 'on' | 'removeListener' | 'mayReachDollarTopic'>, private readonly hold: (event: MessageEvent) => PublishHold | undefined,
    private readonly watched: (topic: string) => boolean) {}

  holdPublish (event: MessageEvent): PublishHold | undefined { return this.hold(event) }

  get id (): string { return this.aedes.id }

  sink (filter: string, handler: (message: Readonly<PublishMessage>, done: (err?: Error | null) => void) => void): () => void {
    const listener = (packet: any, done: (err?: Error | null) => void): void => { handler(packet, done) }
    this.router.on(filter, listener)
    return () => { this.router.removeListener(filter, listener) }
  }
  get closed (): boolean { return this.aedes.closed === true }
  get clientCount (): number { return this.aedes.connectedClients }
  get sessions (): SessionStore { return this.persistence }
  get retained (): RetainedStore { return this.persistence }

  client (id: string): ClientView | undefined {
    const clients = this.aedes.clients
    return Object.hasOwn(clients, id) ? this.viewOf(clients[id]) : undefined
  }

  * clients (): IterableIterator<ClientView> {
    const clients = this.aedes.clients
    for (const id in clients) yield this.viewOf(clients[id])
  }

  * tallies (): IterableIterator<ClientTally> {
    const clients = this.aedes.clients
    for (const id in clients) yield tallyOf(clients[id])
  }

  tallyOf (id: string): ClientTally | undefined {
    const clients = this.aedes.clients
    return Object.hasOwn(clients, id) ? tallyOf(clients[id]) : undefined
  }

  publish (message: PublishMessage): Promise<void> {
    return new Promise((resolve, reject) => this.aedes.publish(message, (err) => err ? reject(err) : resolve()))
  }

  publishWith (message: PublishMessage, done: (err?: Error | null) => void): void {
    this.aedes.publish(message, done)
  }

  isHeard (topic: string): boolean {
    return topic.charCodeAt(0) !== 36 || this.router.mayReachDollarTopic() || this.watched(topic)
  }

  /** The view of an aedes client (for node/mqtt code holding one, e.g. the cluster's takeover hook). */
  viewOf (client: AedesClient): ClientView {
    let view = this.views.get(client)
    if (view === undefined) this.views.set(client, view = new AedesClientView(client, this.persistence, this.wireOf))
    return view
  }
}

function tallyOf (client: AedesClient): ClientTally {
  return { id: client.id, subscriptions: client.subscriptions ?? {}, clean: client.clean }
}
