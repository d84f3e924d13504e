/**
 * svc_backend_clickhouse without a server: EMQ X's `sql` template read into a table, columns
 * and one placeholder or literal per column, what is refused and why (108), the row of one
 * run with its values' types, and the server error codes read from 18.16's error text.
 * test/e2e/data-clickhouse.test.ts writes the same rows into a real ClickHouse.
 */
import { compileClickhouseInsert } from '../../../plugins/backend_clickhouse/template.js'
import { clickhouseRow, clickhouseWrites } from '../../../plugins/backend_clickhouse/write.js'
import { serverCode, TRANSIENT_CODES } from '../../../plugins/backend_clickhouse/client.js'
import { ApiError } from '../../../node/errors.js'

describe('the sql template', () => {
  it('reads EMQ X\'s form into table, columns and values', () => {
    expect(compileClickhouseInsert('insert into t(a,b) values (${a}, ${b})')).toEqual({
      table: '`t`', columns: ['a', 'b'], values: [{ key: 'a' }, { key: 'b' }]
    })
  })

  it('takes quoted names, a database, quoted placeholders, literals and a trailing semicolon', () => {
    const t = compileClickhouseInsert('INSERT INTO mqtt.`my t` (`a b`, "c", d, e, f, g) VALUES (\'${payload.x}\', \'x\\\'y\'\'z\', -3.5, NULL, true, 7);')
    expect(t).toEqual({
      table: '`mqtt`.`my t`',
      columns: ['a b', 'c', 'd', 'e', 'f', 'g'],
      values: [{ key: 'payload.x' }, { literal: 'x\'y\'z' }, { literal: -3.5 }, { literal: null }, { literal: 1 }, { literal: 7 }]
    })
  })

  it('quotes a name with a backquote so that it stays one name', () => {
    expect(compileClickhouseInsert('insert into `a``b`(x) values (1)').table).toBe('`a\\`b`')
  })

  it.each([
    ['insert into t values (${a})', /it has no column list/],
    ['insert into t(a) values (now())', /a function call \(now\(\.\.\.\)\) is not a value/],
    ['insert into t(a) values (\'x${a}\')', /cannot be bound as a parameter/],
    ['insert into ${t}(a) values (${a})', /a placeholder cannot name the table/],
    ['insert into t(${c}) values (${a})', /a placeholder cannot name the column/],
    ['insert into t(a) values (${a}), (${b})', /several rows of values/],
    ['insert into t(a) select ${a}', /expected VALUES but found select/],
    ['select * from t', /expected INSERT but found select/],
    ['insert into t(a, a) values (1, 2)', /column `a` is named twice/],
    ['insert into t(a, b) values (${a})', /it names 2 columns but gives 1 values/],
    ['insert into t(a) values (${a}); drop table t', /unexpected drop after the values/],
    ['insert into t(a) values (?)', /a \? marker of its own/],
    ['', /it is empty/],
    [42, /it must be a string/]
  ])('refuses %j with 108, saying why and what is accepted', (sql, why) => {
    let err: unknown
    try { compileClickhouseInsert(sql) } catch (e) { err = e }
    expect(err).toBeInstanceOf(ApiError)
    expect((err as ApiError).code).toBe(108)
    expect((err as Error).message).toMatch(why)
    expect((err as Error).message).toMatch(/never as SQL text, so the template must be INSERT INTO <table> \(<columns>\) VALUES/)
  })
})

describe('the row of one run', () => {
  const t = compileClickhouseInsert('insert into t(n, s, b, o, absent, lit) values (${n}, ${s}, ${b}, ${o}, ${nope}, \'L\')')
  it('keeps numbers and strings, writes booleans as 1/0 and objects as JSON text, leaves absent keys out', () => {
    const w = clickhouseRow(t, { n: 1.5, s: '\'); drop table t; --', b: true, o: { x: [1] } })
    expect(w).toEqual({ t: '`t`', c: ['n', 's', 'b', 'o', 'absent', 'lit'], r: [{ n: 1.5, s: '\'); drop table t; --', b: 1, o: '{"x":[1]}', lit: 'L' }] })
  })
  it('reads a path into a JSON payload', () => {
    const p = compileClickhouseInsert('insert into t(x) values (${payload.x})')
    expect(clickhouseRow(p, { payload: '{"x":3}' }).r).toEqual([{ x: 3 }])
  })
  it('merges and splits the rows of one action', () => {
    const a = clickhouseRow(t, { n: 1 })
    const b = clickhouseRow(t, { n: 2 })
    const merged = clickhouseWrites.merge([a, b])
    expect(clickhouseWrites.rows(merged)).toBe(2)
    expect(clickhouseWrites.split(merged)).toEqual([a, b])
  })
})

describe('server errors', () => {
  it('reads the code from 18.16\'s error text and from newer servers\' ClickHouseError', () => {
    expect(serverCode(new Error('Code: 60, e.displayText() = DB::Exception: Table mqtt.x doesn\'t exist., e.what() = DB::Exception'))).toBe(60)
    expect(serverCode(Object.assign(new Error('x'), { code: '53' }))).toBe(53)
    expect(serverCode(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBeUndefined()
    expect(TRANSIENT_CODES.has(516)).toBe(true)
    expect(TRANSIENT_CODES.has(60)).toBe(false)
  })
})
