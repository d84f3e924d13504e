/**
 * Cluster-wide data (DESIGN.md, replicated tables): rules, resources, schemas, banned
 * entries, auth users and API apps. Each lives in an ordinary {@link StoreTable}, so a
 * single node reads and writes it exactly as before; {@link SharedData} stamps every write
 * with a hybrid logical clock and remembers deletes as tombstones, so that the cluster can
 * ship changes between nodes and merge them: the higher stamp wins (last writer wins), ties
 * broken by node name, and a delete is a write like any other. See docs/cluster-data.md.
 *
 * Invariants:
 * - A value's stamp and the value are written in the same event-loop turn, so they commit
 *   in one transaction (store.ts): a crash never leaves one without the other.
 * - Stamps only grow: a node's clock never issues a stamp lower than one it has seen, and
 *   it sees every stored stamp when it starts.
 * - A write is compared against the latest write issued for its key, committed or not: the
 *   store only shows committed data, so writes still in flight are kept in `pending` until
 *   they commit. Without that, two changes of one key arriving in the same turn would both
 *   look like the first and the older one could win.
 * - Entries written before the cluster existed (or by code that writes the store table
 *   directly) carry no stamp, or one that disagrees with the value; they get a fresh stamp
 *   the first time the table is snapshotted, so two nodes with different legacy values
 *   still converge.
 * - Tombstones are kept for good: a delete must keep beating older copies of the value that
 *   a node which was away may still send.
 */
import { createHash } from 'node:crypto'
import { silentLogger, type Logger } from '../logger.js'
import { MAX_KEY_BYTES, type Store, type StoreTable } from './store.js'

/** A replicated change: a value (`value` set) or a delete (`value` undefined). */
export interface SharedChange {
  table: string
  key: string
  value?: unknown
  /** {@link Hlc} stamp of the write. */
  stamp: string
}

/** A {@link StoreTable} whose writes replicate to the cluster. */
export interface SharedTable<T> extends StoreTable<T> {
  /**
   * Calls `listener` after a change from another node has been applied to this table
   * (`value` undefined: deleted). Returns a function that removes the listener. A change
   * that a newer write of the same key overtook before it committed is not reported (the
   * newer one is, or it was written here).
   */
  onRemoteChange: (listener: (key: string, value: T | undefined) => void) => () => void
}

/** Options of {@link SharedData}. */
export interface SharedDataOptions {
  /** Where listener errors and failed stamp writes are reported (default: dropped). */
  logger?: Logger
  /** The physical clock, ms since epoch (default `Date.now`); tests pass their own. */
  now?: () => number
}

/** Where a stamp is kept: one entry per replicated key, deletes included. */
interface StampRecord {
  stamp: string
  deleted: boolean
  /** The key, when the stamp's store key is a hash of it (keys too long to prefix). */
  key?: string
}

/** A write issued but not committed yet. */
interface PendingWrite {
  table: string
  key: string
  record: StampRecord
  value: unknown
}

/** The store table of the stamps; not a name {@link SharedData.table} accepts. */
const STAMPS_TABLE = 'shared_stamps'
/**
 * Stamp keys are `<table>/<key>`, or `<table>#<sha256 of key>` when that would be too long
 * for the store. Printable separators on purpose: lmdb's key encoding (ordered-binary)
 * reads a NUL byte as an array separator, and such keys came back as arrays. Table names
 * hold neither character ({@link TABLE_NAME}), so the two forms never meet.
 */
const SEP = '/'
const HASHED = '#'
/** What a shared table may be called. */
const TABLE_NAME = /^[\w.-]{1,64}$/
const WALL_DIGITS = 10
const COUNTER_DIGITS = 4
/** The largest counter that fits in {@link COUNTER_DIGITS} base-36 digits. */
const MAX_COUNTER = 36 ** COUNTER_DIGITS - 1
/** `wall.counter.node`: fixed-width lower-case base 36, then the node name. */
const STAMP_PATTERN = /^[0-9a-z]{10}\.[0-9a-z]{4}\../

/**
 * A hybrid logical clock: physical milliseconds plus a counter, formatted so that string
 * order is time order (`wall.counter.node`, fixed-width base 36); equal times order by
 * node name.
 */
export class Hlc {
  private wall = 0
  private counter = 0

  constructor (private readonly node: string, private readonly now: () => number = Date.now) {}

  /** A stamp greater than every stamp this clock issued or saw. */
  next (): string {
    const physical = this.now()
    if (physical > this.wall) {
      this.wall = physical
      this.counter = 0
    } else if (this.counter < MAX_COUNTER) {
      this.counter++
    } else {
      // the counter's digits are full: borrow the next millisecond rather than overflow
      // the fixed width (a longer counter would sort wrong as a string)
      this.wall++
      this.counter = 0
    }
    return formatStamp(this.wall, this.counter, this.node)
  }

  /** Advances the clock past a stamp received from another node. */
  observe (stamp: string): void {
    const [wall, counter] = parseStamp(stamp)
    if (wall > this.wall || (wall === this.wall && counter > this.counter)) {
      this.wall = wall
      this.counter = counter
    }
  }
}

/** Whether `stamp` is a stamp an {@link Hlc} issues. */
export function isStamp (stamp: unknown): stamp is string {
  return typeof stamp === 'string' && STAMP_PATTERN.test(stamp)
}

function formatStamp (wall: number, counter: number, node: string): string {
  return `${wall.toString(36).padStart(WALL_DIGITS, '0')}.${counter.toString(36).padStart(COUNTER_DIGITS, '0')}.${node}`
}

function parseStamp (stamp: string): [number, number] {
  if (!isStamp(stamp)) return [0, 0]
  return [parseInt(stamp.slice(0, WALL_DIGITS), 36), parseInt(stamp.slice(WALL_DIGITS + 1, WALL_DIGITS + 1 + COUNTER_DIGITS), 36)]
}

/** The key of `key`'s stamp in the stamps table (a hash when the plain form is too long). */
function stampKey (table: string, key: string): string {
  const plain = table + SEP + key
  if (Buffer.byteLength(plain) <= MAX_KEY_BYTES) return plain
  return table + HASHED + createHash('sha256').update(key).digest('hex')
}

/** Checks a key the way the store would, before anything is written or shipped. */
function checkKey (table: string, key: unknown): void {
  if (typeof key !== 'string' || key.length === 0) throw new TypeError(`shared table "${table}": a key must be a non-empty string`)
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) {
    throw new RangeError(`shared table "${table}": key of ${Buffer.byteLength(key)} bytes is longer than ${MAX_KEY_BYTES}; hash long keys before storing them`)
  }
}

/** The node's replicated tables. */
/** How long a table's cached digest is trusted without a write. */
const DIGEST_TTL_MS = 30000

export class SharedData {
  private readonly digests = new Map<string, { digest: string, at: number }>()
  readonly clock: Hlc
  private readonly stamps: StoreTable<StampRecord>
  private readonly tables = new Map<string, ReplicatedTable<any>>()
  private readonly localListeners = new Set<(change: SharedChange) => void>()
  /** Writes issued and not committed yet, by stamp key (the latest one per key). */
  private readonly pending = new Map<string, PendingWrite>()
  private readonly logger: Logger

  constructor (private readonly store: Store, node: string, options: SharedDataOptions = {}) {
    this.clock = new Hlc(node, options.now)
    this.logger = (options.logger ?? silentLogger()).child({ component: 'shared' })
    this.stamps = store.table<StampRecord>(STAMPS_TABLE)
    for (const [, record] of this.stamps.entries()) this.clock.observe(record.stamp)
  }

  /** The replicated table `name` (its values live in the store table of the same name). */
  table<T> (name: string): SharedTable<T> {
    let table = this.tables.get(name)
    if (table === undefined) {
      if (typeof name !== 'string' || !TABLE_NAME.test(name) || name === STAMPS_TABLE) {
        throw new TypeError(`${JSON.stringify(name)} cannot be a shared table name (letters, digits, '_', '.', '-')`)
      }
      table = new ReplicatedTable<T>(name, this.store.table<T>(name), this)
      this.tables.set(name, table)
    }
    return table
  }

  /** Names of the replicated tables opened on this node. */
  tableNames (): string[] {
    return [...this.tables.keys()].sort()
  }

  /** Calls `listener` with every change written on this node (what the cluster ships). */
  onLocalChange (listener: (change: SharedChange) => void): () => void {
    this.localListeners.add(listener)
    return () => { this.localListeners.delete(listener) }
  }

  /**
   * Applies a change from another node when its stamp beats ours. Resolves true when it
   * changed this node's data. A change for a table this node has not opened is stored all
   * the same, so a service that starts later finds it. Rejects (changing nothing) on a
   * malformed change.
   */
  async apply (change: SharedChange): Promise<boolean> {
    if (typeof change !== 'object' || change === null) throw new TypeError('a shared change must be an object {table, key, value?, stamp}')
    if (!isStamp(change.stamp)) throw new TypeError(`shared change of ${String(change.table)}/${String(change.key)}: ${JSON.stringify(change.stamp)} is not a stamp`)
    checkKey(String(change.table), change.key)
    const table = this.table(change.table) as ReplicatedTable<unknown>
    this.clock.observe(change.stamp)
    const current = this.stampOf(change.table, change.key)
    if (current !== undefined && current.stamp >= change.stamp) return false
    await table.write(change.key, change.value, change.stamp)
    // a newer write of the key issued meanwhile is what this node shows: report that one
    if (this.stampOf(change.table, change.key)?.stamp === change.stamp) table.notifyRemote(change.key, change.value)
    return true
  }

  /**
   * Every entry of `table`, deletes included, with its stamp, in key order. Stamps entries
   * that have none or whose stamp disagrees with the store (written around this class).
   */
  snapshot (table: string): SharedChange[] {
    const replicated = this.table(table) as ReplicatedTable<unknown>
    const keys = new Set<string>()
    for (const [key] of replicated.raw.entries()) keys.add(key)
    for (const [sk] of this.stamps.entries(table + SEP)) keys.add(sk.slice(table.length + 1))
    for (const [, record] of this.stamps.entries(table + HASHED)) if (record.key !== undefined) keys.add(record.key)
    for (const write of this.pending.values()) if (write.table === table) keys.add(write.key)
    return [...keys].sort().map((key) => this.current(replicated, key))
  }

  /**
   * A hash of `table`'s keys and stamps: equal on two nodes exactly when they agree. Cached
   * until the table's next write (heartbeats ask every few seconds); recomputed after
   * {@link DIGEST_TTL_MS} all the same, in case a value was written to the store directly.
   */
  digest (table: string): string {
    const cached = this.digests.get(table)
    if (cached !== undefined && Date.now() - cached.at < DIGEST_TTL_MS) return cached.digest
    const lines = this.snapshot(table).map(c => JSON.stringify([c.key, c.stamp]))
    const digest = createHash('sha1').update(lines.join('\n')).digest('hex')
    this.digests.set(table, { digest, at: Date.now() })
    return digest
  }

  /** @internal The stamp of the latest write of `key`, committed or in flight. */
  stampOf (table: string, key: string): StampRecord | undefined {
    const sk = stampKey(table, key)
    return this.pending.get(sk)?.record ?? this.stamps.get(sk)
  }

  /**
   * @internal Writes the stamp of a change; call in the same turn as the value's write (one
   * transaction). `value` is what the key holds once it commits (unused for a delete).
   */
  putStamp (table: string, key: string, record: StampRecord, value: unknown): Promise<void> {
    this.digests.delete(table)
    const sk = stampKey(table, key)
    const stored = sk.startsWith(table + HASHED) ? { ...record, key } : record
    const write: PendingWrite = { table, key, record: stored, value }
    this.pending.set(sk, write)
    const committed = this.stamps.put(sk, stored)
    const settle = (): void => { if (this.pending.get(sk) === write) this.pending.delete(sk) }
    committed.then(settle, settle)
    return committed
  }

  /** @internal */
  emitLocal (change: SharedChange): void {
    for (const listener of this.localListeners) {
      try {
        listener(change)
      } catch (err) {
        this.logger.error({ err, table: change.table, key: change.key }, 'a local-change listener failed; the write stands')
      }
    }
  }

  /** @internal */
  reportListenerError (err: unknown, table: string, key: string): void {
    this.logger.error({ err, table, key }, 'a remote-change listener failed; the change is applied')
  }

  /** The latest state of `key` as a change, stamping it when its stamp is missing or stale. */
  private current (table: ReplicatedTable<unknown>, key: string): SharedChange {
    const sk = stampKey(table.name, key)
    const inFlight = this.pending.get(sk)
    if (inFlight !== undefined) {
      const { stamp, deleted } = inFlight.record
      return deleted ? { table: table.name, key, stamp } : { table: table.name, key, value: inFlight.value, stamp }
    }
    const record = this.stamps.get(sk)
    const present = table.raw.has(key)
    const value = present ? table.raw.get(key) : undefined
    if (record !== undefined && record.deleted !== present) {
      return present ? { table: table.name, key, value, stamp: record.stamp } : { table: table.name, key, stamp: record.stamp }
    }
    // legacy entry, or a write that went around SharedData: it is this node's latest word
    const stamp = this.clock.next()
    this.putStamp(table.name, key, { stamp, deleted: !present }, value)
      .catch((err) => this.logger.warn({ err, table: table.name, key }, 'could not store the stamp of a legacy entry; it gets another next time'))
    return present ? { table: table.name, key, value, stamp } : { table: table.name, key, stamp }
  }
}

/** One replicated table: a store table plus stamps. */
class ReplicatedTable<T> implements SharedTable<T> {
  private readonly remoteListeners = new Set<(key: string, value: T | undefined) => void>()

  constructor (readonly name: string, readonly raw: StoreTable<T>, private readonly shared: SharedData) {}

  get (key: string): T | undefined { return this.raw.get(key) }
  has (key: string): boolean { return this.raw.has(key) }
  entries (prefix?: string): Iterable<[string, T]> { return this.raw.entries(prefix) }
  count (prefix?: string): number { return this.raw.count(prefix) }

  put (key: string, value: T): Promise<void> {
    return this.local(key, value)
  }

  del (key: string): Promise<void> {
    return this.local(key, undefined)
  }

  /** Deletes every entry under `prefix` (each gets a tombstone, so peers delete it too). */
  async clear (prefix?: string): Promise<void> {
    const keys = [...this.raw.entries(prefix)].map(([key]) => key)
    await Promise.all(keys.map(async (key) => await this.del(key)))
  }

  onRemoteChange (listener: (key: string, value: T | undefined) => void): () => void {
    this.remoteListeners.add(listener)
    return () => { this.remoteListeners.delete(listener) }
  }

  /** Writes value (or deletes) and its stamp in the same turn. */
  write (key: string, value: T | undefined, stamp: string): Promise<void> {
    const data = value === undefined ? this.raw.del(key) : this.raw.put(key, value)
    const meta = this.shared.putStamp(this.name, key, { stamp, deleted: value === undefined }, value)
    return Promise.all([data, meta]).then(() => undefined)
  }

  notifyRemote (key: string, value: unknown): void {
    for (const listener of this.remoteListeners) {
      try {
        listener(key, value as T | undefined)
      } catch (err) {
        this.shared.reportListenerError(err, this.name, key)
      }
    }
  }

  private local (key: string, value: T | undefined): Promise<void> {
    try {
      checkKey(this.name, key)
    } catch (err) {
      return Promise.reject(err)
    }
    const stamp = this.shared.clock.next()
    const written = this.write(key, value, stamp)
    this.shared.emitLocal(value === undefined ? { table: this.name, key, stamp } : { table: this.name, key, value, stamp })
    return written
  }
}
