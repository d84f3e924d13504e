/**
 * The cluster's routes: which nodes have subscribers for which topic filters. Each node
 * owns its keys (a filter with plain subscribers, or `$share/<group>/<filter>` for a
 * shared group with members there); this table holds every other node's keys and answers
 * "which nodes must get a message on this topic" with a trie lookup, cached per topic.
 */
import { parseShared } from '../node/mqtt/topic.js'
import { sharedKey } from '../node/mqtt/router.js'

/** One filter: the nodes with plain subscribers, and the nodes of each shared group. */
export class RouteEntry {
  readonly plain = new Set<string>()
  readonly groups = new Map<string, Set<string>>()
  constructor (readonly filter: string) {}
  get empty (): boolean { return this.plain.size === 0 && this.groups.size === 0 }
}

class TrieNode {
  readonly children = new Map<string, TrieNode>()
  entry: RouteEntry | null = null
}

const MAX_CACHED = 20000

export class RouteTable {
  private readonly root = new TrieNode()
  private readonly entries = new Map<string, RouteEntry>()
  private readonly byNode = new Map<string, Set<string>>()
  private readonly cache = new Map<string, RouteEntry[]>()

  /** Adds route key `key` of `node`. */
  add (node: string, key: string): void {
    let keys = this.byNode.get(node)
    if (keys === undefined) { keys = new Set(); this.byNode.set(node, keys) }
    if (keys.has(key)) return
    keys.add(key)
    const { filter, group } = split(key)
    let entry = this.entries.get(filter)
    if (entry === undefined) {
      entry = new RouteEntry(filter)
      this.entries.set(filter, entry)
      this.trieNode(filter, true)!.entry = entry
    }
    if (group === null) entry.plain.add(node)
    else {
      let nodes = entry.groups.get(group)
      if (nodes === undefined) { nodes = new Set(); entry.groups.set(group, nodes) }
      nodes.add(node)
    }
    this.cache.clear()
  }

  /** Removes route key `key` of `node`. */
  remove (node: string, key: string): void {
    const keys = this.byNode.get(node)
    if (keys === undefined || !keys.delete(key)) return
    if (keys.size === 0) this.byNode.delete(node)
    const { filter, group } = split(key)
    const entry = this.entries.get(filter)
    if (entry === undefined) return
    if (group === null) entry.plain.delete(node)
    else {
      const nodes = entry.groups.get(group)
      nodes?.delete(node)
      if (nodes?.size === 0) entry.groups.delete(group)
    }
    if (entry.empty) {
      this.entries.delete(filter)
      this.trieNode(filter, false)!.entry = null
    }
    this.cache.clear()
  }

  /** Replaces all of `node`'s keys (a snapshot). */
  replace (node: string, keys: Iterable<string>): void {
    const next = new Set(keys)
    for (const key of [...(this.byNode.get(node) ?? [])]) if (!next.has(key)) this.remove(node, key)
    for (const key of next) this.add(node, key)
  }

  /** Drops every key of `node`. */
  drop (node: string): void {
    this.replace(node, [])
  }

  /** `node`'s keys. */
  keysOf (node: string): string[] {
    return [...(this.byNode.get(node) ?? [])]
  }

  /** The nodes that have keys. */
  nodes (): string[] { return [...this.byNode.keys()] }

  /** Every filter with the nodes that have it (plain or shared). */
  * routes (): Iterable<{ topic: string, nodes: string[] }> {
    for (const entry of this.entries.values()) {
      const nodes = new Set(entry.plain)
      for (const members of entry.groups.values()) for (const n of members) nodes.add(n)
      yield { topic: entry.filter, nodes: [...nodes] }
    }
  }

  /** True when no other node has a route (every publish stays local). */
  get empty (): boolean { return this.entries.size === 0 }

  /** The entries whose filter matches `topic`. */
  match (topic: string): RouteEntry[] {
    let matched = this.cache.get(topic)
    if (matched === undefined) {
      matched = []
      const levels = topic.split('/')
      collect(this.root, levels, 0, !topic.startsWith('$'), matched)
      if (this.cache.size >= MAX_CACHED) this.cache.clear()
      this.cache.set(topic, matched)
    }
    return matched
  }

  private trieNode (filter: string, create: boolean): TrieNode | null {
    let node = this.root
    for (const level of filter.split('/')) {
      let child = node.children.get(level)
      if (child === undefined) {
        if (!create) return null
        child = new TrieNode()
        node.children.set(level, child)
      }
      node = child
    }
    return node
  }
}

function collect (node: TrieNode, levels: string[], i: number, wildOk: boolean, out: RouteEntry[]): void {
  if (wildOk) {
    const hash = node.children.get('#')
    if (hash?.entry) out.push(hash.entry)
  }
  if (i === levels.length) {
    if (node.entry) out.push(node.entry)
    return
  }
  const exact = node.children.get(levels[i])
  if (exact) collect(exact, levels, i + 1, true, out)
  if (wildOk) {
    const plus = node.children.get('+')
    if (plus) collect(plus, levels, i + 1, true, out)
  }
}

function split (key: string): { filter: string, group: string | null } {
  const shared = parseShared(key)
  return shared === null ? { filter: key, group: null } : { filter: shared.filter, group: shared.group }
}

export { sharedKey }
