/**
 * The replay queue's public types (replayq.ts has the queue and its invariants;
 * docs/replayq.md how a bridge uses it).
 */
import type { ReplayQueueIo, ReplayQueueLogger } from './replayq-files.js'

/** `queue.replayq_seg_bytes`' default: 10 MB. */
export const DEFAULT_SEG_BYTES = 10 * 1024 * 1024
/** EMQ X's `queue.batch_count_limit` default (items per pop). */
export const DEFAULT_BATCH_COUNT_LIMIT = 32
/** `queue.batch_bytes_limit` default: 1 MB per pop. */
export const DEFAULT_BATCH_BYTES_LIMIT = 1024 * 1024

/** Options of {@link openReplayQueue}. */
export interface ReplayQueueOptions<T> {
  /** The directory of the segment files; absent: memory-only (`queue.replayq_dir`). */
  dir?: string
  /** A new segment starts when the current one would exceed this (bytes, default 10 MB). */
  segBytes?: number
  /** Cap on the bytes of unfinished items; 0 or absent: none. */
  maxTotalBytes?: number
  /** Default limits of one `pop`: items (default 32) and bytes (default 1 MB). */
  batchCountLimit?: number
  batchBytesLimit?: number
  /** With a directory: bytes of queued items kept in memory (default `segBytes`). */
  memoryBytes?: number
  /**
   * With a directory: acknowledgements are recorded in COMMIT at most this often (ms,
   * default 100). Each write is a file, an fsync and a rename; writing it for every batch
   * acknowledged cost most of the disk buffer's CPU at low rates. A crash in between only
   * means the last acknowledged items are delivered again.
   */
  commitIntervalMs?: number
  /**
   * Memory-only: the size of an item (default: a Buffer's length, else its encoded length).
   * With a directory the size is always the encoded length, which is known again after a restart.
   */
  sizeOf?: (item: T) => number
  /** Item to bytes and back; required with a directory unless the items are Buffers. */
  encode?: (item: T) => Buffer
  decode?: (payload: Buffer) => T
  /** Called after items were dropped or refused (raise an alarm); the queue goes on. */
  onOverflow?: (event: ReplayOverflow) => void
  logger?: ReplayQueueLogger
  /** Clock for {@link ReplayOverflow.at} (default `Date.now`). */
  now?: () => number
  /** The write path's two calls (tests count fsyncs or simulate a full disk). */
  io?: Partial<ReplayQueueIo>
}

/** Options of one {@link ReplayQueue.append}. */
export interface AppendOptions {
  /** Refused when the queue is at its cap instead of dropping older items (QoS 0). */
  droppable?: boolean
}

/** What {@link ReplayQueue.append} did. */
export interface AppendResult {
  /** Items queued (durable when the promise resolved, with a directory). */
  accepted: number
  /** Droppable items refused because the queue was at its cap. */
  refused: number
}

/** Identifies one popped batch for {@link ReplayQueue.ack} / {@link ReplayQueue.nack}. Opaque. */
export interface ReplayAckRef { readonly id: number, readonly count: number }

/** One {@link ReplayQueue.pop}. */
export interface ReplayBatch<T> { items: T[], ackRef: ReplayAckRef }

/** Reported to `onOverflow`. */
export interface ReplayOverflow {
  reason: 'max_total_bytes' | 'disk_full'
  /** Queued items dropped (oldest first) and new droppable items refused, this time. */
  dropped: number
  refused: number
  /** The queue after the drop. */
  count: number
  bytes: number
  at: number
}

/** Counters for `$SYS`, metrics and the bridges list (`buffered` is `count`). */
export interface ReplayQueueStats {
  /** Unfinished items (queued + pending) and their bytes. */
  count: number
  bytes: number
  /** Popped, not yet acknowledged. */
  pending: number
  /** Items accepted since open. */
  appended: number
  /** Dropped or refused since open (cap, full disk, failed write). */
  dropped: number
  /** Corrupt records found (at open or read back). */
  corrupt: number
  /** Segment files, their bytes, record bytes written and fsyncs since open. */
  segments: number
  diskBytes: number
  writtenBytes: number
  syncs: number
}

/** A replay queue. See the invariants at the top of replayq.ts. */
export interface ReplayQueue<T> {
  /** Queues `items` at the tail; resolves once they are durable (at once when memory-only). */
  append: (items: readonly T[], opts?: AppendOptions) => Promise<AppendResult>
  /**
   * Takes up to `count` items / `bytes` (at least one item; defaults: the batch limits) from
   * the head without removing them; they stay pending until `ack`ed or `nack`ed.
   */
  pop: (count?: number, bytes?: number) => ReplayBatch<T>
  /** The batch was delivered; false for an unknown or stale ref (after `reset`). */
  ack: (ref: ReplayAckRef) => boolean
  /** The batch was not delivered: its items go back to the head, in order. */
  nack: (ref: ReplayAckRef) => boolean
  /** Every pending batch goes back to the head, in order (on reconnect). Returns the items. */
  reset: () => number
  stats: () => ReplayQueueStats
  /** Writes what was appended, records the acknowledgements, closes the files. */
  close: () => Promise<void>
}
