/**
 * How deep a rule SQL statement may nest (rules/sql/limits.ts): up to the limits a statement
 * parses, compiles and runs; past them it is an SqlError naming the limit and where, never a
 * stack overflow, whatever the depth and whichever construct nests.
 */
import { compileSql, SqlError } from '../../../rules/sql/index.js'
import { MAX_SQL_EXPR_DEPTH, MAX_SQL_NESTING } from '../../../rules/sql/limits.js'

/** The SqlError `sql` raises when parsed (and compiled). */
function errorOf (sql: string): SqlError {
  try {
    compileSql(sql)
  } catch (err) {
    if (err instanceof SqlError) return err
    throw err
  }
  throw new Error(`no error for ${sql.slice(0, 80)}`)
}

const MSG = { topic: 't/1', payload: '{"a":[1],"v":5}' }

/** `open` written n times around `inner`, each closed by `close`. */
function wrap (n: number, open: string, inner: string, close: string): string {
  return open.repeat(n) + inner + close.repeat(n)
}

/** Each construct the parser descends into, as `n` levels around `1` (or a boolean). */
const NESTINGS: Array<[string, (n: number) => string]> = [
  ['parentheses', n => wrap(n, '(', '1', ')')],
  ['function calls', n => wrap(n, 'abs(', '1', ')')],
  ['CASE', n => wrap(n, 'CASE WHEN true THEN ', '1', ' END')],
  ['lists', n => wrap(n, '[', '1', ']')],
  ['indexes', n => wrap(n, 'payload.a[', '1 * 1', ']')],
  ['IN lists', n => wrap(n, '1 IN (', '1', ')')],
  ['unary minus', n => '- '.repeat(n) + '1'],
  ['unary plus', n => '+ '.repeat(n) + '1'],
  ['NOT', n => 'NOT '.repeat(n) + 'true']
]

describe('rule SQL depth limits', () => {
  it.each(NESTINGS)('accepts %s nested %#: up to the nesting limit, and runs them', (_what, make) => {
    const compiled = compileSql(`SELECT ${make(MAX_SQL_NESTING)} AS x FROM "t/#"`)
    expect(compiled.evaluate(MSG).matched).toBe(true)
  })

  it.each(NESTINGS)('refuses %s nested one level more, naming the limit and where', (_what, make) => {
    const sql = `SELECT ${make(MAX_SQL_NESTING + 1)} AS x FROM "t/#"`
    const err = errorOf(sql)
    expect(err.message).toMatch(/^expression nested more than 100 levels deep \(parentheses, function calls, CASE, lists, indexes, NOT and unary minus inside one another\) at 1:\d+$/)
    expect(err.offset).toBeGreaterThan(0)
    expect(err.offset).toBeLessThan(sql.length)
  })

  it.each(NESTINGS)('refuses %s nested 100,000 levels deep without a stack overflow', (_what, make) => {
    expect(errorOf(`SELECT ${make(100_000)} AS x FROM "t/#"`).message).toMatch(/^expression nested more than 100 levels deep/)
  })

  it('counts the levels of every part of a statement: WHERE, FOREACH, DO, INCASE and AS targets', () => {
    const deep = wrap(MAX_SQL_NESTING + 1, '(', '1', ')')
    for (const sql of [
      `SELECT 1 FROM "t/#" WHERE ${deep} = 1`,
      `FOREACH ${deep} FROM "t/#"`,
      `FOREACH payload.a DO ${deep} AS x FROM "t/#"`,
      `FOREACH payload.a INCASE ${deep} FROM "t/#"`,
      `SELECT 1 AS x[${deep}] FROM "t/#"`
    ]) {
      expect(errorOf(sql).message).toMatch(/^expression nested more than 100 levels deep/)
    }
  })

  it('counts a mix of constructs inside one another as one nesting', () => {
    const mix = (n: number): string => {
      const parts: Array<[string, string]> = [['(', ')'], ['abs(', ')'], ['CASE WHEN true THEN ', ' END'], ['- ', ''], ['payload.a[', ']']]
      let open = ''
      let close = ''
      for (let i = 0; i < n; i++) { const [o, c] = parts[i % parts.length]; open += o; close = c + close }
      return open + '1' + close
    }
    expect(compileSql(`SELECT ${mix(MAX_SQL_NESTING)} AS x FROM "t/#"`).run(MSG)).toEqual([{ x: 1 }])
    expect(errorOf(`SELECT ${mix(MAX_SQL_NESTING + 1)} AS x FROM "t/#"`).message).toMatch(/nested more than 100 levels/)
  })

  it('lets sibling expressions each nest up to the limit (the count is of levels, not of parentheses)', () => {
    const deep = wrap(MAX_SQL_NESTING, '(', '1', ')')
    const sql = `SELECT ${deep} AS a, ${deep} AS b FROM "t/#" WHERE ${deep} = ${deep}`
    expect(compileSql(sql).run(MSG)).toEqual([{ a: 1, b: 1 }])
  })

  describe('operator chains (the expression tree)', () => {
    // `v = 0 OR v = 1 ... ` with n terms: n-1 ORs, then the comparison and its operands
    const orChain = (n: number): string => `SELECT topic FROM "t/#" WHERE ${Array.from({ length: n }, (_, i) => `v = ${i}`).join(' OR ')}`

    it('accepts a chain as deep as the limit, compiles it and runs it', () => {
      const compiled = compileSql(orChain(MAX_SQL_EXPR_DEPTH - 1))
      expect(compiled.run({ topic: 't/1', v: MAX_SQL_EXPR_DEPTH - 2 })).toEqual([{ topic: 't/1' }])
      expect(compiled.run({ topic: 't/1', v: -1 })).toBeNull()
    })

    it('refuses a chain one level deeper, naming the limit and a way out', () => {
      expect(errorOf(orChain(MAX_SQL_EXPR_DEPTH)).message)
        .toMatch(/^expression more than 1000 levels deep \(each operator of a chain such as a OR b OR c \.\.\. is one level; the limit is 1000\): use IN \(\.\.\.\) or split the condition at 1:\d+$/)
    })

    it.each([
      ['+', (n: number) => `SELECT topic${' + 1'.repeat(n)} AS x FROM "t/#"`],
      ['AND', (n: number) => `SELECT 1 FROM "t/#" WHERE true${' AND true'.repeat(n)}`],
      ['=', (n: number) => `SELECT 1${' = 1'.repeat(n)} AS x FROM "t/#"`],
      ['*', (n: number) => `SELECT topic${' * 2'.repeat(n)} AS x FROM "t/#"`]
    ])('refuses a chain of 100,000 %s without a stack overflow', (_op, make) => {
      expect(errorOf(make(100_000)).message).toMatch(/^expression more than 1000 levels deep/)
    })

    it('keeps IN lists, FROM lists and field lists flat, whatever their length', () => {
      const items = Array.from({ length: 20_000 }, (_, i) => i).join(', ')
      expect(compileSql(`SELECT 1 AS x FROM "t/#" WHERE v IN (${items})`).run({ v: 19_999 })).toEqual([{ x: 1 }])
      const fields = Array.from({ length: 5_000 }, (_, i) => `${i} AS f${i}`).join(', ')
      expect(Object.keys(compileSql(`SELECT ${fields} FROM "t/#"`).run({})![0])).toHaveLength(5_000)
    })

    it('accepts paths and AS targets of up to 1,000 keys and indexes, and runs them', () => {
      const n = MAX_SQL_EXPR_DEPTH
      const deep = '{"a":'.repeat(n) + '1' + '}'.repeat(n)
      expect(compileSql(`SELECT payload${'.a'.repeat(n - 1)} AS x FROM "t/#"`).run({ payload: deep })).toEqual([{ x: { a: 1 } }])
      const [out] = compileSql(`SELECT payload${'.a'.repeat(n - 1)} FROM "t/#"`).run({ payload: deep })!
      expect(JSON.stringify(out)).toBe(`{"payload":${deep}}`)
      expect(compileSql(`SELECT 1 AS x${'[1]'.repeat(n - 1)} FROM "t/#"`).run({})).toHaveLength(1)
    })

    it.each([
      ['a path', (n: number) => `SELECT payload${'.a'.repeat(n)} AS x FROM "t/#"`],
      ['a path inside an expression', (n: number) => `SELECT 1 FROM "t/#" WHERE payload${'[1]'.repeat(n)} = 1`],
      ['an AS target', (n: number) => `SELECT 1 AS x${'.a'.repeat(n)} FROM "t/#"`],
      ['a FOREACH DO target', (n: number) => `FOREACH payload.a DO item AS x${'[-0]'.repeat(n)} FROM "t/#"`]
    ])('refuses %s of more than 1,000 keys and indexes (its output would be that deep)', (_what, make) => {
      expect(errorOf(make(MAX_SQL_EXPR_DEPTH)).message).toMatch(/^path of more than 1000 keys and indexes \(a\.b\.c \.\.\. or AS a\.b\.c \.\.\.\); the limit is 1000 at 1:\d+$/)
      expect(errorOf(make(100_000)).message).toMatch(/^path of more than 1000 keys and indexes/)
    })
  })
})
