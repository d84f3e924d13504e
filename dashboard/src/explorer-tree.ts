/**
 * The topic explorer's tree (pages/Explorer.vue): every topic seen, by level, with the last
 * value and the retained value of each, and a message rate per branch (messages per second
 * over the last {@link RATE_WINDOW_S} seconds, summed over the branch: a message on `a/b/c`
 * counts for `a/b/c`, `a/b` and `a`).
 *
 * Plain objects, not Vue-reactive: a busy branch delivers hundreds of messages a second, and
 * the page redraws from the tree on a timer instead of on every message.
 */
import { showPayload, type ShownPayload } from './mqtt'

/** The rate window, in seconds. */
export const RATE_WINDOW_S = 10
/** Most topics kept; a message on a topic beyond them updates the rates of its known branches only. */
export const MAX_TOPICS = 20_000

/** A message as the explorer keeps it. */
export interface SeenMessage {
  payload: ShownPayload
  bytes: number
  qos: number
  retain: boolean
  time: number
}

/** One level of the tree. */
export interface TopicNode {
  /** This level's name (may be empty: `a//b`). */
  name: string
  /** The whole topic, `a/b/c`. */
  path: string
  parent: TopicNode | undefined
  children: Map<string, TopicNode>
  /** The last message on this very topic. */
  last?: SeenMessage
  /** The last message on this topic that came with the retain flag (the broker's retained value at subscribe time). */
  retained?: SeenMessage
  /** Messages on the branch (this topic and below) since it was fed. */
  messages: number
  /** Per-second counts of the rate window: the second each slot holds, and its count. */
  slotSecond: number[]
  slotCount: number[]
}

function newNode (name: string, parent: TopicNode | undefined): TopicNode {
  const path = parent === undefined ? '' : parent.parent === undefined ? name : `${parent.path}/${name}`
  return {
    name,
    path,
    parent,
    children: new Map(),
    messages: 0,
    slotSecond: new Array<number>(RATE_WINDOW_S).fill(-1),
    slotCount: new Array<number>(RATE_WINDOW_S).fill(0)
  }
}

/** The tree: its root (path ''), lookups, messages in, rates out. */
export class TopicTree {
  readonly root: TopicNode = newNode('', undefined)
  private topics = 0

  /** How many topics the tree holds. */
  get size (): number { return this.topics }

  /** The node of `path`, created (with the levels above it) when `create`; undefined when absent or over {@link MAX_TOPICS}. */
  node (path: string, create = false): TopicNode | undefined {
    let node = this.root
    for (const level of path.split('/')) {
      let child = node.children.get(level)
      if (child === undefined) {
        if (!create || this.topics >= MAX_TOPICS) return undefined
        child = newNode(level, node)
        node.children.set(level, child)
        this.topics++
      }
      node = child
    }
    return node
  }

  /**
   * Records a message on `topic`. A live one (no retain flag) counts in the rate and the
   * message count of every branch above it; a retained one, delivered because of a new
   * subscription, is a value, not traffic.
   */
  add (topic: string, payload: Uint8Array, qos: number, retain: boolean, now = Date.now()): void {
    const seen: SeenMessage = { payload: showPayload(payload), bytes: payload.length, qos, retain, time: now }
    const node = this.node(topic, true)
    if (node !== undefined) {
      node.last = seen
      if (retain) node.retained = seen
    }
    if (retain) return
    const second = Math.floor(now / 1000)
    const slot = second % RATE_WINDOW_S
    // the deepest known level when the topic itself could not be kept
    let at: TopicNode | undefined = node ?? this.deepestKnown(topic)
    while (at !== undefined && at !== this.root) {
      at.messages++
      if (at.slotSecond[slot] !== second) {
        at.slotSecond[slot] = second
        at.slotCount[slot] = 0
      }
      at.slotCount[slot]++
      at = at.parent
    }
  }

  /**
   * Messages per second on `node`'s branch over the last {@link RATE_WINDOW_S} seconds, or
   * over the time since `since` (when its branch began to be fed) when that is shorter, so a
   * branch just opened does not show a fraction of its rate.
   */
  rate (node: TopicNode, since: number, now = Date.now()): number {
    const current = Math.floor(now / 1000)
    let sum = 0
    for (let i = 0; i < RATE_WINDOW_S; i++) {
      const s = node.slotSecond[i]
      // the seconds before the current one, and the current one so far
      if (s > current - RATE_WINDOW_S && s <= current) sum += node.slotCount[i]
    }
    const span = Math.min(RATE_WINDOW_S, Math.max(1, (now - since) / 1000))
    return sum / span
  }

  /** Forgets everything below `node` and its own counts (its branch is no longer fed). */
  clear (node: TopicNode): void {
    const dropped = this.count(node) - 1
    node.children.clear()
    this.topics -= dropped
    node.last = undefined
    node.retained = undefined
    node.messages = 0
    node.slotSecond.fill(-1)
    node.slotCount.fill(0)
  }

  private count (node: TopicNode): number {
    let n = 1
    for (const child of node.children.values()) n += this.count(child)
    return n
  }

  private deepestKnown (topic: string): TopicNode | undefined {
    let node = this.root
    for (const level of topic.split('/')) {
      const child = node.children.get(level)
      if (child === undefined) break
      node = child
    }
    return node === this.root ? undefined : node
  }
}
