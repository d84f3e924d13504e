/**
 * What scripts and monitoring written for EMQ X 4 call, over real HTTP: `GET /status`
 * without credentials (plain text, EMQ X 4's words), `/api/v4/` on the management listener
 * and, for a signed-in user, on the dashboard's, with EMQ X 4.4's paths and field names
 * (`/clients`, `clientid`, `ip_address`, banned `as: clientid`) where v3's differ.
 */
import { connect, closeClients, waitFor, API_AUTH } from '../helpers/node.js'
import { startDashNode, DASH_PASSWORD, type DashNode } from '../helpers/dashboard.js'

let dash: DashNode
const mgmt = (): string => `http://127.0.0.1:${dash.port('http:management')}`

beforeAll(async () => { dash = await startDashNode() })
afterEach(async () => { await closeClients() })
afterAll(async () => { await dash.destroy() })

/** `method path` on the management listener as the default application; status and JSON body. */
async function v4 (method: string, path: string, body?: unknown): Promise<{ status: number, body: any }> {
  const headers: Record<string, string> = { authorization: API_AUTH }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${mgmt()}/api/v4${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

describe('GET /status', () => {
  it.each([['management', mgmt], ['dashboard', () => dash.url]])('answers on the %s listener without credentials, as EMQ X 4', async (_which, base) => {
    const res = await fetch(`${base()}/status`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
    expect(await res.text()).toBe(`Node ${dash.node.name} is started\nstarling is running`)
  })
})

describe('/api/v4/ on the management listener', () => {
  it('needs the same credentials as /api/v3/', async () => {
    const res = await fetch(`${mgmt()}/api/v4/brokers/`)
    expect(res.status).toBe(401)
    expect(((await res.json()) as { code: number }).code).toBe(104)
  })

  it('serves every v3 endpoint, and its index lists EMQ X 4.4\'s clients endpoints', async () => {
    expect((await v4('GET', '/brokers/')).body.data[0].node).toBe(dash.node.name)
    const index: Array<{ name: string, method: string, path: string }> = (await v4('GET', '/')).body.data
    expect(index).toEqual(expect.arrayContaining([
      expect.objectContaining({ name: 'list_clients', method: 'GET', path: '/api/v4/clients/' }),
      expect.objectContaining({ name: 'lookup_client_via_username', path: '/api/v4/clients/username/:username' }),
      expect.objectContaining({ name: 'kickout_client', method: 'DELETE', path: '/api/v4/clients/:clientid' }),
      expect.objectContaining({ name: 'list_connections', path: '/api/v4/connections/' })
    ]))
  })

  it('lists, looks up and kicks clients with EMQ X 4.4\'s field names', async () => {
    await connect(dash.node, { clientId: 'v4-client', username: 'v4-user' })
    const listed = (await v4('GET', '/clients/')).body
    expect(listed.code).toBe(0)
    expect(listed.meta).toMatchObject({ page: 1, count: 1 })
    const client = listed.data[0]
    expect(client).toMatchObject({ clientid: 'v4-client', username: 'v4-user', ip_address: '127.0.0.1', connected: true, node: dash.node.name })
    expect(client).not.toHaveProperty('client_id')
    expect(client).not.toHaveProperty('ipaddress')
    expect((await v4('GET', '/clients/v4-client')).body.data).toEqual([expect.objectContaining({ clientid: 'v4-client' })])
    expect((await v4('GET', `/nodes/${dash.node.name}/clients/v4-client`)).body.data).toEqual([expect.objectContaining({ clientid: 'v4-client' })])
    expect((await v4('GET', '/clients/username/v4-user')).body.data).toEqual([expect.objectContaining({ clientid: 'v4-client' })])
    // v3 keeps its own names
    const v3 = await fetch(`${mgmt()}/api/v3/connections/v4-client`, { headers: { authorization: API_AUTH } })
    expect(((await v3.json()) as any).data[0]).toMatchObject({ client_id: 'v4-client', ipaddress: '127.0.0.1' })
    expect((await v4('DELETE', '/clients/v4-client')).body).toEqual({ code: 0 })
    await waitFor(() => dash.node.broker.connectionCount === 0, 'the kicked client to go')
  })

  it('reads clientid in request bodies and answers subscriptions with clientid', async () => {
    await connect(dash.node, { clientId: 'v4-sub' })
    expect((await v4('POST', '/mqtt/subscribe', { clientid: 'v4-sub', topic: 'v4/t', qos: 1 })).body).toEqual({ code: 0 })
    expect((await v4('GET', '/subscriptions/v4-sub')).body.data).toEqual([expect.objectContaining({ clientid: 'v4-sub', topic: 'v4/t', qos: 1 })])
    expect((await v4('POST', '/mqtt/publish', { clientid: 'v4-pub', topic: 'v4/t', payload: 'hi' })).body).toEqual({ code: 0 })
  })

  it('leaves clientid alone where v3 reads clientid too (auth_clientid)', async () => {
    if (!dash.node.services.plugins.isActive('svc_auth_clientid')) await dash.node.services.plugins.load('svc_auth_clientid')
    expect((await v4('POST', '/auth_clientid', { clientid: 'v4-cred', password: 'pw-1' })).body).toEqual({ code: 0 })
    expect((await v4('GET', '/auth_clientid/v4-cred')).body.data).toMatchObject({ clientid: 'v4-cred' })
    expect((await v4('DELETE', '/auth_clientid/v4-cred')).body).toEqual({ code: 0 })
  })

  it('answers banned entries with EMQ X 4.4\'s as values', async () => {
    expect((await v4('POST', '/banned/', { who: 'v4-banned', as: 'clientid', until: Math.floor(Date.now() / 1000) + 60 })).status).toBe(200)
    const entries: Array<{ who: string, as: string }> = (await v4('GET', '/banned/')).body.data
    expect(entries.find(e => e.who === 'v4-banned')?.as).toBe('clientid')
    expect((await v4('DELETE', '/banned/v4-banned?as=clientid')).body).toEqual({ code: 0 })
  })

  it('says where the v4 index is for an unknown v4 path', async () => {
    const answer = await v4('GET', '/no-such-thing')
    expect(answer.status).toBe(404)
    expect(answer.body.message).toMatch(/GET \/api\/v4\/ lists them/)
  })
})

describe('/api/v4/ on the dashboard listener', () => {
  it('signs in at /api/v4/auth and serves the signed-in user EMQ X 4.4\'s clients', async () => {
    await connect(dash.node, { clientId: 'v4-dash' })
    const signIn = await fetch(`${dash.url}/api/v4/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: DASH_PASSWORD }) })
    expect(signIn.status).toBe(200)
    const token: string = ((await signIn.json()) as any).data.token
    const res = await fetch(`${dash.url}/api/v4/clients/v4-dash`, { headers: { authorization: `Bearer ${token}` } })
    expect(res.status).toBe(200)
    expect(((await res.json()) as any).data).toEqual([expect.objectContaining({ clientid: 'v4-dash', connected: true })])
    expect((await fetch(`${dash.url}/api/v4/clients/`)).status).toBe(401)
  })
})
