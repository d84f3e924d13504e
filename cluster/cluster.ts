/**
 * The node's part in the cluster (DESIGN.md, cluster/; docs/cluster.md): membership
 * (join, leave, force-leave, status, rejoin after a restart, autoheal, autoclean, the
 * `partitioned` alarm), node RPC for the API and CLI, and the sync of routes, sessions and
 * cluster-wide data, each in its own module.
 *
 * Membership: every node keeps stamped membership records (cluster/member-book.ts) in its
 * store, so a restarted node dials its members again by itself. When a link comes up the
 * two nodes swap their whole books (a node joining one member learns the others and dials
 * them: a full mesh); each change (a join, a leave, a force-leave) then travels to every
 * linked node, which passes on what was news to it. Only then are the two nodes members to
 * each other: routes, client registry and data digests are exchanged, and afterwards their
 * deltas; gossipsub heartbeats carry each node's data digests, from which a node that missed
 * something pulls what differs (anti-entropy).
 *
 * Invariants:
 * - Every node dials every node its book records as a member, and `cluster status` lists
 *   each of them: running when linked and admitted, stopped otherwise (with the
 *   `partitioned` alarm). No member is known but silently unlinked.
 * - A link is admitted (routes and sessions flow) only once each side's book, after the
 *   swap, records the other as a member. A node whose view of this node is stale (it holds
 *   an older epoch of it: it was down while this node left, or joined elsewhere) is told
 *   `not-member` and the link is closed; a node told by a newer tombstone that it was forced
 *   out leaves.
 * - A node that left records only its own tombstone: it is alone, admits no link but a
 *   join's, and takes nobody's member list until it joins again.
 */
import { join } from 'node:path'
import { createConnection } from 'node:net'
import type { NodeComponents } from '../node/node.js'
import { registerClusterControl } from './control.js'
import { registerClusterOperations } from './operations.js'
import type { Logger } from '../node/logger.js'
import { BadRpcError, NotFoundError, RefusedError } from '../node/errors.js'
import { Mesh, LISTEN_OFF, type Hello } from './mesh.js'
import { MeshRpc } from './rpc.js'
import { Routing, type RoutingComponents } from './routing.js'
import { parseNodeAddress } from './node-address.js'
export { parseNodeAddress, DEFAULT_CLUSTER_PORT } from './node-address.js'
import { DataSync } from './data-sync.js'
import { Sessions, type SessionsComponents } from './sessions.js'
import { MemberBook, supersedes, type MemberEntry, type MemberRecord } from './member-book.js'
import { ClusterBridgeTransport } from './bridge-transport.js'

/** How long `cluster join` waits for the members it learnt to be linked before it answers. */
const JOIN_SETTLE_MS = 5000
/** How long `cluster join` waits for its target's cluster port to answer before leaving its own cluster. */
const JOIN_PROBE_MS = 3000

/** Resolves once something accepts a TCP connection at `host:port`; rejects with why not. */
async function listening (host: string, port: number, timeoutMs: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const socket = createConnection({ host, port, timeout: timeoutMs })
    socket.once('connect', () => { socket.destroy(); resolve() })
    socket.once('timeout', () => { socket.destroy(); reject(new Error(`no answer from ${host}:${port} in ${timeoutMs} ms`)) })
    socket.once('error', (err) => { socket.destroy(); reject(err) })
  })
}

/** A member as `cluster status` shows it. */
export interface MemberInfo {
  name: string
  addr: string
  status: 'running' | 'stopped'
}

/** How often a node dials the members it has no link to, and publishes its heartbeat. */
const TICK_MS = 2000
/** How long a stopped node's routes are kept before they are dropped. */
export const ROUTE_GRACE_MS = 15000
/** Timeout of a call to another node. */
const RPC_TIMEOUT_MS = 5000

/** What the cluster part uses of the node. */
export type ClusterComponents = Pick<NodeComponents, 'name' | 'config' | 'store' | 'logger' | 'rpc' | 'services' | 'control' | 'shared'> & RoutingComponents & SessionsComponents

/** The node's part in the cluster; built with the node, started by it after the plugins (node/node.ts). */
export class Cluster {
  readonly mesh: Mesh
  readonly rpc: MeshRpc
  readonly routing: Routing
  readonly data: DataSync
  readonly sessions: Sessions
  /** The RPC bridges' links to other clusters' nodes (cluster/bridge-transport.ts): no member links. */
  readonly bridgeTransport: ClusterBridgeTransport
  /** Membership records, this node's own included. */
  private readonly book: MemberBook
  /**
   * Link state of the members in {@link book}: `downSince` null while admitted; `lost` once
   * a link to it went down in this run (with `cluster.autoheal = off` such a member is not
   * dialled again; it comes back when it dials us, e.g. after its restart).
   */
  private readonly members = new Map<string, { downSince: number | null, lost: boolean }>()
  /** Peers whose link is admitted (their book said we are members to each other). */
  private readonly admitted = new Set<string>()
  /** Nodes this node is joining through `cluster join`: their link is a join's. */
  private readonly joining = new Set<string>()
  /** Seeds this node joins through at start (their links are join links until admitted). */
  private readonly seeding = new Set<string>()
  /** Books swapped on a link, waiting for the peer to accept this node's. */
  private readonly swapped = new Map<string, MemberEntry[]>()
  /** Peers that accepted this node's book on their current link. */
  private readonly acceptedBy = new Set<string>()
  private timer: NodeJS.Timeout | null = null
  private readonly log: Logger
  private stopping = false
  /** Detaches this cluster from the node's RPC (calls are local again). */
  private detachRemote: (() => void) | null = null
  /** Removes the `cluster` control commands and node operations. */
  private offControl: (() => void) | null = null

  constructor (readonly node: ClusterComponents) {
    this.log = node.logger.child({ component: 'cluster' })
    const listen = node.config['cluster.listen']
    this.mesh = new Mesh({
      name: node.name,
      cookie: node.config['node.cookie'],
      listen,
      keyFile: join(node.store.dir, '..', 'cluster.key'),
      logger: node.logger
    })
    this.rpc = new MeshRpc(this.mesh, RPC_TIMEOUT_MS)
    this.book = new MemberBook(node.name, node.store.table<MemberRecord>('cluster_members'))
    this.routing = new Routing(node, this.mesh, this.rpc, this.log)
    this.data = new DataSync(node, this.mesh, this.rpc, this.log)
    this.sessions = new Sessions(node, this.mesh, this.rpc, this.log)
    this.bridgeTransport = new ClusterBridgeTransport({ name: node.name, cookie: node.config['node.cookie'], broker: node.broker, logger: node.logger }, this.mesh)
  }

  async start (): Promise<void> {
    // libp2p at once for a node with members to dial; a standalone node starts it when a
    // node joins it or it joins one (cluster/mesh-door.ts)
    await this.mesh.start({ wake: this.book.members().length > 0 })
    await this.bridgeTransport.start()
    // the address this run announces (a port of 0 binds another one each start)
    if (this.book.own.addr !== this.mesh.addr) this.book.set(this.node.name, { ...this.book.own, addr: this.mesh.addr })
    for (const [name] of this.book.members()) this.members.set(name, { downSince: Date.now(), lost: false })
    // a member's link that closes keeps what it owed for the next one (cluster/mesh.ts, held batches)
    this.mesh.keepsHeldFor = (name) => this.admitted.has(name)
    this.mesh.on('up', (hello) => { this.linkUp(hello) })
    this.mesh.on('down', (name) => { this.swapped.delete(name); this.acceptedBy.delete(name); this.peerDown(name) })
    this.mesh.on('frame', (from, frame) => {
      switch (frame.k) {
        case 'members': {
          const list = memberEntries(frame.list)
          if (list !== null) this.onMembers(from, list, frame.full === true, frame.join === true, frame.reply === true)
          break
        }
        case 'accepted': this.acceptedBy.add(from); this.tryAdmit(from); break
        case 'not-member': this.notMember(from, Number(frame.stamp)); break
      }
    })
    this.mesh.on('control', (message) => { this.heartbeat(message) })
    this.rpc.handle('node.call', async (args: { name: string, args: unknown }) => await this.node.rpc.local(args.name, args.args))
    this.routing.start()
    this.data.start()
    this.sessions.start()
    const offControl = registerClusterControl(this.node.control, this)
    const offOperations = registerClusterOperations(this.node.rpc, this)
    this.offControl = () => { offControl(); offOperations() }
    this.detachRemote = this.node.rpc.attachRemote({
      nodes: () => [this.node.name, ...this.mesh.peers().filter(name => this.admitted.has(name))],
      stopped: () => this.status().filter(m => m.status === 'stopped').map(m => m.name),
      call: async (target, name, args) => await this.rpc.call(target, 'node.call', { name, args }, RPC_TIMEOUT_MS, name)
    })
    this.timer = setInterval(() => { this.tick() }, TICK_MS)
    this.timer.unref()
    if (this.node.config['cluster.discovery'] === 'static' && this.node.config['cluster.listen'] === null) {
      this.log.warn('cluster.discovery = static, but cluster.listen is off: the seeds are not joined')
    } else if (this.node.config['cluster.discovery'] === 'static') {
      const seeds = String(this.node.config['cluster.static.seeds'] ?? '').split(',').map(s => s.trim()).filter(s => s !== '')
        .map(seed => parseNodeAddress(seed)).filter(seed => seed.name !== this.node.name)
      // a node without members (new, or it left) joins through its seeds, as `cluster join`
      // would: a new epoch, and join links (a tombstone of a namesake that left is older)
      if (seeds.length > 0 && this.book.members().length === 0) {
        this.book.set(this.node.name, { addr: this.mesh.addr, stamp: this.book.stamp() })
        for (const seed of seeds) { this.joining.add(seed.name); this.seeding.add(seed.name) }
      }
      for (const { name, host, port } of seeds) {
        if (this.book.alone || this.book.get(name) !== undefined) continue
        // a seed's epoch is unknown (stamp 0): the swap on its link brings it
        this.book.set(name, { addr: `${host}:${port}`, stamp: 0 })
        this.members.set(name, { downSince: Date.now(), lost: false })
      }
    }
    this.tick()
  }

  /** `cluster join <name>@<host>[:<port>]`. */
  async join (target: string): Promise<MemberInfo[]> {
    const { name, host, port } = parseNodeAddress(target)
    if (name === this.node.name) throw new RefusedError(`cannot join ${target}: that is this node`)
    if (this.node.config['cluster.listen'] === null) throw new RefusedError(`cannot join ${target}: ${LISTEN_OFF}`)
    // already a running member of that node's cluster: nothing to do
    if (this.book.isMember(name) && this.isRunning(name)) return this.status()
    // As EMQ X's `cluster join`: a node joins the other node's cluster and leaves its own,
    // whatever it still remembers of it (members it cannot reach, one that forced it out while
    // it was down), but only once the other node answers: a join that cannot reach its
    // target changes nothing. Then a new epoch: any tombstone of this node there is older.
    const inCluster = this.book.members().length > 0
    if (inCluster && !this.mesh.isUp(name)) {
      try {
        await listening(host, port, JOIN_PROBE_MS)
      } catch (err: any) {
        throw new BadRpcError(`cannot join ${target}: ${err.message}`)
      }
    }
    if (inCluster) await this.leave()
    const own: MemberRecord = { addr: this.mesh.addr, stamp: this.book.stamp() }
    this.book.set(this.node.name, own)
    this.joining.add(name)
    try {
      // an existing link (the link of a member, or one closing after a leave) swaps again, as a join's
      if (this.mesh.isUp(name)) this.sendBook(name, true)
      else await this.mesh.dial(host, port, name)
    } catch (err: any) {
      this.joining.delete(name)
      throw new BadRpcError(`cannot join ${target}: ${err.message}`)
    }
    await this.settled(JOIN_SETTLE_MS)
    this.joining.delete(name)
    return this.status()
  }

  /**
   * Resolves once every member this node knows of is linked and the member list has not
   * grown for a moment, or after `ms`: right after a join, the members learnt from the peer
   * are still being dialled, and `status()` would call them stopped.
   */
  private async settled (ms: number): Promise<void> {
    const deadline = Date.now() + ms
    let known = -1
    while (Date.now() < deadline) {
      const names = [...this.members.keys()]
      if (names.length === known && names.every(n => this.admitted.has(n))) return
      known = names.length
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  }

  /** `cluster leave`: tells every member, forgets them all. */
  async leave (): Promise<void> {
    const stamp = this.book.stamp()
    this.tell({ k: 'members', list: [{ name: this.node.name, addr: this.mesh.addr, stamp, departed: true }] })
    this.goAlone(stamp, 'left the cluster')
  }

  /** This node is out of its cluster (it left, or a newer tombstone of it says it was forced out). */
  private goAlone (stamp: number, why: string): void {
    this.book.set(this.node.name, { addr: this.mesh.addr, stamp: Math.max(stamp, this.book.stamp()), departed: true })
    this.book.forgetOthers()
    for (const name of new Set([...this.members.keys(), ...this.mesh.peers()])) this.dropPeer(name)
    this.clearPartitionAlarm()
    this.log.info(why)
  }

  /** Forgets the routes and sessions of `name` and closes its link (after the frames queued for it left). */
  private dropPeer (name: string): void {
    this.members.delete(name)
    this.admitted.delete(name)
    setTimeout(() => { if (!this.book.isMember(name)) this.mesh.hangUp(name) }, 200)
    this.routing.forget(name)
    this.sessions.forget(name)
  }

  /** `cluster force-leave <node>`: removes it from every member; it forgets the cluster. */
  async forceLeave (target: string): Promise<void> {
    if (target === this.node.name) throw new RefusedError('a node cannot force itself out; use cluster leave')
    if (!this.book.isMember(target)) throw NotFoundError.withMessage(`${target} is not a member of this cluster; see cluster status`)
    const tombstone: MemberEntry = { name: target, addr: this.book.get(target)!.addr, stamp: this.book.stamp(), departed: true }
    // every linked node, the target too: it leaves when it reads its own newer tombstone
    this.tell({ k: 'members', list: [tombstone] })
    this.book.merge(tombstone)
    this.applied(tombstone, 'forced out')
    this.updatePartitionAlarm()
  }

  /** Running and stopped members, this node first. */
  status (): MemberInfo[] {
    const list: MemberInfo[] = [{ name: this.node.name, addr: this.mesh.addr, status: 'running' }]
    for (const [name, m] of this.book.members().sort(([a], [b]) => a.localeCompare(b))) {
      list.push({ name, addr: m.addr, status: this.isRunning(name) ? 'running' : 'stopped' })
    }
    return list
  }

  async stop (): Promise<void> {
    this.stopping = true
    if (this.timer !== null) clearInterval(this.timer)
    this.detachRemote?.()
    this.detachRemote = null
    this.offControl?.()
    this.offControl = null
    this.sessions.stop()
    this.data.stop()
    this.routing.stop()
    this.rpc.close()
    await this.bridgeTransport.stop()
    await this.mesh.stop()
  }

  /** A link is up: swap books; the link is admitted once both sides accept ({@link onMembers}). */
  private linkUp (hello: Hello): void {
    this.sendBook(hello.name, this.joining.has(hello.name))
  }

  private sendBook (name: string, join: boolean, reply = false): void {
    const frame: Record<string, unknown> = { k: 'members', full: true, list: this.book.entries() }
    if (join) frame.join = true
    if (reply) frame.reply = true
    this.mesh.send(name, frame as { k: string })
  }

  /** Sends `frame` to every admitted member but `except`. */
  private tell (frame: { k: string, [field: string]: unknown }, except?: string): void {
    for (const peer of this.admitted) if (peer !== except) this.mesh.send(peer, frame)
  }

  /** True when `name` is a member whose link is up and admitted. */
  private isRunning (name: string): boolean {
    return this.admitted.has(name) && this.mesh.isUp(name)
  }

  /**
   * A `members` frame: the peer's whole book (`full`: the swap when a link comes up; `join`
   * when the peer joins through this node, which answers with its own book) or changes it
   * heard of (merged at once).
   *
   * A swapped book is only checked for what it says of this node, and kept aside: it is
   * merged once the peer accepted this node's book too (`accepted`), so two nodes of
   * different clusters never take each other's members.
   */
  private onMembers (from: string, list: MemberEntry[], full: boolean, join: boolean, reply: boolean): void {
    if (!Array.isArray(list)) return
    if (!full) {
      // news counts only from a member: a link still closing after a leave, or refused,
      // belongs to another cluster (news from a peer whose swap is pending waits with its book)
      const pending = this.swapped.get(from)
      if (pending !== undefined) pending.push(...list)
      else if (this.admitted.has(from) && !this.book.alone) this.mergeNews(from, list)
      return
    }
    // a join's link: this node joins `from`, or `from` joins this node, or answers its join
    const joinLink = join || reply || this.joining.has(from)
    const theirs = list.find(e => e?.name === from)
    // a node this one joins, answering the link while it still ran alone: its answer to the join follows
    if (this.joining.has(from) && theirs?.departed === true) return
    if (this.book.alone) {
      if (!join) { this.reject(from); return }
      // a node joins this one, which runs alone: the two form a cluster
      this.book.set(this.node.name, { addr: this.mesh.addr, stamp: this.book.stamp() })
    }
    if (!joinLink) {
      const own = this.book.own
      const aboutMe = list.find(e => e?.name === this.node.name)
      if (aboutMe !== undefined && typeof aboutMe.stamp === 'number') {
        this.book.observe(aboutMe.stamp)
        if (aboutMe.departed === true && aboutMe.stamp > own.stamp) { this.goAlone(aboutMe.stamp, `forced out of the cluster (told by ${from})`); return }
        // the peer knows an older epoch of this node: it is of a cluster this node left
        if (aboutMe.stamp !== 0 && (aboutMe.stamp < own.stamp || aboutMe.departed === true)) { this.reject(from); return }
      }
      const mine = this.book.get(from)
      // this node knows the peer left (or was forced out) after the epoch it shows
      if (mine?.departed === true && (theirs === undefined || !supersedes(theirs, mine))) { this.reject(from); return }
    }
    this.swapped.set(from, list)
    this.mesh.send(from, { k: 'accepted' })
    if (join && !reply) this.sendBook(from, false, true)
    this.tryAdmit(from)
  }

  /** Both sides accepted the swap: merge the peer's book and admit the link. */
  private tryAdmit (from: string): void {
    const list = this.swapped.get(from)
    if (list === undefined || !this.acceptedBy.has(from)) return
    this.swapped.delete(from)
    this.mergeNews(from, list)
    if (this.book.isMember(from)) this.admit(from)
  }

  /** Merges records from `from`, acts on the news and passes it on to the other linked nodes. */
  private mergeNews (from: string, list: MemberEntry[]): void {
    const news: MemberEntry[] = []
    for (const entry of list) {
      if (typeof entry?.name !== 'string' || typeof entry.stamp !== 'number') continue
      if (entry.name === this.node.name) {
        this.book.observe(entry.stamp)
        if (entry.departed === true && entry.stamp > this.book.own.stamp) { this.goAlone(entry.stamp, `forced out of the cluster (told by ${from})`); return }
        continue
      }
      if (!this.book.merge(entry)) continue
      news.push(entry)
      this.applied(entry, entry.departed === true ? (entry.name === from ? 'left the cluster' : `is no longer a member (heard from ${from})`) : 'learnt')
    }
    // a node linked to this one but not to the sender hears it too
    if (news.length > 0) this.tell({ k: 'members', list: news }, from)
    this.updatePartitionAlarm()
  }

  /** Acts on a record that changed: dial a new member, drop a departed one. */
  private applied (entry: MemberEntry, why: string): void {
    if (entry.departed === true) {
      if (this.members.has(entry.name) || this.mesh.isUp(entry.name)) this.log.info({ peer: entry.name }, `node ${why}`)
      this.dropPeer(entry.name)
      return
    }
    if (!this.members.has(entry.name)) this.members.set(entry.name, { downSince: Date.now(), lost: false })
    if (!this.mesh.isUp(entry.name) && entry.addr !== '') this.dial(entry.name, entry.addr)
  }

  /** Tells `from` that the two are not members of one cluster, and closes the link. */
  private reject (from: string): void {
    this.log.info({ peer: from }, 'refused a link from a node that is not a member (it holds an older view of this node)')
    this.mesh.send(from, { k: 'not-member', stamp: this.book.own.stamp })
    this.swapped.delete(from)
    this.admitted.delete(from)
    setTimeout(() => {
      if (this.admitted.has(from)) return
      this.mesh.hangUp(from)
      // route deltas it sent before the refusal
      if (!this.book.isMember(from)) { this.routing.forget(from); this.sessions.forget(from) }
    }, 200)
  }

  /** `from` says this node's view of it is stale: it is not a member here (unless a newer record says so). */
  private notMember (from: string, stamp: number): void {
    this.swapped.delete(from)
    if (!Number.isFinite(stamp) || this.book.alone) return
    const current = this.book.get(from)
    if (current !== undefined && (current.departed === true || current.stamp > stamp)) return
    const tombstone: MemberEntry = { name: from, addr: current?.addr ?? '', stamp, departed: true }
    this.book.set(from, tombstone)
    this.applied(tombstone, 'is in another cluster')
    this.tell({ k: 'members', list: [tombstone] })
    this.updatePartitionAlarm()
  }

  /** The swap agreed: `name` is a linked member; routes, sessions and data flow. */
  private admit (name: string): void {
    if (this.admitted.has(name)) return
    const hello = this.mesh.peer(name)
    if (hello === undefined) return
    this.admitted.add(name)
    if (this.seeding.delete(name)) this.joining.delete(name)
    const record = this.book.get(name)!
    if (record.addr !== hello.addr) this.book.set(name, { ...record, addr: hello.addr })
    this.members.set(name, { downSince: null, lost: false })
    this.routing.peerUp(name)
    this.sessions.peerUp(name)
    this.data.peerUp(name)
    this.updatePartitionAlarm()
  }

  private peerDown (name: string): void {
    if (this.stopping) return
    if (!this.admitted.delete(name)) return
    const member = this.members.get(name)
    if (member === undefined) return
    member.downSince = Date.now()
    member.lost = true
    this.routing.peerDown(name)
    this.sessions.peerDown(name)
    this.updatePartitionAlarm()
  }

  /** Drops a member long stopped (`cluster.autoclean`): this node's own decision, not passed on. */
  private clean (name: string, why: string): void {
    this.log.info({ peer: name }, `node ${why}`)
    this.book.drop(name)
    this.dropPeer(name)
    this.updatePartitionAlarm()
  }

  /** Dials stopped members, cleans long-stopped ones, publishes the heartbeat. */
  private tick (): void {
    const now = Date.now()
    const autoclean = Number(this.node.config['cluster.autoclean'] ?? 0)
    for (const [name, record] of this.book.members()) {
      if (this.mesh.isUp(name)) continue
      const m = this.members.get(name) ?? { downSince: now, lost: false }
      this.members.set(name, m)
      if (autoclean > 0 && m.downSince !== null && now - m.downSince > autoclean) {
        this.clean(name, `cleaned after being down ${Math.round((now - m.downSince) / 1000)} s (cluster.autoclean)`)
        continue
      }
      if (this.node.config['cluster.autoheal'] !== false || !m.lost) this.dial(name, record.addr)
    }
    this.updatePartitionAlarm()
    void this.mesh.publishControl({ name: this.node.name, addr: this.mesh.addr, incarnation: this.mesh.incarnation, digests: this.data.digests() })
  }

  private dial (name: string, addr: string): void {
    const { host, port } = splitHostPort(addr)
    this.mesh.dial(host, port, name).catch((err: Error) => {
      this.log.debug({ peer: name, err: err.message }, 'cannot reach member')
    })
  }

  /**
   * A heartbeat from another node: anti-entropy with admitted members. Not discovery: a
   * node hears the heartbeats of every node it has a libp2p connection to, left ones too;
   * members are learnt from the books swapped on links.
   */
  private heartbeat (message: any): void {
    if (typeof message?.name !== 'string' || message.name === this.node.name) return
    if (this.isRunning(message.name) && message.digests !== undefined) this.data.compare(message.name, message.digests)
  }

  private updatePartitionAlarm (): void {
    const now = Date.now()
    // a member just learnt is being dialled: stopped in `cluster status` at once, but in the
    // alarm only when its link went down or it stayed unlinked for a dial round
    const down = this.book.members().map(([name]) => name).filter(name => {
      if (this.isRunning(name)) return false
      const m = this.members.get(name)
      return m === undefined || m.lost || m.downSince === null || now - m.downSince >= TICK_MS
    })
    const alarms = this.node.services.alarms
    if (alarms === undefined) return
    if (down.length > 0) {
      alarms.activate('partitioned', `lost contact with ${down.join(', ')}`, { nodes: down })
    } else {
      this.clearPartitionAlarm()
    }
  }

  private clearPartitionAlarm (): void {
    this.node.services.alarms?.deactivate('partitioned')
  }
}

/**
 * The well-formed entries of a `members` frame (a list, or null when it is none). An entry
 * whose address was not a string went into the book, and the next dial round threw on it in a
 * timer, which killed the node (found by bench/fuzz/cluster-door.ts).
 */
function memberEntries (list: unknown): MemberEntry[] | null {
  if (!Array.isArray(list)) return null
  return list.filter((e): e is MemberEntry => typeof e?.name === 'string' && e.name !== '' && typeof e.addr === 'string' &&
    typeof e.stamp === 'number' && Number.isFinite(e.stamp) && (e.departed === undefined || e.departed === true))
}

function splitHostPort (addr: string): { host: string, port: number } {
  const colon = addr.lastIndexOf(':')
  return { host: addr.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(addr.slice(colon + 1)) }
}
