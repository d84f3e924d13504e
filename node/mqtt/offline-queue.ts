/**
 * Queues QoS 0 deliveries for away persistent sessions (`mqtt.mqueue_store_qos0`).
 *
 * aedes queues a message for an away session only when both the message and the matching
 * subscription are QoS 1/2 (its persistence's trie holds QoS 1/2 subscriptions only, and a
 * QoS 0 publish never asks it). EMQ X 4.x queues QoS 0 too unless `mqueue_store_qos0` is
 * off. This index holds every subscription of every persistent session, and the router asks
 * it for each client-visible message, while at least one such subscription exists, which
 * away sessions should queue the message at QoS 0:
 * - a QoS 0 message, for every matching subscription;
 * - a QoS 1/2 message, for matching QoS 0 subscriptions (aedes queues the others).
 *
 * Invariant: `size` counts the (session, filter) pairs held; the router pays one property
 * read per message while it is 0 (no persistent session subscribes to anything).
 */
import type { QueueTarget } from './persistence-outgoing.js'
import { parseShared } from './topic.js'

/** One persistent subscription as the index keeps it. */
interface Held { qos: number, rap: boolean, nl: boolean }

class IndexNode {
  children: Map<string, IndexNode> | null = null
  /** Sessions subscribed to the filter ending here, with their subscription. */
  subs: Map<string, Held> | null = null
}

/** Who the offline queue asks: whether a session's client is connected, and where to queue. */
export interface OfflineQueueTarget {
  /** Whether `mqtt.mqueue_store_qos0` is on now. */
  storeQos0: () => boolean
  online: (clientId: string) => boolean
  /** Queues `packet` for each target (a QoS 0 entry per session). */
  enqueue: (targets: QueueTarget[], packet: any) => Promise<unknown>
  /** Whether aedes queued this very packet object for a persistent session. */
  wasQueued: (packet: object) => boolean
  /** A queue write failed (logged by the store; the message is lost for that session). */
  failed: (err: Error) => void
}

/** The persistent sessions' subscriptions by filter; see the file comment. */
export class OfflineQueue {
  private readonly root = new IndexNode()
  /** (session, filter) pairs held. */
  size = 0
  target: OfflineQueueTarget | null = null
  /** The message being matched and the sessions found so far (enqueue is synchronous). */
  private packet: any = null
  private targets: QueueTarget[] | null = null
  /** Sessions already in `targets` (a session with overlapping subscriptions queues once). */
  private readonly seen = new Set<string>()

  /** Adds or updates a session's subscription; shared ones are not queued for (as in aedes). */
  add (clientId: string, filter: string, sub: { qos?: number, rap?: boolean, nl?: boolean }): void {
    if (isShared(filter)) return
    const node = this.nodeFor(filter, true)!
    node.subs ??= new Map()
    if (!node.subs.has(clientId)) this.size++
    node.subs.set(clientId, { qos: sub.qos ?? 0, rap: sub.rap === true, nl: sub.nl === true })
  }

  /** Removes a session's subscription, if held, and the branch of the trie it leaves empty. */
  remove (clientId: string, filter: string): void {
    const levels = filter.split('/')
    const path: IndexNode[] = [this.root]
    for (const level of levels) {
      const child = path[path.length - 1].children?.get(level)
      if (child === undefined) return
      path.push(child)
    }
    const node = path[levels.length]
    if (node.subs?.delete(clientId) !== true) return
    this.size--
    if (node.subs.size === 0) node.subs = null
    // prune the now-empty branch, deepest level first (filters of departed sessions churn)
    for (let i = levels.length; i > 0; i--) {
      const child = path[i]
      if (child.subs !== null || (child.children !== null && child.children.size > 0)) break
      path[i - 1].children!.delete(levels[i - 1])
    }
  }

  /**
   * Queues `packet` at QoS 0 for the away sessions that should get it (see the file
   * comment); true when at least one did. Called by the router for client-visible messages.
   */
  enqueue (packet: any): boolean {
    const target = this.target
    if (target === null || !target.storeQos0()) return false
    this.packet = packet
    this.targets = null
    this.collect(this.root, (packet.topic as string).split('/'), 0, packet.topic.charCodeAt(0) === 36, '')
    const targets = this.targets as QueueTarget[] | null
    this.packet = null
    this.targets = null
    if (targets === null) return false
    this.seen.clear()
    target.enqueue(targets, packet).then(undefined, target.failed)
    return true
  }

  /** Adds the away sessions subscribed to `filter` (at `node`) that should queue the message. */
  private visit (node: IndexNode, filter: string): void {
    if (node.subs === null) return
    const packet = this.packet
    const target = this.target!
    for (const [clientId, sub] of node.subs) {
      if (packet.qos > 0 && sub.qos > 0) continue // aedes queues these
      if (sub.nl && packet.clientId === clientId) continue // No Local [MQTT-3.8.3-3]
      if (this.seen.has(clientId) || target.online(clientId)) continue
      this.seen.add(clientId)
      ;(this.targets ??= []).push({ clientId, topic: filter, qos: 0, rap: sub.rap })
    }
  }

  /** Whether aedes itself queued `packet` (QoS 1/2) for a persistent session. */
  wasQueued (packet: object): boolean {
    return this.target?.wasQueued(packet) ?? false
  }

  private collect (node: IndexNode, levels: string[], i: number, dollar: boolean, path: string): void {
    const children = node.children
    // [MQTT-4.7.2-1] wildcards at the first level do not match '$' topics
    const wildOk = !(dollar && i === 0)
    const sep = i === 0 ? '' : '/'
    if (wildOk) {
      const hash = children?.get('#')
      if (hash !== undefined) this.visit(hash, path + sep + '#') // '#' also matches the parent [MQTT-4.7.1-2]
    }
    if (i === levels.length) { this.visit(node, path); return }
    if (children === null) return
    const exact = children.get(levels[i])
    if (exact !== undefined) this.collect(exact, levels, i + 1, dollar, path + sep + levels[i])
    if (wildOk) {
      const plus = children.get('+')
      if (plus !== undefined) this.collect(plus, levels, i + 1, dollar, path + sep + '+')
    }
  }

  private nodeFor (filter: string, create: boolean): IndexNode | null {
    let node = this.root
    for (const level of filter.split('/')) {
      let child = node.children?.get(level)
      if (child === undefined) {
        if (!create) return null
        child = new IndexNode()
        ;(node.children ??= new Map()).set(level, child)
      }
      node = child
    }
    return node
  }
}

function isShared (filter: string): boolean {
  try { return parseShared(filter) !== null } catch { return true }
}
