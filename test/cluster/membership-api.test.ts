/**
 * `/api/v3/cluster/...` (the dashboard's cluster page): the members with their link state,
 * join, leave and force-leave over real HTTP between two real nodes on their mesh, and the
 * codes of a join or force-leave that cannot be done.
 */
import { startTestNode, waitFor, API_AUTH, type TestNode } from '../helpers/node.js'

const A = 'ma@127.0.0.1'
const B = 'mb@127.0.0.1'

let a: TestNode
let b: TestNode

beforeAll(async () => {
  a = await startTestNode({ 'node.name': A, 'broker.sys_interval': '0' })
  b = await startTestNode({ 'node.name': B, 'broker.sys_interval': '0' })
})

afterAll(async () => {
  await b?.destroy()
  await a?.destroy()
})

async function api (node: TestNode, method: string, path: string, body?: unknown): Promise<{ status: number, body: any }> {
  const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3${path}`, {
    method,
    headers: { authorization: API_AUTH, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: await res.json() }
}

/** `node status link` of each member a node's `GET /cluster/` lists. */
async function members (node: TestNode): Promise<string[]> {
  const { status, body } = await api(node, 'GET', '/cluster/')
  expect([status, body.code]).toEqual([200, 0])
  return body.data.map((m: any) => `${m.node} ${m.status} ${m.link}`)
}

/** Resolves once `node` lists exactly `expected` (the members' links come up within a tick). */
async function until (node: TestNode, expected: string[]): Promise<void> {
  let last: string[] = []
  const deadline = Date.now() + 15000
  while (Date.now() < deadline) {
    last = await members(node)
    if (JSON.stringify(last) === JSON.stringify(expected)) return
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  expect(last).toEqual(expected)
}

describe('the cluster membership API', () => {
  it('lists a node alone as its only member, with its address', async () => {
    const { body } = await api(a, 'GET', '/cluster/')
    expect(body.data).toEqual([{ node: A, addr: a.cluster.mesh.addr, status: 'running', link: 'self' }])
  })

  it('joins another node through POST /cluster/join: both list both, linked', async () => {
    const joined = await api(b, 'POST', '/cluster/join', { node: `${A}:${a.cluster.mesh.port}` })
    expect([joined.status, joined.body.code]).toEqual([200, 0])
    expect(joined.body.data.map((m: any) => m.node)).toEqual([B, A])
    await until(b, [`${B} running self`, `${A} running up`])
    await until(a, [`${A} running self`, `${B} running up`])
    await waitFor(() => a.rpc.nodes().length === 2, 'a to call b over the mesh')
  })

  it('refuses to join the node itself (102), a bad name (108) and a body without node (107)', async () => {
    const self = await api(a, 'POST', '/cluster/join', { node: `${A}:${a.cluster.mesh.port}` })
    expect([self.status, self.body.code]).toEqual([400, 102])
    expect(self.body.message).toMatch(/this node/)
    const bad = await api(a, 'POST', '/cluster/join', { node: 'no at sign' })
    expect([bad.status, bad.body.code]).toEqual([400, 108])
    const missing = await api(a, 'POST', '/cluster/join', {})
    expect([missing.status, missing.body.code]).toEqual([400, 107])
  })

  it('refuses to force out a node that is no member (404) or the node itself (400)', async () => {
    const unknown = await api(a, 'DELETE', `/cluster/${encodeURIComponent('nobody@127.0.0.1')}/force_leave`)
    expect([unknown.status, unknown.body.code]).toEqual([404, 102])
    const self = await api(a, 'DELETE', `/cluster/${encodeURIComponent(A)}/force_leave`)
    expect([self.status, self.body.code]).toEqual([400, 102])
  })

  it('leaves through POST /cluster/leave: each node is alone again', async () => {
    const left = await api(b, 'POST', '/cluster/leave')
    expect([left.status, left.body.code]).toEqual([200, 0])
    expect(left.body.data.map((m: any) => m.node)).toEqual([B])
    await until(a, [`${A} running self`])
    await until(b, [`${B} running self`])
  })

  it('forces a member out through DELETE /cluster/:node/force_leave', async () => {
    await api(b, 'POST', '/cluster/join', { node: `${A}:${a.cluster.mesh.port}` })
    await until(a, [`${A} running self`, `${B} running up`])
    const forced = await api(a, 'DELETE', `/cluster/${encodeURIComponent(B)}/force_leave`)
    expect([forced.status, forced.body.code]).toEqual([200, 0])
    expect(forced.body.data.map((m: any) => m.node)).toEqual([A])
    // the member forced out reads its tombstone and forgets the cluster too
    await until(b, [`${B} running self`])
  })

  it('lists the endpoints in the index', async () => {
    const { body } = await api(a, 'GET', '/')
    const names = body.data.map((r: any) => `${r.method} ${r.path}`)
    expect(names).toEqual(expect.arrayContaining([
      'GET /api/v3/cluster/', 'POST /api/v3/cluster/join', 'POST /api/v3/cluster/leave', 'DELETE /api/v3/cluster/:node/force_leave'
    ]))
  })
})
