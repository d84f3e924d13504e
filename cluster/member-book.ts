/**
 * What a node knows of the cluster's membership: one stamped record per node name, itself
 * included, kept in the store (`cluster_members`) so a restarted node knows its members.
 *
 * A record says that a node is a member (with the address it announced) or that it left or
 * was forced out (a tombstone). Its stamp is the node's membership *epoch*: a node gets a
 * new one each time it joins, and a tombstone gets the stamp of the leave or force-leave.
 * Records travel between nodes (the whole book when a link comes up, each change as it
 * happens) and a newer record replaces an older one, so every node that hears of a change
 * converges on it, including a node that was down when it happened.
 *
 * Invariants:
 * - Stamps come from {@link MemberBook.stamp}: wall-clock milliseconds, but always above
 *   every stamp this node has issued or seen (a Lamport clock over wall time), so a change
 *   made after another one, anywhere, has the larger stamp as long as clocks are roughly
 *   in sync.
 * - Stamp 0 means "epoch unknown" (a static seed, a node heard of by its heartbeat): any
 *   real record replaces it and it is never taken for a stale view.
 * - Of two records with the same stamp the member record wins: a node that was told
 *   "not a member" by a node of another epoch, and then hears of that same epoch from a
 *   member of its own cluster, takes the node back.
 */
import type { StoreTable } from '../node/store/index.js'

/** One node as the book records it. */
export interface MemberRecord {
  /** host:port its mesh listens on (empty in a tombstone that never knew it). */
  addr: string
  /** Epoch of the membership, or when it ended (tombstone); 0: unknown. */
  stamp: number
  /** Present (true) when the node left or was forced out. */
  departed?: true
}

/** A record with its node's name, as it travels in `members` frames. */
export interface MemberEntry extends MemberRecord { name: string }

/** A fresh node's own epoch: a real stamp, below any a join gives. */
export const FIRST_EPOCH = 1

/** True when `incoming` replaces `current` (a newer stamp, or a member over a tombstone of the same stamp). */
export function supersedes (incoming: MemberRecord, current: MemberRecord | undefined): boolean {
  if (current === undefined) return true
  if (incoming.stamp !== current.stamp) return incoming.stamp > current.stamp
  return incoming.departed !== true && current.departed === true
}

/** The membership records of one node (see the invariants above). */
export class MemberBook {
  private readonly records = new Map<string, MemberRecord>()
  private last = 0

  constructor (readonly self: string, private readonly table: StoreTable<MemberRecord>) {
    for (const [name, record] of table.entries()) {
      // records of versions before stamps were kept: members of unknown epoch
      const stamp = typeof record.stamp === 'number' ? record.stamp : 0
      this.records.set(name, record.departed === true ? { addr: record.addr, stamp, departed: true } : { addr: record.addr, stamp })
      this.observe(stamp)
    }
    if (!this.records.has(self)) this.records.set(self, { addr: '', stamp: FIRST_EPOCH })
  }

  /** A stamp above every stamp issued or seen. */
  stamp (): number {
    this.last = Math.max(Date.now(), this.last + 1)
    return this.last
  }

  /** Moves the clock past a stamp seen from another node. */
  observe (stamp: number): void {
    if (stamp > this.last) this.last = stamp
  }

  /** This node's own record. */
  get own (): MemberRecord { return this.records.get(this.self)! }

  /** True when this node left (or was forced out of) its cluster and has not joined again. */
  get alone (): boolean { return this.own.departed === true }

  get (name: string): MemberRecord | undefined { return this.records.get(name) }

  /** True when `name` is another node recorded as a member. */
  isMember (name: string): boolean {
    const record = this.records.get(name)
    return name !== this.self && record !== undefined && record.departed !== true
  }

  /** The other nodes recorded as members, by name. */
  members (): Array<[string, MemberRecord]> {
    return [...this.records].filter(([name, r]) => name !== this.self && r.departed !== true)
  }

  /** Every record, this node's own first, as `members` frames carry them. */
  entries (): MemberEntry[] {
    const list: MemberEntry[] = [{ name: this.self, ...this.own }]
    for (const [name, record] of this.records) if (name !== this.self) list.push({ name, ...record })
    return list
  }

  /** Sets (and stores) the record of `name`. */
  set (name: string, record: MemberRecord): void {
    this.observe(record.stamp)
    const copy: MemberRecord = record.departed === true ? { addr: record.addr, stamp: record.stamp, departed: true } : { addr: record.addr, stamp: record.stamp }
    this.records.set(name, copy)
    void this.table.put(name, copy)
  }

  /** Takes `entry` when it supersedes what is recorded; true when it did. Not for this node's own record. */
  merge (entry: MemberEntry): boolean {
    this.observe(entry.stamp)
    if (entry.name === this.self || !supersedes(entry, this.records.get(entry.name))) return false
    // a tombstone may not know the address: keep the one recorded
    const addr = entry.addr !== '' ? entry.addr : this.records.get(entry.name)?.addr ?? ''
    this.set(entry.name, entry.departed === true ? { addr, stamp: entry.stamp, departed: true } : { addr, stamp: entry.stamp })
    return true
  }

  /** Removes the record of `name` (autoclean): nothing is known of it any more. */
  drop (name: string): void {
    if (name === this.self) return
    this.records.delete(name)
    void this.table.del(name)
  }

  /** Forgets every other node (this node left its cluster). */
  forgetOthers (): void {
    for (const name of [...this.records.keys()]) if (name !== this.self) this.drop(name)
  }
}
