/**
 * `/api/v3/sessions`, `/subscriptions` and `/routes` over real HTTP with mqtt.js clients:
 * sessions of connected clients and persisted sessions of away clients, every field of the
 * spec with its type, per-node paths and pagination.
 */
import { startTestNode, connect, closeClients, waitFor, API_AUTH, type TestNode } from '../helpers/node.js'

let node: TestNode
let base: string
beforeAll(async () => {
  node = await startTestNode({ 'broker.sys_interval': '0', 'mqtt.max_inflight': '16', 'mqtt.max_mqueue_len': '500' })
  base = `http://127.0.0.1:${node.api.server!.port}/api/v3`
})
afterAll(async () => { await node.destroy() })
afterEach(async () => { await closeClients() })

async function get (path: string): Promise<{ status: number, body: any }> {
  const res = await fetch(base + path, { headers: { authorization: API_AUTH } })
  return { status: res.status, body: await res.json() }
}

const SESSION_TYPES: Record<string, string> = {
  awaiting_rel_len: 'integer',
  binding: 'string',
  clean_start: 'boolean',
  client_id: 'string',
  created_at: 'string',
  deliver_msg: 'integer',
  enqueue_msg: 'integer',
  expiry_interval: 'integer',
  heap_size: 'integer',
  inflight_len: 'integer',
  mailbox_len: 'integer',
  max_awaiting_rel: 'integer',
  max_inflight: 'integer',
  max_mqueue: 'integer',
  max_subscriptions: 'integer',
  mqueue_dropped: 'integer',
  mqueue_len: 'integer',
  node: 'string',
  reductions: 'integer',
  subscriptions_count: 'integer',
  username: 'string'
}

function expectSession (s: any): void {
  expect(Object.keys(s).sort()).toEqual(Object.keys(SESSION_TYPES))
  for (const [key, type] of Object.entries(SESSION_TYPES)) {
    if (type === 'integer') expect([key, Number.isInteger(s[key])]).toEqual([key, true])
    else expect([key, typeof s[key]]).toEqual([key, type])
  }
  expect(s.created_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  expect(s).toMatchObject({ binding: 'local', node: node.name, max_inflight: 16, max_mqueue: 500, max_awaiting_rel: 100, max_subscriptions: 0 })
}

describe('sessions', () => {
  // a persistent session whose client left: listed from the store with its queued message
  beforeAll(async () => {
    const away = await connect(node, { clientId: 'away-1', username: 'dora', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 3600 } })
    await away.subscribeAsync('away/#', { qos: 1 })
    await away.endAsync()
    await waitFor(() => node.broker.core.client('away-1') === undefined, 'away-1 gone')
    const publisher = await connect(node, { clientId: 'away-publisher' })
    await publisher.publishAsync('away/x', 'queued', { qos: 1 })
    await closeClients()
  })

  it('lists connected sessions and away persistent sessions with every Session field', async () => {
    const client = await connect(node, { clientId: 'here-1', username: 'eve', protocolVersion: 4 })
    await client.subscribeAsync(['here/a', 'here/b'])
    const { body } = await get('/sessions/')
    expect(body.meta).toEqual({ page: 1, limit: 10000, count: 2 })
    body.data.forEach(expectSession)
    const [here, away] = body.data
    expect(here).toMatchObject({ client_id: 'here-1', username: 'eve', clean_start: true, expiry_interval: 0, subscriptions_count: 2, mqueue_len: 0, inflight_len: 0 })
    expect(away).toMatchObject({
      client_id: 'away-1',
      username: 'dora',
      clean_start: false,
      expiry_interval: 3600,
      subscriptions_count: 1,
      mqueue_len: 1,
      inflight_len: 0,
      enqueue_msg: 1,
      deliver_msg: 0
    })
  })

  it('looks a session up by client id, cluster-wide and on its node', async () => {
    const cluster = (await get('/sessions/away-1')).body.data
    expect(cluster.map((s: any) => s.client_id)).toEqual(['away-1'])
    expectSession(cluster[0])
    expect((await get(`/nodes/${node.name}/sessions/away-1`)).body.data).toEqual(cluster)
    expect((await get('/sessions/nobody')).body.data).toEqual([])
  })

  it('counts a message delivered to a connected session and keeps created_at of a resumed one', async () => {
    const before = (await get('/sessions/away-1')).body.data[0].created_at
    const resumed = await connect(node, { clientId: 'away-1', username: 'dora', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 3600 } })
    await new Promise(resolve => resumed.once('message', resolve)) // the queued message
    await waitFor(() => node.broker.core.client('away-1')?.connected === true, 'away-1 connected')
    const [s] = (await get('/sessions/away-1')).body.data
    expect(s).toMatchObject({ clean_start: false, deliver_msg: 1, mqueue_len: 0, subscriptions_count: 1 })
    expect(s.created_at).toBe(before)
    await resumed.endAsync()
  })

  it('pages through the sessions, cluster-wide and per node', async () => {
    for (let i = 0; i < 3; i++) await connect(node, { clientId: `sp-${i}` })
    const page2 = (await get('/sessions/?_page=2&_limit=3')).body
    expect(page2.meta).toEqual({ page: 2, limit: 3, count: 4 })
    expect(page2.data).toHaveLength(1)
    const perNode = (await get(`/nodes/${node.name}/sessions/?_page=1&_limit=3`)).body
    expect(perNode.meta).toEqual({ page: 1, limit: 3, count: 4 })
    expect(perNode.data).toHaveLength(3)
  })

  it('answers per-node session paths for an unknown node with 404', async () => {
    for (const path of ['/nodes/ghost@host/sessions/', '/nodes/ghost@host/sessions/away-1']) {
      const { status, body } = await get(path)
      expect(status).toBe(404)
      expect(body.message).toMatch(/^unknown node ghost@host; running nodes: /)
    }
  })
})

describe('subscriptions', () => {
  it('lists {client_id, node, qos, topic} of connected clients and away sessions, shared ones as $share/', async () => {
    const client = await connect(node, { clientId: 'sub-1', protocolVersion: 5 })
    await client.subscribeAsync({ 'sub/a': { qos: 1 }, '$share/g/sub/b': { qos: 2 }, 'sub/#': { qos: 0 } })
    const { body } = await get('/subscriptions/')
    expect(body.meta.count).toBe(body.data.length)
    for (const s of body.data) {
      expect(Object.keys(s).sort()).toEqual(['client_id', 'node', 'qos', 'topic'])
      expect([0, 1, 2]).toContain(s.qos)
      expect(s.node).toBe(node.name)
    }
    const mine = body.data.filter((s: any) => s.client_id === 'sub-1')
    expect(mine.sort((a: any, b: any) => a.topic.localeCompare(b.topic))).toEqual([
      { client_id: 'sub-1', node: node.name, qos: 2, topic: '$share/g/sub/b' },
      { client_id: 'sub-1', node: node.name, qos: 0, topic: 'sub/#' },
      { client_id: 'sub-1', node: node.name, qos: 1, topic: 'sub/a' }
    ])
    expect(body.data).toContainEqual({ client_id: 'away-1', node: node.name, qos: 1, topic: 'away/#' })
  })

  it('looks up one client, cluster-wide and on its node, and pages per node', async () => {
    const client = await connect(node, { clientId: 'sub-2' })
    await client.subscribeAsync(['x/1', 'x/2', 'x/3'])
    expect((await get('/subscriptions/sub-2')).body.data.map((s: any) => s.topic).sort()).toEqual(['x/1', 'x/2', 'x/3'])
    expect((await get(`/nodes/${node.name}/subscriptions/away-1`)).body.data).toEqual([{ client_id: 'away-1', node: node.name, qos: 1, topic: 'away/#' }])
    const all = (await get(`/nodes/${node.name}/subscriptions/`)).body
    const page = (await get(`/nodes/${node.name}/subscriptions/?_page=2&_limit=2`)).body
    expect(page.meta).toEqual({ page: 2, limit: 2, count: all.meta.count })
    expect(page.data).toEqual(all.data.slice(2, 4))
    expect((await get('/nodes/ghost@host/subscriptions/')).status).toBe(404)
    expect((await get('/nodes/ghost@host/subscriptions/sub-2')).status).toBe(404)
  })
})

describe('routes', () => {
  it('lists the route table {node, topic}, shared subscriptions by their real filter', async () => {
    const client = await connect(node, { clientId: 'route-1' })
    await client.subscribeAsync(['r/+/x', '$share/grp/r/shared'])
    const { body } = await get('/routes/')
    for (const r of body.data) expect(Object.keys(r).sort()).toEqual(['node', 'topic'])
    expect(body.data).toContainEqual({ node: node.name, topic: 'r/+/x' })
    expect(body.data).toContainEqual({ node: node.name, topic: 'r/shared' })
    expect(body.meta.count).toBe(body.data.length)
    const page = (await get('/routes/?_page=1&_limit=1')).body
    expect(page.data).toEqual(body.data.slice(0, 1))
    expect(page.meta).toEqual({ page: 1, limit: 1, count: body.meta.count })
  })

  it('looks up the routes of a URL-encoded topic filter', async () => {
    const client = await connect(node, { clientId: 'route-2' })
    await client.subscribeAsync('lookup/#')
    expect((await get(`/routes/${encodeURIComponent('lookup/#')}`)).body.data).toEqual([{ node: node.name, topic: 'lookup/#' }])
    expect((await get('/routes/no%2Froute')).body.data).toEqual([])
  })
})

describe('after a restart', () => {
  it('lists the persistent sessions restored from the store', async () => {
    const dataDir = node.dataDir
    await node.stop()
    node = await startTestNode({ 'broker.sys_interval': '0', 'mqtt.max_inflight': '16', 'mqtt.max_mqueue_len': '500' }, dataDir)
    base = `http://127.0.0.1:${node.api.server!.port}/api/v3`
    const { body } = await get('/sessions/away-1')
    expect(body.data).toHaveLength(1)
    expectSession(body.data[0])
    // what the store does not keep is reported as for a session begun at the restart
    expect(body.data[0]).toMatchObject({ client_id: 'away-1', clean_start: false, subscriptions_count: 1, username: 'undefined', expiry_interval: 7200 })
    expect((await get('/subscriptions/away-1')).body.data).toEqual([{ client_id: 'away-1', node: node.name, qos: 1, topic: 'away/#' }])
  })
})
