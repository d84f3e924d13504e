/**
 * What a data-integration backend gives the shared plumbing (docs/integrations.md, "Adding a
 * backend"): a client that reaches its server and writes a list of writes. Everything else
 * (the buffer, batching, retries, metrics, status) is the kit's.
 */

/**
 * A backend's client on one node, built per resource instance. `W` is one write as the
 * buffer keeps it (JSON-encodable: it goes to disk with the local buffer on): for SQL the
 * parameterized text and the rows of bound values.
 */
export interface DataClient<W> {
  /** What logs and errors call the far side: `pgsql 127.0.0.1:5432`. */
  readonly address: string
  /** Reaches the server (a connection and `SELECT 1`); rejects with why it cannot. */
  connect: () => Promise<void>
  /** The health check: whether the server answers now. */
  alive: () => Promise<boolean>
  /**
   * Writes `writes` in order, all or none (one statement or one transaction). Rejects with
   * {@link WriteRefused} when the server refused them for good (a row it will never take),
   * with anything else when the connection failed first (they are written again). A server
   * without transactions (Redis: one command per row, pipelined) writes what it can and
   * names the rows it refused in {@link WriteRefused.rows}.
   */
  write: (writes: readonly W[]) => Promise<void>
  /**
   * Optional, for a server that runs one connection's statements in the order sent
   * (PostgreSQL): {@link write}, but over the one connection that then carries every write
   * of this client, sent at once even while the writes before it are unanswered. Stored only
   * if `after` resolves true (the write sent before it was stored); when it resolves false,
   * nothing of it is stored and it rejects with {@link WriteSkipped}. With it the kit keeps
   * two writes in flight (data-resource.ts).
   */
  writeAfter?: (writes: readonly W[], after?: Promise<boolean>) => Promise<void>
  /** One write of every row of `rows` (single-row writes of one action, in order). */
  merge: (rows: readonly W[]) => W
  /** The rows of `write`, each a write of its own, in order (to find the row a server refuses). */
  split: (write: W) => W[]
  /** How many rows `write` holds. */
  rows: (write: W) => number
  /** Closes the connections; later writes reject. */
  close: () => Promise<void>
}

/** The server refused a write for good (bad data, a missing table): counted as failed, not retried. */
export class WriteRefused extends Error {
  /**
   * When given, the write was not all or none: these rows (numbered across every row of the
   * writes, in order) were refused and every other row was written. When absent, none was
   * written and the kit tries the writes one by one, then row by row, to find the refused ones.
   */
  readonly rows: readonly number[] | undefined

  constructor (message: string, options?: { cause?: unknown, rows?: readonly number[] }) {
    super(message, options)
    this.name = 'WriteRefused'
    this.rows = options?.rows
  }
}

/** A {@link DataClient.writeAfter} not stored because the write before it was not: it may be sent again. */
export class WriteSkipped extends Error {
  constructor (message = 'not written: the write before it was not stored') {
    super(message)
    this.name = 'WriteSkipped'
  }
}

/**
 * `connect` and `alive` of a client whose health check is one request (`ping`): `connect` runs
 * `open` (when given) and a ping, and rejects with `describe(err)` (the address and why);
 * `alive` is whether a ping answers now.
 */
export function pingHealth (describe: (err: unknown) => string, ping: () => Promise<unknown>, open?: () => Promise<unknown>): Pick<DataClient<unknown>, 'connect' | 'alive'> {
  return {
    async connect () {
      try {
        await open?.()
        await ping()
      } catch (err) {
        throw new Error(describe(err))
      }
    },
    alive: async () => await ping().then(() => true, () => false)
  }
}
