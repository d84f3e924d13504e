/**
 * The client of `backend_cassa`: the DataStax `cassandra-driver` (loaded by the first resource,
 * not by every node), one `Client` per resource instance with `pool_size` connections to each
 * node of the local datacenter.
 *
 * Invariants:
 * - The kit owns retries: the driver's retry policy is fallthrough (it retries nothing).
 * - Statements are prepared and their values bound (the CQL text never holds a value); a write
 *   is unlogged `BATCH`es of up to {@link STATEMENTS_PER_BATCH} statements, in order.
 *   A batch sent again after an error or a lost answer writes the same rows again: an INSERT or
 *   UPDATE of the same primary key is an upsert, so it adds nothing (a counter or list append
 *   would be applied twice: at least once).
 * - A server error about the statement or its values (syntax, invalid, a function failure), or a
 *   value the driver cannot encode as its column's type, is a refusal for good ({@link WriteRefused}), which the kit splits to find the refused rows;
 *   anything else (no host, timeouts, unavailable, overloaded, credentials) is transient.
 * - Nothing thrown or logged shows the password.
 */
import type { ConnectionOptions } from 'node:tls'
import type { Client } from 'cassandra-driver'
import { WriteRefused, pingHealth, type DataClient } from '../kit/data/index.js'
import { cassaWrites, type CassaWrite } from './statement.js'

/** Statements per unlogged batch (Cassandra warns at 5 KB of batch by default). */
const STATEMENTS_PER_BATCH = 20
/** How long a request may take, in ms. */
const READ_TIMEOUT_MS = 15_000
/** How long a new connection may take, in ms. */
const CONNECT_TIMEOUT_MS = 5000
/** Response error codes about the statement or its values: syntaxError, invalid, functionFailure. */
const REFUSALS = new Set([0x2000, 0x2200, 0x1400])

/** A resource's settings, read from its config. */
export interface CassaSettings {
  /** `host:port` of each contact point. */
  nodes: string[]
  keyspace: string
  localDataCenter: string
  username: string
  password: string
  poolSize: number
  tls: ConnectionOptions | undefined
}

/** A {@link DataClient} writing rows to Cassandra (see the module's invariants). */
export async function cassaClient (s: CassaSettings): Promise<DataClient<CassaWrite>> {
  const { Client: CassandraClient, policies, types } = await import('cassandra-driver')
  const client: Client = new CassandraClient({
    contactPoints: s.nodes,
    localDataCenter: s.localDataCenter,
    keyspace: s.keyspace,
    credentials: s.username === '' ? undefined : { username: s.username, password: s.password },
    sslOptions: s.tls,
    pooling: { coreConnectionsPerHost: { [types.distance.local]: s.poolSize, [types.distance.remote]: 1 } },
    socketOptions: { connectTimeout: CONNECT_TIMEOUT_MS, readTimeout: READ_TIMEOUT_MS },
    policies: { retry: new policies.retry.FallthroughRetryPolicy() }
  })
  const address = `cassandra ${s.nodes.join(',')}/${s.keyspace}`
  // the driver's messages run over several lines: one line in logs and API answers
  const why = (err: unknown): string => `${address}: ${((err as Error)?.message ?? String(err)).replace(/\s+/g, ' ').trim()}`
  const ping = async (): Promise<void> => { await client.execute('SELECT release_version FROM system.local') }

  return {
    address,
    ...pingHealth(why, ping, async () => await client.connect()),
    async write (writes) {
      const statements = writes.flatMap((w) => w.rows.map((params) => ({ query: w.text, params })))
      for (let i = 0; i < statements.length; i += STATEMENTS_PER_BATCH) {
        const chunk = statements.slice(i, i + STATEMENTS_PER_BATCH)
        try {
          if (chunk.length === 1) await client.execute(chunk[0].query, chunk[0].params, { prepare: true })
          else await client.batch(chunk, { prepare: true, logged: false })
        } catch (err) {
          // a TypeError is the driver's: a value it cannot encode as the column's type
          if (err instanceof TypeError || REFUSALS.has((err as { code?: number }).code ?? -1)) throw new WriteRefused(why(err), { cause: err })
          throw new Error(why(err), { cause: err })
        }
      }
    },
    ...cassaWrites,
    close: async () => { await client.shutdown() }
  }
}
