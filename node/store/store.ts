import { chmodSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { open, type Database, type RootDatabase } from 'lmdb'
import type { Logger } from '../logger.js'
import { MAX_KEY_BYTES } from './key-limit.js'
import { upgradeStoreFormat, type StoreFormatPlan } from './format.js'

export { MAX_KEY_BYTES }

/**
 * One named sub-database of the {@link Store}: string keys in byte order, values encoded
 * with MessagePack (objects, arrays, numbers, strings, `null`, `undefined`, nested
 * `Buffer`s all roundtrip; a `Buffer` comes back as a `Buffer`).
 *
 * Invariants:
 * - Reads are synchronous and see committed data only: a value written by `put` is
 *   visible once the `put` promise has resolved, not before.
 * - Writes issued in the same event-loop turn commit together in one transaction, in the
 *   order they were issued; each write's promise resolves after that commit, and write
 *   promises of one store resolve in the order the writes were issued (all tables).
 */
export interface StoreTable<T> {
  /** The committed value at `key`, or `undefined`. */
  get (key: string): T | undefined
  /** Whether a committed value exists at `key`. */
  has (key: string): boolean
  /**
   * The committed entries whose key starts with `prefix` (all entries when omitted), in
   * ascending byte order of the key. A snapshot: writes during iteration are not seen.
   */
  entries (prefix?: string): Iterable<[string, T]>
  /** How many committed entries have a key starting with `prefix` (all when omitted). */
  count (prefix?: string): number
  /** Writes `value` at `key`; resolves when committed. Rejects on a key over {@link MAX_KEY_BYTES}. */
  put (key: string, value: T): Promise<void>
  /** Deletes `key` (no error when absent); resolves when committed. */
  del (key: string): Promise<void>
  /** Deletes every entry whose key starts with `prefix` (the whole table when omitted). */
  clear (prefix?: string): Promise<void>
}

/**
 * The node's embedded durable store (one LMDB environment under `node.data_dir`). Rules,
 * resources, schemas, banned entries, users, API apps, retained messages and persistent
 * sessions each live in a named {@link StoreTable}.
 *
 * Durability: a resolved write is in the operating system's page cache, so it survives
 * the process being killed (even SIGKILL) but not a power loss or kernel crash.
 */
export interface Store {
  /** The directory holding the database files. */
  readonly dir: string
  /** The named table, created on first use; the same name always gives the same data. */
  table<T> (name: string): StoreTable<T>
  /** Resolves when every write issued so far has committed. */
  flushed (): Promise<void>
  /** Waits for pending writes, then closes the environment; tables are unusable after. */
  close (): Promise<void>
}

/** What {@link createStore} needs. */
export interface StoreInit {
  /** Directory for the database files (`node.data_dir`); created when missing. */
  dir: string
  logger: Logger
  /** The format to bring the store to, and the steps (default: this release's, node/store/format.ts). */
  format?: StoreFormatPlan
}

/** The most named tables one store can hold (LMDB reserves a slot per name). */
const MAX_TABLES = 128

/**
 * Opens (or creates) the store under `init.dir`.
 *
 * `noSync: true`: a commit writes its pages with `pwrite` but never calls `fsync`, so a
 * committed write sits in the OS page cache. That survives SIGKILL of this process (the
 * kernel still owns the pages) but not power loss; we trade that for commits that cost
 * microseconds instead of a disk flush per event-loop turn.
 */
export async function createStore (init: StoreInit): Promise<Store> {
  const logger = init.logger.child({ component: 'store' })
  mkdirSync(init.dir, { recursive: true, mode: 0o700 })
  chmodSync(init.dir, 0o700)
  const root: RootDatabase = open({
    path: init.dir,
    noSync: true,
    maxDbs: MAX_TABLES
  })
  // LMDB creates its files 0644 (lmdb-js takes no mode): the node's user only, as the directory
  for (const file of readdirSync(init.dir)) chmodSync(join(init.dir, file), 0o600)
  const tables = new Map<string, LmdbTable<any>>()
  const order = new WriteOrder()
  const state = { closed: false, dir: init.dir }
  logger.debug({ dir: init.dir }, 'store opened')

  const store: Store = {
    dir: init.dir,
    table<T> (name: string): StoreTable<T> {
      if (state.closed) throw new Error(`store at ${init.dir} is closed; open it again before using table "${name}"`)
      let table = tables.get(name)
      if (table === undefined) {
        table = new LmdbTable<T>(root.openDB<T, string>({ name }), name, order, state)
        tables.set(name, table)
      }
      return table
    },
    async flushed (): Promise<void> {
      await order.drained()
      await root.committed
    },
    async close (): Promise<void> {
      if (state.closed) return
      state.closed = true
      await order.drained()
      await root.committed
      await root.close()
      logger.debug({ dir: init.dir }, 'store closed')
    }
  }
  // before anyone reads it: an earlier release's store is upgraded, a later release's refused
  try {
    await upgradeStoreFormat(store, logger, init.format)
  } catch (err) {
    await store.close()
    throw err
  }
  return store
}

/**
 * Makes write promises resolve in the order the writes were issued. lmdb-js commits in
 * order, but under load it can resolve a write's promise after those of later writes
 * (seen with ~2000 queued QoS 2 messages: one batch resolved 100+ ms late). Callers such as
 * aedes' dedupe rely on completion order, so each write also waits for its predecessors.
 */
class WriteOrder {
  private tail: Promise<void> = Promise.resolve()

  /** `write`, resolving no earlier than every write passed in before it. */
  after (write: Promise<unknown>): Promise<void> {
    write.catch(noop) // its rejection is reported through the returned promise
    const ordered = this.tail.then(() => write).then(noop)
    this.tail = ordered.catch(noop)
    return ordered
  }

  /** Resolves when every write passed in so far has settled. */
  drained (): Promise<void> {
    return this.tail
  }
}

function noop (): void {}

/**
 * A {@link StoreTable} over one LMDB named database. A write after the store began closing is
 * refused through its promise: lmdb-js would take it and then throw, outside any caller, when
 * it starts the write on the closed environment (a connection's queue still being dropped
 * while the node stops did so and took the process down).
 */
class LmdbTable<T> implements StoreTable<T> {
  constructor (
    private readonly db: Database<T, string>, private readonly name: string, private readonly order: WriteOrder,
    private readonly state: { readonly closed: boolean, readonly dir: string }
  ) {}

  get (key: string): T | undefined {
    return this.db.get(key)
  }

  has (key: string): boolean {
    return this.db.doesExist(key)
  }

  * entries (prefix = ''): Iterable<[string, T]> {
    // Keys are UTF-8 bytes in byte order, so the keys sharing a prefix are contiguous
    // and start at the prefix itself: scan from there until the first key without it.
    for (const { key, value } of this.db.getRange({ start: prefix, snapshot: true })) {
      if (!key.startsWith(prefix)) return
      yield [key, value]
    }
  }

  count (prefix = ''): number {
    if (prefix === '') return this.db.getCount()
    let n = 0
    for (const _key of this.keys(prefix)) n++
    return n
  }

  put (key: string, value: T): Promise<void> {
    try {
      this.checkWrite(key)
      return this.order.after(this.db.put(key, value))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  del (key: string): Promise<void> {
    try {
      this.checkWrite(key)
      return this.order.after(this.db.remove(key))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  clear (prefix = ''): Promise<void> {
    if (this.state.closed) return Promise.reject(this.closedError())
    if (prefix === '') return this.order.after(this.db.clearAsync())
    // Collected first, removed in the same turn: one transaction for the whole prefix.
    const keys = [...this.keys(prefix)]
    return this.order.after(Promise.all(keys.map((key) => this.db.remove(key))))
  }

  /** The committed keys starting with `prefix` (non-empty), in order. */
  private * keys (prefix: string): Iterable<string> {
    for (const key of this.db.getKeys({ start: prefix, snapshot: true })) {
      if (!key.startsWith(prefix)) return
      yield key
    }
  }

  private closedError (): Error {
    return new Error(`store at ${this.state.dir} is closed: table "${this.name}" takes no more writes`)
  }

  private checkWrite (key: string): void {
    if (this.state.closed) throw this.closedError()
    this.checkKey(key)
  }

  private checkKey (key: string): void {
    if (typeof key !== 'string' || key.length === 0) {
      throw new TypeError(`store table "${this.name}": a key must be a non-empty string`)
    }
    if (Buffer.byteLength(key) > MAX_KEY_BYTES) {
      throw new RangeError(`store table "${this.name}": key of ${Buffer.byteLength(key)} bytes is longer than ${MAX_KEY_BYTES}; hash long keys before storing them`)
    }
  }
}
