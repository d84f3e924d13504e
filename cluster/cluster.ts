/**
 * The node's part in the cluster (DESIGN.md, cluster/; docs/cluster.md): membership
 * (join, leave, force-leave, status, rejoin after a restart, autoheal, autoclean, the
 * `partitioned` alarm), node RPC for the API and CLI, and the sync of routes, sessions and
 * cluster-wide data, each in its own module.
 *
 * Membership: every node keeps the members it knows in its store (`cluster_members`), so a
 * restarted node dials them again by itself. When a link comes up the two nodes swap member
 * lists (a node joining one member learns the others and dials them: a full mesh) and full
 * snapshots of routes, client registry and data digests; afterwards deltas travel on the
 * links, and gossipsub heartbeats carry each node's data digests, from which a node that
 * missed something pulls what differs (anti-entropy).
 */
import { join } from 'node:path'
import type { StarlingNode } from '../node/node.js'
import type { Logger } from '../node/logger.js'
import type { StoreTable } from '../node/store/index.js'
import { ApiError, CODES } from '../node/errors.js'
import { Mesh, type Hello } from './mesh.js'
import { MeshRpc } from './rpc.js'
import { Routing } from './routing.js'
import { DataSync } from './data-sync.js'
import { Sessions } from './sessions.js'

/** How long `cluster join` waits for the members it learnt to be linked before it answers. */
const JOIN_SETTLE_MS = 5000

/** A member as `cluster status` shows it. */
export interface MemberInfo {
  name: string
  addr: string
  status: 'running' | 'stopped'
}

interface StoredMember { addr: string }

/** How often a node dials the members it has no link to, and publishes its heartbeat. */
const TICK_MS = 2000
/** How long a stopped node's routes are kept before they are dropped. */
export const ROUTE_GRACE_MS = 15000
/** Timeout of a call to another node. */
const RPC_TIMEOUT_MS = 5000
/** The cluster port when a join names none. */
export const DEFAULT_CLUSTER_PORT = 4370

export class Cluster {
  readonly mesh: Mesh
  readonly rpc: MeshRpc
  readonly routing: Routing
  readonly data: DataSync
  readonly sessions: Sessions
  /**
   * Known members: `downSince` null while the link is up; `lost` once a link to it went
   * down in this run (with `cluster.autoheal = off` such a member is not dialled again; it
   * comes back when it dials us, e.g. after its restart).
   */
  private readonly members = new Map<string, { addr: string, downSince: number | null, lost: boolean }>()
  private readonly table: StoreTable<StoredMember>
  /** Nodes that left or were forced out: not re-added from others' lists until they join. */
  private readonly departed = new Set<string>()
  private timer: NodeJS.Timeout | null = null
  private readonly log: Logger
  private stopping = false

  constructor (readonly node: StarlingNode) {
    this.log = node.logger.child({ component: 'cluster' })
    const listen = node.config['cluster.listen'] as { host: string, port: number }
    this.mesh = new Mesh({
      name: node.name,
      cookie: node.config['node.cookie'],
      listen,
      keyFile: join(node.store.dir, '..', 'cluster.key'),
      logger: node.logger
    })
    this.rpc = new MeshRpc(this.mesh, RPC_TIMEOUT_MS)
    this.table = node.store.table<StoredMember>('cluster_members')
    this.routing = new Routing(node, this.mesh, this.rpc, this.log)
    this.data = new DataSync(node, this.mesh, this.rpc, this.log)
    this.sessions = new Sessions(node, this.mesh, this.rpc, this.log)
  }

  async start (): Promise<void> {
    await this.mesh.start()
    for (const [name, m] of this.table.entries()) this.members.set(name, { addr: m.addr, downSince: Date.now(), lost: false })
    this.mesh.on('up', (hello) => { this.peerUp(hello) })
    this.mesh.on('down', (name) => { this.peerDown(name) })
    this.mesh.on('frame', (from, frame) => {
      switch (frame.k) {
        case 'members': this.learn(frame.list as Array<{ name: string, addr: string }>); break
        case 'leave': void this.removeMember(from, 'left'); break
        case 'forget': void this.removeMember(frame.node as string, 'forced out'); break
        case 'kicked': void this.leave(); break
      }
    })
    this.mesh.on('control', (message) => { this.heartbeat(message) })
    this.rpc.handle('node.call', async (args: { name: string, args: unknown }) => await this.node.rpc.local(args.name, args.args))
    this.routing.start()
    this.data.start()
    this.sessions.start()
    this.node.rpc.remote = {
      nodes: () => [this.node.name, ...this.mesh.peers()],
      call: async (target, name, args) => await this.rpc.call(target, 'node.call', { name, args }, RPC_TIMEOUT_MS, name)
    }
    this.timer = setInterval(() => { this.tick() }, TICK_MS)
    this.timer.unref()
    if (this.node.config['cluster.discovery'] === 'static') {
      for (const seed of String(this.node.config['cluster.static.seeds'] ?? '').split(',').map(s => s.trim()).filter(s => s !== '')) {
        const { name, host, port } = parseNodeAddress(seed)
        if (name === this.node.name) continue
        if (!this.members.has(name)) this.members.set(name, { addr: `${host}:${port}`, downSince: Date.now(), lost: false })
      }
    }
    this.tick()
  }

  /** `cluster join <name>@<host>[:<port>]`. */
  async join (target: string): Promise<MemberInfo[]> {
    const { name, host, port } = parseNodeAddress(target)
    if (name === this.node.name) throw new ApiError(CODES.UNKNOWN, `cannot join ${target}: that is this node`)
    this.departed.delete(name)
    try {
      await this.mesh.dial(host, port, name)
    } catch (err: any) {
      throw new ApiError(CODES.BADRPC, `cannot join ${target}: ${err.message}`)
    }
    await this.settled(JOIN_SETTLE_MS)
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
      if (names.length === known && names.every(n => this.mesh.isUp(n))) return
      known = names.length
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  }

  /** `cluster leave`: tells every member, forgets them all. */
  async leave (): Promise<void> {
    this.mesh.broadcast({ k: 'leave' })
    const names = [...this.members.keys()]
    this.members.clear()
    await this.table.clear()
    for (const name of names) {
      this.departed.add(name)
      // let the leave frame go out before the link closes
      setTimeout(() => { this.mesh.hangUp(name) }, 200)
      this.routing.forget(name)
      this.sessions.forget(name)
    }
    this.clearPartitionAlarm()
    this.log.info('left the cluster')
  }

  /** `cluster force-leave <node>`: removes it from every member; it forgets the cluster. */
  async forceLeave (target: string): Promise<void> {
    if (target === this.node.name) throw new ApiError(CODES.UNKNOWN, 'a node cannot force itself out; use cluster leave')
    if (!this.members.has(target)) throw new ApiError(CODES.UNKNOWN, `${target} is not a member of this cluster; see cluster status`, 404)
    this.mesh.send(target, { k: 'kicked' })
    this.mesh.broadcast({ k: 'forget', node: target })
    await this.removeMember(target, 'forced out')
  }

  /** Running and stopped members, this node first. */
  status (): MemberInfo[] {
    const list: MemberInfo[] = [{ name: this.node.name, addr: this.mesh.addr, status: 'running' }]
    for (const [name, m] of [...this.members].sort(([a], [b]) => a.localeCompare(b))) {
      list.push({ name, addr: m.addr, status: this.mesh.isUp(name) ? 'running' : 'stopped' })
    }
    return list
  }

  async stop (): Promise<void> {
    this.stopping = true
    if (this.timer !== null) clearInterval(this.timer)
    this.node.rpc.remote = null
    this.sessions.stop()
    this.data.stop()
    this.routing.stop()
    this.rpc.close()
    await this.mesh.stop()
  }

  private peerUp (hello: Hello): void {
    this.departed.delete(hello.name)
    this.members.set(hello.name, { addr: hello.addr, downSince: null, lost: false })
    void this.table.put(hello.name, { addr: hello.addr })
    const list = [{ name: this.node.name, addr: this.mesh.addr }, ...[...this.members].map(([name, m]) => ({ name, addr: m.addr }))]
    this.mesh.send(hello.name, { k: 'members', list })
    this.routing.peerUp(hello.name)
    this.sessions.peerUp(hello.name)
    this.data.peerUp(hello.name)
    this.updatePartitionAlarm()
  }

  private peerDown (name: string): void {
    if (this.stopping) return
    const member = this.members.get(name)
    if (member === undefined) return
    member.downSince = Date.now()
    member.lost = true
    this.routing.peerDown(name)
    this.sessions.peerDown(name)
    this.updatePartitionAlarm()
  }

  /** Adds the members another node knows and dials them. */
  private learn (list: Array<{ name: string, addr: string }>): void {
    for (const { name, addr } of list) {
      if (name === this.node.name || this.departed.has(name) || this.members.has(name)) continue
      this.members.set(name, { addr, downSince: Date.now(), lost: false })
      void this.table.put(name, { addr })
      this.dial(name, addr)
    }
  }

  private async removeMember (name: string, why: string): Promise<void> {
    if (name === this.node.name) return
    this.departed.add(name)
    if (this.members.delete(name)) this.log.info({ peer: name }, `node ${why}`)
    await this.table.del(name)
    this.mesh.hangUp(name)
    this.routing.forget(name)
    this.sessions.forget(name)
    this.updatePartitionAlarm()
  }

  /** Dials stopped members, cleans long-stopped ones, publishes the heartbeat. */
  private tick (): void {
    const now = Date.now()
    const autoclean = Number(this.node.config['cluster.autoclean'] ?? 0)
    for (const [name, m] of this.members) {
      if (this.mesh.isUp(name)) continue
      if (autoclean > 0 && m.downSince !== null && now - m.downSince > autoclean) {
        void this.removeMember(name, `cleaned after being down ${Math.round((now - m.downSince) / 1000)} s (cluster.autoclean)`)
        continue
      }
      if (this.node.config['cluster.autoheal'] !== false || !m.lost) this.dial(name, m.addr)
    }
    void this.mesh.publishControl({ name: this.node.name, addr: this.mesh.addr, incarnation: this.mesh.incarnation, digests: this.data.digests() })
  }

  private dial (name: string, addr: string): void {
    const { host, port } = splitHostPort(addr)
    this.mesh.dial(host, port, name).catch((err: Error) => {
      this.log.debug({ peer: name, err: err.message }, 'cannot reach member')
    })
  }

  /** A heartbeat from another node: discovery and anti-entropy. */
  private heartbeat (message: any): void {
    if (typeof message?.name !== 'string' || message.name === this.node.name) return
    if (!this.members.has(message.name) && !this.departed.has(message.name) && typeof message.addr === 'string') {
      this.learn([{ name: message.name, addr: message.addr }])
      return
    }
    if (this.mesh.isUp(message.name) && message.digests !== undefined) this.data.compare(message.name, message.digests)
  }

  private updatePartitionAlarm (): void {
    const down = [...this.members.keys()].filter(name => !this.mesh.isUp(name))
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

/** Host and cluster port of `name@host[:port]`; throws a clear error on a bad form. */
export function parseNodeAddress (target: string): { name: string, host: string, port: number } {
  const match = /^([^@\s]+)@([^@\s:]+|\[[^\]]+\])(?::(\d+))?$/.exec(target)
  if (match === null) throw new ApiError(CODES.WRONG_TYPE, `bad node name ${target}; expected <name>@<host> or <name>@<host>:<port>`)
  const port = match[3] === undefined ? DEFAULT_CLUSTER_PORT : Number(match[3])
  if (port < 1 || port > 65535) throw new ApiError(CODES.WRONG_TYPE, `bad cluster port in ${target}`)
  return { name: `${match[1]}@${match[2]}`, host: match[2].replace(/^\[|\]$/g, ''), port }
}

function splitHostPort (addr: string): { host: string, port: number } {
  const colon = addr.lastIndexOf(':')
  return { host: addr.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(addr.slice(colon + 1)) }
}
