/**
 * Schemas are cluster-wide data that survive restarts: they are reloaded (and compiled
 * again) from the data directory, and rules using them work after the restart; a schema
 * created or deleted on another node (a change applied to the shared `schemas` table)
 * is compiled or dropped here too.
 */
import { startTestNode, closeClients, connect, nextMessage, type TestNode } from '../helpers/node.js'
import { apiOf } from '../e2e/api-actions-client.js'
import { Hlc } from '../../node/store/shared.js'
import { SCHEMAS_TABLE } from '../../rules/schemas/service.js'
import type { Schema } from '../../rules/schemas/schema.js'
import { ALERT_AVSC, SENSOR_AVSC, SENSOR_PROTO, avroAlert, avroSensor, pbEncode, pbSensor } from './fixtures.js'

let node: TestNode
const api = apiOf(() => node)

afterEach(async () => { await closeClients() })
afterAll(async () => { await node.destroy() })

describe('persistence over a restart', () => {
  it('reloads avro, protobuf and 3rd-party schemas, and rules using them still work', async () => {
    node = await startTestNode({ 'broker.sys_interval': '0' })
    await api('POST', '/schemas', { name: 'sensor', parser_type: 'avro', schema: SENSOR_AVSC, description: 'kept' })
    await api('POST', '/schemas', { name: 'pb', parser_type: 'protobuf', schema: SENSOR_PROTO })
    // a 3rd-party schema's service is only reached at create time: the node's own API listener will do
    const apiPort = node.api.server!.port
    await api('POST', '/schemas', { name: 'ext', parser_type: '3rd-party', parser_addr: { server: `127.0.0.1:${apiPort}` }, parser_opts: { '3rd_party_opts': 'x', parse_timeout: 2 } })
    await api('POST', '/rules', { rawsql: "SELECT schema_decode('sensor', payload) as d FROM \"p/avro\" WHERE d.temp > 30", actions: [{ name: 'republish', params: { target_topic: 'p/out', payload_tmpl: 'avro ${d.id}' } }] })
    await api('POST', '/rules', { rawsql: "SELECT schema_decode('pb', payload, 'Sensor') as d FROM \"p/pb\"", actions: [{ name: 'republish', params: { target_topic: 'p/out', payload_tmpl: 'pb ${d.id}' } }] })
    const before = (await api('GET', '/schemas')).body.data
    expect(before.map((s: Schema) => s.name)).toEqual(['ext', 'pb', 'sensor'])
    await node.stop()

    node = await startTestNode({ 'broker.sys_interval': '0' }, node.dataDir)
    expect((await api('GET', '/schemas')).body.data).toEqual(before)
    const sub = await connect(node, { clientId: 'p-sub' })
    await sub.subscribeAsync('p/out')
    const pub = await connect(node, { clientId: 'p-pub' })
    let next = nextMessage(sub)
    await pub.publishAsync('p/avro', avroSensor.toBuffer({ id: 'after', temp: 40, hum: 1 }))
    expect((await next).payload.toString()).toBe('avro after')
    next = nextMessage(sub)
    await pub.publishAsync('p/pb', pbEncode(pbSensor, { id: 'restart', temp: 1 }))
    expect((await next).payload.toString()).toBe('pb restart')
    // still refused: the rule using it came back too
    expect((await api('DELETE', '/schemas/sensor')).body.code).toBe(102)
  })
})

describe('changes from another node', () => {
  const other = new Hlc('other@127.0.0.2')

  it('compiles a schema created on another node and drops one deleted there', async () => {
    const schema: Schema = { name: 'remote', parser_type: 'avro', schema: ALERT_AVSC, parser_addr: null, parser_opts: {}, description: 'from afar' }
    expect(await node.shared.apply({ table: SCHEMAS_TABLE, key: 'remote', value: schema, stamp: other.next() })).toBe(true)
    expect((await api('GET', '/schemas/remote')).body.data).toEqual(schema)
    const rule = (await api('POST', '/rules', { rawsql: "SELECT schema_decode('remote', payload) as d FROM \"r/in\"", actions: [{ name: 'republish', params: { target_topic: 'r/out', payload_tmpl: '${d.id}=${d.temp}' } }] })).body.data
    const sub = await connect(node, { clientId: 'r-sub' })
    await sub.subscribeAsync('r/out')
    const pub = await connect(node, { clientId: 'r-pub' })
    const next = nextMessage(sub)
    await pub.publishAsync('r/in', avroAlert.toBuffer({ id: 'far', temp: 2.5 }))
    expect((await next).payload.toString()).toBe('far=2.5')
    await api('DELETE', `/rules/${rule.id}`)

    expect(await node.shared.apply({ table: SCHEMAS_TABLE, key: 'remote', stamp: other.next() })).toBe(true)
    expect((await api('GET', '/schemas/remote')).status).toBe(404)
  })

  it('keeps a schema from another node that does not compile, failing its calls until it is replaced', async () => {
    const bad: Schema = { name: 'bad_remote', parser_type: 'protobuf', schema: 'message {', parser_addr: null, parser_opts: {}, description: '' }
    await node.shared.apply({ table: SCHEMAS_TABLE, key: 'bad_remote', value: bad, stamp: other.next() })
    expect((await api('GET', '/schemas/bad_remote')).body.data).toEqual(bad)
    const rule = (await api('POST', '/rules', { rawsql: "SELECT schema_decode('bad_remote', payload, 'A') as d FROM \"br/in\"", actions: [] })).body.data
    const pub = await connect(node, { clientId: 'br-pub' })
    await pub.publishAsync('br/in', 'x')
    await new Promise(resolve => setTimeout(resolve, 200))
    expect((await api('GET', `/rules/${rule.id}`)).body.data.metrics[0]).toMatchObject({ matched: 0, failed: 1 })
    await api('DELETE', `/rules/${rule.id}`)
  })
})
