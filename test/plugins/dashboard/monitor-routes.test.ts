/**
 * The monitor's endpoints over real HTTP on the dashboard listener of a two-node cluster (in
 * one process, joined on their mesh), with the shipped 10 s sampling: either node answers
 * the cluster's history, summed at the same times; `node=` gives one node's; a bad `range`
 * is 108; `current_metrics` sums the nodes now; unloading svc_dashboard stops a node's
 * monitor, which the other reports in `meta.failed`.
 */
import { startTestNode, connect, closeClients, waitFor, type TestNode } from '../../helpers/node.js'

const A = 'a@127.0.0.1'
const B = 'b@127.0.0.1'
const PASSWORD = 'monitor-admin-1'
const BASIC = 'Basic ' + Buffer.from(`admin:${PASSWORD}`).toString('base64')

let a: TestNode, b: TestNode

function dashboardPort (node: TestNode): number {
  const entry = node.listenerBoard.list().find(l => l.protocol === 'http:dashboard')
  return Number(String(entry?.listen_on).split(':').pop())
}

async function get (node: TestNode, path: string): Promise<{ status: number, body: any }> {
  const res = await fetch(`http://127.0.0.1:${dashboardPort(node)}/api/v3${path}`, { headers: { authorization: BASIC } })
  return { status: res.status, body: await res.json() }
}

/** Polls `path` on `node` until `ok` holds of its body (the samples come every 10 s). */
async function until (node: TestNode, path: string, ok: (body: any) => boolean, what: string): Promise<any> {
  let last: any
  const deadline = Date.now() + 25_000
  while (Date.now() < deadline) {
    last = (await get(node, path)).body
    if (ok(last)) return last
    await new Promise(resolve => setTimeout(resolve, 250))
  }
  throw new Error(`timed out waiting for ${what}; last answer ${JSON.stringify(last)}`)
}

beforeAll(async () => {
  a = await startTestNode({ 'node.name': A, 'broker.sys_interval': '0', 'dashboard.default_user.password': PASSWORD })
  b = await startTestNode({ 'node.name': B, 'broker.sys_interval': '0', 'dashboard.default_user.password': PASSWORD })
  await b.cluster.join(`${A}:${a.cluster.mesh.port}`)
  await waitFor(() => a.rpc.nodes().length === 2 && b.rpc.nodes().length === 2, 'a cluster of two')
  // one client on A, two on B (one subscribed)
  await connect(a)
  const sub = await connect(b)
  await new Promise<void>((resolve, reject) => sub.subscribe('t/#', (err) => { if (err != null) reject(err); else resolve() }))
  await connect(b)
}, 30_000)

afterAll(async () => {
  await closeClients()
  await b?.destroy()
  await a?.destroy()
})

/** The newest time at which the series `name` has a value. */
function lastPoint (body: any, name: string): [number, number] | undefined {
  const series = body?.data?.series?.[name] as Array<[number, number]> | undefined
  return series?.[series.length - 1]
}

describe('GET /api/v3/monitor/counters', () => {
  it('answers the cluster\'s 10 s history on either node, the nodes summed at the same times', async () => {
    const body = await until(b, '/monitor/counters?range=1h', x => lastPoint(x, 'connections')?.[1] === 3, 'a sample with the 3 connections of both nodes')
    expect(body.code).toBe(0)
    expect(body.meta).toBeUndefined()
    expect(body.data.interval).toBe(10)
    expect(Object.keys(body.data.series).sort()).toEqual(['connections', 'dropped', 'received', 'sent', 'subscriptions'])
    const [t] = lastPoint(body, 'connections')!
    expect(t % 10_000).toBe(0)
    expect(lastPoint(body, 'subscriptions')).toEqual([t, 1])
    for (const name of ['received', 'sent', 'dropped']) expect(lastPoint(body, name)?.[0]).toBe(t)
    // A answers the same sum; each node alone has its own share at that time
    const onA = await get(a, '/monitor/counters')
    expect(onA.body.data.series.connections).toContainEqual([t, 3])
    const onlyA = await get(b, `/monitor/counters?range=1h&node=${encodeURIComponent(A)}`)
    expect(onlyA.body.data.series.connections).toContainEqual([t, 1])
    const onlyB = await get(a, `/monitor/counters?node=${encodeURIComponent(B)}`)
    expect(onlyB.body.data.series.connections).toContainEqual([t, 2])
  }, 30_000)

  it('answers the day window at 5 min (empty until its first boundary)', async () => {
    const { status, body } = await get(a, '/monitor/counters?range=1d')
    expect(status).toBe(200)
    expect(body.data.interval).toBe(300)
    for (const points of Object.values(body.data.series) as Array<Array<[number, number]>>) {
      for (const [t] of points) expect(t % 300_000).toBe(0)
    }
  })

  it('refuses a range other than 1h or 1d with 108, and an unknown node with 404', async () => {
    const bad = await get(a, '/monitor/counters?range=2h')
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual({ code: 108, message: "range must be one of 1h, 1d, got '2h'" })
    const unknown = await get(a, '/monitor/counters?node=nobody@127.0.0.1')
    expect(unknown.status).toBe(404)
  })

  it('needs a signed-in user', async () => {
    const res = await fetch(`http://127.0.0.1:${dashboardPort(a)}/api/v3/monitor/counters`)
    expect(res.status).toBe(401)
  })
})

describe('GET /api/v3/monitor/current_metrics', () => {
  it('sums the nodes now', async () => {
    const { body } = await get(a, '/monitor/current_metrics')
    expect(body.code).toBe(0)
    expect(body.data).toMatchObject({ nodes: 2, connections: 3, subscriptions: 1, retained: 0 })
    for (const k of ['topics', 'received', 'sent', 'dropped']) expect(typeof body.data[k]).toBe('number')
  })
})

describe('a node with svc_dashboard unloaded', () => {
  it('has no monitor: the other node reports it in meta.failed and answers its own history', async () => {
    await b.services.plugins.unload('svc_dashboard')
    try {
      const { body } = await get(a, '/monitor/counters')
      expect(body.code).toBe(0)
      expect(body.meta.failed).toEqual([{ node: B, code: 101, message: expect.any(String) }])
      expect(lastPoint(body, 'connections')?.[1]).toBe(1)
    } finally {
      await b.services.plugins.load('svc_dashboard')
    }
  })
})
