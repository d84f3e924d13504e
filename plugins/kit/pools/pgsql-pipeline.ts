/**
 * The one PostgreSQL connection a pool keeps for ordered, pipelined writes
 * ({@link SqlPool.pipelined}): data integration's resource sends its next write while the one
 * before is still being answered, so the server has the next statement at hand when it
 * finishes one instead of waiting for the node to read the answer and send again (the
 * 2026-11-28 session 32 timeline in docs/performance.md: the server idled while the node's
 * event loop was busy elsewhere).
 *
 * Invariants:
 * - One connection, pg's pipeline mode: every query is sent as soon as it is made, each with
 *   its own Sync, and the server runs them in the order sent.
 * - A write is one transaction: `BEGIN`, its statements, then `COMMIT` or `ROLLBACK`. The next
 *   write's `BEGIN` is sent only after this write's end is sent (a turn passed from write to
 *   write, in the order the writes were made), so no statement lands in another's transaction.
 * - A write made with `after` sends its statements at once but its `COMMIT` only once `after`
 *   resolved true (the write before it stored); false: `ROLLBACK`, and it rejects with
 *   {@link NotCommitted}. So a write is never stored when the one it follows was not, whatever
 *   order the answers are read in.
 * - A connection that fails (a socket error, pg's `query_timeout`) fails every query sent on it
 *   and is dropped; the next write opens a new one.
 */
import pg from 'pg'
import { NotCommitted } from './sql-pool.js'

type Query = { text: string, values: ReadonlyArray<string | number | null> }

/** What {@link PgPipeline} writes with: one pipelined connection, opened at the first write. */
export class PgPipeline {
  private client: pg.Client | undefined
  private opening: Promise<pg.Client> | undefined
  /** Resolves once the write made last has sent its end (`COMMIT` or `ROLLBACK`). */
  private turn: Promise<void> = Promise.resolve()
  private closed = false

  /** `config`: pg's client options (the pool's), without `pipeline`. */
  constructor (private readonly config: pg.ClientConfig) {}

  /** {@link SqlPool.pipelined}; see the module's invariants. */
  async transaction (queries: readonly Query[], after?: Promise<boolean>): Promise<void> {
    const before = this.turn
    let pass!: () => void
    this.turn = new Promise<void>((resolve) => { pass = resolve })
    let passed = false
    const passOn = (): void => { if (!passed) { passed = true; pass() } }
    try {
      await before
      const c = await this.connection()
      const sent = [c.query('BEGIN'), ...queries.map(async (q) => await c.query(q.text, q.values as any[]))]
      // every answer is awaited below, whatever happens first
      const answers = Promise.allSettled(sent)
      const stored = after === undefined ? true : await after
      const end = c.query(stored ? 'COMMIT' : 'ROLLBACK')
      passOn()
      const [results, ended] = await Promise.allSettled([answers, end])
      const failed = (results as PromiseFulfilledResult<Array<PromiseSettledResult<unknown>>>).value.find((r) => r.status === 'rejected')
      if (ended.status === 'rejected') throw ended.reason
      if (!stored) throw new NotCommitted()
      // a refused statement: the server rolled the transaction back at its COMMIT
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    } finally {
      passOn()
    }
  }

  /** The open connection, or a new one. */
  private async connection (): Promise<pg.Client> {
    if (this.closed) throw new Error('the PostgreSQL pool is closed')
    if (this.client !== undefined) return this.client
    this.opening ??= (async () => {
      const c = new pg.Client({ ...this.config, pipeline: true } as pg.ClientConfig)
      const drop = (): void => { if (this.client === c) this.client = undefined }
      // a broken connection fails its queries; it is dropped and the next write opens another
      c.on('error', drop)
      c.on('end', drop)
      try {
        await c.connect()
      } catch (err) {
        await c.end().catch(() => {})
        throw err
      }
      if (this.closed) {
        await c.end().catch(() => {})
        throw new Error('the PostgreSQL pool is closed')
      }
      this.client = c
      return c
    })().finally(() => { this.opening = undefined })
    return await this.opening
  }

  /** Closes the connection; later writes reject. */
  async close (): Promise<void> {
    this.closed = true
    const c = this.client
    this.client = undefined
    await c?.end().catch(() => {})
  }
}
