/** node/template: `${key}` SQL templates bound as parameters, and argv templates, as the rule actions use them. */
import { compileArgv, compileSql, DOLLAR_BRACES, fillString, renderArgv, renderSql, type SqlDialect } from '../../../node/template/index.js'

const fail = (what: string): never => { throw new Error(what) }
const compile = (source: string, dialect: SqlDialect = 'postgresql') => compileSql(source, { dialect, syntax: DOLLAR_BRACES, inLiteral: 'refuse', fail })
const data: Record<string, unknown> = { clientid: "c'1", qos: 1, payload: '{"temp":21.5,"tags":["a"]}', flags: { retain: false } }
const value = (key: string): unknown => {
  const path = key.split('.')
  let v: unknown = data
  for (const p of path) v = typeof v === 'string' ? (JSON.parse(v) as Record<string, unknown>)[p] : (v as Record<string, unknown> | undefined)?.[p]
  return v
}

test('bare and quoted placeholders become parameters in order; nested paths resolve; values keep their types', () => {
  const t = compile("insert into t(c, q, temp, r, missing) values (${clientid}, ${qos}, '${payload.temp}', ${flags.retain}, ${nope})")
  expect(t.text).toBe('insert into t(c, q, temp, r, missing) values ($1, $2, $3, $4, $5)')
  expect(t.params).toEqual(['clientid', 'qos', 'payload.temp', 'flags.retain', 'nope'])
  expect(renderSql(t, value)).toEqual({ text: t.text, values: ["c'1", 1, 21.5, false, null] })
  const m = compile('insert into t values (${clientid}, "${qos}")', 'mysql')
  expect(m.text).toBe('insert into t values (?, ?)')
})

test('a value never enters the text, whatever it holds', () => {
  const t = compile('select ${clientid}')
  expect(renderSql(t, () => "'; drop table t; --").text).toBe('select $1')
})

test('a placeholder that cannot be bound is refused, and so are markers of its own and open literals', () => {
  expect(() => compile("insert into t values ('id-${clientid}')")).toThrow(/placeholder in a string literal at offset 22 cannot be bound/)
  expect(() => compile('insert into "${clientid}" values (1)')).toThrow(/quoted identifier/)
  expect(() => compile('insert into t values ($1)')).toThrow(/\$1 marker of its own/)
  expect(() => compile('insert into t values (?)', 'mysql')).toThrow(/\? marker of its own/)
  expect(() => compile("insert into t values ('x)")).toThrow(/not closed/)
  expect(() => compile('  ')).toThrow(/empty/)
  // a placeholder in a comment stays a comment
  expect(compile('insert into t values (${qos}) -- ${clientid}').params).toEqual(['qos'])
})

test('an argv template is split before filling: a value with spaces stays one argument', () => {
  const t = compileArgv('HSET  msgs:${clientid} ${payload}', (word) => word)!
  expect(renderArgv(t, (w) => fillString(w, { clientid: 'a b', payload: 'x y z' }))).toEqual(['HSET', 'msgs:a b', 'x y z'])
  expect(compileArgv('   ', (w) => w)).toBeUndefined()
})
