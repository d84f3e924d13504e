/**
 * Every `sql_cases` entry of the shared cases file (EMQ X 4.4's own tests), run through the
 * SQL tester as EMQ X's sqltester ran them (`_meta.how_tests_run`).
 */
import { testSql, type SqlTestResult } from '../../../rules/sql/index.js'
import { loadRuleCases, matchExpectation, type SqlCase } from '../conformance.js'

const cases = loadRuleCases().sql_cases

/** What each `unsure` case settles on, and why (every one of them runs). */
const UNSURE: Record<string, string> = {
  't_sqlselect_01#1': 'republish test in EMQ X; the output is inferred from the SELECT list',
  't_sqlselect_03#1': 'not run by EMQ X CI; "11" in double quotes is a name (no such column), the first disjunct matches',
  't_sqlparse_case_when_3#1': 'CASE without ELSE and no branch taken: y is left out (undefined is not put)',
  't_sqlparse_case_when_3#2': 'CASE without ELSE and no branch taken: y is left out',
  't_sqlparse_case_when_3#5': 'CASE without ELSE and no branch taken: y is left out',
  't_sqlparse_array_index_1#2': 'p[1] on a map is undefined, so a is left out',
  'derived_logic#1': 'NOT binds looser than =, tighter than AND'
}

function run (c: SqlCase): SqlTestResult {
  return testSql({ rawsql: c.sql, ctx: c.ctx }, { node: 'test@127.0.0.1' })
}

describe('rule SQL conformance cases (EMQ X 4.4 sqltester)', () => {
  it('has the cases file', () => {
    expect(cases.length).toBeGreaterThan(0)
  })

  for (const c of cases) {
    const title = c.unsure === true
      ? `${c.id}: ${c.sql.trim()} [unsure: ${UNSURE[c.id] ?? c.note ?? 'see note'}]`
      : `${c.id}: ${c.sql.trim()}`
    it(title, () => {
      const r = run(c)
      switch (c.expect.result) {
        case 'ok': {
          if (!r.ok) throw new Error(`expected output, got ${JSON.stringify(r)}`)
          expect(matchExpectation(r.output, c.expect)).toEqual([])
          break
        }
        case 'nomatch':
          expect(r).toMatchObject({ ok: false, reason: 'nomatch' })
          break
        case 'error':
          expect(r).toMatchObject({ ok: false, reason: 'error', phase: c.expect.phase, error: c.expect.error })
          break
      }
    })
  }

  // The unsure cases only assert `{ok, #{}}` in EMQ X; these pin what we chose.
  it('leaves out a CASE without ELSE when no branch is taken (t_sqlparse_case_when_3)', () => {
    const r = testSql({ rawsql: 'select case when payload.x < 0 then 0 when payload.x > 7 then 7 end as y from "t/#"', ctx: { payload: '{"x": 5}', topic: 't/a' } })
    expect(r).toEqual({ ok: true, output: {} })
  })

  it('leaves out an index into a map (t_sqlparse_array_index_1#2)', () => {
    const r = testSql({ rawsql: 'select json_decode(payload) as p, p[1] as a from "t/#"', ctx: { payload: '{"x": 1}', topic: 't/a' } })
    expect(r).toEqual({ ok: true, output: { p: { x: 1 } } })
  })
})
