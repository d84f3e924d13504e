/**
 * The management API over a cluster (issue 5, "API over the cluster"): three in-process
 * nodes joined on their mesh, real MQTT clients on each, real HTTP against their APIs.
 * Lists merge every running node's items with their `node`; `/nodes/${node}/...` is
 * answered by that node; a node that does not answer is `meta.failed` with code 101 while
 * the others' items are returned; a stopped node is listed by `/nodes` and `/brokers` as
 * `Stopped`.
 */
import type { MqttClient } from 'mqtt'
import { startTestNode, connect, closeClients, waitFor, API_AUTH, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'

const A = 'a@127.0.0.1'
const B = 'b@127.0.0.1'
const C = 'c@127.0.0.1'

let a: TestNode, b: TestNode, c: TestNode
let bStopped = false

beforeAll(async () => {
  a = await startTestNode({ 'node.name': A, 'broker.sys_interval': '0' })
  b = await startTestNode({ 'node.name': B, 'broker.sys_interval': '0' })
  c = await startTestNode({ 'node.name': C, 'broker.sys_interval': '0' })
  await b.cluster.join(`${A}:${a.cluster.mesh.port}`)
  await c.cluster.join(`${A}:${a.cluster.mesh.port}`)
  await waitFor(() => [a, b, c].every(n => n.rpc.nodes().length === 3), 'a full mesh of three nodes')
})

afterAll(async () => {
  await closeClients()
  if (!bStopped) await b?.destroy()
  await c?.destroy()
  await a?.destroy()
})

/** A request to `node`'s API with the test credentials. */
async function api (node: TestNode, method: string, path: string): Promise<{ status: number, body: any }> {
  const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3${path}`, { method, headers: { authorization: API_AUTH } })
  return { status: res.status, body: await res.json() }
}

const get = async (node: TestNode, path: string): Promise<{ status: number, body: any }> => await api(node, 'GET', path)

/** `[node, field]` pairs of a list, sorted, for order-free comparison. */
function pairs (items: any[], field: string): Array<[string, string]> {
  return items.map((i): [string, string] => [i.node, i[field]]).sort((x, y) => (x[0] + x[1]).localeCompare(y[0] + y[1]))
}

/** Resolves when the client's connection closes. */
async function closed (client: MqttClient): Promise<void> {
  await new Promise<void>(resolve => client.once('close', () => resolve()))
}

describe('a cluster of running nodes', () => {
  let clients: MqttClient[] = []
  beforeAll(async () => {
    clients = [
      await connect(a, { clientId: 'on-a', clean: true }),
      await connect(b, { clientId: 'on-b', clean: true }),
      await connect(c, { clientId: 'on-c', clean: true })
    ]
    await clients[0].subscribeAsync('t/a/#', { qos: 1 })
    await clients[1].subscribeAsync('t/b/+', { qos: 2 })
    await clients[2].subscribeAsync('t/c', { qos: 0 })
  })
  afterAll(async () => { await closeClients() })

  it('lists the connections, sessions and subscriptions of every node, each with its node, from any node', async () => {
    for (const node of [a, b, c]) {
      const connections = await get(node, '/connections/')
      expect(connections.status).toBe(200)
      expect(pairs(connections.body.data, 'client_id')).toEqual([[A, 'on-a'], [B, 'on-b'], [C, 'on-c']])
      expect(connections.body.meta).toEqual({ page: 1, limit: 10000, count: 3 })

      const sessions = await get(node, '/sessions/')
      expect(pairs(sessions.body.data, 'client_id')).toEqual([[A, 'on-a'], [B, 'on-b'], [C, 'on-c']])

      const subscriptions = await get(node, '/subscriptions/')
      expect(subscriptions.body.data.map((s: any) => [s.node, s.client_id, s.topic, s.qos]).sort()).toEqual([
        [A, 'on-a', 't/a/#', 1], [B, 'on-b', 't/b/+', 2], [C, 'on-c', 't/c', 0]
      ])
    }
  })

  it('lists the routes of every node and looks up one topic filter wherever its subscribers are', async () => {
    const routes = await get(a, '/routes/')
    expect(pairs(routes.body.data, 'topic')).toEqual([[A, 't/a/#'], [B, 't/b/+'], [C, 't/c']])
    expect((await get(c, `/routes/${encodeURIComponent('t/b/+')}`)).body.data).toEqual([{ node: B, topic: 't/b/+' }])
  })

  it('looks up a client connected to another node', async () => {
    const { body } = await get(a, '/connections/on-b')
    expect(body.data).toHaveLength(1)
    expect(body.data[0]).toMatchObject({ client_id: 'on-b', node: B })
    expect((await get(a, '/subscriptions/on-c')).body.data).toEqual([{ client_id: 'on-c', node: C, qos: 0, topic: 't/c' }])
    expect((await get(b, '/sessions/on-a')).body.data[0]).toMatchObject({ client_id: 'on-a', node: A })
  })

  it('lists listeners, metrics, stats, alarms, plugins and configs by node', async () => {
    const nodes = [A, B, C]
    const byNode = (items: any[]): string[] => items.map(i => i.node).sort()
    for (const path of ['/listeners/', '/metrics/', '/stats/', '/alarms/present', '/alarms/history', '/alarms/', '/plugins/', '/configs/']) {
      const { status, body } = await get(b, path)
      expect({ path, status, nodes: byNode(body.data), meta: body.meta }).toEqual({ path, status: 200, nodes, meta: undefined })
    }
    const listeners = (await get(a, '/listeners/')).body.data.find((l: any) => l.node === C).listeners
    expect(listeners.find((l: any) => l.protocol === 'mqtt:tcp').listen_on).toBe(`127.0.0.1:${c.port('mqtt:tcp')}`)
    const stats = (await get(a, '/stats/')).body.data.find((s: any) => s.node === B)
    expect(stats['connections/count']).toBe(1)
  })

  it('lists every node in /nodes and /brokers as Running', async () => {
    const nodes = await get(c, '/nodes/')
    expect(nodes.body.data.map((n: any) => [n.node, n.node_status, n.connections]).sort()).toEqual([[A, 'Running', 1], [B, 'Running', 1], [C, 'Running', 1]])
    expect(nodes.body.data[0].memory_total).toMatch(/^\d+\.\d\d[GMK]$/)
    const brokers = await get(c, '/brokers/')
    expect(brokers.body.data.map((n: any) => [n.node, n.node_status]).sort()).toEqual([[A, 'Running'], [B, 'Running'], [C, 'Running']])
  })

  it('answers /nodes/${node}/... from that node', async () => {
    const connections = await get(a, `/nodes/${B}/connections/`)
    expect(connections.body.data.map((x: any) => [x.node, x.client_id])).toEqual([[B, 'on-b']])
    expect(connections.body.meta).toEqual({ page: 1, limit: 10000, count: 1 })
    expect((await get(a, `/nodes/${C}/connections/on-c`)).body.data[0]).toMatchObject({ client_id: 'on-c', node: C })
    expect((await get(a, `/nodes/${C}/connections/on-b`)).body.data).toEqual([])
    expect((await get(a, `/nodes/${B}/subscriptions/`)).body.data).toEqual([{ client_id: 'on-b', node: B, qos: 2, topic: 't/b/+' }])
    expect((await get(a, `/nodes/${B}/sessions/on-b`)).body.data[0]).toMatchObject({ client_id: 'on-b', node: B })
    expect((await get(a, `/nodes/${B}`)).body.data).toMatchObject({ node: B, name: B, node_status: 'Running', connections: 1 })
    expect((await get(a, `/brokers/${C}`)).body.data).toMatchObject({ node_status: 'Running' })
    expect((await get(a, `/nodes/${C}/stats/`)).body.data['connections/count']).toBe(1)
    expect((await get(a, `/nodes/${B}/listeners`)).body.data.find((l: any) => l.protocol === 'mqtt:tcp').listen_on).toBe(`127.0.0.1:${b.port('mqtt:tcp')}`)
    expect((await get(a, `/nodes/${C}/plugins/`)).body.data.find((p: any) => p.name === 'svc_management')).toMatchObject({ active: true })
  })

  it('kicks out a client connected to another node', async () => {
    const client = await connect(b, { clientId: 'kick-me' })
    const gone = closed(client)
    const { status, body } = await api(a, 'DELETE', '/connections/kick-me')
    expect({ status, body }).toEqual({ status: 200, body: { code: 0 } })
    await gone
    expect((await get(c, '/connections/kick-me')).body.data).toEqual([])
    expect((await api(a, 'DELETE', '/connections/kick-me')).body.code).toBe(112)
  })
})

describe('a node that does not answer', () => {
  type Answer = Awaited<ReturnType<typeof get>>
  const answers: Record<string, Answer> = {}
  let cli: { list: Awaited<ReturnType<typeof runCtlOn>>, json: Awaited<ReturnType<typeof runCtlOn>> }
  beforeAll(async () => {
    await waitFor(() => [a, b, c].every(n => n.broker.core.clientCount === 0), 'the earlier clients gone')
    await connect(a, { clientId: 'still-a' })
    await connect(b, { clientId: 'silent-b' })
    await connect(c, { clientId: 'still-c' })
    // B stays in the mesh but never answers a node operation again
    b.cluster.rpc.handle('node.call', async () => await new Promise(() => {}))
    // every request waits for the RPC timeout: ask them all at once
    const paths = ['/connections/', '/metrics/', '/nodes/', '/plugins/', '/connections/silent-b', `/nodes/${B}/connections/`]
    const [list, json, ...http] = await Promise.all([
      runCtlOn(a, ['clients', 'list']),
      runCtlOn(c, ['routes', 'list', '--json']),
      ...paths.map(async path => await get(a, path))
    ])
    cli = { list, json }
    paths.forEach((path, i) => { answers[path] = http[i] })
  })
  afterAll(async () => {
    // B answers again, as cluster/cluster.ts serves node operations
    b.cluster.rpc.handle('node.call', async (args: { name: string, args: unknown }) => await b.rpc.local(args.name, args.args))
    await closeClients()
  })

  const failedB = [{ node: B, code: 101, message: expect.stringContaining(B) }]

  it('is reported in meta.failed with code 101 while the other nodes\' items are returned', () => {
    const connections = answers['/connections/']
    expect(connections.status).toBe(200)
    expect(pairs(connections.body.data, 'client_id')).toEqual([[A, 'still-a'], [C, 'still-c']])
    expect(connections.body.meta).toEqual({ page: 1, limit: 10000, count: 2, failed: failedB })

    const metrics = answers['/metrics/']
    expect(metrics.body.data.map((m: any) => m.node).sort()).toEqual([A, C])
    expect(metrics.body.meta).toEqual({ failed: failedB })

    expect(answers['/plugins/'].body.meta).toEqual({ failed: failedB })
    expect(answers['/connections/silent-b'].body).toEqual({ code: 0, data: [], meta: { failed: failedB } })
  })

  it('is a failed node in /nodes, not a stopped one', () => {
    const nodes = answers['/nodes/']
    expect(nodes.body.data.map((n: any) => [n.node, n.node_status]).sort()).toEqual([[A, 'Running'], [C, 'Running']])
    expect(nodes.body.meta).toEqual({ failed: failedB })
  })

  it('makes /nodes/${node}/... of that node fail with 101', () => {
    const { status, body } = answers[`/nodes/${B}/connections/`]
    expect(status).toBe(502)
    expect(body).toEqual({ code: 101, message: expect.stringContaining(B) })
  })

  it('is printed as a badrpc line by the CLI list commands', () => {
    const { code, out } = cli.list
    expect(code).toBe(0)
    expect(out).toContain('still-a')
    expect(out).toContain('still-c')
    expect(out).not.toContain('silent-b')
    expect(out).toMatch(new RegExp(`^node ${B}: badrpc: .+$`, 'm'))
    expect(JSON.parse(cli.json.out).failed).toEqual([{ node: B, code: 101, message: expect.any(String) }])
  })
})

describe('a stopped node', () => {
  beforeAll(async () => {
    bStopped = true
    await b.destroy()
    await waitFor(() => a.rpc.nodes().length === 2 && c.rpc.nodes().length === 2, 'b seen down')
  })

  it('is listed by /nodes and /brokers as Stopped, and lists no longer ask it', async () => {
    const nodes = await get(a, '/nodes/')
    expect(nodes.body.meta).toBeUndefined()
    expect(nodes.body.data.map((n: any) => [n.node, n.node_status])).toEqual([[A, 'Running'], [C, 'Running'], [B, 'Stopped']])
    expect(nodes.body.data[2]).toEqual({ node: B, name: B, node_status: 'Stopped' })

    const brokers = await get(c, '/brokers/')
    expect(brokers.body.meta).toBeUndefined()
    expect(brokers.body.data.map((n: any) => [n.node, n.node_status])).toEqual([[C, 'Running'], [A, 'Running'], [B, 'Stopped']])
    expect(brokers.body.data[2]).toEqual({ node: B, node_status: 'Stopped' })

    const connections = await get(a, '/connections/')
    expect(connections.body.meta.failed).toBeUndefined()
    expect(connections.body.data.filter((x: any) => x.node === B)).toEqual([])
  })

  it('shows the partitioned alarm the others raised, by node', async () => {
    await waitFor(() => [a, c].every(n => n.services.alarms.present().some(x => x.id === 'partitioned')), 'partitioned raised')
    const { body } = await get(c, '/alarms/present')
    const partitioned = body.data.map((n: any) => [n.node, n.alarms.filter((x: any) => x.id === 'partitioned').length])
    expect(partitioned.sort()).toEqual([[A, 1], [C, 1]])
  })

  it('answers /nodes/${node} of a stopped member with 101, and an unknown node with 404', async () => {
    const stopped = await get(a, `/nodes/${B}`)
    expect(stopped.status).toBe(502)
    expect(stopped.body).toEqual({ code: 101, message: expect.stringContaining(`node ${B} is stopped`) })
    const unknown = await get(a, '/nodes/nobody@nowhere/connections/')
    expect(unknown.status).toBe(404)
    expect(unknown.body.code).toBe(102)
  })
})
