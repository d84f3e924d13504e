/**
 * The client registry and session takeover across the cluster.
 *
 * Each node owns the client ids connected to it and those of its offline persistent
 * sessions, and tells its peers (`reg` deltas, `reg=` snapshot when a link comes up).
 * When a client authenticates on node B while the registry places its id on node A, B
 * asks A to take the session over before aedes sets it up: A disconnects the old
 * connection (MQTT 5: DISCONNECT 0x8E Session taken over), hands over its subscriptions
 * and queued messages when the new connection keeps the session (clean start false),
 * and drops them. B installs them, then aedes resumes the session as if it had always
 * been there.
 *
 * A client id connected on both sides of a healed partition: the older connection is
 * closed by its node (the one with the later `connected_at` stays; a tie keeps the one on
 * the node with the greater name), so it ends on one node.
 */
import type { NodeComponents } from '../node/node.js'

/** What the client registry uses of the node: the MQTT core, the hooks bus and `node.name`. */
export type SessionsComponents = Pick<NodeComponents, 'broker' | 'hooks' | 'name'>
import type { Logger } from '../node/logger.js'
import type { ClientView, SessionStore } from '../node/mqtt/core.js'
import type { Mesh, Frame } from './mesh.js'
import type { MeshRpc } from './rpc.js'

/** One registry entry: since when, and whether the client is connected or its session waits. */
interface Entry { at: number, on: boolean }

/** A session handed over by its old node. */
interface TakenSession {
  subs: Array<Record<string, any>>
  queued: Array<Record<string, any>>
}

/** MQTT 5 DISCONNECT reason code: Session taken over. */
const SESSION_TAKEN_OVER = 0x8e
const TAKEOVER_TIMEOUT_MS = 5000

export class Sessions {
  private readonly local = new Map<string, Entry>()
  private readonly remote = new Map<string, Map<string, Entry>>()
  /** Removes the takeover hook added in start(). */
  private offAccept: (() => void) | null = null
  private readonly unsubscribe: Array<() => void> = []

  constructor (private readonly node: SessionsComponents, private readonly mesh: Mesh, private readonly rpc: MeshRpc, private readonly log: Logger) {}

  private get persistence (): SessionStore { return this.node.broker.core.sessions }

  start (): void {
    for (const info of this.persistence.persistentSessions()) this.local.set(info.clientId, { at: 0, on: false })
    for (const client of this.node.broker.core.clients()) {
      if (client.connected) this.local.set(client.id, { at: Date.now(), on: true })
    }
    const hooks = this.node.hooks
    this.unsubscribe.push(hooks.on('client.connected', (e) => {
      this.set(e.client_id, { at: e.connected_at, on: true })
      this.resolveDuplicate(e.client_id)
    }))
    this.unsubscribe.push(hooks.on('client.disconnected', (e) => {
      const current = this.local.get(e.client_id)
      if (current === undefined || current.at !== e.connected_at) return
      const client = this.node.broker.core.client(e.client_id)
      if (client !== undefined && client.connected) return
      const keeps = this.persistence.subscriptionsOf(e.client_id).length > 0 || this.persistence.queuedOf(e.client_id).length > 0
      this.set(e.client_id, keeps ? { at: e.connected_at, on: false } : null)
    }))
    // nothing to take over (no other node has this client id): no promise, the CONNECT goes on at once
    this.offAccept = this.node.broker.addAcceptHook((clientId, cleanStart) => this.remote.has(clientId) ? this.takeOver(clientId, cleanStart) : undefined)
    this.mesh.on('frame', (from, frame) => { this.onFrame(from, frame) })
    this.rpc.handle('session.takeover', async (args: { clientId: string, clean: boolean }) => await this.giveUp(String(args.clientId), args.clean === true))
  }

  stop (): void {
    for (const off of this.unsubscribe) off()
    this.offAccept?.()
    this.offAccept = null
  }

  /** The node a client id is on (this node first), or undefined. */
  whereIs (clientId: string): string | undefined {
    if (this.local.has(clientId)) return this.node.name
    const nodes = this.remote.get(clientId)
    return nodes === undefined ? undefined : [...nodes.keys()][0]
  }

  peerUp (name: string): void {
    const entries = [...this.local].map(([id, e]) => [id, e.at, e.on])
    this.mesh.send(name, { k: 'reg=', e: entries })
  }

  peerDown (_name: string): void {
    // entries stay: the node may come back with its sessions; a takeover of a client on a
    // node that is down fails fast and the client connects with a new session
  }

  /** Drops the entries of a node that left. */
  forget (name: string): void {
    for (const [id, nodes] of this.remote) {
      nodes.delete(name)
      if (nodes.size === 0) this.remote.delete(id)
    }
  }

  private set (clientId: string, entry: Entry | null): void {
    if (entry === null) this.local.delete(clientId)
    else this.local.set(clientId, entry)
    this.mesh.broadcast({ k: 'reg', id: clientId, at: entry?.at ?? 0, on: entry?.on ?? false, del: entry === null })
  }

  /**
   * `reg` and `reg=` frames: entries whose client id is not a non-empty string or whose time
   * is not a number are skipped (a `reg=` whose list was not one threw in the frame handler,
   * found by bench/fuzz/cluster-door.ts).
   */
  private onFrame (from: string, frame: Frame): void {
    if (frame.k === 'reg') {
      if (!isEntry([frame.id, frame.at])) return
      const id = frame.id as string
      this.setRemote(from, id, frame.del === true ? null : { at: frame.at as number, on: frame.on === true })
      if (frame.del !== true) this.resolveDuplicate(id)
    } else if (frame.k === 'reg=') {
      if (!Array.isArray(frame.e)) return
      const entries = (frame.e as unknown[]).filter(isEntry)
      this.forget(from)
      for (const [id, at, on] of entries) this.setRemote(from, id, { at, on: on === true })
      for (const [id] of entries) this.resolveDuplicate(id)
    }
  }

  private setRemote (node: string, clientId: string, entry: Entry | null): void {
    let nodes = this.remote.get(clientId)
    if (entry === null) {
      nodes?.delete(node)
      if (nodes?.size === 0) this.remote.delete(clientId)
      return
    }
    if (nodes === undefined) { nodes = new Map(); this.remote.set(clientId, nodes) }
    nodes.set(node, entry)
  }

  /** A client id connected here and on another node: the older connection goes. */
  private resolveDuplicate (clientId: string): void {
    const mine = this.local.get(clientId)
    const others = this.remote.get(clientId)
    if (mine === undefined || !mine.on || others === undefined) return
    for (const [node, theirs] of others) {
      if (!theirs.on) continue
      const theirsWins = theirs.at > mine.at || (theirs.at === mine.at && node > this.node.name)
      if (!theirsWins) continue
      const client = this.node.broker.core.client(clientId)
      if (client === undefined) return
      this.log.info({ clientId, node }, 'client id connected on two nodes: closing the older connection here')
      void this.disconnect(client)
      return
    }
  }

  /** Before aedes accepts `clientId` here: takes its session over from the node holding it. */
  private async takeOver (clientId: string, cleanStart: boolean): Promise<void> {
    const nodes = this.remote.get(clientId)
    if (nodes === undefined) return
    for (const node of [...nodes.keys()]) {
      if (!this.mesh.isUp(node)) continue
      const taken = await this.rpc.call(node, 'session.takeover', { clientId, clean: cleanStart }, TAKEOVER_TIMEOUT_MS) as TakenSession | null
      this.setRemote(node, clientId, null)
      if (taken !== null && !cleanStart) {
        await this.persistence.importSession(clientId, taken.subs, taken.queued)
        this.log.info({ clientId, from: node, subscriptions: taken.subs.length, queued: taken.queued.length }, 'session taken over')
      }
    }
  }

  /** Another node takes `clientId` over: close it here and hand its session over. */
  private async giveUp (clientId: string, clean: boolean): Promise<TakenSession | null> {
    const client = this.node.broker.core.client(clientId)
    if (client !== undefined) await this.disconnect(client)
    const subs = this.persistence.subscriptionsOf(clientId)
    const queued = this.persistence.queuedOf(clientId)
    const had = this.local.has(clientId) || subs.length > 0 || queued.length > 0
    await this.persistence.dropSession(clientId)
    if (this.local.has(clientId)) this.set(clientId, null)
    if (!had || clean) return null
    return { subs, queued: queued.map(p => ({ ...p, messageId: undefined })) }
  }

  private async disconnect (client: ClientView): Promise<void> {
    const wire = client.wire
    if (wire !== undefined) wire.closeReason = 'takeovered'
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, TAKEOVER_TIMEOUT_MS)
      const done = (): void => { clearTimeout(timer); resolve() }
      const closing = client.version === 5 && client.connected ? client.disconnect(SESSION_TAKEN_OVER) : client.close()
      void closing.then(done)
    })
  }
}

/** A `[clientId, connectedAt, online]` entry of a `reg=` frame (or `[id, at]` of a `reg`). */
function isEntry (e: unknown): e is [string, number, boolean] {
  return Array.isArray(e) && typeof e[0] === 'string' && e[0] !== '' && typeof e[1] === 'number' && Number.isFinite(e[1])
}
