/**
 * svc_backend_mongo through a node. MongoDB has no Debian package, so the harness cannot start
 * one: the first suite (the types' listing, the refusal of a server that cannot be reached)
 * always runs; the second runs only when TEST_MONGO_URL points at a server the test may write
 * to (mongodb://[user:password@]host:port; a fresh database `starling_data_<pid>` is made and
 * dropped), and is skipped with a note otherwise.
 */
import { MongoClient } from 'mongodb'
import { closeClients, connect, startTestNode, type TestNode } from '../helpers/node.js'
import { apiOf } from './api-actions-client.js'
import { actionTotals, clearRulesAndResources, resourceStatus, until } from './data-actions-client.js'
import { freePort } from '../helpers/servers/index.js'

const PLUGIN = 'svc_backend_mongo'
const SQL = 'SELECT clientid, topic, payload.seq as seq, payload.meta as meta FROM "sensors/#"'
const URL_ = process.env.TEST_MONGO_URL

describe('svc_backend_mongo without a server', () => {
  let node: TestNode
  const api = apiOf(() => node)
  beforeAll(async () => {
    node = await startTestNode({ 'node.name': 'mg0@127.0.0.1', 'broker.sys_interval': '0' }, undefined, { plugins: [PLUGIN] })
  }, 60_000)
  afterAll(async () => { await node?.destroy() })

  it('lists the three resource types and the action while loaded, and refuses a server that cannot be reached (102)', async () => {
    const types = (await api('GET', '/resource_types')).body.data.filter((t: { provider: string }) => t.provider === PLUGIN)
    expect(types.map((t: { name: string }) => t.name)).toEqual(['backend_mongo_single', 'backend_mongo_rs', 'backend_mongo_sharded'])
    expect(Object.keys(types[1].params)).toEqual(expect.arrayContaining(['servers', 'rs_set_name', 'database', 'login', 'password', 'auth_source', 'w_mode', 'ssl', 'local_buffer']))
    const action = (await api('GET', '/actions')).body.data.find((a: { name: string }) => a.name === 'data_to_mongo')
    expect(action.types).toEqual(['backend_mongo_single', 'backend_mongo_rs', 'backend_mongo_sharded'])
    const port = await freePort()
    const refused = await api('POST', '/resources', { name: 'nowhere', type: 'backend_mongo_single', config: { servers: `127.0.0.1:${port}`, database: 'mqtt', connectTimeoutMS: 500 } })
    expect(refused.body.code).toBe(102)
    expect(refused.body.message).toMatch(/resource type backend_mongo_single: cannot connect: mongodb mongodb:\/\/127\.0\.0\.1:\d+\/mqtt: .*; start the server or correct the config/)
  }, 30_000)
})

if (URL_ === undefined) console.warn('skipping "data_to_mongo against TEST_MONGO_URL": set it (mongodb://host:port) to run it; MongoDB has no Debian package for the harness')

;(URL_ === undefined ? describe.skip : describe)('svc_backend_mongo: data_to_mongo against TEST_MONGO_URL (a real MongoDB)', () => {
  let node: TestNode
  let mongo: MongoClient
  const api = apiOf(() => node)
  const database = `starling_data_${process.pid}`

  beforeAll(async () => {
    mongo = new MongoClient(URL_ as string)
    node = await startTestNode({ 'node.name': 'mg1@127.0.0.1', 'broker.sys_interval': '0' }, undefined, { plugins: [PLUGIN] })
  }, 60_000)
  afterAll(async () => {
    await closeClients()
    await clearRulesAndResources(api)
    await node?.destroy()
    await mongo?.db(database).dropDatabase().catch(() => {})
    await mongo?.close()
  })

  it('inserts 1,000 messages as documents with the selected fields; counts a document the collection\'s validator refuses as failed', async () => {
    const url = new URL(URL_ as string)
    await mongo.db(database).createCollection('checked', { validator: { seq: { $type: 'int' } } })
    const created = await api('POST', '/resources', {
      name: 'mongo', type: 'backend_mongo_single',
      config: { servers: url.host, database, login: decodeURIComponent(url.username), password: decodeURIComponent(url.password) }
    })
    expect(created.body).toMatchObject({ code: 0 })
    const resource = created.body.data.id as string
    expect(Object.values(await resourceStatus(api, resource))).toEqual([true])
    const rule = await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_mongo', params: { $resource: resource, collection: 'msgs' } }] })
    const id = rule.body.data.id as string
    const pub = await connect(node, { clientId: 'sensor-1' })
    await Promise.all(Array.from({ length: 1000 }, (_, seq) => pub.publishAsync('sensors/sensor-1', JSON.stringify({ seq, meta: { i: seq } }), { qos: 1 })))
    await until(async () => (await actionTotals(api, id)).success === 1000, 'success 1000', 60_000)
    const docs = await mongo.db(database).collection('msgs').find({}, { projection: { _id: 0 } }).sort({ seq: 1 }).toArray()
    expect(docs.map((d) => d.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => i))
    expect(docs[7]).toEqual({ clientid: 'sensor-1', topic: 'sensors/sensor-1', seq: 7, meta: { i: 7 } })

    const checked = await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_mongo', params: { $resource: resource, collection: 'checked', batch_size: 10, batch_time: 50 } }] })
    const pub2 = await connect(node, { clientId: 'sensor-2' })
    await Promise.all(Array.from({ length: 6 }, (_, seq) => pub2.publishAsync('sensors/sensor-2', JSON.stringify({ seq: seq % 2 === 0 ? seq : `s${seq}` }), { qos: 1 })))
    await until(async () => { const m = await actionTotals(api, checked.body.data.id as string); return m.success + m.failed === 6 }, 'every document counted')
    expect(await actionTotals(api, checked.body.data.id as string)).toEqual({ taken: 6, success: 3, failed: 3 })
  }, 120_000)
})
