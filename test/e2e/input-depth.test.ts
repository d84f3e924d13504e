/**
 * Deeply nested input against a running node (issue 19 item 5): rule SQL, JSON bodies and
 * JSON arguments, schema texts and acl.conf nested past their limits are refused with HTTP
 * 400 and code 102 (starling-ctl: exit 1 and the message) naming the limit, and change
 * nothing; a payload nested 100,000 levels deep fails the rules that read it, counted per
 * rule, and the node and the rules go on. Before, each was a stack overflow: HTTP 500.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestNode, closeClients, connect, collect, waitFor, payloads, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { pubackCode } from '../helpers/mqtt.js'
import { apiOf } from './api-actions-client.js'

let node: TestNode
let dir: string
let aclFile: string
const api = apiOf(() => node)

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'starling-depth-'))
  aclFile = join(dir, 'acl.conf')
  writeFileSync(aclFile, '{allow, all}.\n')
  node = await startTestNode({ 'broker.sys_interval': '0', acl_file: aclFile })
})
afterAll(async () => {
  await closeClients()
  await node.destroy()
  rmSync(dir, { recursive: true, force: true })
})

const ctl = async (...argv: string[]): Promise<{ code: number, out: string, err: string }> =>
  await runCtlOn(node, argv, { cwd: dir, env: { STARLING_NODE__NAME: node.name } })

/** What the rule engine and the schema registry hold, to check that a refused input changed nothing. */
async function state (): Promise<unknown> {
  const [rules, resources, schemas] = await Promise.all(['/rules', '/resources', '/schemas'].map(async p => (await api('GET', p)).body.data))
  return { rules, resources, schemas }
}

const parens = (n: number): string => `SELECT ${'('.repeat(n)}1${')'.repeat(n)} AS x FROM "t/#"`
const calls = (n: number): string => `SELECT ${'abs('.repeat(n)}1${')'.repeat(n)} AS x FROM "t/#"`
const orChain = (n: number): string => `SELECT 1 AS x FROM "t/#" WHERE ${Array.from({ length: n }, (_, i) => `qos = ${i}`).join(' OR ')}`
/** `{"a":{"a": ... 1}}` nested `n` levels, as JSON text. */
const deepJson = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n)
const NESTED_SQL = /^invalid SQL: expression nested more than 100 levels deep \(parentheses, function calls, CASE, lists, indexes, NOT and unary minus inside one another\) at 1:\d+$/
const DEEP_SQL = /^invalid SQL: expression more than 1000 levels deep .* at 1:\d+$/
const DEEP_BODY = 'request body nests objects and arrays more than 100 levels deep; the limit is 100'

describe('rule SQL nested too deeply', () => {
  it.each([
    ['1,000 parentheses', parens(1000), NESTED_SQL],
    ['1,000 function calls', calls(1000), NESTED_SQL],
    ['a chain of 20,000 ORs', orChain(20_000), DEEP_SQL]
  ])('POST /rules, /rules?test=true and PUT /rules/:id refuse %s with 400 and code 102, and change nothing', async (_what, sql, message) => {
    const { id } = (await api('POST', '/rules', { rawsql: 'SELECT * FROM "t/#"', actions: [] })).body.data
    const before = await state()
    for (const [method, path, body] of [
      ['POST', '/rules', { rawsql: sql, actions: [] }],
      ['POST', '/rules?test=true', { rawsql: sql, ctx: { topic: 't/1', payload: '{}' } }],
      ['PUT', `/rules/${id}`, { rawsql: sql }]
    ] as const) {
      const res = await api(method, path, body)
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 400, code: 102 })
      expect(res.body.message).toMatch(message)
    }
    expect(await state()).toEqual(before)
    await api('DELETE', `/rules/${id}`)
  })

  it('accepts statements at the limits, and runs them on messages', async () => {
    const sub = await connect(node)
    const got = collect(sub)
    await sub.subscribeAsync('limits/out/#')
    const created = []
    for (const [sql, out] of [[calls(100).replace('"t/#"', '"limits/in"'), 'limits/out/calls'], [orChain(999).replace('"t/#"', '"limits/in"'), 'limits/out/chain']]) {
      const res = await api('POST', '/rules', { rawsql: sql, actions: [{ name: 'republish', params: { target_topic: out, payload_tmpl: '${x}' } }] })
      expect(res.status).toBe(200)
      created.push(res.body.data.id)
    }
    expect((await api('POST', '/rules?test=true', { rawsql: calls(100), ctx: { topic: 't/1' } })).body).toEqual({ code: 0, data: { x: 1 } })
    const pub = await connect(node)
    await pub.publishAsync('limits/in', '{}', { qos: 1 })
    await waitFor(() => got.length === 2, 'both rules to republish')
    expect(payloads(got, 'limits/out/calls')).toEqual(['1'])
    expect(payloads(got, 'limits/out/chain')).toEqual(['1'])
    for (const id of created) await api('DELETE', `/rules/${id}`)
  })

  it('starling-ctl rules create and update exit 1 with the message, and change nothing', async () => {
    const { id } = (await api('POST', '/rules', { rawsql: 'SELECT * FROM "t/#"', actions: [] })).body.data
    const before = await state()
    for (const argv of [['rules', 'create', parens(1000), '[]'], ['rules', 'update', id, '-s', parens(1000)]]) {
      const run = await ctl(...argv)
      expect({ code: run.code, out: run.out }).toEqual({ code: 1, out: '' })
      expect(run.err).toMatch(/invalid SQL: expression nested more than 100 levels deep \(parentheses, function calls, CASE, lists, indexes, NOT and unary minus inside one another\) at 1:\d+/)
    }
    expect((await ctl('rules', 'create', orChain(5000), '[]')).err).toMatch(/invalid SQL: expression more than 1000 levels deep/)
    expect(await state()).toEqual(before)
    await api('DELETE', `/rules/${id}`)
  })
})

describe('JSON nested too deeply', () => {
  it.each([
    ['POST', '/rules', `{"rawsql":"SELECT * FROM \\"t/#\\"","actions":[{"name":"inspect","params":{"x":${deepJson(20_000)}}}]}`],
    ['POST', '/resources', `{"type":"web_hook","config":{"url":"http://127.0.0.1:1/x","headers":${deepJson(20_000)}}}`],
    ['POST', '/rules?test=true', `{"rawsql":"SELECT * FROM \\"t/#\\"","ctx":${deepJson(100_000)}}`],
    ['POST', '/mqtt/publish', '['.repeat(100_000) + ']'.repeat(100_000)],
    ['PUT', '/configs/svc_rule_engine', deepJson(100_000)],
    ['POST', '/schemas', `{"name":"s","parser_type":"avro","schema":"\\"int\\"","parser_opts":${deepJson(101)}}`]
  ])('%s %s with a body nested too deeply: 400, code 102, nothing created', async (method, path, body) => {
    const before = await state()
    const res = await api(method, path, body, { raw: true })
    expect(res).toEqual({ status: 400, body: { code: 102, message: DEEP_BODY } })
    expect(await state()).toEqual(before)
  })

  it('accepts a body nested 100 levels deep', async () => {
    // the body, actions, the action and params are four levels
    const res = await api('POST', '/rules', `{"rawsql":"SELECT * FROM \\"t/#\\"","actions":[{"name":"inspect","params":{"x":${deepJson(96)}}}]}`, { raw: true })
    expect(res.status).toBe(200)
    await api('DELETE', `/rules/${res.body.data.id}`)
    const deeper = await api('POST', '/rules', `{"rawsql":"SELECT * FROM \\"t/#\\"","actions":[{"name":"inspect","params":{"x":${deepJson(97)}}}]}`, { raw: true })
    expect(deeper).toEqual({ status: 400, body: { code: 102, message: DEEP_BODY } })
  })

  it('starling-ctl refuses JSON arguments nested too deeply: exit 1 with the message, nothing created', async () => {
    const before = await state()
    expect(await ctl('rules', 'create', 'SELECT * FROM "t/#"', `[{"name":"inspect","params":${deepJson(20_000)}}]`))
      .toEqual({ code: 1, out: '', err: expect.stringContaining('actions nests objects and arrays more than 100 levels deep; the limit is 100') })
    expect(await ctl('resources', 'create', 'web_hook', '-c', deepJson(20_000)))
      .toEqual({ code: 1, out: '', err: expect.stringContaining('-c nests objects and arrays more than 100 levels deep; the limit is 100') })
    expect(await state()).toEqual(before)
  })

  it('the SQL tester refuses to answer an output nested too deeply (a deep payload decoded)', async () => {
    const res = await api('POST', '/rules?test=true', { rawsql: 'SELECT json_decode(payload) AS p FROM "t/#"', ctx: { topic: 't/1', payload: '['.repeat(100_000) + ']'.repeat(100_000) } })
    expect(res).toEqual({ status: 400, body: { code: 102, message: 'the selected output nests objects and arrays more than 100 levels deep; the limit is 100' } })
  })
})

describe('schema texts nested too deeply', () => {
  it.each([
    ['an avro schema', { name: 'deep_avro', parser_type: 'avro', schema: '{"type":"array","items":'.repeat(20_000) + '"int"' + '}'.repeat(20_000) }, /^avro schema nests JSON objects and arrays more than 500 levels deep/],
    ['a .proto file', { name: 'deep_pb', parser_type: 'protobuf', schema: 'syntax = "proto3";\n' + 'message M { '.repeat(20_000) + 'int32 x = 1;' + ' }'.repeat(20_000) }, /^invalid protobuf schema: definitions nested too deeply for protobufjs/]
  ])('POST /schemas and starling-ctl schemas create refuse %s: 400, code 102, nothing created', async (_what, body, message) => {
    const before = await state()
    const res = await api('POST', '/schemas', body)
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 400, code: 102 })
    expect(res.body.message).toMatch(message)
    const run = await ctl('schemas', 'create', body.name, body.parser_type, '--schema', body.schema)
    expect({ code: run.code, out: run.out }).toEqual({ code: 1, out: '' })
    expect(run.err).toMatch(message)
    expect(await state()).toEqual(before)
  })
})

describe('a payload nested 100,000 levels deep at run time', () => {
  it('fails the rules that read it, counted per rule; the node and the rules go on', async () => {
    const sql = (where: string): string => `SELECT json_decode(payload) AS p FROM "deep/in"${where}`
    const compare = (await api('POST', '/rules', { rawsql: sql(' WHERE p = json_decode(payload)'), actions: [{ name: 'republish', params: { target_topic: 'deep/out/compare', payload_tmpl: '${p}' } }] })).body.data.id
    const render = (await api('POST', '/rules', { rawsql: sql(''), actions: [{ name: 'republish', params: { target_topic: 'deep/out/render', payload_tmpl: '${p}' } }] })).body.data.id
    const sub = await connect(node)
    const got = collect(sub)
    await sub.subscribeAsync('deep/out/#')
    const pub = await connect(node)
    await pub.publishAsync('deep/in', '['.repeat(100_000) + ']'.repeat(100_000), { qos: 1 })
    const metrics = async (id: string): Promise<{ rule: any, action: any }> => {
      const rule = (await api('GET', `/rules/${id}`)).body.data
      return { rule: rule.metrics[0], action: rule.actions[0].metrics[0] }
    }
    const deadline = Date.now() + 10_000
    while ((await metrics(compare)).rule.failed === 0 || (await metrics(render)).action.failed === 0) {
      if (Date.now() > deadline) throw new Error('timed out waiting for the failures to be counted')
    }
    // the comparison failed in the SQL (the rule's counter), the template in the action (the action's)
    expect(await metrics(compare)).toMatchObject({ rule: { matched: 0, failed: 1 }, action: { taken: 0 } })
    expect(await metrics(render)).toMatchObject({ rule: { matched: 1, failed: 0 }, action: { taken: 1, success: 0, failed: 1 } })
    await pub.publishAsync('deep/in', '[[1]]', { qos: 1 })
    await waitFor(() => got.length === 2, 'both rules to republish the next message')
    expect(payloads(got, 'deep/out/compare')).toEqual(['[[1]]'])
    expect(payloads(got, 'deep/out/render')).toEqual(['[[1]]'])
    for (const id of [compare, render]) await api('DELETE', `/rules/${id}`)
  })
})

describe('acl.conf nested too deeply', () => {
  it('starling-ctl acl reload exits 1 naming the file, the line and the limit; the rules in force stay', async () => {
    writeFileSync(aclFile, '{deny, all, publish, ["acl/denied"]}.\n' + '{allow, {'.repeat(50_000) + '}'.repeat(50_000) + '}.\n')
    const run = await ctl('acl', 'reload')
    expect({ code: run.code, out: run.out }).toEqual({ code: 1, out: '' })
    expect(run.err).toContain('acl.conf:2: tuples and lists nested more than 100 levels deep; the limit is 100')
    const pub = await connect(node, { protocolVersion: 5 })
    expect(await pubackCode(pub, 'acl/denied')).toBe(0)
  })
})
