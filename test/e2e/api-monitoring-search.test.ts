/**
 * The search parameters of `GET /connections/` and `GET /subscriptions/` (EMQ X 4.4's
 * `_like_clientid`, `_like_username`, `ip_address`, `proto_name`, `proto_ver`; `clientid`,
 * `topic`, `qos`, `_match_topic`; and `node`), which the dashboard's Clients and
 * Subscriptions pages search with: real mqtt.js clients, real HTTP, pagination of the
 * narrowed list, and the codes of a bad value.
 */
import { startTestNode, connect, closeClients, API_AUTH, type TestNode } from '../helpers/node.js'

let node: TestNode
let base: string

beforeAll(async () => {
  node = await startTestNode({ 'broker.sys_interval': '0' })
  base = `http://127.0.0.1:${node.api.server!.port}/api/v3`
  const a = await connect(node, { clientId: 'sensor-1', username: 'alice', protocolVersion: 4 })
  const b = await connect(node, { clientId: 'sensor-2', username: 'bob', protocolVersion: 5 })
  await connect(node, { clientId: 'lamp-1', protocolVersion: 4 })
  await a.subscribeAsync({ 'home/+/temp': { qos: 1 }, 'home/kitchen/light': { qos: 0 } })
  await b.subscribeAsync({ '$share/g/home/#': { qos: 2 }, 'office/temp': { qos: 1 } })
})

afterAll(async () => {
  await closeClients()
  await node.destroy()
})

async function api (path: string): Promise<{ status: number, body: any }> {
  const res = await fetch(base + path, { headers: { authorization: API_AUTH } })
  return { status: res.status, body: await res.json() }
}

/** The client ids of a connection list answer, sorted. */
const ids = (body: any): string[] => body.data.map((c: any) => c.client_id).sort()
/** `client_id topic` of a subscription list answer, sorted. */
const subs = (body: any): string[] => body.data.map((s: any) => `${s.client_id} ${s.topic}`).sort()

describe('GET /connections/ with a search', () => {
  it('narrows by part of the client id and of the user name', async () => {
    expect(ids((await api('/connections/?_like_clientid=sensor')).body)).toEqual(['sensor-1', 'sensor-2'])
    expect(ids((await api('/connections/?_like_clientid=amp')).body)).toEqual(['lamp-1'])
    expect(ids((await api('/connections/?_like_username=li')).body)).toEqual(['sensor-1'])
    // a client without a user name is not found by a user name search, whatever its text `undefined`
    expect(ids((await api('/connections/?_like_username=undef')).body)).toEqual([])
  })

  it('narrows by IP address, protocol name and version, and node', async () => {
    expect(ids((await api('/connections/?ip_address=127.0.0.1')).body)).toEqual(['lamp-1', 'sensor-1', 'sensor-2'])
    expect(ids((await api('/connections/?ip_address=10.0.0.1')).body)).toEqual([])
    expect(ids((await api('/connections/?proto_ver=5')).body)).toEqual(['sensor-2'])
    expect(ids((await api('/connections/?proto_name=MQTT&proto_ver=4&_like_clientid=sensor')).body)).toEqual(['sensor-1'])
    expect(ids((await api(`/connections/?node=${encodeURIComponent(node.name)}&_like_clientid=lamp`)).body)).toEqual(['lamp-1'])
    expect(ids((await api(`/nodes/${encodeURIComponent(node.name)}/connections/?proto_ver=5`)).body)).toEqual(['sensor-2'])
  })

  it('paginates the narrowed list: count is what matched', async () => {
    const { body } = await api('/connections/?_like_clientid=sensor&_page=2&_limit=1')
    expect(body.meta).toEqual({ page: 2, limit: 1, count: 2 })
    expect(body.data).toHaveLength(1)
  })

  it('refuses a bad protocol version with 108 and an unknown node with 404', async () => {
    const bad = await api('/connections/?proto_ver=7')
    expect([bad.status, bad.body.code]).toEqual([400, 108])
    expect(bad.body.message).toMatch(/proto_ver/)
    const unknown = await api('/connections/?node=nobody@nowhere')
    expect([unknown.status, unknown.body.code]).toEqual([404, 102])
  })
})

describe('GET /subscriptions/ with a search', () => {
  it('narrows by client id, topic filter and QoS', async () => {
    expect(subs((await api('/subscriptions/?clientid=sensor-1')).body)).toEqual(['sensor-1 home/+/temp', 'sensor-1 home/kitchen/light'])
    expect(subs((await api('/subscriptions/?topic=office/temp')).body)).toEqual(['sensor-2 office/temp'])
    expect(subs((await api('/subscriptions/?qos=1')).body)).toEqual(['sensor-1 home/+/temp', 'sensor-2 office/temp'])
    expect(subs((await api('/subscriptions/?qos=2&clientid=sensor-2')).body)).toEqual(['sensor-2 $share/g/home/#'])
  })

  it('finds the subscriptions whose filter matches a topic (a shared one by its real filter)', async () => {
    expect(subs((await api(`/subscriptions/?_match_topic=${encodeURIComponent('home/kitchen/temp')}`)).body))
      .toEqual(['sensor-1 home/+/temp', 'sensor-2 $share/g/home/#'])
    expect(subs((await api('/subscriptions/?_match_topic=garden')).body)).toEqual([])
  })

  it('refuses a bad QoS with 116 and a wildcard in _match_topic with 115', async () => {
    const qos = await api('/subscriptions/?qos=3')
    expect([qos.status, qos.body.code]).toEqual([400, 116])
    const topic = await api(`/subscriptions/?_match_topic=${encodeURIComponent('home/#')}`)
    expect([topic.status, topic.body.code]).toEqual([400, 115])
  })
})
