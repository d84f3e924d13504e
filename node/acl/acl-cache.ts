/**
 * The per-client ACL cache (`enable_acl_cache`, `acl_cache_max_size`, `acl_cache_ttl`), as
 * EMQ X's `emqx_acl_cache`: each client keeps its last decisions keyed by (action, topic);
 * an entry is used until it is `ttlMs` old; when a client has `maxSize` entries, the oldest
 * is dropped for a new one. The whole cache is emptied when the rules are reloaded, and a
 * client's part when it disconnects.
 *
 * Hot path: a hit allocates nothing. The key of a publish is its topic; a subscribe's is
 * the filter behind U+0000, which no valid topic contains. A decision and its expiry are
 * one number (expiry in ms, negated for deny).
 */
import type { AccessClient } from '../mqtt/broker.js'
import type { AclPermission } from './acl-rules.js'
import type { AclAction } from './acl-matcher.js'

/** The cached decisions of one client, and who it was when they were made. */
interface ClientEntries {
  username: string | undefined
  peerhost: string
  /** key -> expiry (ms since epoch), negative for deny; insertion order is age order. */
  entries: Map<string, number>
}

/** Settings of an {@link AclCache}. */
export interface AclCacheInit {
  /** `acl_cache_max_size`: entries per client (at least 1). */
  maxSize: number
  /** `acl_cache_ttl`: how long an entry is used, in ms. */
  ttlMs: number
  /** The clock, for tests; default `Date.now`. */
  now?: () => number
}

/** Cached ACL decisions of every connected client, by client id. */
export class AclCache {
  private readonly clients = new Map<string, ClientEntries>()
  private readonly maxSize: number
  private readonly ttlMs: number
  private readonly now: () => number

  constructor (init: AclCacheInit) {
    this.maxSize = Math.max(1, init.maxSize)
    this.ttlMs = init.ttlMs
    this.now = init.now ?? Date.now
  }

  /** The cached decision, or undefined when there is none or it has expired. */
  get (client: AccessClient, action: AclAction, topic: string): AclPermission | undefined {
    const own = this.clients.get(client.clientId)
    if (own === undefined) return undefined
    // a new connection under the same client id (takeover) may be someone else
    if (own.username !== client.username || own.peerhost !== client.peerhost) {
      this.clients.delete(client.clientId)
      return undefined
    }
    const key = action === 'publish' ? topic : '\u0000' + topic
    const value = own.entries.get(key)
    if (value === undefined) return undefined
    const expiry = value < 0 ? -value : value
    if (expiry <= this.now()) {
      own.entries.delete(key)
      return undefined
    }
    return value < 0 ? 'deny' : 'allow'
  }

  /** Records a decision, dropping the client's oldest entry when it has `maxSize`. */
  set (client: AccessClient, action: AclAction, topic: string, decision: AclPermission): void {
    let own = this.clients.get(client.clientId)
    if (own === undefined || own.username !== client.username || own.peerhost !== client.peerhost) {
      own = { username: client.username, peerhost: client.peerhost, entries: new Map() }
      this.clients.set(client.clientId, own)
    }
    const key = action === 'publish' ? topic : '\u0000' + topic
    own.entries.delete(key)
    if (own.entries.size >= this.maxSize) {
      const oldest = own.entries.keys().next()
      if (oldest.done !== true) own.entries.delete(oldest.value)
    }
    const expiry = this.now() + this.ttlMs
    own.entries.set(key, decision === 'deny' ? -expiry : expiry)
  }

  /** Forgets one client's decisions (it disconnected). */
  drop (clientId: string): void {
    this.clients.delete(clientId)
  }

  /** Forgets every decision (the rules changed). */
  clear (): void {
    this.clients.clear()
  }

  /** Number of entries cached for a client (0 when none). */
  size (clientId: string): number {
    return this.clients.get(clientId)?.entries.size ?? 0
  }
}
