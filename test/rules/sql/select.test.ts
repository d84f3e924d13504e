import { jest } from '@jest/globals'
import { compileSql, SqlError } from '../../../rules/sql/index.js'

function run (sql: string, cols: Record<string, unknown>): Array<Record<string, unknown>> | null {
  return compileSql(sql).run(cols)
}

const MSG = { clientid: 'c1', topic: 't/1', qos: 1, payload: '{"temp": 31, "a": {"b": {"c": 5}}, "list": [10, {"y": 20}, 30]}' }

describe('rule SQL SELECT', () => {
  describe('fields', () => {
    it('selects columns, aliases and computed values', () => {
      expect(run('SELECT clientid, qos AS q, qos + 1 AS next FROM "t/#"', MSG)).toEqual([{ clientid: 'c1', q: 1, next: 2 }])
    })

    it('* copies every column and later fields add to it', () => {
      const out = run('SELECT *, payload.temp AS temp FROM "t/#"', MSG)
      expect(out).toEqual([{ ...MSG, temp: 31 }])
    })

    it('keys an unaliased computed field by its text and a string constant by its value', () => {
      expect(run("SELECT upper(clientid), 'hello' FROM \"t/#\"", MSG)).toEqual([{ 'upper(clientid)': 'C1', hello: 'hello' }])
    })

    it('leaves out fields whose value is undefined', () => {
      expect(run('SELECT nothing, payload.missing AS m, payload.a.x.y AS deep, qos FROM "t/#"', MSG)).toEqual([{ qos: 1 }])
    })

    it('lets later fields and WHERE read earlier aliases', () => {
      const sql = 'SELECT payload.a AS a, a.b.c * 2 AS twice FROM "t/#" WHERE twice = 10 and a.b.c = 5'
      expect(run(sql, MSG)).toEqual([{ a: { b: { c: 5 } }, twice: 10 }])
    })

    it('builds nested maps and arrays from AS targets', () => {
      const sql = 'SELECT qos AS m.q, clientid AS m.id, 1 AS l[-0], 2 AS l[-0], 0 AS l[0], 9 AS l[2], 7 AS k[1].x FROM "t/#"'
      expect(run(sql, MSG)).toEqual([{ m: { q: 1, id: 'c1' }, l: [0, 9, 2], k: [{ x: 7 }] }])
    })

    it('writing into payload.<path> decodes the payload of the output first', () => {
      const out = run('SELECT payload, 99 AS payload.a.b.c, 1 AS payload.new FROM "t/#"', MSG)
      expect(out?.[0].payload).toEqual({ temp: 31, a: { b: { c: 99 } }, list: [10, { y: 20 }, 30], new: 1 })
    })

    it('never changes the columns it reads (copy on write)', () => {
      const cols = { p: { a: { b: 1 } }, l: [1, 2] }
      const out = run('SELECT p, 2 AS p.a.b, l, 3 AS l[1] FROM "t/#"', cols)
      expect(out).toEqual([{ p: { a: { b: 2 } }, l: [3, 2] }])
      expect(cols).toEqual({ p: { a: { b: 1 } }, l: [1, 2] })
    })
  })

  describe('paths and indexes', () => {
    it.each([
      ['payload.a.b.c', 5],
      ['payload.list[1]', 10],
      ['payload.list[2].y', 20],
      ['payload.list[-1]', 30],
      ['payload.list[-3]', 10],
      ['payload.list[0]', undefined],
      ['payload.list[4]', undefined],
      ['payload.list[qos + 1].y', 20],
      ['payload.list[1..2]', [10, { y: 20 }]],
      ['payload.list[-2..-1]', [{ y: 20 }, 30]],
      ['payload.temp.x', undefined],
      ['payload.a[1]', undefined]
    ])('%s is %j', (path, expected) => {
      const out = run(`SELECT ${path} AS v FROM "t/#"`, MSG)
      expect(out?.[0].v).toEqual(expected)
    })

    it('an unaliased path writes the same path in the output', () => {
      expect(run('SELECT payload.a.b, payload.list[2] FROM "t/#"', MSG)).toEqual([{ payload: { a: { b: { c: 5 } }, list: [{ y: 20 }] } }])
    })

    it('reads a map column directly and a JSON text column lazily', () => {
      const cols = { pub_props: { 'User-Property': { foo: 'bar' } }, raw: '{"k": [1, 2]}' }
      expect(run("SELECT pub_props.'User-Property'.foo AS foo, raw.k[2] AS k FROM \"t/#\"", cols)).toEqual([{ foo: 'bar', k: 2 }])
    })

    it('reads a Buffer payload as JSON', () => {
      expect(run('SELECT payload.x AS x FROM "t/#"', { payload: Buffer.from('{"x": "buf"}') })).toEqual([{ x: 'buf' }])
    })

    it('does not take keys from the prototype', () => {
      expect(run('SELECT payload.constructor AS c, payload.toString AS s, constructor FROM "t/#"', { payload: '{}' })).toEqual([{}])
      expect(run('SELECT payload.__proto__ AS p FROM "t/#"', { payload: '{"__proto__": {"x": 1}}' })).toEqual([{ p: { x: 1 } }])
    })

    it('refuses ranges that can never work at create time', () => {
      expect(() => compileSql('SELECT payload.l[0..2] AS v FROM "t/#"')).toThrow('index 0 in a range (indexes start at 1; -1 is the last) at 1:8')
      expect(() => compileSql('SELECT [5..1] AS v FROM "t/#"')).toThrow('empty range [5..1] at 1:8')
    })

    it('a range on something that is not an array fails', () => {
      expect(compileSql('SELECT payload.temp[1..2] AS v FROM "t/#"').evaluate(MSG))
        .toMatchObject({ matched: false, failure: { phase: 'select_and_transform_error', reason: 'range_get_non_list' } })
    })
  })

  describe('WHERE', () => {
    const sql = compileSql('SELECT payload.temp AS temp FROM "t/#" WHERE payload.temp > 30 and topic =~ \'t/+\'')

    it('matches, and does not match when the condition is false', () => {
      expect(sql.run(MSG)).toEqual([{ temp: 31 }])
      expect(sql.run({ ...MSG, payload: '{"temp": 12}' })).toBeNull()
      expect(sql.run({ ...MSG, topic: 't/1/2' })).toBeNull()
    })

    it('a condition that is not true (undefined, a number) does not match', () => {
      expect(run('SELECT * FROM "t/#" WHERE nothing', MSG)).toBeNull()
      expect(run('SELECT * FROM "t/#" WHERE qos', MSG)).toBeNull()
    })
  })

  describe('a payload that is not JSON', () => {
    const cols = { ...MSG, payload: 'temp=31' }

    it('makes a statement reading payload.<key> not match', () => {
      const sql = compileSql('SELECT payload.temp AS t FROM "t/#"')
      expect(sql.run(cols)).toBeNull()
      expect(sql.evaluate(cols)).toMatchObject({ matched: false, failure: { phase: 'select_and_transform_error', reason: 'decode_json_failed' } })
      expect(compileSql('SELECT qos FROM "t/#" WHERE payload.temp > 1').evaluate(cols))
        .toMatchObject({ matched: false, failure: { phase: 'match_conditions_error', reason: 'decode_json_failed' } })
    })

    it('makes json_decode(payload) not match', () => {
      const r = compileSql('SELECT json_decode(payload) AS p FROM "t/#" WHERE p.temp > 1').evaluate(cols)
      expect(r).toMatchObject({ matched: false, failure: { phase: 'select_and_transform_error' } })
    })

    it('is fine when the statement only selects the raw payload', () => {
      expect(run('SELECT payload FROM "t/#"', cols)).toEqual([{ payload: 'temp=31' }])
    })

    it('decodes a payload once per run, however many paths read it', () => {
      const spy = jest.spyOn(JSON, 'parse')
      try {
        // fresh columns: decoded payloads are cached per columns object (one event)
        compileSql('SELECT payload.temp AS a, payload.a.b AS b, payload.list[1] AS c FROM "t/#" WHERE payload.temp > 1').run({ ...MSG })
        expect(spy).toHaveBeenCalledTimes(1)
      } finally {
        spy.mockRestore()
      }
    })

    it('decodes a payload once per event, however many rules read it', () => {
      const rules = [1, 2, 3].map(n => compileSql(`SELECT * FROM "t/#" WHERE payload.temp = ${n}`))
      const spy = jest.spyOn(JSON, 'parse')
      try {
        const event = { ...MSG }
        for (const rule of rules) rule.run(event)
        expect(spy).toHaveBeenCalledTimes(1)
      } finally {
        spy.mockRestore()
      }
    })
  })

  describe('functions', () => {
    it('calls library functions, also those that read the event', () => {
      expect(run("SELECT lower('AbC') AS l, nth(2, payload.list) AS n, topic(1) AS t1, clientid() AS c FROM \"t/#\"", MSG))
        .toEqual([{ l: 'abc', n: { y: 20 }, t1: 't', c: 'c1' }])
    })

    it('a conversion that fails makes the statement not match', () => {
      const r = compileSql("SELECT int('abc') AS i FROM \"t/#\"").evaluate(MSG)
      expect(r).toMatchObject({ matched: false, failure: { phase: 'select_and_transform_error', message: expect.stringContaining('int') } })
    })

    it.each([
      ['SELECT nosuch(qos) FROM "t/#"', "unknown function 'nosuch' at 1:8"],
      ['SELECT * FROM "t/#" WHERE Frobnicate() = 1', "unknown function 'Frobnicate' at 1:27"],
      ['SELECT lower() FROM "t/#"', "function 'lower' takes 1 argument, got 0 at 1:8"],
      ['SELECT lower(a, b) FROM "t/#"', "function 'lower' takes 1 argument, got 2 at 1:8"],
      ['SELECT substr(a) FROM "t/#"', "function 'substr' takes 2 to 3 arguments, got 1 at 1:8"]
    ])('%s is refused at create time', (sql, message) => {
      expect(() => compileSql(sql)).toThrow(SqlError)
      expect(() => compileSql(sql)).toThrow(message)
    })

    it('names are case-insensitive', () => {
      expect(run("SELECT UPPER('x') AS u FROM \"t/#\"", MSG)).toEqual([{ u: 'X' }])
    })

    it('uses the function table given', () => {
      const sql = compileSql('SELECT twice(qos) AS v FROM "t/#"', {
        lookupFunction: name => name === 'twice' ? { name, minArgs: 1, maxArgs: 1, fn: (x: unknown) => (x as number) * 2 } : undefined
      })
      expect(sql.run({ qos: 2 })).toEqual([{ v: 4 }])
    })
  })
})
