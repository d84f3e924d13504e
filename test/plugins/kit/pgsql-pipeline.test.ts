/**
 * The PostgreSQL pool's pipelined transactions (plugins/kit/pools/pgsql-pipeline.ts) against a
 * real server: sent behind one another on one connection, stored in order; one made after a
 * refused one is rolled back (nothing of it stored); a connection the server ends fails what
 * was sent on it and the next write opens another.
 */
import { describeWithServer, startPostgres, type PostgresServer } from '../../helpers/servers/index.js'
import { createPgsqlPool } from '../../../plugins/kit/pools/pgsql.js'
import { NotCommitted, type SqlPool } from '../../../plugins/kit/pools/sql-pool.js'

let server: PostgresServer
let pool: SqlPool

const insert = (...seqs: number[]): Array<{ text: string, values: number[] }> => seqs.map((seq) => ({ text: 'INSERT INTO piped (seq) VALUES ($1)', values: [seq] }))
const stored = async (): Promise<number[]> => (await server.query<{ seq: number }>('SELECT seq FROM piped ORDER BY id')).map((r) => r.seq)
const outcome = async (p: Promise<void>): Promise<boolean> => await p.then(() => true, () => false)

describeWithServer('postgres', 'the PostgreSQL pool, pipelined transactions', () => {
  beforeAll(async () => {
    server = await startPostgres()
    // seq must be positive: a negative one is a row the server refuses for good
    await server.query('CREATE TABLE piped (id serial PRIMARY KEY, seq int CHECK (seq > 0))')
    pool = createPgsqlPool({ host: server.host, port: server.port, user: server.user, password: server.password, database: server.database, size: 2, connectTimeoutMs: 5000, queryTimeoutMs: 5000 })
  }, 60_000)
  afterAll(async () => {
    await pool?.close()
    await server?.close()
  })
  beforeEach(async () => { await server.query('TRUNCATE piped') })

  it('stores transactions sent behind one another in the order sent, each after the one before', async () => {
    const first = pool.pipelined!(insert(1, 2))
    const second = pool.pipelined!(insert(3), outcome(first))
    const third = pool.pipelined!(insert(4, 5), outcome(second))
    await Promise.all([first, second, third])
    expect(await stored()).toEqual([1, 2, 3, 4, 5])
  })

  it('rolls back a transaction made after one the server refused, and stores what comes after', async () => {
    const refused = pool.pipelined!(insert(1, -2))
    const behind = pool.pipelined!(insert(3), outcome(refused))
    // both are awaited together: one rejected while the test waited on the other is an
    // unhandled rejection, which fails the test under jest
    const [first, second] = await Promise.allSettled([refused, behind])
    expect((first as PromiseRejectedResult).reason?.message).toMatch(/check constraint/)
    expect((second as PromiseRejectedResult).reason).toBeInstanceOf(NotCommitted)
    // the connection is fine: the next transaction (nothing before it pending) is stored
    await pool.pipelined!(insert(4))
    expect(await stored()).toEqual([4])
  })

  it('fails what was sent on a connection the server ended, and opens another for the next', async () => {
    await pool.pipelined!(insert(1))
    const admin = await server.connect({ admin: true })
    try {
      // the pipeline's connection is the only one of the test user inside a transaction or idle after one
      const sent = pool.pipelined!([{ text: 'SELECT pg_sleep(30)', values: [] }, ...insert(2)])
      const behind = pool.pipelined!(insert(3), outcome(sent))
      // both fail while the test waits on the server: their outcomes are taken at once (a
      // rejection nobody held yet is an unhandled one, which fails the test under jest)
      const outcomes = Promise.allSettled([sent, behind])
      // the server ends the connection while it sleeps (polled until the sleep is running)
      for (;;) {
        const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND query LIKE 'SELECT pg_sleep%'", [server.user])
        if (killed.rows.length > 0) break
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      expect((await outcomes).map((o) => o.status)).toEqual(['rejected', 'rejected'])
    } finally {
      await admin.end()
    }
    await pool.pipelined!(insert(4))
    expect(await stored()).toEqual([1, 4])
  })
})
