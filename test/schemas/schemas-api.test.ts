/**
 * `/api/v3/schemas` over real HTTP and `starling-ctl schemas` against a node: the spec's
 * Schema fields and shapes, every invalid name and missing field, duplicates, schema text
 * that does not compile, a 3rd-party service that cannot be reached, and deleting a schema
 * a rule uses; each refusal has a clear message and changes nothing.
 */
import { startTestNode, type TestNode, freePort } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { apiOf, expectError } from '../e2e/api-actions-client.js'
import { startCodecServer, type CodecServer } from '../../rules/schemas/codec-server.js'
import { ALERT_AVSC, SENSOR_AVSC, SENSOR_PROTO } from './fixtures.js'

let node: TestNode
// creating a 3rd-party schema only connects to the service: one in this process will do
let codec: CodecServer
const api = apiOf(() => node)

beforeAll(async () => {
  node = await startTestNode({ 'broker.sys_interval': '0' })
  codec = await startCodecServer({ http: {}, tcp: {} })
})
afterEach(async () => {
  for (const rule of (await api('GET', '/rules')).body.data) await api('DELETE', `/rules/${rule.id}`)
  for (const res of (await api('GET', '/resources')).body.data) await api('DELETE', `/resources/${res.id}`)
  for (const schema of (await api('GET', '/schemas')).body.data) await api('DELETE', `/schemas/${schema.name}`)
})
afterAll(async () => {
  await node.destroy()
  await codec.close()
})

const schemas = async (): Promise<unknown> => (await api('GET', '/schemas')).body.data

describe('creating, reading and deleting schemas', () => {
  it('creates an avro schema: parser_addr null, parser_opts {} and description "" in the answer', async () => {
    const res = await api('POST', '/schemas', { name: 'sensor', parser_type: 'avro', schema: SENSOR_AVSC })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      code: 0,
      data: { name: 'sensor', parser_type: 'avro', schema: SENSOR_AVSC, parser_addr: null, parser_opts: {}, description: '' }
    })
  })

  it('creates a protobuf schema, ignoring parser_addr and parser_opts given for a built-in type', async () => {
    const res = await api('POST', '/schemas', {
      name: 'pb', parser_type: 'protobuf', schema: SENSOR_PROTO, description: 'both messages', parser_addr: { url: 'http://x' }, parser_opts: { '3rd_party_opts': 'x' }
    })
    expect(res.body.data).toEqual({ name: 'pb', parser_type: 'protobuf', schema: SENSOR_PROTO, parser_addr: null, parser_opts: {}, description: 'both messages' })
  })

  it('creates 3rd-party schemas over HTTP, TCP and a resource, answering parser_addr and parser_opts as given', async () => {
    const http = await api('POST', '/schemas', { name: 'xor_http', parser_type: '3rd-party', parser_addr: { url: codec.httpUrl }, parser_opts: { '3rd_party_opts': 'xor:k' } })
    expect(http.body.data).toEqual({ name: 'xor_http', parser_type: '3rd-party', schema: '', parser_addr: { url: codec.httpUrl }, parser_opts: { '3rd_party_opts': 'xor:k' }, description: '' })
    const tcp = await api('POST', '/schemas', {
      name: 'xor_tcp', parser_type: '3rd-party', schema: 'kept by the service', parser_addr: { server: codec.tcpAddress }, parser_opts: { '3rd_party_opts': 'xor:k', connect_timeout: 2, parse_timeout: 3 }
    })
    expect(tcp.body.data).toMatchObject({ schema: 'kept by the service', parser_addr: { server: codec.tcpAddress }, parser_opts: { '3rd_party_opts': 'xor:k', connect_timeout: 2, parse_timeout: 3 } })
    const resource = (await api('POST', '/resources', { name: 'codec', type: 'web_hook', config: { url: codec.httpUrl } })).body.data
    const viaResource = await api('POST', '/schemas', { name: 'xor_res', parser_type: '3rd-party', parser_addr: { resource_id: resource.id }, parser_opts: { '3rd_party_opts': 'echo' } })
    expect(viaResource.body.data.parser_addr).toEqual({ resource_id: 'web_hook:codec' })
  })

  it('lists by name, shows one as an object, deletes, and answers 404 (code 102) for an unknown name', async () => {
    await api('POST', '/schemas', { name: 'b_alert', parser_type: 'avro', schema: ALERT_AVSC })
    await api('POST', '/schemas', { name: 'a_sensor', parser_type: 'avro', schema: SENSOR_AVSC, description: 'readings' })
    expect(((await schemas()) as any[]).map(s => s.name)).toEqual(['a_sensor', 'b_alert'])
    expect((await api('GET', '/schemas/a_sensor')).body).toEqual({
      code: 0, data: { name: 'a_sensor', parser_type: 'avro', schema: SENSOR_AVSC, parser_addr: null, parser_opts: {}, description: 'readings' }
    })
    expect(await api('DELETE', '/schemas/a_sensor')).toEqual({ status: 200, body: { code: 0 } })
    const gone = await api('GET', '/schemas/a_sensor')
    expectError(gone, 102, 404)
    expect(gone.body.message).toBe('schema a_sensor not found')
    expectError(await api('DELETE', '/schemas/a_sensor'), 102, 404)
  })
})

describe('refusals', () => {
  const avro = (name: unknown): Record<string, unknown> => ({ name, parser_type: 'avro', schema: SENSOR_AVSC })

  it.each([
    ['empty', ''], ['a leading digit', '1sensor'], ['a dash', 'my-sensor'], ['a space', 'my sensor'], ['a dot', 'a.b'],
    ['a slash', 'a/b'], ['a colon', 'a:b'], ['a non-ASCII letter', 'capteur_é'], ['a trailing newline', 'sensor\n'], ['129 characters', 'a'.repeat(129)]
  ])('refuses a name with %s (108) and stores nothing', async (_what, name) => {
    const res = await api('POST', '/schemas', avro(name))
    expectError(res, 108, 400)
    expect(res.body.message).toContain('invalid schema name')
    expect(await schemas()).toEqual([])
  })

  it('refuses a name that is not a string (108)', async () => {
    expectError(await api('POST', '/schemas', avro(42)), 108, 400)
    expectError(await api('POST', '/schemas', avro(['a'])), 108, 400)
  })

  it.each([['_'], ['A'], ['_private'], ['Sensor_2'], ['a'.repeat(128)]])('accepts the name %s', async (name) => {
    expect((await api('POST', '/schemas', avro(name))).body.data.name).toBe(name)
  })

  it('refuses a duplicate name (102) and keeps the first schema', async () => {
    await api('POST', '/schemas', { ...avro('sensor'), description: 'first' })
    const again = await api('POST', '/schemas', { name: 'sensor', parser_type: 'protobuf', schema: SENSOR_PROTO })
    expectError(again, 102, 400)
    expect(again.body.message).toBe('schema sensor already exists; delete it first or choose another name')
    expect((await api('GET', '/schemas/sensor')).body.data).toMatchObject({ parser_type: 'avro', description: 'first' })
  })

  const third = (over: Record<string, unknown>): Record<string, unknown> =>
    ({ name: 'tp', parser_type: '3rd-party', parser_addr: { url: 'http://127.0.0.1:1/' }, parser_opts: { '3rd_party_opts': 'x' }, ...over })

  it.each([
    ['name', { parser_type: 'avro', schema: SENSOR_AVSC }, 'missing parameter name'],
    ['parser_type', { name: 's' }, 'missing parameter parser_type'],
    ['the avro schema', { name: 's', parser_type: 'avro' }, 'missing parameter schema (the Avro schema JSON; required for avro)'],
    ['the avro schema (null)', { name: 's', parser_type: 'avro', schema: null }, 'missing parameter schema'],
    ['the protobuf schema (blank)', { name: 's', parser_type: 'protobuf', schema: '  \n' }, 'missing parameter schema (the .proto text; required for protobuf)'],
    ['parser_addr', third({ parser_addr: undefined }), 'missing parameter parser_addr'],
    ['parser_addr (null)', third({ parser_addr: null }), 'missing parameter parser_addr'],
    ['parser_addr.url, server or resource_id', third({ parser_addr: {} }), 'missing parameter parser_addr.url, parser_addr.server or parser_addr.resource_id'],
    ['parser_opts', third({ parser_opts: undefined }), 'missing parameter parser_opts'],
    ['parser_opts.3rd_party_opts', third({ parser_opts: { connect_timeout: 1 } }), 'missing parameter parser_opts.3rd_party_opts']
  ])('refuses a schema without %s (107)', async (_what, body, message) => {
    const res = await api('POST', '/schemas', body)
    expectError(res, 107, 400)
    expect(res.body.message).toContain(message)
    expect(await schemas()).toEqual([])
  })

  it.each([
    ['an unknown parser_type', { name: 's', parser_type: 'json', schema: '{}' }, 'parser_type must be one of avro, protobuf, 3rd-party'],
    ['a parser_type that is not a string', { name: 's', parser_type: 1 }, 'parser_type must be string'],
    ['a schema that is not text', { name: 's', parser_type: 'avro', schema: { type: 'record' } }, 'schema must be string'],
    ['a description that is not text', { ...avro('s'), description: 5 }, 'description must be string,null'],
    ['a parser_addr that is not an object', third({ parser_addr: 'http://x' }), 'parser_addr must be object,null'],
    ['a url that is not http', third({ parser_addr: { url: 'ftp://host/x' } }), 'parser_addr.url must be an http:// or https:// URL'],
    ['a server without a port', third({ parser_addr: { server: '127.0.0.1' } }), 'parser_addr.server must be <ip>:<port>'],
    ['a server with port 70000', third({ parser_addr: { server: '127.0.0.1:70000' } }), 'parser_addr.server must be <ip>:<port>'],
    ['both url and server', third({ parser_addr: { url: 'http://h/', server: 'h:1' } }), 'parser_addr must have one of url, server and resource_id, got url and server'],
    ['3rd_party_opts that are not text', third({ parser_opts: { '3rd_party_opts': { a: 1 } } }), '3rd_party_opts must be string'],
    ['a connect_timeout in text', third({ parser_opts: { '3rd_party_opts': 'x', connect_timeout: '3' } }), 'connect_timeout must be integer'],
    ['a parse_timeout of 0', third({ parser_opts: { '3rd_party_opts': 'x', parse_timeout: 0 } }), 'parse_timeout must be an integer number of seconds from 1 to 60'],
    ['a parse_timeout of 61 s', third({ parser_opts: { '3rd_party_opts': 'x', parse_timeout: 61 } }), 'from 1 to 60']
  ])('refuses %s (108)', async (_what, body, message) => {
    const res = await api('POST', '/schemas', body)
    expectError(res, 108, 400)
    expect(res.body.message).toContain(message)
    expect(await schemas()).toEqual([])
  })

  it('refuses avro text that does not compile (102), naming the line', async () => {
    const res = await api('POST', '/schemas', { name: 's', parser_type: 'avro', schema: '{\n  "type": "record",\n  "name": "S"\n  "fields": []\n}' })
    expectError(res, 102, 400)
    expect(res.body.message).toBe("avro schema is not valid JSON: Expected ',' or '}' after property value at line 4, column 3")
    const unknownType = await api('POST', '/schemas', { name: 's', parser_type: 'avro', schema: '{"type": "record", "name": "S", "fields": [{"name": "t", "type": "dubble"}]}' })
    expect(unknownType.body).toEqual({ code: 102, message: 'invalid avro schema: undefined type name: dubble' })
    expect(await schemas()).toEqual([])
  })

  it('refuses a .proto that does not compile (102), naming the line', async () => {
    const res = await api('POST', '/schemas', { name: 's', parser_type: 'protobuf', schema: 'syntax = "proto3";\nmessage A {\n  int32 x = 1\n  string y = 2;\n}\n' })
    expect(res.body).toEqual({ code: 102, message: "invalid protobuf schema: illegal token 'string', ';' expected (line 4)" })
    expect(await schemas()).toEqual([])
  })

  it('refuses a 3rd-party schema whose service cannot be connected to (102), over HTTP and TCP', async () => {
    const port = await freePort()
    const http = await api('POST', '/schemas', third({ parser_addr: { url: `http://127.0.0.1:${port}/codec` } }))
    expectError(http, 102, 400)
    expect(http.body.message).toBe(`cannot connect to the 3rd-party codec service at http://127.0.0.1:${port}/codec: connect ECONNREFUSED 127.0.0.1:${port}; start the service or correct parser_addr`)
    const tcp = await api('POST', '/schemas', third({ parser_addr: { server: `127.0.0.1:${port}` }, parser_opts: { '3rd_party_opts': 'x', connect_timeout: 1 } }))
    expect(tcp.body.message).toMatch(new RegExp(`^cannot connect to the 3rd-party codec service at 127.0.0.1:${port}: `))
    expect(await schemas()).toEqual([])
  })

  it('refuses a 3rd-party schema naming a resource that does not exist or has no address (102)', async () => {
    const missing = await api('POST', '/schemas', third({ parser_addr: { resource_id: 'web_hook:nope' } }))
    expectError(missing, 102, 400)
    expect(missing.body.message).toContain('resource web_hook:nope does not exist')
    expect(await schemas()).toEqual([])
  })
})

describe('deleting a schema a rule uses', () => {
  it('is refused (102) naming the rules, for either function and quote style, and allowed once they are gone', async () => {
    await api('POST', '/schemas', { name: 'sensor', parser_type: 'avro', schema: SENSOR_AVSC })
    await api('POST', '/schemas', { name: 'sensor2', parser_type: 'avro', schema: SENSOR_AVSC })
    const decode = (await api('POST', '/rules', { rawsql: 'SELECT schema_decode(\'sensor\', payload) as d FROM "t/#"', actions: [] })).body.data
    const encode = (await api('POST', '/rules', { rawsql: 'SELECT SCHEMA_ENCODE( "sensor", json_decode(payload)) as e FROM "t/#"', actions: [] })).body.data
    const refused = await api('DELETE', '/schemas/sensor')
    expectError(refused, 102, 400)
    expect(refused.body.message).toBe(`schema sensor is used by rule ${[decode.id, encode.id].sort().join(', ')}; delete those rules (or change their SQL) first`)
    expect((await api('GET', '/schemas/sensor')).body.code).toBe(0)
    // a name that only starts like a used one is not in use
    expect((await api('DELETE', '/schemas/sensor2')).body).toEqual({ code: 0 })
    await api('DELETE', `/rules/${decode.id}`)
    expectError(await api('DELETE', '/schemas/sensor'), 102, 400)
    await api('DELETE', `/rules/${encode.id}`)
    expect((await api('DELETE', '/schemas/sensor')).body).toEqual({ code: 0 })
  })
})

describe('starling-ctl schemas', () => {
  const ctl = async (...argv: string[]): Promise<{ code: number, out: string, err: string }> => await runCtlOn(node, argv)

  it('creates, lists, shows and deletes', async () => {
    expect(await ctl('schemas', 'create', 'sensor', 'avro', '--schema', SENSOR_AVSC, '-d', 'from the CLI')).toEqual({ code: 0, out: 'Schema sensor created\n', err: '' })
    expect(await ctl('schemas', 'create', 'xor', '3rd-party', '-a', JSON.stringify({ server: codec.tcpAddress }), '-o', '{"3rd_party_opts":"xor:k","parse_timeout":2}'))
      .toEqual({ code: 0, out: 'Schema xor created\n', err: '' })
    expect(await ctl('schemas', 'list')).toEqual({
      code: 0,
      err: '',
      out: "schema(name='sensor', parser_type='avro', parser_addr=null, parser_opts={}, description='from the CLI')\n" +
        `schema(name='xor', parser_type='3rd-party', parser_addr={"server":"${codec.tcpAddress}"}, parser_opts={"3rd_party_opts":"xor:k","parse_timeout":2}, description='')\n`
    })
    expect((await ctl('schemas', 'show', 'sensor')).out).toBe("schema(name='sensor', parser_type='avro', parser_addr=null, parser_opts={}, description='from the CLI')\n" + SENSOR_AVSC + '\n')
    expect(JSON.parse((await ctl('schemas', 'show', 'sensor', '--json')).out)).toEqual((await api('GET', '/schemas/sensor')).body.data)
    expect(await ctl('schemas', 'delete', 'sensor')).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect(await ctl('schemas', 'show', 'sensor')).toEqual({ code: 1, out: '', err: 'schema sensor not found\n' })
  })

  it('exits 1 with the same messages as the API, changing nothing', async () => {
    expect(await ctl('schemas', 'create', '9lives', 'avro', '-s', SENSOR_AVSC)).toMatchObject({ code: 1, err: expect.stringContaining('invalid schema name "9lives"') })
    expect(await ctl('schemas', 'create', 'pb', 'protobuf')).toEqual({ code: 1, out: '', err: 'missing parameter schema (the .proto text; required for protobuf)\n' })
    expect(await ctl('schemas', 'create', 'tp', '3rd-party', '-a', '{url:', '-o', '{}')).toMatchObject({ code: 1, err: expect.stringMatching(/^--parser-addr is not JSON/) })
    expect(await ctl('schemas', 'create', 'tp', '3rd-party', '-a', '{"server":"127.0.0.1:1"}')).toEqual({ code: 1, out: '', err: 'missing parameter parser_opts (an object with 3rd_party_opts; required for 3rd-party)\n' })
    expect(await ctl('schemas', 'delete', 'nope')).toEqual({ code: 1, out: '', err: 'schema nope not found\n' })
    expect(await schemas()).toEqual([])
  })
})
