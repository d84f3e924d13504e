import { parseShared } from './topic.js'
import { Signal } from '../signal.js'
import type { PublishHold } from './publish-hold.js'

/** A delivery function as aedes registers it: deliver `packet`, then call `done`. */
export type Listener = (packet: any, done: (err?: Error | null) => void) => void

/** How a shared group picks the one member that gets a message (`broker.shared_subscription_strategy`). */
export type SharedStrategy = 'random' | 'round_robin' | 'sticky' | 'hash'

/**
 * What the cluster part gives the router while it runs (one at a time, see
 * {@link MessageRouter.attachForwarder}): how a message reaches the other nodes.
 */
export interface Forwarder {
  /**
   * Called once for every client-visible message published on this node, before local
   * delivery: sends it to the nodes with matching routes and returns the shared groups
   * (route keys) this node delivers it to, or undefined for all.
   */
  forward: (packet: any) => Set<string> | undefined
  /**
   * Asked right after `forward`, for the same message. When a link the message went to is
   * congested it keeps `done` until the link drains and returns true: the emit completes
   * then, so the publisher's next packet waits, as for a slow local subscriber.
   */
  pressure: (done: () => void) => boolean
  /**
   * True while no other node has any route (the cluster's table is empty): nothing published
   * here would go to another node. Without it, the forwarder is taken to have routes.
   */
  quiet?: () => boolean
  /** For a message forwarded by another node: the shared groups the publishing node assigned to this one. */
  peerGroups: (packet: any) => Set<string> | undefined
  /** Whether `packet` (just forwarded) went to another node: then it is not dropped for want of local subscribers. */
  sentAway: (packet: any) => boolean
}

/** What the broker is told by the router, for every client-visible message (given at construction). */
export interface RouterHooks {
  /**
   * A message published on this node, before delivery (hooks bus, rule engine taps). It
   * returns a hold when a listener holds the publish (publish-hold.ts): the emit then
   * completes only once the hold is released.
   */
  onPublish?: (packet: any) => PublishHold | undefined
  /** A message that matched no subscriber here, was queued for no session and went to no other node. */
  onNoSubscribers?: (packet: any) => void
}

const NO_GROUPS: Set<string> = new Set()

/** The cluster route key of a shared group. */
export function sharedKey (group: string, filter: string): string {
  return `$share/${group}/${filter}`
}

class SharedGroup {
  members: Listener[] = []
  next = 0
  sticky: Listener | null = null
}

/** One topic filter in the trie, with its plain listeners and shared groups. */
class Entry {
  listeners: Listener[] = []
  groups: Map<string, SharedGroup> | null = null
  constructor (readonly filter: string) {}
  get empty (): boolean { return this.listeners.length === 0 && (this.groups === null || this.groups.size === 0) }
}

class TrieNode {
  children = new Map<string, TrieNode>()
  entry: Entry | null = null
}

const MAX_CACHED_TOPICS = 20000

/**
 * Tracks the completion of one emit: `done` is handed to every listener, and the
 * caller's callback runs once all of them (and the emitter itself) are finished.
 * One object per message, no closure per listener.
 */
class EmitState {
  pending = 1
  readonly done: () => void
  constructor (private readonly cb: (err?: Error | null) => void) {
    this.done = () => { if (--this.pending === 0) this.cb() }
  }
}

/**
 * The broker's message router, given to aedes as its `mq` emitter. It replaces mqemitter:
 * - no internal queue: `emit` delivers at once and calls back when every listener has
 *   written (so a slow subscriber holds the publisher's read loop: backpressure instead
 *   of an unbounded queue, and no recursion when callbacks complete);
 * - a trie of filters with a per-topic match cache (invalidated on any subscription change);
 * - shared subscriptions (`$share/<group>/<filter>`, `$queue/<filter>`): one member of each
 *   group gets each message, picked by the configured strategy;
 * - route events for stats and the cluster: the first subscriber of a filter adds a route,
 *   the last one removes it.
 * Listeners registered before `markReady()` are aedes' own (broker heartbeats) and are
 * neither routes nor reachable by client-visible topics.
 */
export class MessageRouter {
  private readonly root = new TrieNode()
  private readonly entries = new Map<string, Entry>()
  private readonly cache = new Map<string, Entry[]>()
  private ready = false
  private readonly internalFilters = new Set<string>()
  /** Client routes (not internal) whose filter begins with `$`: the only ones a `$` topic can match. */
  private dollarRoutes = 0
  closed = false
  /** The cluster's forwarder while the cluster part runs; see {@link attachForwarder}. */
  private forwarder: Forwarder | null = null
  /** aedes' id on this node: a message with another `brokerId` came from a peer. */
  localBrokerId = ''
  /**
   * Set by the broker: queues client-visible messages at QoS 0 for away persistent sessions
   * (`mqtt.mqueue_store_qos0`), asked only while it holds subscriptions (`size > 0`), and
   * tells which messages aedes itself queued for them.
   */
  offline: { size: number, enqueue: (packet: any) => boolean, wasQueued: (packet: object) => boolean } | null = null
  /**
   * A cluster route key appeared (`true`) or disappeared on this node. A key is a filter
   * with plain subscribers, or `$share/<group>/<filter>` for a shared group with members here.
   */
  readonly routeKeyChanged = new Signal<[key: string, present: boolean]>()
  /** A client route (filter) got its first subscriber on this node. */
  readonly routeAdded = new Signal<[filter: string]>()
  /** A client route lost its last subscriber on this node. */
  readonly routeDeleted = new Signal<[filter: string]>()

  constructor (
    private strategy: SharedStrategy,
    /** Topics aedes publishes for itself, `$SYS/<aedes id>/`. */
    readonly internalPrefix: string,
    private readonly hooks: RouterHooks = {}
  ) {}

  /**
   * Sends every message published here through `forwarder` too (the cluster part, while it
   * runs); returns the function that detaches it. One forwarder at a time.
   */
  attachForwarder (forwarder: Forwarder): () => void {
    if (this.forwarder !== null) throw new Error('the router already has a forwarder')
    this.forwarder = forwarder
    return () => { if (this.forwarder === forwarder) this.forwarder = null }
  }

  /** From now on, new filters are client routes. */
  markReady (): void { this.ready = true }

  /** Changes the shared-subscription strategy at run time. */
  setStrategy (strategy: SharedStrategy): void { this.strategy = strategy }

  /** Number of client routes (distinct filters with at least one subscriber). */
  get routeCount (): number { return this.entries.size - this.internalFilters.size }

  /** The client routes (distinct filters; shared ones by their real filter). */
  * routes (): Iterable<string> {
    for (const filter of this.entries.keys()) if (!this.internalFilters.has(filter)) yield filter
  }

  /** The cluster route keys of this node (see {@link routeKeyChanged}). */
  * routeKeys (): Iterable<string> {
    for (const [filter, entry] of this.entries) {
      if (this.internalFilters.has(filter)) continue
      if (entry.listeners.length > 0) yield filter
      if (entry.groups !== null) for (const group of entry.groups.keys()) yield sharedKey(group, filter)
    }
  }

  /** mqemitter API: add a listener for `topic` (a filter, possibly shared). */
  on (topic: string, fn: Listener, done?: () => void): this {
    let shared = null
    try { shared = parseShared(topic) } catch { /* validated by the wire layer; treat as plain */ }
    const filter = shared ? shared.filter : topic
    let entry = this.entries.get(filter)
    if (!entry) {
      entry = new Entry(filter)
      this.entries.set(filter, entry)
      this.nodeFor(filter, true)!.entry = entry
      if (!this.ready) this.internalFilters.add(filter)
      else {
        if (filter.charCodeAt(0) === 36) this.dollarRoutes++
        this.routeAdded.emit(filter)
      }
    }
    const visible = !this.internalFilters.has(filter)
    if (shared) {
      if (entry.groups === null) entry.groups = new Map()
      let group = entry.groups.get(shared.group)
      if (!group) {
        group = new SharedGroup()
        entry.groups.set(shared.group, group)
        if (visible) this.routeKeyChanged.emit(sharedKey(shared.group, filter), true)
      }
      group.members = [...group.members, fn]
    } else {
      // copy-on-write: an emit in progress keeps iterating the old array
      entry.listeners = [...entry.listeners, fn]
      if (visible && entry.listeners.length === 1) this.routeKeyChanged.emit(filter, true)
    }
    this.cache.clear()
    if (done) queueMicrotask(done)
    return this
  }

  /** mqemitter API: remove a listener added with `on`. */
  removeListener (topic: string, fn: Listener, done?: () => void): this {
    let shared = null
    try { shared = parseShared(topic) } catch { /* see on() */ }
    const filter = shared ? shared.filter : topic
    const entry = this.entries.get(filter)
    if (entry) {
      if (shared) {
        const group = entry.groups?.get(shared.group)
        if (group) {
          group.members = group.members.filter(m => m !== fn)
          if (group.sticky === fn) group.sticky = null
          if (group.members.length === 0) {
            entry.groups!.delete(shared.group)
            if (!this.internalFilters.has(filter)) this.routeKeyChanged.emit(sharedKey(shared.group, filter), false)
          }
        }
      } else {
        const before = entry.listeners.length
        entry.listeners = entry.listeners.filter(l => l !== fn)
        if (before > 0 && entry.listeners.length === 0 && !this.internalFilters.has(filter)) this.routeKeyChanged.emit(filter, false)
      }
      if (entry.empty) this.deleteEntry(entry)
      this.cache.clear()
    }
    if (done) queueMicrotask(done)
    return this
  }

  /**
   * Whether a client-visible message on a `$` topic (e.g. `$SYS/...`), emitted now, could
   * reach anyone: a subscription here whose filter begins with `$` (a wildcard at the first
   * level never matches a `$` topic [MQTT-4.7.2-1]; `$share/<group>/` and `$queue/` are
   * counted by their real filter), an away session's queue, or another node. Counts only, no
   * lookup: it may say true for a topic no filter matches, never false for one that has a
   * receiver.
   */
  mayReachDollarTopic (): boolean {
    if (this.dollarRoutes > 0) return true
    if (this.offline !== null && this.offline.size > 0) return true
    return this.forwarder !== null && this.forwarder.quiet?.() !== true
  }

  /** mqemitter API: deliver `packet` to every matching listener; `cb` runs when all are done. */
  emit (packet: any, cb?: (err?: Error | null) => void): this {
    const callback = cb ?? noop
    if (this.closed) { callback(new Error('router is closed')); return this }
    const topic: string = packet.topic
    const internal = topic.startsWith(this.internalPrefix)
    const matched = this.lookup(topic)
    let assigned: Set<string> | undefined
    const forwarder = this.forwarder
    let forwarded = false
    let hold: PublishHold | undefined
    if (!internal) {
      if (packet.brokerId === this.localBrokerId) {
        hold = this.hooks.onPublish?.(packet)
        if (forwarder !== null) { assigned = forwarder.forward(packet); forwarded = true }
      } else {
        assigned = forwarder?.peerGroups(packet) ?? NO_GROUPS
      }
      const offline = this.offline
      let queued = false
      if (offline !== null && offline.size > 0) queued = offline.enqueue(packet) || (packet.qos > 0 && offline.wasQueued(packet))
      if (matched.length === 0 && !queued && !(forwarded && forwarder!.sentAway(packet))) this.hooks.onNoSubscribers?.(packet)
    }
    if (matched.length === 0 && hold === undefined) {
      if (!forwarded || !forwarder!.pressure(callback)) callback()
      return this
    }
    const state = new EmitState(callback)
    if (forwarded && forwarder!.pressure(state.done)) state.pending++
    if (hold !== undefined) { state.pending++; hold.wait(state.done) }
    for (let i = 0; i < matched.length; i++) {
      const entry = matched[i]
      if (internal !== this.internalFilters.has(entry.filter)) continue
      const listeners = entry.listeners
      for (let j = 0; j < listeners.length; j++) {
        state.pending++
        listeners[j](packet, state.done)
      }
      if (entry.groups !== null) {
        // with the cluster, the publishing node assigned each shared group to one node
        for (const [name, group] of entry.groups) {
          if (assigned !== undefined && !assigned.has(sharedKey(name, entry.filter))) continue
          const member = this.pick(group, packet)
          if (member) { state.pending++; member(packet, state.done) }
        }
      }
    }
    state.done()
    return this
  }

  /** mqemitter API. */
  close (cb?: () => void): void {
    this.closed = true
    if (cb) setImmediate(cb)
  }

  private pick (group: SharedGroup, packet: any): Listener | undefined {
    const members = group.members
    if (members.length === 0) return undefined
    if (members.length === 1) return members[0]
    switch (this.strategy) {
      case 'round_robin':
        return members[group.next++ % members.length]
      case 'sticky':
        if (group.sticky === null || !members.includes(group.sticky)) {
          group.sticky = members[Math.floor(Math.random() * members.length)]
        }
        return group.sticky
      case 'hash':
        return members[hashString(packet.clientId ?? '') % members.length]
      default:
        return members[Math.floor(Math.random() * members.length)]
    }
  }

  private lookup (topic: string): Entry[] {
    let matched = this.cache.get(topic)
    if (matched === undefined) {
      matched = []
      const levels = topic.split('/')
      // [MQTT-4.7.2-1] wildcards at the first level do not match '$' topics
      this.collect(this.root, levels, 0, topic.charCodeAt(0) === 36, matched)
      if (this.cache.size >= MAX_CACHED_TOPICS) this.cache.clear()
      this.cache.set(topic, matched)
    }
    return matched
  }

  private collect (node: TrieNode, levels: string[], i: number, dollar: boolean, out: Entry[]): void {
    const wildOk = !(dollar && i === 0)
    if (wildOk) {
      const hash = node.children.get('#')
      if (hash?.entry) out.push(hash.entry) // '#' also matches the parent level [MQTT-4.7.1-2]
    }
    if (i === levels.length) {
      if (node.entry) out.push(node.entry)
      return
    }
    const exact = node.children.get(levels[i])
    if (exact) this.collect(exact, levels, i + 1, dollar, out)
    if (wildOk) {
      const plus = node.children.get('+')
      if (plus) this.collect(plus, levels, i + 1, dollar, out)
    }
  }

  private nodeFor (filter: string, create: boolean): TrieNode | null {
    let node = this.root
    for (const level of filter.split('/')) {
      let child = node.children.get(level)
      if (!child) {
        if (!create) return null
        child = new TrieNode()
        node.children.set(level, child)
      }
      node = child
    }
    return node
  }

  private deleteEntry (entry: Entry): void {
    this.entries.delete(entry.filter)
    const internal = this.internalFilters.delete(entry.filter)
    // prune the now-empty branch, deepest level first
    const path: TrieNode[] = [this.root]
    const levels = entry.filter.split('/')
    for (const level of levels) path.push(path[path.length - 1].children.get(level)!)
    path[path.length - 1].entry = null
    for (let i = levels.length; i > 0; i--) {
      const node = path[i]
      if (node.entry !== null || node.children.size > 0) break
      path[i - 1].children.delete(levels[i - 1])
    }
    if (!internal) {
      if (entry.filter.charCodeAt(0) === 36) this.dollarRoutes--
      this.routeDeleted.emit(entry.filter)
    }
  }
}

function noop (): void {}

/** FNV-1a, for the `hash` strategy: the same publisher always reaches the same member. */
function hashString (s: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}
