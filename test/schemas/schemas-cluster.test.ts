/**
 * Schemas are cluster-wide: one created through one node's API is compiled on the others
 * and their rules use it; one deleted on any node is gone everywhere.
 */
import { startTestNode, connect, closeClients, waitFor, nextMessage, type TestNode, apiRequest } from '../helpers/node.js'
import { SENSOR_AVSC, avroSensor } from './fixtures.js'

let a: TestNode, b: TestNode

const api = apiRequest

beforeAll(async () => {
  a = await startTestNode({ 'node.name': 'sa@127.0.0.1', 'broker.sys_interval': '0' })
  b = await startTestNode({ 'node.name': 'sb@127.0.0.1', 'broker.sys_interval': '0' })
  await b.cluster.join(`${a.name}:${a.cluster.mesh.port}`)
  const both = [a.name, b.name].sort().join()
  for (const n of [a, b]) await waitFor(() => n.cluster.status().filter(m => m.status === 'running').map(m => m.name).sort().join() === both, `${n.name} to see both nodes`)
})
afterEach(async () => { await closeClients() })
afterAll(async () => {
  await b?.destroy()
  await a?.destroy()
})

test('a schema created on one node decodes messages in rules of another, is protected by their rules, and a delete reaches every node', async () => {
  expect((await api(a, '/schemas', 'POST', { name: 'shared_sensor', parser_type: 'avro', schema: SENSOR_AVSC })).code).toBe(0)
  await waitFor(() => b.shared.table('schemas').has('shared_sensor'), 'the schema on b')
  expect((await api(b, '/schemas/shared_sensor')).data).toEqual((await api(a, '/schemas/shared_sensor')).data)

  const rule = await api(b, '/rules', 'POST', {
    rawsql: "SELECT schema_decode('shared_sensor', payload) as d FROM \"cl/in\" WHERE d.temp > 30",
    actions: [{ name: 'republish', params: { target_topic: 'cl/out', payload_tmpl: '${d.id}' } }]
  })
  expect(rule.code).toBe(0)
  const sub = await connect(b, { clientId: 'cl-sub' })
  await sub.subscribeAsync('cl/out')
  const pub = await connect(b, { clientId: 'cl-pub' })
  const next = nextMessage(sub)
  await pub.publishAsync('cl/in', avroSensor.toBuffer({ id: 'remote', temp: 45, hum: 1 }))
  expect((await next).payload.toString()).toBe('remote')

  // the rule reached a too, so a refuses to delete the schema it uses
  await waitFor(() => a.shared.table('rules').has(rule.data.id), 'the rule on a')
  expect((await api(a, '/schemas/shared_sensor', 'DELETE')).code).toBe(102)
  await api(b, `/rules/${rule.data.id as string}`, 'DELETE')
  await waitFor(() => !a.shared.table('rules').has(rule.data.id), 'the rule deleted on a')
  expect((await api(a, '/schemas/shared_sensor', 'DELETE')).code).toBe(0)
  await waitFor(() => !b.shared.table('schemas').has('shared_sensor'), 'the schema deleted on b')
  expect((await api(b, '/schemas')).data).toEqual([])
})
