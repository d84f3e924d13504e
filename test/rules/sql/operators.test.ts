import { compileSql } from '../../../rules/sql/index.js'

/** The value of `expr` selected on columns `cols` (payload JSON given as an object is encoded). */
function value (expr: string, cols: Record<string, unknown> = {}): unknown {
  const out = compileSql(`SELECT ${expr} AS v FROM "t/#"`).run(cols)
  if (out === null) throw new Error(`no match for ${expr}`)
  return out[0].v
}

/** The failure of `expr`, or null. */
function failureOf (expr: string, cols: Record<string, unknown> = {}): unknown {
  const r = compileSql(`SELECT ${expr} AS v FROM "t/#"`).evaluate(cols)
  return r.matched ? null : r.failure
}

describe('rule SQL operators', () => {
  describe('arithmetic', () => {
    it.each([
      ['1 + 2', 3], ['5 - 7', -2], ['3 * 4', 12], ['7 / 2', 3.5], ['6 / 3', 2],
      ['7 div 2', 3], ['-7 div 2', -3], ['7 mod 3', 1], ['-7 mod 2', -1], ['7 mod -2', 1],
      ['2 + 3 * 4', 14], ['(2 + 3) * 4', 20], ['10 - 4 - 3', 3], ['2 * 3 div 4', 1], ['-2 * -3', 6],
      ['- (1 + 2)', -3], ['+5', 5], ["'ab' + 'cd'", 'abcd'], ['1.5 + 1', 2.5]
    ])('%s = %j', (expr, expected) => {
      expect(value(expr)).toBe(expected)
    })

    it('reads columns and JSON payload fields', () => {
      expect(value('payload.a * qos + 1', { qos: 2, payload: '{"a": 20}' })).toBe(41)
      expect(value('-payload.a', { payload: '{"a": 4}' })).toBe(-4)
    })

    it.each([
      ["1 + 'a'"], ["'a' - 1"], ['1 / 0'], ['1 div 0'], ['1.5 div 1'], ['5 mod 0'], ['x * 2'], ['-x']
    ])('%s fails: the statement does not match', (expr) => {
      expect(failureOf(expr, { x: 'text' })).toMatchObject({ phase: 'select_and_transform_error' })
    })
  })

  describe('comparison', () => {
    it.each([
      ['1 = 1', true], ['1 = 1.0', true], ['1 = 2', false], ["'a' = 'a'", true], ["'a' = 'b'", false],
      ['1 != 2', true], ['1 <> 1', false], ['1 < 2', true], ['2 <= 2', true], ['3 > 2', true], ['2 >= 3', false],
      ["'abc' < 'abd'", true], ["'b' > 'abc'", true],
      ["1 = '1'", true], ["'2.5' = 2.5", true], ["10 > '9'", true], ['true = \'true\'', true],
      ['1 < true', true], ["true < 'a'", false], ['true < [1]', true], ['[1] < \'a\'', true], ['[1, 2] = [1, 2]', true], ['[1, 2] < [1, 3]', true]
    ])('%s is %j', (expr, expected) => {
      expect(value(expr)).toBe(expected)
    })

    it('compares maps deeply', () => {
      expect(value('payload.a = payload.b', { payload: '{"a": {"x": [1, {"y": 2}]}, "b": {"x": [1, {"y": 2}]}}' })).toBe(true)
      expect(value('payload.a = payload.b', { payload: '{"a": {"x": 1}, "b": {"x": 1, "y": 2}}' })).toBe(false)
    })

    it('is false against an undefined value, except != and <>', () => {
      for (const op of ['=', '<', '<=', '>', '>=']) expect(value(`1 ${op} nothing`)).toBe(false)
      expect(value('1 != nothing')).toBe(true)
      expect(value('nothing <> 1')).toBe(true)
      expect(value('nothing = undefined_too')).toBe(true)
    })

    it('fails comparing a number with a string that is not a number', () => {
      const r = compileSql('SELECT * FROM "t/#" WHERE qos > \'high\'').evaluate({ qos: 1 })
      expect(r).toEqual({ matched: false, failure: { phase: 'match_conditions_error', reason: 'badarg', message: expect.stringContaining('"high"') } })
    })

    it.each([
      ['t/a', 't/#', true], ['t', 't/#', true], ['t/a/b', 't/+', false], ['t/a/b', 't/+/b', true],
      ['t/a', '+/+', true], ['$SYS/x', '#', false], ['$SYS/x', '$SYS/#', true], ['a/b', 'a/b', true], ['a/', 'a/+', true]
    ])('%s =~ %s is %j', (topic, filter, expected) => {
      expect(value(`topic =~ '${filter}'`, { topic })).toBe(expected)
      expect(value('topic =~ f', { topic, f: filter })).toBe(expected)
    })

    it('=~ with an undefined topic is false', () => {
      expect(value("nothing =~ 't/#'")).toBe(false)
    })
  })

  describe('logic', () => {
    it.each([
      ['true and true', true], ['true and false', false], ['false or true', true], ['false or false', false],
      ['not true', false], ['not false', true], ['not 1', false], ['not (1 = 2)', true],
      ['1 = 1 and 2 = 2 or 1 = 2', true], ['1 = 2 and 2 = 2 or 1 = 2', false], ['not 1 = 2 and 2 = 2', true]
    ])('%s is %j', (expr, expected) => {
      expect(value(expr)).toBe(expected)
    })

    it('IN and NOT IN test membership by value', () => {
      expect(value('qos in (0, 1)', { qos: 1 })).toBe(true)
      expect(value('qos in (0, 2)', { qos: 1 })).toBe(false)
      expect(value('qos not in (0, 2)', { qos: 1 })).toBe(true)
      expect(value("clientid in ('a', 'b')", { clientid: 'b' })).toBe(true)
      expect(value("qos in ('1')", { qos: 1 })).toBe(false)
      expect(value('payload.l in ([1, 2], [3])', { payload: '{"l": [1, 2]}' })).toBe(true)
    })
  })

  describe('CASE', () => {
    const searched = 'case when payload.x < 0 then \'neg\' when payload.x = 0 then \'zero\' else \'pos\' end'
    it.each([[-3, 'neg'], [0, 'zero'], [9, 'pos']])('searched CASE with x = %j gives %j', (x, expected) => {
      expect(value(searched, { payload: JSON.stringify({ x }) })).toBe(expected)
    })

    const simple = "case payload.s when 'a' then 1 when 'b' then 2 else 0 end"
    it.each([['a', 1], ['b', 2], ['z', 0]])('simple CASE with s = %j gives %j', (s, expected) => {
      expect(value(simple, { payload: JSON.stringify({ s }) })).toBe(expected)
    })

    it('simple CASE matches exactly (no string-to-number conversion)', () => {
      expect(value("case qos when '1' then 'text' when 1 then 'number' end", { qos: 1 })).toBe('number')
    })

    it('gives undefined (the key is left out) when no branch is taken and there is no ELSE', () => {
      expect(compileSql('SELECT case when qos > 5 then 1 end AS v, qos FROM "t/#"').run({ qos: 1 })).toEqual([{ qos: 1 }])
    })

    it('evaluates only the branch taken', () => {
      expect(value("case when qos = 1 then 'ok' else 1 div 0 end", { qos: 1 })).toBe('ok')
    })
  })

  describe('literals', () => {
    it('folds constant arithmetic and comparisons', () => {
      expect(value('2 * (3 + 4) - -1')).toBe(15)
      expect(value("'a' = 'a' and not (1 > 2)")).toBe(true)
    })

    it('builds lists and ranges fresh for every run', () => {
      const sql = compileSql('SELECT [1, qos, \'x\'] AS l, [2..5] AS r, [3..2] AS e FROM "t/#"')
      const a = sql.run({ qos: 7 })
      const b = sql.run({ qos: 8 })
      expect(a).toEqual([{ l: [1, 7, 'x'], r: [2, 3, 4, 5], e: [] }])
      expect(b?.[0].r).not.toBe(a?.[0].r)
    })
  })
})
