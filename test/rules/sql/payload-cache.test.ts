/**
 * A payload decoded once per event and shared by every statement run on it: the outcome of
 * each statement is what it would be alone, also for a payload that is not JSON, which is
 * decided once per event (no exception per statement).
 */
import { jest } from '@jest/globals'
import { compileSql, PayloadCache } from '../../../rules/sql/index.js'

const MSG = { clientid: 'c1', topic: 't/1', qos: 1, payload: '{"temp":35,"list":[{"v":1},{"v":2}]}' }
const NOT_JSON = { ...MSG, payload: 'temp=31' }

const notJson = (phase: string): unknown => ({
  matched: false,
  failure: { phase, reason: 'decode_json_failed', message: 'the payload is not JSON: "temp=31"' }
})

describe('a payload shared by the statements of one event', () => {
  it('is parsed once for every statement given the same cache', () => {
    const rules = [30, 40, 50].map(n => compileSql(`SELECT payload.temp AS t FROM "t/#" WHERE payload.temp > ${n}`))
    const spy = jest.spyOn(JSON, 'parse')
    try {
      const payloads = new PayloadCache()
      expect(rules.map(r => r.evaluate({ ...MSG }, payloads).matched)).toEqual([true, false, false])
      expect(spy).toHaveBeenCalledTimes(1)
    } finally {
      spy.mockRestore()
    }
  })

  it('gives each statement its own output', () => {
    const payloads = new PayloadCache()
    const a = compileSql('SELECT payload.temp AS t FROM "t/#"').run(MSG, payloads)
    const b = compileSql('SELECT payload.list[1].v AS v FROM "t/#"').run(MSG, payloads)
    expect([a, b]).toEqual([[{ t: 35 }], [{ v: 1 }]])
  })

  it('is decoded again when the statements meet another payload', () => {
    const payloads = new PayloadCache()
    const rule = compileSql('SELECT payload.temp AS t FROM "t/#"')
    expect(rule.run(MSG, payloads)).toEqual([{ t: 35 }])
    expect(rule.run({ ...MSG, payload: Buffer.from('{"temp":7}') }, payloads)).toEqual([{ t: 7 }])
    expect(rule.run({ ...MSG, payload: '{"temp":8}' }, payloads)).toEqual([{ t: 8 }])
  })
})

describe('a payload that is not JSON', () => {
  it.each([
    ['SELECT qos FROM "t/#" WHERE payload.temp > 1', 'match_conditions_error'],
    ['SELECT qos FROM "t/#" WHERE lower(payload.s) = \'x\' and qos = 1', 'match_conditions_error'],
    ['SELECT payload.temp AS t FROM "t/#"', 'select_and_transform_error'],
    ['SELECT payload.temp AS t FROM "t/#" WHERE t > 1', 'select_and_transform_error'],
    ['FOREACH payload FROM "t/#"', 'select_and_collect_error'],
    ['FOREACH payload.list AS e FROM "t/#"', 'select_and_collect_error'],
    // read after something else: the compiled closures get there and fail the same way
    ['SELECT qos FROM "t/#" WHERE qos = 1 and payload.temp > 1', 'match_conditions_error'],
    ['SELECT qos, payload.temp AS t FROM "t/#"', 'select_and_transform_error']
  ])('fails %s in %s, as it would alone', (sql, phase) => {
    const payloads = new PayloadCache()
    expect(compileSql(sql).evaluate(NOT_JSON, payloads)).toEqual(notJson(phase))
    expect(compileSql(sql).evaluate({ ...NOT_JSON })).toEqual(notJson(phase))
  })

  it('does not fail a statement that never reads it as JSON', () => {
    const payloads = new PayloadCache()
    // `and` stops at a false left side; the payload is not decoded
    expect(compileSql('SELECT qos FROM "t/#" WHERE qos = 2 and payload.temp > 1').evaluate(NOT_JSON, payloads))
      .toEqual({ matched: false, failure: null })
    expect(compileSql('SELECT payload FROM "t/#" WHERE qos = 1').run(NOT_JSON, payloads)).toEqual([{ payload: 'temp=31' }])
  })

  it('is decided once for every statement given the same cache, without an exception', () => {
    const rules = Array.from({ length: 10 }, (_, n) => compileSql(`SELECT qos FROM "t/#" WHERE payload.temp > ${n}`))
    const parse = jest.spyOn(JSON, 'parse')
    try {
      const payloads = new PayloadCache()
      const cut = { ...MSG, payload: '{"temp":3' }
      for (const rule of rules) expect(rule.evaluate(cut, payloads)).toMatchObject({ failure: { reason: 'decode_json_failed' } })
      expect(parse).toHaveBeenCalledTimes(1)
      parse.mockClear()
      // text that cannot start JSON (plain text, the empty payload of a republish template
      // that gave nothing) is not even handed to JSON.parse
      const text = new PayloadCache()
      for (const rule of rules) expect(rule.evaluate(NOT_JSON, text)).toEqual(notJson('match_conditions_error'))
      for (const rule of rules) expect(rule.evaluate({ ...MSG, payload: '' }, text)).toMatchObject({ failure: { reason: 'decode_json_failed' } })
      expect(parse).not.toHaveBeenCalled()
    } finally {
      parse.mockRestore()
    }
  })

  it('is told from JSON whatever it starts with', () => {
    const rule = compileSql('SELECT payload.a AS a FROM "t/#"')
    for (const text of ['true', ' 1', '"s"', 'null', '[1]', '\n{"a":1}', '-2']) {
      expect([text, rule.evaluate({ ...MSG, payload: text }).matched]).toEqual([text, true])
    }
    for (const text of ['', ' ', 'tru', 'temp=1', 'nul', '{', 'x']) {
      expect([text, rule.evaluate({ ...MSG, payload: text })]).toEqual([text, expect.objectContaining({ failure: expect.objectContaining({ reason: 'decode_json_failed' }) })])
    }
  })
})
