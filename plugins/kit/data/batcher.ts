/**
 * The batch of one action on one resource instance (EMQ X's `batch_size` / `batch_time`):
 * rows gather until `batchSize` are in or `batchTimeMs` passed since the first, then go to
 * the resource's buffer as one write. With `batchSize` 1 (or `enable_batch` false) a row
 * goes at once.
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

/** Gathers rows and hands them to `flush` in batches. */
export class Batcher<W> {
  private rows: Array<PendingRow<W>> = []
  private timer: NodeJS.Timeout | undefined

  constructor (
    private readonly batchSize: number,
    private readonly batchTimeMs: number,
    private readonly flush: (rows: Array<PendingRow<W>>) => void
  ) {}

  /** Adds a row; flushes when the batch is full (or at once without batching). */
  add (pending: PendingRow<W>): void {
    this.rows.push(pending)
    if (this.rows.length >= this.batchSize || this.batchTimeMs === 0) {
      this.drain()
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => { this.timer = undefined; this.drain() }, this.batchTimeMs)
    }
  }

  /** Hands what is gathered now (at a stop). */
  drain (): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.rows.length === 0) return
    const rows = this.rows
    this.rows = []
    this.flush(rows)
  }
}
