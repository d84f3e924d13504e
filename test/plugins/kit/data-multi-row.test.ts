/**
 * The SQL side of the data kit without a server: a single-row INSERT's multi-row form (every
 * value still a bound parameter), which statements keep one statement per row, the `sql`
 * param compiled (and refused) as an action's check does, and selected values as parameters.
 */
import { multiRowForm, multiRowText, sqlActionParts, sqlDataClient, sqlValue } from '../../../plugins/kit/data/index.js'
import type { SqlPool } from '../../../plugins/kit/pools/sql-pool.js'
import { ApiError } from '../../../node/errors.js'

const pg = sqlActionParts('postgresql', 'PostgreSQL', (b) => b ? 'true' : 'false')
const my = sqlActionParts('mysql', 'MySQL', (b) => b ? 1 : 0)

describe('multi-row INSERT', () => {
  it('repeats the VALUES tuple with the PostgreSQL markers numbered on', () => {
    const t = pg.compile({ sql: 'INSERT INTO t (a, b, c) VALUES (${clientid}, \'${topic}\', now())' })
    const form = multiRowForm(t.text, 'postgresql')!
    expect(form.params).toBe(2)
    expect(multiRowText(form, 3, 'postgresql')).toBe('INSERT INTO t (a, b, c) VALUES ($1, $2, now()), ($3, $4, now()), ($5, $6, now())')
  })

  it('repeats the tuple with ? markers for MySQL and keeps what follows it', () => {
    const t = my.compile({ sql: 'insert into t(a, b) values (${a}, ${b}) on duplicate key update b = values(b)' })
    const form = multiRowForm(t.text, 'mysql')!
    expect(multiRowText(form, 2, 'mysql')).toBe('insert into t(a, b) values (?, ?), (?, ?) on duplicate key update b = values(b)')
  })

  it('keeps literals with parentheses, commas and markers in them as text', () => {
    const form = multiRowForm('INSERT INTO t VALUES ($1, \'a) $9 (b\', $2)', 'postgresql')!
    expect(multiRowText(form, 2, 'postgresql')).toBe('INSERT INTO t VALUES ($1, \'a) $9 (b\', $2), ($3, \'a) $9 (b\', $4)')
  })

  it('has no multi-row form for other statements or markers outside the tuple', () => {
    expect(multiRowForm('UPDATE t SET a = $1 WHERE id = $2', 'postgresql')).toBeUndefined()
    expect(multiRowForm('INSERT INTO t (a) VALUES ($1) ON CONFLICT (a) DO UPDATE SET b = $2', 'postgresql')).toBeUndefined()
    expect(multiRowForm('INSERT INTO t (a) SELECT $1', 'postgresql')).toBeUndefined()
    expect(multiRowForm('INSERT INTO t (a) VALUES (1)', 'postgresql')).toBeUndefined()
  })
})

describe('the sql param', () => {
  it('binds placeholders as parameters and renders a row', () => {
    const t = pg.compile({ sql: 'insert into t values (${clientid}, ${payload.temp}, ${flags.retain}, ${missing})' })
    expect(t.text).toBe('insert into t values ($1, $2, $3, $4)')
    const row = pg.row(t, { clientid: 'c1', payload: '{"temp":21.5}', flags: { retain: true } })
    expect(row).toEqual({ text: t.text, rows: [['c1', 21.5, 'true', null]] })
  })

  it('refuses a template that cannot be bound, with code 108', () => {
    for (const sql of ['', 'insert into t values (\'x${clientid}\')', 'insert into t values (?)', 'insert into t values (\'open']) {
      let err: unknown
      try { my.compile({ sql }) } catch (e) { err = e }
      expect(err).toBeInstanceOf(ApiError)
      expect((err as ApiError).code).toBe(108)
      expect((err as Error).message).toMatch(/parameter sql cannot be used/)
    }
  })

  it('binds objects as JSON, buffers as text and non-finite numbers as NULL', () => {
    expect(sqlValue({ a: 1 }, String)).toBe('{"a":1}')
    expect(sqlValue(Buffer.from('hi'), String)).toBe('hi')
    expect(sqlValue(Number.NaN, String)).toBeNull()
    expect(sqlValue(true, (b) => b ? 1 : 0)).toBe(1)
  })
})

describe('the SQL client', () => {
  /** A pool that records what it is asked. */
  function recordingPool (): { pool: SqlPool, calls: Array<{ kind: 'query' | 'transaction', queries: Array<{ text: string, values: ReadonlyArray<unknown> }> }> } {
    const calls: Array<{ kind: 'query' | 'transaction', queries: Array<{ text: string, values: ReadonlyArray<unknown> }> }> = []
    const pool = {
      query: async (text: string, values: ReadonlyArray<unknown>) => { calls.push({ kind: 'query', queries: [{ text, values }] }); return [] },
      transaction: async (queries: Array<{ text: string, values: ReadonlyArray<unknown> }>) => { calls.push({ kind: 'transaction', queries: [...queries] }) },
      probe: async () => true,
      close: async () => {}
    } as unknown as SqlPool
    return { pool, calls }
  }

  it('writes a send of single-row entries of one statement as one multi-row INSERT, and others in one transaction', async () => {
    const { pool, calls } = recordingPool()
    const client = sqlDataClient(pool, { dialect: 'postgresql', address: 'pgsql test', transient: () => false })
    const insert = 'INSERT INTO t (a, b) VALUES ($1, $2)'
    const entries = [{ text: insert, rows: [['x', 1]] }, { text: insert, rows: [['y', 2], ['z', 3]] }]
    await client.write(entries)
    expect(calls).toEqual([{ kind: 'query', queries: [{ text: 'INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4), ($5, $6)', values: ['x', 1, 'y', 2, 'z', 3] }] }])
    // the buffer's entries are left as they were
    expect(entries[0].rows).toEqual([['x', 1]])
    calls.length = 0
    const update = 'UPDATE t SET b = $2 WHERE a = $1'
    await client.write([{ text: insert, rows: [['x', 1]] }, { text: update, rows: [['x', 2]] }, { text: insert, rows: [['y', 3]] }])
    expect(calls).toEqual([{ kind: 'transaction', queries: [{ text: insert, values: ['x', 1] }, { text: update, values: ['x', 2] }, { text: insert, values: ['y', 3] }] }])
  })
})
