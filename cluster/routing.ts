/**
 * Routes and forwarding across the cluster.
 *
 * Routes: this node's route keys are the filters its connected clients subscribe to (the
 * router) plus those of its offline persistent sessions (the persistence), and
 * `$share/<group>/<filter>` for shared groups. Changes of one event-loop turn go to every
 * peer as one delta frame; a link coming up gets the full set. Every node keeps
 * `filter -> nodes` for the others ({@link RouteTable}). A stopped node's routes are kept
 * for {@link ROUTE_GRACE_MS}, then dropped.
 *
 * Forwarding: a message published here is delivered here and sent once to each node with
 * a matching route, on the link (frames of one turn leave in one write). Each shared group
 * is assigned to one node holding members of it, so one member in the whole cluster gets
 * the message. A retained message that changed goes to every node, so a later subscriber
 * anywhere gets it (an unchanged one only where it has subscribers). The receiving node publishes the message into its own broker with the publishing
 * node's broker id, which marks it as forwarded: it is delivered there, never forwarded
 * again, and runs no rules there (each node runs the rules for its own events).
 */
import type { NodeComponents } from '../node/node.js'

/** What routing uses of the node: the MQTT core, the forward counter, `node.name` and the config. */
export type RoutingComponents = Pick<NodeComponents, 'broker' | 'metrics' | 'name' | 'config'>
import type { Logger } from '../node/logger.js'
import type { SessionStore, PublishMessage } from '../node/mqtt/core.js'
import { parseShared, topicMatches, topicNameError } from '../node/mqtt/topic.js'
import { sharedKey } from '../node/mqtt/router.js'
import type { Mesh, Frame } from './mesh.js'
import type { MeshRpc } from './rpc.js'
import { RouteTable } from './route-table.js'
import { FRAME_PUBLISH_BATCH, LINK_HIGH_WATER, type HeldBatch } from './mesh.js'
import { decodeBatch, encodeBatch, type ForwardedMessage } from './pub-batch.js'

/** How long a stopped node's routes are kept (it may be back in a moment). */
const ROUTE_GRACE_MS = 15000

export class Routing {
  readonly table = new RouteTable()
  /** Route keys of this node with how many sources (router, persistence) hold each. */
  private readonly local = new Map<string, number>()
  private added: string[] = []
  private removed: string[] = []
  private flushScheduled = false
  private readonly graceTimers = new Map<string, NodeJS.Timeout>()
  private readonly roundRobin = new Map<string, number>()
  private readonly sticky = new Map<string, string>()
  /** Forwarded messages waiting for the router: their assigned shared groups. */
  private readonly arriving = new Map<string, Set<string>>()
  /** Messages waiting for this turn's batch, by node. */
  private outgoing = new Map<string, OutgoingMessage[]>()
  /**
   * The last retained message per topic copied to every peer (payload and QoS). A retained
   * message published again unchanged (the `$SYS` rounds republish version, sysdescr and
   * brokers every `broker.sys_interval`) is not copied again: the peers hold it already, and a
   * peer that lacked it gets it from the link-up snapshot ({@link pullRetained}).
   */
  private readonly copiedRetained = new Map<string, { payload: Buffer, qos: number }>()
  private sendScheduled = false
  /** The congested link the message being forwarded went to (read by the router's `forwardPressure`). */
  private pressedOn: string | null = null
  /** Emit callbacks of messages that went to a congested link, by node: run when it drains. */
  private readonly waiting = new Map<string, Array<() => void>>()
  /** The message `forward` last sent to another node's subscribers (not a drop for want of local ones). */
  private lastRouted: unknown = null
  /** Undoes what start() attached to the router and the session store. */
  private readonly detach: Array<() => void> = []
  /** Per origin broker, while one of its messages goes through the core's publish: the ones behind it (see dispatch). */
  private readonly lanes = new Map<string, { pending: number, waiting: PublishMessage[] }>()
  private readonly delivered = (err?: Error | null): void => {
    if (err) this.log.debug({ err }, 'forwarded message not delivered')
  }


  constructor (private readonly node: RoutingComponents, private readonly mesh: Mesh, private readonly rpc: MeshRpc, private readonly log: Logger) {}

  private get persistence (): SessionStore { return this.node.broker.core.sessions }

  start (): void {
    const router = this.node.broker.router
    for (const key of router.routeKeys()) this.count(key, 1)
    for (const filter of this.persistence.sessionFilters()) this.count(keyOf(filter), 1)
    this.added = []
    this.detach.push(
      router.routeKeyChanged.on((key, present) => { this.count(key, present ? 1 : -1) }),
      this.persistence.filterChanged.on((filter, present) => { this.count(keyOf(filter), present ? 1 : -1) }),
      router.attachForwarder({
        forward: (packet) => this.forward(packet),
        // back-pressure: a message that went to a congested link completes when the link drains,
        // so its publisher's next packet waits, as for a slow local subscriber
        pressure: (done) => {
          const node = this.pressedOn
          if (node === null) return false
          this.pressedOn = null
          let list = this.waiting.get(node)
          if (list === undefined) this.waiting.set(node, list = [])
          list.push(done)
          return true
        },
        peerGroups: (packet) => {
          const id = `${String(packet.brokerId)}/${String(packet.brokerCounter)}`
          const groups = this.arriving.get(id)
          this.arriving.delete(id)
          return groups
        },
        // a message sent to subscribers on another node is not dropped for want of local ones
        sentAway: (packet) => packet === this.lastRouted,
        quiet: () => this.table.empty
      })
    )
    this.mesh.on('drain', (name) => { this.release(name) })
    this.mesh.onHeldDropped = (name, batches) => { this.dropHeld(name, batches) }
    this.mesh.on('frame', (from, frame) => { this.onFrame(from, frame) })
    this.mesh.on('raw', (from, type, body) => {
      if (type !== FRAME_PUBLISH_BATCH) return
      let refused = 0
      try {
        decodeBatch(body, (brokerId, m) => {
          // a node forwards only what a client could publish: a message with a topic that is
          // empty or has wildcards, or a QoS past 2, is a corrupt or hostile frame, and an
          // empty retained topic reached the retained store as an unusable key (found by
          // bench/fuzz/cluster-door.ts). Dropped; the rest of the batch is delivered.
          if (topicNameError(m.topic) !== null || !(m.qos === 0 || m.qos === 1 || m.qos === 2)) { refused++; return }
          this.deliver(brokerId, m)
        })
      } catch (err) {
        this.log.warn({ err, peer: from }, 'dropped a malformed batch of forwarded messages')
      }
      if (refused > 0) this.log.warn({ peer: from, refused }, 'dropped forwarded messages no client could have published')
    })
    this.rpc.handle('retained.snapshot', () => [...this.persistence.retainedPackets()])
  }

  stop (): void {
    for (const off of this.detach.splice(0)) off()
    for (const name of [...this.waiting.keys()]) this.release(name)
    for (const timer of this.graceTimers.values()) clearTimeout(timer)
  }

  peerUp (name: string): void {
    const timer = this.graceTimers.get(name)
    if (timer !== undefined) { clearTimeout(timer); this.graceTimers.delete(name) }
    this.mesh.send(name, { k: 'routes=', keys: [...this.local.keys()] })
    void this.pullRetained(name)
  }

  /** Stores the retained messages of `name` for topics with none here (a node joining). */
  private async pullRetained (name: string): Promise<void> {
    try {
      const packets = await this.rpc.call(name, 'retained.snapshot', {}) as Array<Record<string, any>>
      let added = 0
      for (const packet of packets) {
        if (this.persistence.hasRetained(packet.topic)) continue
        await this.node.broker.core.retained.storeRetained({ ...packet, payload: Buffer.from(packet.payload) })
        added++
      }
      if (added > 0) this.log.info({ peer: name, added }, 'retained messages copied from peer')
    } catch (err: any) {
      this.log.debug({ peer: name, err: err.message }, 'cannot copy retained messages')
    }
  }

  /** Runs the emit callbacks waiting for the link to `name`. */
  private release (name: string): void {
    const list = this.waiting.get(name)
    if (list === undefined) return
    this.waiting.delete(name)
    for (let i = 0; i < list.length; i++) list[i]()
  }

  peerDown (name: string): void {
    this.release(name)
    if (this.graceTimers.has(name)) return
    const timer = setTimeout(() => {
      this.graceTimers.delete(name)
      if (!this.mesh.isUp(name)) {
        this.table.drop(name)
        this.dropHeld(name, this.mesh.dropHeld(name))
      }
    }, ROUTE_GRACE_MS)
    timer.unref()
    this.graceTimers.set(name, timer)
  }

  /** Drops a node that left. */
  forget (name: string): void {
    this.release(name)
    const timer = this.graceTimers.get(name)
    if (timer !== undefined) { clearTimeout(timer); this.graceTimers.delete(name) }
    this.table.drop(name)
    this.dropHeld(name, this.mesh.dropHeld(name))
  }

  private count (key: string, delta: number): void {
    const n = (this.local.get(key) ?? 0) + delta
    if (n <= 0) {
      if (!this.local.delete(key)) return
      this.removed.push(key)
    } else {
      this.local.set(key, n)
      if (n !== 1 || delta < 0) return
      this.added.push(key)
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true
      setImmediate(() => { this.flush() })
    }
  }

  /** Sends this turn's route changes to every peer as one frame. */
  private flush (): void {
    this.flushScheduled = false
    if (this.added.length === 0 && this.removed.length === 0) return
    this.mesh.broadcast({ k: 'routes', add: this.added, del: this.removed })
    this.added = []
    this.removed = []
  }

  private onFrame (from: string, frame: Frame): void {
    switch (frame.k) {
      case 'routes=':
        this.table.replace(from, routeKeys(frame.keys))
        break
      case 'routes':
        for (const key of routeKeys(frame.add)) this.table.add(from, key)
        for (const key of routeKeys(frame.del)) this.table.remove(from, key)
        break
    }
  }

  /**
   * The router's forwarder: sends `packet` to the nodes that need it and returns the
   * shared groups this node delivers it to (undefined: all, no other node has members).
   */
  private forward (packet: any): Set<string> | undefined {
    const retain = packet.retain === true
    // a single node, or no route elsewhere: no lookup (and no per-topic cache entry) per message
    if (this.table.empty && !retain) return undefined
    const entries = this.table.match(packet.topic)
    if (entries.length === 0 && !retain) return undefined
    const targets = new Map<string, string[] | null>()
    let here: Set<string> | undefined
    for (const entry of entries) {
      for (const node of entry.plain) if (!targets.has(node)) targets.set(node, null)
      for (const [group, nodes] of entry.groups) {
        const key = sharedKey(group, entry.filter)
        const localHas = this.local.has(key)
        const chosen = this.pick(key, nodes, localHas, packet)
        if (here === undefined) here = new Set(this.localGroupsFor(packet))
        if (chosen === this.node.name) continue
        here.delete(key)
        const groups = targets.get(chosen) ?? []
        groups.push(key)
        targets.set(chosen, groups)
      }
    }
    for (const [node, groups] of targets) {
      this.send(node, packet, groups, true)
      if (this.pressedOn === null && this.mesh.isCongested(node)) this.pressedOn = node
    }
    if (targets.size > 0) this.lastRouted = packet
    if (retain && this.retainedChanged(packet)) {
      // a copy for the peers' retained stores, not a delivery: not counted in messages/forward
      for (const node of this.mesh.peers()) if (!targets.has(node)) this.send(node, packet, null, false)
    }
    return here
  }

  /** True (and remembered) when `packet` differs from the retained message last copied for its topic. */
  private retainedChanged (packet: any): boolean {
    const payload: Buffer = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload
    const last = this.copiedRetained.get(packet.topic)
    if (last !== undefined && last.qos === packet.qos && last.payload.equals(payload)) return false
    // an empty payload deletes the retained message [MQTT-3.3.1-10]: nothing left to compare
    if (payload.length === 0) this.copiedRetained.delete(packet.topic)
    else this.copiedRetained.set(packet.topic, { payload, qos: packet.qos })
    return true
  }

  /** The shared-group keys this node has for `packet`'s topic. */
  private * localGroupsFor (packet: any): Iterable<string> {
    for (const key of this.local.keys()) {
      if (!key.startsWith('$share/')) continue
      const shared = parseShared(key)
      if (shared !== null && topicMatches(shared.filter, packet.topic)) yield key
    }
  }

  /** One node of a shared group for this message, by the configured strategy. */
  private pick (key: string, remote: Set<string>, localHas: boolean, packet: any): string {
    const nodes = localHas ? [this.node.name, ...remote] : [...remote]
    if (nodes.length === 1) return nodes[0]
    const strategy = this.node.config['broker.shared_subscription_strategy'] ?? 'random'
    switch (strategy) {
      case 'round_robin': {
        const i = ((this.roundRobin.get(key) ?? -1) + 1) % nodes.length
        this.roundRobin.set(key, i)
        return nodes[i]
      }
      case 'sticky': {
        const last = this.sticky.get(key)
        if (last !== undefined && nodes.includes(last)) return last
        const chosen = nodes[Math.floor(Math.random() * nodes.length)]
        this.sticky.set(key, chosen)
        return chosen
      }
      case 'hash': {
        const source = String(packet.clientId ?? packet.topic)
        let h = 0
        for (let i = 0; i < source.length; i++) h = (h * 31 + source.charCodeAt(i)) | 0
        return nodes[Math.abs(h) % nodes.length]
      }
      default:
        return nodes[Math.floor(Math.random() * nodes.length)]
    }
  }

  /** Adds `packet` to this turn's batch for `node`; `routed`: it goes to subscribers there. */
  private send (node: string, packet: any, groups: string[] | null, routed: boolean): void {
    const message: OutgoingMessage = {
      topic: packet.topic,
      payload: packet.payload,
      qos: packet.qos,
      retain: packet.retain === true,
      brokerCounter: packet.brokerCounter,
      routed
    }
    if (packet.clientId !== undefined) message.clientId = packet.clientId
    if (packet.properties !== undefined) message.properties = wireProperties(packet.properties)
    if (groups !== null) message.groups = groups
    let batch = this.outgoing.get(node)
    if (batch === undefined) this.outgoing.set(node, batch = [])
    batch.push(message)
    if (!this.sendScheduled) {
      this.sendScheduled = true
      setImmediate(() => { this.flushOutgoing() })
    }
  }

  /** Sends each node its batch of this turn, as one frame. */
  private flushOutgoing (): void {
    this.sendScheduled = false
    const outgoing = this.outgoing
    this.outgoing = new Map()
    const brokerId: string = this.node.broker.core.id
    for (const [node, all] of outgoing) {
      let batch = all
      if (this.mesh.backlog(node) > LINK_DROP_BYTES) {
        // publishers keep sending past the pause (QoS 0 has no window): QoS 0 goes, counted;
        // QoS 1/2 is kept (its publishers wait for the link: bounded by their in-flight windows)
        batch = all.filter(m => m.qos > 0 || !m.routed)
        this.dropAll(all, m => m.qos === 0 && m.routed, 'cluster_link_full')
        if (batch.length === 0) continue
      }
      let forwarded = 0
      let kept = 0
      for (let i = 0; i < batch.length; i++) {
        if (!batch[i].routed) continue
        forwarded++
        if (batch[i].qos > 0) kept++
      }
      const body = encodeBatch(brokerId, batch)
      if (!this.mesh.sendRaw(node, FRAME_PUBLISH_BATCH, body, kept)) {
        if (kept > 0 && this.graceTimers.has(node)) {
          // the node's link is down and its routes are kept: so are its QoS 1/2 messages,
          // sent first on its next link (or dropped, counted, when the grace ends)
          this.mesh.hold(node, FRAME_PUBLISH_BATCH, body, kept)
        } else {
          // the node is stopped for good: lost for its subscribers, and counted
          this.dropAll(batch, m => m.routed, 'cluster_link_down')
          continue
        }
      }
      this.node.metrics['messages/forward'] += forwarded
    }
  }

  /** Counts the QoS 1/2 messages of held batches given up on (`batches` of `name`). */
  private dropHeld (name: string, batches: HeldBatch[]): void {
    const broker = this.node.broker
    let lost = 0
    for (const b of batches) {
      try {
        decodeBatch(b.body, (_brokerId, m) => {
          if (m.qos === 0) return
          lost++
          broker.dropped(m, 'cluster_link_down')
        })
      } catch (err) {
        this.log.warn({ err, peer: name }, 'a held batch could not be read back')
      }
    }
    if (lost > 0) this.log.warn({ peer: name, lost }, 'QoS 1/2 messages forwarded to a node were dropped unacknowledged (it left, stayed away past the grace, or owed too much)')
  }

  /** Counts (in `messages/dropped`, with `reason`) the messages of `batch` that `which` picks. */
  private dropAll (batch: OutgoingMessage[], which: (m: OutgoingMessage) => boolean, reason: string): void {
    const broker = this.node.broker
    for (let i = 0; i < batch.length; i++) if (which(batch[i])) broker.dropped(batch[i], reason)
  }

  /** Publishes a message forwarded by another node into this node's broker. */
  private deliver (brokerId: string, m: ForwardedMessage): void {
    const packet: PublishMessage = {
      cmd: 'publish',
      topic: m.topic,
      payload: m.payload,
      qos: m.qos,
      retain: m.retain,
      dup: false,
      brokerId,
      brokerCounter: m.brokerCounter
    }
    if (m.clientId !== undefined) packet.clientId = m.clientId
    if (m.properties !== undefined) packet.properties = m.properties
    // read (and forgotten) by the router's peerGroups hook when it delivers this message
    if (m.groups !== undefined) this.arriving.set(`${brokerId}/${m.brokerCounter}`, new Set(m.groups))
    const lane = this.lanes.get(brokerId)
    if (lane !== undefined) lane.waiting.push(packet)
    else this.dispatch(brokerId, packet)
  }

  /**
   * Hands one forwarded message to the local broker. A subscriber's connection drops a
   * message whose broker counter is not above the last one it got from the same origin
   * (aedes' duplicate check), so the messages of one origin must reach the subscribers in
   * the order they were published: while a message of an origin goes the slow way (through
   * the core's publish: QoS 1/2, retained, expiring), the ones behind it wait in its lane.
   */
  private dispatch (brokerId: string, packet: PublishMessage): void {
    if (packet.qos === 0 && packet.retain !== true && packet.properties?.messageExpiryInterval === undefined) {
      // nothing to store or queue: straight to the router, as aedes' publish would end up
      // doing (its other steps count and tap publishes by clients, which this is not)
      this.node.broker.router.emit(packet, this.delivered)
      return
    }
    let lane = this.lanes.get(brokerId)
    if (lane === undefined) this.lanes.set(brokerId, lane = { pending: 0, waiting: [] })
    lane.pending++
    const done = lane
    this.node.broker.core.publishWith(packet, (err) => {
      this.delivered(err)
      done.pending--
      while (done.pending === 0 && done.waiting.length > 0) this.dispatch(brokerId, done.waiting.shift()!)
      if (done.pending === 0 && done.waiting.length === 0 && this.lanes.get(brokerId) === done) this.lanes.delete(brokerId)
    })
  }
}

/** A message in this turn's batch for a node; `routed`: it goes to subscribers there (not a retained copy). */
interface OutgoingMessage extends ForwardedMessage { routed: boolean }

/**
 * Past this many bytes waiting on a link (well above {@link LINK_HIGH_WATER}, where
 * publishers are paused), its QoS 0 messages are dropped, counted as `cluster_link_full`.
 */
const LINK_DROP_BYTES = 4 * LINK_HIGH_WATER

/** The route key of a persistence filter (shared filters are stored with the wire marker). */
function keyOf (filter: string): string {
  const shared = parseShared(filter)
  return shared === null ? filter : sharedKey(shared.group, shared.filter)
}

/**
 * The route keys of a `routes`/`routes=` frame: its strings. Anything else is dropped at the
 * link: a null key entered the table half-way and threw again when the peer's routes were
 * dropped, in a timer, which killed the node (found by bench/fuzz/cluster-door.ts).
 */
function routeKeys (value: unknown): string[] {
  return Array.isArray(value) ? value.filter((key): key is string => typeof key === 'string' && key !== '') : []
}

/** MQTT 5 properties that travel with a message (not the per-connection ones). */
function wireProperties (properties: Record<string, unknown>): Record<string, unknown> {
  const { topicAlias: _alias, subscriptionIdentifier: _ids, ...rest } = properties
  return rest
}
