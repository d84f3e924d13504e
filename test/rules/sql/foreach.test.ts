import { compileSql, SqlError } from '../../../rules/sql/index.js'

function run (sql: string, cols: Record<string, unknown>): Array<Record<string, unknown>> | null {
  return compileSql(sql).run(cols)
}

const SENSORS = { clientid: 'c1', topic: 't/1', payload: '{"site": "north", "sensors": [{"id": 1, "v": 5}, {"id": 2, "v": 50}, {"id": 3}]}' }

describe('rule SQL FOREACH', () => {
  it('gives one output per element: the columns plus the element as item', () => {
    const out = run('FOREACH payload.sensors FROM "t/#"', SENSORS)
    expect(out).toHaveLength(3)
    expect(out?.[0]).toMatchObject({ clientid: 'c1', topic: 't/1', item: { id: 1, v: 5 } })
    expect(out?.[2].item).toEqual({ id: 3 })
  })

  it('names the element by its alias', () => {
    expect(run('FOREACH payload.sensors AS s DO s.id AS id FROM "t/#"', SENSORS)).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }])
  })

  it('DO selects per element and can read columns, helpers and the element', () => {
    const sql = 'FOREACH payload.site AS site, payload.sensors AS s DO site, s.id AS id, clientid, s.v AS v FROM "t/#"'
    expect(run(sql, SENSORS)).toEqual([
      { site: 'north', id: 1, clientid: 'c1', v: 5 },
      { site: 'north', id: 2, clientid: 'c1', v: 50 },
      { site: 'north', id: 3, clientid: 'c1' }
    ])
  })

  it('DO * gives every column with the element', () => {
    const out = run('FOREACH payload.sensors AS s DO *, s.id AS id FROM "t/#"', SENSORS)
    expect(out?.[1]).toMatchObject({ clientid: 'c1', s: { id: 2, v: 50 }, id: 2 })
  })

  it('INCASE keeps the elements for which it is true', () => {
    expect(run('FOREACH payload.sensors AS s DO s.id AS id INCASE s.v > 10 FROM "t/#"', SENSORS)).toEqual([{ id: 2 }])
    expect(run('FOREACH payload.sensors AS s DO s.id AS id INCASE is_null(s.v) FROM "t/#"', SENSORS)).toEqual([{ id: 3 }])
  })

  it('WHERE decides for the whole message and reads the helpers', () => {
    const sql = 'FOREACH payload.site AS site, payload.sensors AS s DO s.id AS id FROM "t/#" WHERE site = \'north\''
    expect(run(sql, SENSORS)).toHaveLength(3)
    expect(run(sql.replace("'north'", "'south'"), SENSORS)).toBeNull()
  })

  it('gives no outputs for an empty array or a value that is not an array', () => {
    expect(run('FOREACH payload.sensors FROM "t/#"', { payload: '{"sensors": []}' })).toEqual([])
    expect(run('FOREACH payload.sensors FROM "t/#"', { payload: '{"sensors": {"id": 1}}' })).toEqual([])
    expect(run('FOREACH payload.nothing FROM "t/#"', { payload: '{}' })).toEqual([])
  })

  it('FOREACH payload decodes a JSON array payload', () => {
    expect(run('FOREACH payload AS x DO x * 10 AS y FROM "t/#"', { payload: '[1, 2]' })).toEqual([{ y: 10 }, { y: 20 }])
  })

  it('iterates ranges and lists built in SQL', () => {
    expect(run('FOREACH [1..3] AS n DO n * n AS sq FROM "t/#"', {})).toEqual([{ sq: 1 }, { sq: 4 }, { sq: 9 }])
  })

  it('reports the phase that failed', () => {
    const bad = { payload: 'not json' }
    expect(compileSql('FOREACH payload.sensors FROM "t/#"').evaluate(bad))
      .toMatchObject({ matched: false, failure: { phase: 'select_and_collect_error', reason: 'decode_json_failed' } })
    const cols = { payload: '{"l": [1, "x"]}' }
    expect(compileSql('FOREACH payload.l AS e INCASE e > 0 FROM "t/#"').evaluate(cols))
      .toMatchObject({ matched: false, failure: { phase: 'match_incase_error' } })
    expect(compileSql('FOREACH payload.l AS e DO e * 2 AS d FROM "t/#"').evaluate(cols))
      .toMatchObject({ matched: false, failure: { phase: 'doeach_error' } })
  })

  it('refuses a nested alias for the collection', () => {
    expect(() => compileSql('FOREACH payload.l AS a.b FROM "t/#"')).toThrow(SqlError)
    expect(() => compileSql('FOREACH payload.l AS a.b FROM "t/#"')).toThrow("the FOREACH collection's alias must be a plain name at 1:9")
  })

  it('runs again with fresh outputs (no state kept between runs)', () => {
    const sql = compileSql('FOREACH payload.l AS e DO e AS v FROM "t/#"')
    expect(sql.run({ payload: '{"l": [1]}' })).toEqual([{ v: 1 }])
    expect(sql.run({ payload: '{"l": [2, 3]}' })).toEqual([{ v: 2 }, { v: 3 }])
  })
})
