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
 * Invariant: rows leave in the order they came, and a flush hands every row gathered.
 */

/** What one row's writer waits on: settled once the row is written or given up. */
export interface RowSettle {
  resolve: () => void
  reject: (err: Error) => void
}

/** One row waiting in a batch: its write, its settle and when it came (ms). */
export interface PendingRow<W> {
  row: W
  settle: RowSettle
  at: number
}

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

/** Gathers rows and hands them to `flush` in batches. */
export class Batcher<W> {
  private rows: Array<PendingRow<W>> = []

  constructor (
    private readonly batchSize: number,
    private readonly batchTimeMs: number,
    private readonly flush: (rows: Array<PendingRow<W>>) => void,
    private readonly clock: FlushClock
  ) {}

  /** Adds a row; flushes when the batch is full (or at once without batching). */
  add (pending: PendingRow<W>): void {
    this.rows.push(pending)
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
    this.rows = []
    this.flush(rows)
  }
}
