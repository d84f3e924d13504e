/**
 * A replay queue, after EMQ X's replayq: the buffer of a bridge (and of data integration's
 * sinks) while the remote is away. Items are appended at the tail, popped in batches in
 * append order, and acknowledged once the remote has them. With a directory the queue is
 * on disk and survives a crash or SIGKILL; without one it is memory-only. docs/replayq.md
 * describes the files and how a bridge uses the queue.
 *
 * Invariants (each item has a sequence number, assigned at append, in append order):
 * - Order: `pop` returns items in sequence order, oldest first, across segments and
 *   restarts; an item requeued by `nack`/`reset` goes back in its place.
 * - Durability: with a directory, `append` resolves only when its items are written and
 *   fsynced. Appends of one event-loop turn (and those made while a write is under way)
 *   form one group: one write and one fsync per segment file it touches. A caller that
 *   acknowledges a publisher after `append` resolves never loses that message to a crash,
 *   unless a size cap or a full disk drops it later (counted, `onOverflow`).
 * - At-least-once: an item stays in the queue until it is acknowledged (or dropped). The
 *   COMMIT file (rewritten at most every `commitIntervalMs`) records the finished items
 *   (all below `commit`, plus ranges above it); on
 *   open every other item on disk is read back and popped again. An item acknowledged just
 *   before a crash may be delivered again, never one appended-and-durable lost.
 * - Acknowledgements may come in any order; the commit point advances over the contiguous
 *   finished prefix, and a segment file is deleted once every item in it is finished.
 * - Sequence numbers are never reused: after open they continue past every record and
 *   every range of the COMMIT file, so an old COMMIT can never finish a new item.
 * - Memory: with a directory, at most about `memoryBytes` of queued items are held in
 *   memory (plus the in-flight batches and the group being written); the rest is read
 *   back from the segment files as `pop` reaches it.
 * - Limits: `count`/`bytes` are the items not yet finished (queued and popped). Over
 *   `maxTotalBytes`, an append of droppable items (QoS 0) is refused, item by item, and
 *   an append of other items drops the oldest queued (not popped) items until the queue
 *   is under the cap. A full disk (ENOSPC) drops the queued items of the oldest segment so
 *   that it can be deleted, then retries. Every drop is counted and reported.
 */
import { DEFAULT_IO, SegmentFiles, type ReplayQueueLogger } from './replayq-files.js'
import { DoneSet } from './replayq-done.js'
import { encodeRecord } from './replayq-format.js'
import { ResidentItems, type Entry } from './replayq-resident.js'
import {
  DEFAULT_BATCH_BYTES_LIMIT, DEFAULT_BATCH_COUNT_LIMIT, DEFAULT_SEG_BYTES,
  type AppendOptions, type AppendResult, type ReplayAckRef, type ReplayBatch, type ReplayOverflow,
  type ReplayQueue, type ReplayQueueOptions, type ReplayQueueStats
} from './replayq-types.js'

export type { ReplayQueueIo, ReplayQueueLogger } from './replayq-files.js'
export { DEFAULT_BATCH_BYTES_LIMIT, DEFAULT_BATCH_COUNT_LIMIT, DEFAULT_SEG_BYTES } from './replayq-types.js'
export type {
  AppendOptions, AppendResult, ReplayAckRef, ReplayBatch, ReplayOverflow, ReplayQueue, ReplayQueueOptions, ReplayQueueStats
} from './replayq-types.js'

/** How often acknowledgements are written to COMMIT at most (ms); see ReplayQueueOptions.commitIntervalMs. */
export const DEFAULT_COMMIT_INTERVAL_MS = 100

/** A write that fails with ENOSPC is retried after freeing a segment, at most this often. */
const DISK_FULL_RETRIES = 8

/** Opens a replay queue; with a directory, resolves once the directory is read back. */
export async function openReplayQueue<T = Buffer> (opts: ReplayQueueOptions<T>): Promise<ReplayQueue<T>> {
  const queue = new Queue<T>(opts)
  await queue.open()
  return queue
}

/** Items appended in one turn (and while the previous group was being written). */
interface Group<T> {
  firstSeq: number
  entries: Array<Entry<T>>
  records: Buffer[]
  durable: Promise<void>
  resolve: () => void
  reject: (err: unknown) => void
}

const NO_LOG: ReplayQueueLogger = { info: () => {}, warn: () => {}, error: () => {} }
const EMPTY_REF: ReplayAckRef = Object.freeze({ id: 0, count: 0 })

class Queue<T> implements ReplayQueue<T> {
  private readonly files: SegmentFiles | null
  private readonly cap: number
  private readonly batchCount: number
  private readonly batchBytes: number
  private readonly memoryBytes: number
  private readonly commitIntervalMs: number
  /** The wait before the next COMMIT write, cut short by close. */
  private commitWait: { timer: NodeJS.Timeout, resolve: () => void } | null = null
  private readonly log: ReplayQueueLogger
  private done = new DoneSet()
  /** The next sequence number to assign. */
  private tailSeq = 0
  /** Every queued item below `memEnd` is in `fifo`; items from it on are only on disk or being written. */
  private memEnd = 0
  private readonly fifo = new ResidentItems<T>()
  private readonly pending = new Map<number, Array<Entry<T>>>()
  private nextBatchId = 0
  private count = 0
  private bytes = 0
  private appended = 0
  private dropped = 0
  private corrupt = 0
  private forming: Group<T> | null = null
  private writing: Group<T> | null = null
  private writer: Promise<void> | null = null
  private flushScheduled = false
  private commitDirty = false
  private committer: Promise<void> | null = null
  private closing: Promise<void> | null = null
  /** Files closed: acknowledgements after it are kept in memory only. */
  private closed = false

  constructor (private readonly opts: ReplayQueueOptions<T>) {
    const segBytes = opts.segBytes ?? DEFAULT_SEG_BYTES
    this.log = opts.logger ?? NO_LOG
    this.cap = opts.maxTotalBytes ?? 0
    this.batchCount = opts.batchCountLimit ?? DEFAULT_BATCH_COUNT_LIMIT
    this.batchBytes = opts.batchBytesLimit ?? DEFAULT_BATCH_BYTES_LIMIT
    if (!(segBytes > 0) || !(this.batchCount > 0) || !(this.batchBytes > 0) || !(this.cap >= 0)) {
      throw new RangeError('replay queue: segBytes, batchCountLimit and batchBytesLimit must be positive, maxTotalBytes 0 or more')
    }
    this.files = opts.dir === undefined ? null : new SegmentFiles(opts.dir, segBytes, { ...DEFAULT_IO, ...opts.io }, this.log)
    this.memoryBytes = this.files === null ? Infinity : opts.memoryBytes ?? segBytes
    this.commitIntervalMs = opts.commitIntervalMs ?? DEFAULT_COMMIT_INTERVAL_MS
  }

  async open (): Promise<void> {
    if (this.files === null) return
    const opened = await this.files.open()
    this.done = opened.done
    this.tailSeq = opened.nextSeq
    this.memEnd = opened.done.commit
    this.count = opened.count
    this.bytes = opened.bytes
    this.corrupt = opened.corrupt
    if (opened.count > 0) this.log.info({ dir: this.files.dir, count: opened.count, bytes: opened.bytes }, 'replay queue: items read back from disk')
  }

  append (items: readonly T[], opts: AppendOptions = {}): Promise<AppendResult> {
    if (this.closing !== null) return Promise.reject(new Error('replay queue: append after close'))
    const droppable = opts.droppable === true
    const firstNew = this.tailSeq
    let accepted = 0
    let refused = 0
    for (const item of items) {
      const payload = this.files === null ? undefined : this.encode(item)
      const size = payload === undefined ? this.sizeOf(item) : payload.length
      if (droppable && this.cap > 0 && this.bytes + size > this.cap) {
        refused++
        continue
      }
      const entry: Entry<T> = { seq: this.tailSeq++, item, size }
      accepted++
      this.count++
      this.bytes += size
      if (this.memEnd === entry.seq && (this.fifo.length === 0 || this.fifo.bytes + size <= this.memoryBytes)) {
        this.fifo.push(entry)
        this.memEnd = entry.seq + 1
      }
      if (payload !== undefined) {
        const group = this.forming ?? (this.forming = newGroup<T>(entry.seq))
        group.entries.push(entry)
        group.records.push(encodeRecord(entry.seq, payload, droppable))
      }
    }
    this.appended += accepted
    const evicted = !droppable && this.cap > 0 && this.bytes > this.cap ? this.dropOldest(firstNew, () => this.bytes > this.cap) : 0
    if (evicted + refused > 0) this.overflow('max_total_bytes', evicted, refused)
    const result = { accepted, refused }
    if (this.files === null || accepted === 0) return Promise.resolve(result)
    this.scheduleFlush()
    return this.forming!.durable.then(() => result)
  }

  pop (count = this.batchCount, bytes = this.batchBytes): ReplayBatch<T> {
    const entries: Array<Entry<T>> = []
    let size = 0
    while (entries.length < count) {
      const e = this.headEntry()
      if (e === undefined || (entries.length > 0 && size + e.size > bytes)) break
      this.fifo.shift()
      entries.push(e)
      size += e.size
    }
    if (entries.length === 0) return { items: [], ackRef: EMPTY_REF }
    const id = ++this.nextBatchId
    this.pending.set(id, entries)
    return { items: entries.map((e) => e.item), ackRef: { id, count: entries.length } }
  }

  ack (ref: ReplayAckRef): boolean {
    const entries = this.pending.get(ref.id)
    if (entries === undefined) return false
    this.pending.delete(ref.id)
    for (const e of entries) this.finish(e)
    this.scheduleCommit()
    return true
  }

  nack (ref: ReplayAckRef): boolean {
    const entries = this.pending.get(ref.id)
    if (entries === undefined) return false
    this.pending.delete(ref.id)
    this.requeue(entries)
    return true
  }

  reset (): number {
    const entries: Array<Entry<T>> = []
    for (const batch of this.pending.values()) entries.push(...batch)
    this.pending.clear()
    return this.requeue(entries)
  }

  stats (): ReplayQueueStats {
    let pending = 0
    for (const batch of this.pending.values()) for (const e of batch) if (!this.done.has(e.seq)) pending++
    const usage = this.files?.usage() ?? { segments: 0, bytes: 0 }
    return {
      count: this.count,
      bytes: this.bytes,
      pending,
      appended: this.appended,
      dropped: this.dropped,
      corrupt: this.corrupt,
      segments: usage.segments,
      diskBytes: usage.bytes,
      writtenBytes: this.files?.writtenBytes ?? 0,
      syncs: this.files?.syncs ?? 0
    }
  }

  close (): Promise<void> {
    this.closing ??= this.shutDown()
    return this.closing
  }

  private async shutDown (): Promise<void> {
    const files = this.files
    if (files === null) return
    this.startWriter()
    while (this.writer !== null) await this.writer
    if (this.commitWait !== null) { clearTimeout(this.commitWait.timer); this.commitWait.resolve() }
    while (this.committer !== null) await this.committer
    try {
      await files.writeCommit(this.done)
      await files.deleteFinished(this.done, true)
    } catch (err) {
      this.log.error({ err, dir: files.dir }, 'replay queue: could not record acknowledgements at close; they will be delivered again')
    }
    this.closed = true
    await files.close()
  }

  // --- the write path: group commit ---

  private scheduleFlush (): void {
    if (this.flushScheduled || this.writer !== null) return
    this.flushScheduled = true
    setImmediate(() => {
      this.flushScheduled = false
      this.startWriter()
    })
  }

  private startWriter (): void {
    if (this.writer !== null || this.forming === null) return
    this.writer = this.writeGroups().finally(() => {
      this.writer = null
      // an append made after the loop's last look
      if (this.forming !== null) this.startWriter()
    })
  }

  /** Writes groups one at a time while there are any: what piles up during a write is the next group. */
  private async writeGroups (): Promise<void> {
    while (this.forming !== null) {
      const group = this.forming
      this.forming = null
      this.writing = group
      try {
        await this.writeWithRetry(group)
        group.resolve()
      } catch (err) {
        this.failGroup(group, err)
        group.reject(err)
      } finally {
        this.writing = null
      }
    }
  }

  private async writeWithRetry (group: Group<T>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.files!.writeGroup(group.records, group.firstSeq)
        return
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC' || attempt >= DISK_FULL_RETRIES || !await this.freeDisk()) throw err
      }
    }
  }

  /** Disk full: drops the queued items of the oldest sealed segment and deletes it. */
  private async freeDisk (): Promise<boolean> {
    const files = this.files!
    const oldest = files.segments[0]
    if (oldest === undefined || files.segments.length < 2) return false
    const dropped = this.dropOldest(oldest.endSeq, () => !this.done.covers(oldest.firstSeq, oldest.endSeq))
    if (dropped > 0) this.overflow('disk_full', dropped, 0)
    // the committer writes COMMIT (if it can) and deletes the finished segments
    while (this.committer !== null) await this.committer
    await files.deleteFinished(this.done, false)
    return !files.segments.includes(oldest)
  }

  /** A group that could not be written: its items are lost (their appends reject), counted as dropped. */
  private failGroup (group: Group<T>, err: unknown): void {
    let lost = 0
    for (const e of group.entries) if (this.finish(e)) lost++
    this.files!.skipFailed(group.firstSeq + group.entries.length)
    this.dropped += lost
    this.log.error({ err, dir: this.files!.dir, items: lost }, 'replay queue: write failed; the items of this group are not queued')
    if ((err as NodeJS.ErrnoException).code === 'ENOSPC' && lost > 0) this.report({ reason: 'disk_full', dropped: lost, refused: 0 })
    this.scheduleCommit()
  }

  // --- acknowledgements ---

  private scheduleCommit (): void {
    if (this.files === null || this.closed) return
    this.commitDirty = true
    if (this.committer !== null) return
    this.committer = this.writeCommits().finally(() => {
      this.committer = null
      if (this.commitDirty && this.closing === null) this.scheduleCommit()
    })
  }

  /** Writes COMMIT (coalescing the acks of `commitIntervalMs`), then deletes the segments it finished. */
  private async writeCommits (): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.commitIntervalMs)
      this.commitWait = { timer, resolve }
    })
    this.commitWait = null
    while (this.commitDirty) {
      this.commitDirty = false
      try {
        await this.files!.writeCommit(this.done)
      } catch (err) {
        this.log.error({ err, dir: this.files!.dir }, 'replay queue: could not record acknowledgements; they will be delivered again after a restart')
      }
      // even without a newer COMMIT (a full disk): sequence numbers are never reused, so a
      // missing segment only means items that were finished
      try {
        await this.files!.deleteFinished(this.done, false)
      } catch (err) {
        this.log.error({ err, dir: this.files!.dir }, 'replay queue: could not delete finished segments')
      }
    }
  }

  /** Marks an item finished; false when it already was. */
  private finish (e: Entry<T>): boolean {
    if (!this.done.add(e.seq)) return false
    this.count--
    this.bytes -= e.size
    return true
  }

  /** Drops queued items from the head (below `limitSeq`) while `more()`; returns how many. */
  private dropOldest (limitSeq: number, more: () => boolean): number {
    let n = 0
    while (more()) {
      const e = this.headEntry()
      if (e === undefined || e.seq >= limitSeq) break
      this.fifo.shift()
      if (this.finish(e)) n++
    }
    this.dropped += n
    if (n > 0) this.scheduleCommit()
    return n
  }

  private overflow (reason: ReplayOverflow['reason'], dropped: number, refused: number): void {
    this.dropped += refused
    this.report({ reason, dropped, refused })
  }

  private report (event: Pick<ReplayOverflow, 'reason' | 'dropped' | 'refused'>): void {
    const full: ReplayOverflow = { ...event, count: this.count, bytes: this.bytes, at: (this.opts.now ?? Date.now)() }
    this.log.warn(full, 'replay queue: items dropped')
    try {
      this.opts.onOverflow?.(full)
    } catch (err) {
      this.log.error({ err }, 'replay queue: onOverflow threw')
    }
  }

  // --- the resident head: fifo, read back from disk as needed ---

  /** The oldest queued item, read back from disk if need be; finished items are skipped. */
  private headEntry (): Entry<T> | undefined {
    for (;;) {
      if (this.fifo.length === 0) this.refill()
      const e = this.fifo.peek()
      if (e === undefined) return undefined
      if (!this.done.has(e.seq)) return e
      this.fifo.shift()
    }
  }

  /** Reads queued items from `memEnd` on into memory, up to `memoryBytes` (at least one). */
  private refill (): void {
    const files = this.files
    if (files === null) return
    while (this.memEnd < this.tailSeq && (this.fifo.length === 0 || this.fifo.bytes < this.memoryBytes)) {
      const seq = this.done.nextNotDone(this.memEnd)
      this.memEnd = Math.min(seq, this.tailSeq)
      if (seq >= this.tailSeq) break
      if (seq < files.writtenEnd) {
        const records = files.readRecords(seq, Math.max(1, this.memoryBytes - this.fifo.bytes), () => { this.corrupt++ })
        if (records.length === 0) {
          this.memEnd = files.writtenEnd
          continue
        }
        for (const r of records) {
          if (this.done.has(r.seq)) continue
          const item = this.decode(r.payload, r.seq)
          if (item !== undefined) this.fifo.push({ seq: r.seq, item: item.value, size: r.payload.length })
        }
        this.memEnd = records[records.length - 1]!.seq + 1
      } else {
        const e = this.unwritten(seq)
        if (e !== undefined) this.fifo.push(e)
        this.memEnd = seq + 1
      }
    }
  }

  private unwritten (seq: number): Entry<T> | undefined {
    for (const g of [this.writing, this.forming]) {
      if (g !== null && seq >= g.firstSeq && seq < g.firstSeq + g.entries.length) return g.entries[seq - g.firstSeq]
    }
    return undefined
  }

  /** Puts popped items back at the head, in sequence order. */
  private requeue (entries: Array<Entry<T>>): number {
    const back = entries.filter((e) => !this.done.has(e.seq)).sort((a, b) => a.seq - b.seq)
    this.fifo.putBack(back)
    return back.length
  }

  // --- items <-> bytes ---

  private encode (item: T): Buffer {
    if (this.opts.encode !== undefined) return this.opts.encode(item)
    if (Buffer.isBuffer(item)) return item
    throw new TypeError('replay queue: an item that is not a Buffer needs the encode option')
  }

  private decode (payload: Buffer, seq: number): { value: T } | undefined {
    try {
      return { value: this.opts.decode !== undefined ? this.opts.decode(payload) : payload as T }
    } catch (err) {
      this.corrupt++
      this.dropped++
      this.done.add(seq)
      this.count--
      this.bytes -= payload.length
      this.log.error({ err, seq }, 'replay queue: an item read back could not be decoded; it is dropped')
      return undefined
    }
  }

  private sizeOf (item: T): number {
    if (this.opts.sizeOf !== undefined) return this.opts.sizeOf(item)
    if (Buffer.isBuffer(item)) return item.length
    return this.opts.encode !== undefined ? this.opts.encode(item).length : 1
  }
}

function newGroup<T> (firstSeq: number): Group<T> {
  let resolve!: () => void
  let reject!: (err: unknown) => void
  const durable = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  // a group may fail with no append awaiting it any more (all callers gave up): not an unhandled rejection
  durable.catch(() => {})
  return { firstSeq, entries: [], records: [], durable, resolve, reject }
}
