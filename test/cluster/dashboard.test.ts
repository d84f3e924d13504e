/**
 * svc_dashboard over a cluster of two in-process nodes: the dashboard users and the signing
 * keys are cluster-wide, so a session signed in on one node is accepted on the other (a load
 * balancer may send the browser to either), a user added on one signs in on the other, and a
 * sign-out on one ends the session on both.
 */
import { startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import { SIGNING_KEYS_TABLE } from '../../plugins/dashboard/sessions.js'
import { DASHBOARD_USERS_TABLE } from '../../plugins/dashboard/users.js'

const A = 'a@127.0.0.1'
const B = 'b@127.0.0.1'
const PASSWORD = 'cluster-admin-1'

let a: TestNode, b: TestNode

/** The bound port of a node's dashboard listener. */
function dashboardPort (node: TestNode): number {
  const entry = node.listenerBoard.list().find(l => l.protocol === 'http:dashboard')
  return Number(String(entry?.listen_on).split(':').pop())
}

async function call (node: TestNode, method: string, path: string, opts: { body?: unknown, token?: string } = {}): Promise<{ status: number, body: any }> {
  const headers: Record<string, string> = {}
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`
  const res = await fetch(`http://127.0.0.1:${dashboardPort(node)}/api/v3${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
  return { status: res.status, body: await res.json() }
}

/** Whether both nodes hold the same entries of a shared table. */
function sameTable (table: string): boolean {
  const entries = (n: TestNode): string => JSON.stringify([...n.shared.table(table).entries()].sort())
  return entries(a) === entries(b)
}

beforeAll(async () => {
  a = await startTestNode({ 'node.name': A, 'broker.sys_interval': '0', 'dashboard.default_user.password': PASSWORD })
  b = await startTestNode({ 'node.name': B, 'broker.sys_interval': '0', 'dashboard.default_user.password': PASSWORD })
  await b.cluster.join(`${A}:${a.cluster.mesh.port}`)
  await waitFor(() => a.rpc.nodes().length === 2 && b.rpc.nodes().length === 2, 'a cluster of two')
  await waitFor(() => sameTable(SIGNING_KEYS_TABLE) && sameTable(DASHBOARD_USERS_TABLE), 'the dashboard tables replicated')
})

afterAll(async () => {
  await b?.destroy()
  await a?.destroy()
})

describe('svc_dashboard in a cluster', () => {
  it('keeps one signing key per node, both on every node', () => {
    expect([...a.shared.table(SIGNING_KEYS_TABLE).entries()].map(([k]) => k).sort()).toEqual([A, B])
  })

  it('accepts on node B a session token node A signed, and a sign-out on B ends it on A', async () => {
    const signed = await call(a, 'POST', '/auth', { body: { username: 'admin', password: PASSWORD } })
    expect(signed.body.code).toBe(0)
    const token: string = signed.body.data.token
    const onB = await call(b, 'GET', '/nodes/', { token })
    expect(onB.body.code).toBe(0)
    expect(onB.body.data.map((x: any) => x.node).sort()).toEqual([A, B])
    expect((await call(b, 'POST', '/logout', { token })).body).toEqual({ code: 0 })
    await waitFor(() => sameTable(DASHBOARD_USERS_TABLE), 'the sign-out replicated')
    expect((await call(a, 'GET', '/nodes/', { token })).status).toBe(401)
  })

  it('signs in on B a user added on A', async () => {
    const token = (await call(a, 'POST', '/auth', { body: { username: 'admin', password: PASSWORD } })).body.data.token
    expect((await call(a, 'POST', '/users', { token, body: { username: 'fay', password: 'fay-pass-1', tags: '' } })).body).toEqual({ code: 0 })
    await waitFor(() => b.shared.table(DASHBOARD_USERS_TABLE).has('fay'), 'the user replicated')
    expect((await call(b, 'POST', '/auth', { body: { username: 'fay', password: 'fay-pass-1' } })).body.code).toBe(0)
  })
})
