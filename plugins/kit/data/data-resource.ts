/**
 * A data-integration resource running on one node (docs/integrations.md, "What each mode
 * guarantees"): the backend's client, a buffer of writes (plugins/kit/replayq/, in memory or
 * on disk) and the buffered sink (plugins/kit/sink/) that writes it out.
 *
 * Invariants:
 * - Writes of this resource reach the server in the order they were buffered, one batch of
 *   buffer entries at a time (one statement or one transaction), so rows of one action keep
 *   their order. With a client that pipelines (`writeAfter`: PostgreSQL) two batches are in
 *   flight on its one connection, the second's transaction committed only once the first's
 *   is stored: when the first is refused the second is rolled back and sent again after the
 *   first's split; when the connection is lost both go back to the buffer, in order. A
 *   batch's rows are never stored before those of a batch buffered earlier.
 * - A write the server refuses for good is split until the refused rows are found (or the
 *   client names them, for a server without transactions): the other rows are written, the
 *   refused ones counted failed, and no row is written twice by it.
 * - `local_buffer` off: each row has a deadline (`retry_timeout`, or the action's
 *   `sync_timeout` in sync mode) from the moment the action ran. A row not written by then
 *   is counted failed and never written later (skipped when the buffer reaches it); in async
 *   mode a row being written at its deadline is settled by that write. So an action's
 *   success count is the rows written, but for a write whose answer the connection lost
 *   after the server committed it (written, counted failed or written again).
 * - In sync mode the deadline is firm (the publisher's PUBACK waits for the row, at most
 *   `sync_timeout`, as EMQ X's): a row still being written then counts failed, and the
 *   write in flight may yet store it (the second case of a row written and counted failed).
 * - `local_buffer` on: a row counts as success once its entry is on disk (fsynced); it is
 *   written in order whenever the server takes it, across restarts of the node. A row the
 *   server refuses for good then is logged and counted in `dropped`.
 * - The buffer holds at most `max_buffer_bytes`; beyond it the oldest entries are dropped
 *   (counted, logged; without the local buffer their rows fail at their deadline).
 */
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { Logger } from '../../../node/logger.js'
import type { ResourceInstance } from '../../../rules/types.js'
import { openReplayQueue, type ReplayQueue } from '../replayq/replayq.js'
import { createBufferedSink, type BufferedSink, type SinkTarget } from '../sink/buffered-sink.js'
import { Batcher, FlushClock, type RowSettle } from './batcher.js'
import { WriteRefused, WriteSkipped, type DataClient } from './client.js'
import type { DataBatchSettings, DataResourceSettings } from './params.js'

/** One buffer entry: a write, the run that buffered it and its number in that run. */
export interface BufferEntry<W> {
  /** The instance run (random per open): entries of earlier runs (the disk) have no waiter. */
  r: string
  i: number
  w: W
}

/** Buffer entries per write to the server (each up to `batch_size` rows). */
const ENTRIES_PER_SEND = 16
/** Bytes per write to the server, at most (more entries than fit wait for the next). */
const BYTES_PER_SEND = 4 * 1024 * 1024
/** Reconnect back-off: first wait and longest (ms). */
const RECONNECT_FIRST_MS = 250
const RECONNECT_MAX_MS = 5000
/** How long a connect attempt may take (ms). */
const CONNECT_TIMEOUT_MS = 5000

/** A send of the sink, for the send after it (see `send`). */
interface SendTail {
  /** Whether its whole write was stored; null: it made none (yet), so the next waits for it to be over. */
  whole: Promise<boolean> | null
  /** Over: its entries are settled or it failed. */
  over: boolean
  /** Resolves when over: true when its entries were settled, false when it failed (not connected). */
  done: Promise<boolean>
}

/** Rows of one entry waiting for their outcome (local buffer off). */
interface Waiter {
  rows: RowSettle[]
  /** When the rows give up (ms since epoch). */
  deadline: number
  timer: NodeJS.Timeout | undefined
  sending: boolean
  /** Why the last attempt failed, for the failure message. */
  lastError: string | undefined
  /** The wait it was given (ms), for the failure message. */
  timeoutMs: number
  /** Sync mode: the rows fail at the deadline even while being written. */
  firm: boolean
}

/**
 * About the length of `value`'s JSON text, without making it: strings by their length (UTF-16
 * units, so a text of multibyte characters counts less than its UTF-8 bytes; escapes are not
 * counted), every number as 8, a comma after every item. What the in-memory buffer counts against `max_buffer_bytes`:
 * encoding each entry only to measure it cost the busiest path more than the batching did.
 */
export function jsonLength (value: unknown): number {
  if (typeof value === 'string') return value.length + 2
  if (typeof value !== 'object' || value === null) return typeof value === 'number' ? 8 : value === false ? 5 : 4
  if (Array.isArray(value)) {
    let n = 2
    for (let i = 0; i < value.length; i++) n += jsonLength(value[i]) + 1
    return n
  }
  let n = 2
  for (const key in value) n += key.length + 4 + jsonLength((value as Record<string, unknown>)[key])
  return n
}

/** Where resource `id` keeps its disk buffer: `<data_dir>/resources/<id>/`. */
export function bufferDirOf (dataDir: string, id: string): string {
  return join(dataDir, 'resources', id.replace(/[^A-Za-z0-9_.-]/g, '_'))
}

/** What {@link DataResource.open} needs. */
export interface DataResourceInit<W> {
  id: string
  client: DataClient<W>
  settings: DataResourceSettings
  /** `node.data_dir`, resolved. */
  dataDir: string
  logger: Logger
}

/** A data resource on one node: see the module's invariants. */
export class DataResource<W> implements ResourceInstance {
  private readonly run = randomBytes(6).toString('hex')
  private seq = 0
  private readonly waiters = new Map<number, Waiter>()
  private readonly batchers = new Map<string, Batcher<W>>()
  /** The batchers' timers: one per batch time (batcher.ts). */
  private readonly clock = new FlushClock()
  private readonly memo = new Map<string, unknown>()
  /** Entries written while their batch is not yet acknowledged to the buffer (`run:i`). */
  private readonly written = new Set<string>()
  /** Rows settled of an entry being written row by row (`run:i`): a refused write was split. */
  private readonly progress = new Map<string, Set<number>>()
  private queue!: ReplayQueue<BufferEntry<W>>
  private sink!: BufferedSink<BufferEntry<W>>
  /** The send made last: what the next one is sent behind. */
  private tail: SendTail | undefined
  private connectedOnce = false
  private lost = false
  private closed = false
  /** Rows refused for good or dropped by the buffer's cap that no action counted. */
  dropped = 0

  private constructor (private readonly init: DataResourceInit<W>) {}

  /** Opens the buffer (reading back what a disk buffer holds) and starts connecting. */
  static async open<W> (init: DataResourceInit<W>): Promise<DataResource<W>> {
    const resource = new DataResource(init)
    await resource.start()
    return resource
  }

  private get dir (): string | undefined {
    return this.init.settings.localBuffer ? bufferDirOf(this.init.dataDir, this.init.id) : undefined
  }

  private async start (): Promise<void> {
    const { client, settings, logger } = this.init
    this.queue = await openReplayQueue<BufferEntry<W>>({
      dir: this.dir,
      maxTotalBytes: settings.maxBufferBytes,
      batchCountLimit: ENTRIES_PER_SEND,
      batchBytesLimit: BYTES_PER_SEND,
      encode: (e) => Buffer.from(JSON.stringify(e)),
      // in memory, the entry's size without encoding it (the disk buffer counts its bytes)
      sizeOf: jsonLength,
      decode: (b) => JSON.parse(b.toString('utf8')) as BufferEntry<W>,
      logger,
      onOverflow: (e) => {
        this.dropped += e.dropped + e.refused
        logger.warn({ resource_id: this.init.id, dropped: e.dropped, reason: e.reason }, 'data buffer full: the oldest writes were dropped')
      }
    })
    const target: SinkTarget<BufferEntry<W>> = {
      connect: async () => await this.connect(),
      send: async (entries) => await this.send(entries),
      close: async () => {}
    }
    this.sink = createBufferedSink({
      queue: this.queue,
      target,
      // a client that pipelines has the next write sent while one is answered (see send)
      maxInflightBatches: client.writeAfter !== undefined ? 2 : 1,
      reconnectIntervalMs: RECONNECT_FIRST_MS,
      maxReconnectIntervalMs: RECONNECT_MAX_MS,
      logger,
      address: client.address,
      onSent: (entries) => { for (const e of entries) this.written.delete(`${e.r}:${e.i}`) }
    })
    this.sink.start()
  }

  private async connect (): Promise<void> {
    if (this.lost && !this.init.settings.autoReconnect) {
      throw new Error('the connection was lost and auto_reconnect is false: change the resource to connect again')
    }
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        this.init.client.connect(),
        new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS) })
      ])
    } finally {
      clearTimeout(timer)
    }
    this.connectedOnce = true
    this.lost = false
    // the sink sends again from its buffer's head: nothing is sent behind a send of before
    this.tail = undefined
  }

  /** Whether the server answers now (`status.is_alive`): a real health check. */
  async alive (): Promise<boolean> {
    if (this.closed || (this.lost && !this.init.settings.autoReconnect)) return false
    const alive = await this.init.client.alive()
    // the server is back while the sink waits out its back-off: it reconnects now
    if (alive) this.sink.retryNow()
    return alive
  }

  /** A value computed once per instance for `key` (an action's compiled template). */
  cached<T> (key: string, make: () => T): T {
    if (this.memo.has(key)) return this.memo.get(key) as T
    const value = make()
    this.memo.set(key, value)
    return value
  }

  /**
   * Writes one row of action `actionKey` (batched with its other rows as `batch` says);
   * resolves when it counts as success and rejects when it counts as failed (see the invariants).
   */
  write (actionKey: string, batch: DataBatchSettings, row: W): Promise<void> {
    const add = this.rowWriter(actionKey, batch)
    return new Promise<void>((resolve, reject) => { add(row, { resolve, reject }) })
  }

  /**
   * The row path of action `actionKey` (rules/runtime.ts): a function taking one row and the
   * settle told its outcome, exactly once (the invariants), with no promise per row. Made once
   * per action and instance.
   */
  rowWriter (actionKey: string, batch: DataBatchSettings): (row: W, settle: RowSettle) => void {
    let batcher = this.batchers.get(actionKey)
    if (batcher === undefined) {
      batcher = new Batcher<W>(batch.batchSize, batch.batchTimeMs, (rows, settles, at) => { this.buffer(rows, settles, at, batch) }, this.clock)
      this.batchers.set(actionKey, batcher)
    }
    const b = batcher
    return (row, settle) => {
      if (this.closed) settle.reject(new Error(`resource ${this.init.id} is stopped on this node`))
      else b.add(row, settle)
    }
  }

  /** One action's batch (`rows`, their `settles`, the first row's time `at`) into the buffer. */
  private buffer (rows: W[], settles: RowSettle[], at: number, batch: DataBatchSettings): void {
    const entry: BufferEntry<W> = { r: this.run, i: ++this.seq, w: this.init.client.merge(rows) }
    if (this.init.settings.localBuffer) {
      // success once durable: the buffer then owns the rows, across restarts
      this.sink.append([entry]).then((r) => {
        if (r.accepted === 1) for (const s of settles) s.resolve()
        else for (const s of settles) s.reject(new Error('the local buffer refused the write (full)'))
      }, (err: Error) => { for (const s of settles) s.reject(err) })
      return
    }
    const timeout = batch.mode === 'sync' ? this.init.settings.syncTimeoutMs ?? batch.syncTimeoutMs : this.init.settings.retryTimeoutMs
    const waiter: Waiter = { rows: settles, deadline: at + timeout, timer: undefined, sending: false, lastError: undefined, timeoutMs: timeout, firm: batch.mode === 'sync' }
    waiter.timer = setTimeout(() => {
      if (!waiter.sending) this.giveUp(entry.i, waiter)
      else if (waiter.firm) { waiter.lastError = 'still being written (the server may yet store it)'; this.giveUp(entry.i, waiter) }
    }, Math.max(0, waiter.deadline - Date.now()))
    this.waiters.set(entry.i, waiter)
    this.sink.append([entry]).catch((err: Error) => { waiter.lastError = err.message; this.giveUp(entry.i, waiter) })
  }

  /** The rows of an entry not written by its deadline: failed, and never written later. */
  private giveUp (i: number, waiter: Waiter): void {
    if (this.waiters.get(i) !== waiter) return
    this.waiters.delete(i)
    clearTimeout(waiter.timer)
    const why = waiter.lastError ?? (this.sink.status === 'connected' ? 'still waiting in the buffer' : 'not connected')
    const err = new Error(`not written within ${waiter.timeoutMs} ms: ${why}`)
    const done = this.progress.get(`${this.run}:${i}`)
    waiter.rows.forEach((s, row) => { if (done?.has(row) === true) s.resolve(); else s.reject(err) })
  }

  private waiterOf (e: BufferEntry<W>): Waiter | undefined {
    return e.r === this.run ? this.waiters.get(e.i) : undefined
  }

  /** Whether entry `e` is still to be written. */
  private wanted (e: BufferEntry<W>): boolean {
    if (this.written.has(`${e.r}:${e.i}`)) return false
    // without the local buffer every entry is this run's: one without a waiter was given up
    return this.init.settings.localBuffer || this.waiterOf(e) !== undefined
  }

  /**
   * Entry `e` is done: rows `refused` failed for good (`err`), the others were written. It is
   * not written again before the buffer acknowledges it.
   */
  private settle (e: BufferEntry<W>, refused: readonly number[] = [], err?: Error): void {
    const key = `${e.r}:${e.i}`
    this.written.add(key)
    this.progress.delete(key)
    if (refused.length > 0) {
      this.init.logger.warn({ resource_id: this.init.id, rows: refused.length, err: err?.message }, 'the server refused rows for good; counted as failed')
    }
    const waiter = this.waiterOf(e)
    if (waiter === undefined) {
      this.dropped += refused.length
      return
    }
    this.waiters.delete(e.i)
    clearTimeout(waiter.timer)
    if (refused.length === 0) {
      for (const s of waiter.rows) s.resolve()
      return
    }
    const failure = new Error(`refused by the server: ${err?.message ?? 'unknown reason'}`)
    waiter.rows.forEach((s, row) => { if (refused.includes(row)) s.reject(failure); else s.resolve() })
  }

  /** `entries` written but the rows `err` names (numbered across them, in order), which were refused. */
  private settleRows (entries: Array<BufferEntry<W>>, err: WriteRefused): void {
    let first = 0
    for (const e of entries) {
      const n = this.init.client.rows(e.w)
      this.settle(e, (err.rows ?? []).filter((r) => r >= first && r < first + n).map((r) => r - first), err)
      first += n
    }
  }

  /**
   * The sink's send. With a client that pipelines ({@link DataClient.writeAfter}) the sink
   * keeps two sends going: the second's write goes out behind the first's at once and is
   * stored only if the first's was (see the invariants); the rest waits for the send before.
   */
  private send (entries: Array<BufferEntry<W>>): Promise<void> {
    const before = this.tail
    const tail: SendTail = { whole: null, over: false, done: undefined as unknown as Promise<boolean> }
    this.tail = tail
    const sent = this.sendAfter(entries, before, tail)
    tail.done = sent.then(() => true, () => false)
    return sent
  }

  /** A whole write: over the client's ordered connection when it has one, after `after`. */
  private writeWhole (writes: readonly W[], after?: Promise<boolean>): Promise<void> {
    const client = this.init.client
    return client.writeAfter !== undefined ? client.writeAfter(writes, after) : client.write(writes)
  }

  /**
   * The entries still wanted, all at once (pipelined behind `before`'s whole write when that
   * send is not over and made one); a refusal is split to find the refused rows.
   */
  private async sendAfter (entries: Array<BufferEntry<W>>, before: SendTail | undefined, tail: SendTail): Promise<void> {
    const todo = entries.filter((e) => this.wanted(e))
    try {
      if (todo.length === 0) return
      for (const e of todo) { const w = this.waiterOf(e); if (w !== undefined) w.sending = true }
      await this.sendWanted(todo, before, tail)
    } finally {
      tail.over = true
    }
  }

  private async sendWanted (todo: Array<BufferEntry<W>>, before: SendTail | undefined, tail: SendTail): Promise<void> {
    try {
      if (!todo.some((e) => this.progress.has(`${e.r}:${e.i}`))) {
        const pending = before !== undefined && !before.over ? before : undefined
        // pipelined only behind a whole write still unanswered; otherwise after the send before
        let after = pending?.whole ?? undefined
        if (pending !== undefined && (after === undefined || this.init.client.writeAfter === undefined)) {
          after = undefined
          if (!await pending.done) throw new Error('the write before it failed')
        }
        const writes = todo.map((e) => e.w)
        for (;;) {
          const whole = this.writeWhole(writes, after)
          tail.whole ??= whole.then(() => true, () => false)
          try {
            await whole
            for (const e of todo) this.settle(e)
            return
          } catch (err) {
            if (err instanceof WriteSkipped && after !== undefined) {
              // the write before was not stored (nothing of this one was): again once that send is over
              if (!await pending!.done) throw new Error('the write before it failed')
              after = undefined
              continue
            }
            if (!(err instanceof WriteRefused)) throw err
            if (err.rows !== undefined) { this.settleRows(todo, err); return }
            if (todo.length === 1 && this.init.client.rows(todo[0].w) === 1) { this.settle(todo[0], [0], err); return }
            break
          }
        }
      }
      for (const e of todo) {
        if (!this.written.has(`${e.r}:${e.i}`)) await this.sendAlone(e, todo.length > 1)
      }
    } catch (err) {
      this.lost = this.connectedOnce
      for (const e of todo) {
        const w = this.waiterOf(e)
        if (w === undefined) continue
        w.sending = false
        w.lastError = (err as Error).message
        if (Date.now() >= w.deadline) this.giveUp(e.i, w)
      }
      throw err
    } finally {
      for (const e of todo) { const w = this.waiterOf(e); if (w !== undefined) w.sending = false }
    }
  }

  /**
   * Entry `e` on its own (`whole`: tried whole first), then row by row when the server
   * refuses it: the refused rows fail, the others are written. Rows written are remembered,
   * so a connection lost midway writes none of them twice.
   */
  private async sendAlone (e: BufferEntry<W>, whole: boolean): Promise<void> {
    const client = this.init.client
    const key = `${e.r}:${e.i}`
    let done = this.progress.get(key)
    if (done === undefined && whole) {
      try {
        await this.writeWhole([e.w])
        this.settle(e)
        return
      } catch (err) {
        if (!(err instanceof WriteRefused)) throw err
        if (err.rows !== undefined) { this.settleRows([e], err); return }
        if (client.rows(e.w) === 1) { this.settle(e, [0], err); return }
      }
    }
    if (done === undefined) this.progress.set(key, done = new Set())
    const parts = client.split(e.w)
    const refused = new Set<number>()
    let reason: WriteRefused | undefined
    for (let row = 0; row < parts.length; row++) {
      if (done.has(row)) continue
      try {
        await this.writeWhole([parts[row]])
      } catch (err) {
        if (!(err instanceof WriteRefused)) throw err
        refused.add(row)
        reason = err
      }
      done.add(row)
    }
    this.settle(e, [...refused], reason)
  }

  /**
   * Stops: gathered rows go to the buffer, the sink stops, the buffer closes (a disk buffer
   * stays for the next open, unless `removed`), waiting rows fail, the client closes.
   */
  async close (removed: boolean): Promise<void> {
    if (this.closed) return
    for (const b of this.batchers.values()) b.drain()
    this.clock.stop()
    this.closed = true
    await this.sink.stop()
    await this.queue.close()
    for (const [i, w] of [...this.waiters]) {
      w.lastError = 'the resource stopped on this node'
      this.giveUp(i, w)
    }
    await this.init.client.close()
    const dir = this.dir
    if (removed && dir !== undefined) await rm(dir, { recursive: true, force: true })
  }
}
