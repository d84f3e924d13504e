/**
 * The batch of one action on one resource instance (EMQ X's `batch_size` / `batch_time`):
 * rows gather until `batchSize` are in or the batch's time is up, at most `batchTimeMs` after
 * its first row, then go to the resource's buffer as one write. With `batchSize` 1 (or
 * `enable_batch` false) a row goes at once.
 *
 * The batches of one resource with the same `batchTimeMs` share one timer ({@link FlushClock}):
 * a batch joins the running period of its time (or starts one) and every batch of that period
 * flushes together when it ends. Many actions writing a few rows a second each (100 rules on
 * one resource) then make one burst of buffer entries per period, which the resource sends in
 * few writes, instead of a timer and a write per row. No row waits longer than `batchTimeMs`.
 *
 * A batch is two arrays side by side (the rows, their settles) and the time of its first row:
 * no object per row beyond the row itself.
 *
 * Invariant: rows leave in the order they came, and a flush hands every row gathered.
 */
import type { RowSettle } from '../../../rules/types.js'

export type { RowSettle }

/** Something a {@link FlushClock} flushes when its period ends. */
interface Flushable {
  drain: () => void
}

/** One timer per batch time for the batchers of one resource; see the module's comment. */
export class FlushClock {
  private readonly periods = new Map<number, Set<Flushable>>()
  private readonly timers = new Set<NodeJS.Timeout>()

  /** `batch` flushes when the running period of `ms` ends (one starts now if none runs). */
  join (batch: Flushable, ms: number): void {
    let period = this.periods.get(ms)
    if (period === undefined) {
      const members = period = new Set()
      this.periods.set(ms, members)
      const timer = setTimeout(() => {
        this.timers.delete(timer)
        this.periods.delete(ms)
        for (const b of members) b.drain()
      }, ms)
      this.timers.add(timer)
    }
    period.add(batch)
  }

  /** `batch` flushed on its own (full): it leaves its period. */
  leave (batch: Flushable, ms: number): void {
    this.periods.get(ms)?.delete(batch)
  }

  /** Stops the timers (the batchers are drained by their owner). */
  stop (): void {
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
    this.periods.clear()
  }
}

/** What a {@link Batcher} hands on: the rows, their settles (same order) and when the first came (ms). */
export type BatchFlush<W> = (rows: W[], settles: RowSettle[], at: number) => void

/** Gathers rows and hands them to `flush` in batches. */
export class Batcher<W> {
  private rows: W[] = []
  private settles: RowSettle[] = []
  private at = 0

  constructor (
    private readonly batchSize: number,
    private readonly batchTimeMs: number,
    private readonly flush: BatchFlush<W>,
    private readonly clock: FlushClock
  ) {}

  /** Adds a row; flushes when the batch is full (or at once without batching). */
  add (row: W, settle: RowSettle): void {
    if (this.rows.length === 0) this.at = Date.now()
    this.rows.push(row)
    this.settles.push(settle)
    if (this.rows.length >= this.batchSize || this.batchTimeMs === 0) {
      this.drain()
    } else if (this.rows.length === 1) {
      this.clock.join(this, this.batchTimeMs)
    }
  }

  /** Hands what is gathered now (full, its period's end, or a stop). */
  drain (): void {
    if (this.rows.length === 0) return
    if (this.batchTimeMs > 0) this.clock.leave(this, this.batchTimeMs)
    const rows = this.rows
    const settles = this.settles
    this.rows = []
    this.settles = []
    this.flush(rows, settles, this.at)
  }
}
