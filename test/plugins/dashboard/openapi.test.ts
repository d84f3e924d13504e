/**
 * The OpenAPI document served on the dashboard listener lists everything the listener serves
 * under `/api/v3/`: every route of its index (the management API's, the dashboard's users
 * and monitor), and sign-in, who-am-i and sign-out, which app.ts serves outside the route
 * table, with the session cookie and bearer token as security schemes. The management
 * listener's document stays HTTP Basic only, without them.
 */
import { startTestNode, API_AUTH, type TestNode } from '../../helpers/node.js'

const PASSWORD = 'openapi-admin-1'
let node: TestNode

beforeAll(async () => {
  node = await startTestNode({ 'dashboard.default_user.password': PASSWORD })
})

afterAll(async () => {
  await node?.destroy()
})

function dashboardPort (): number {
  const entry = node.listenerBoard.list().find(l => l.protocol === 'http:dashboard')
  return Number(String(entry?.listen_on).split(':').pop())
}

async function getJson (url: string, authorization: string): Promise<any> {
  return await (await fetch(url, { headers: { authorization } })).json()
}

describe('GET /api/v3/openapi.json', () => {
  it('on the dashboard listener: every indexed route, and POST /auth, GET /auth and POST /logout', async () => {
    const basic = 'Basic ' + Buffer.from(`admin:${PASSWORD}`).toString('base64')
    const base = `http://127.0.0.1:${dashboardPort()}/api/v3`
    const doc = await getJson(`${base}/openapi.json`, basic)
    const index: Array<{ method: string, path: string }> = (await getJson(`${base}/`, basic)).data
    for (const r of index) {
      expect([r.method, r.path, doc.paths[r.path.replace(/:(\w+)/g, '{$1}')]?.[r.method.toLowerCase()] !== undefined]).toEqual([r.method, r.path, true])
    }
    expect(doc.paths['/api/v3/monitor/counters'].get.operationId).toBe('monitor_counters')
    expect(doc.paths['/api/v3/auth'].post.operationId).toBe('auth')
    expect(doc.paths['/api/v3/auth'].post.requestBody.content['application/json'].schema.required).toEqual(['username', 'password'])
    expect(doc.paths['/api/v3/auth'].get.operationId).toBe('whoami')
    expect(doc.paths['/api/v3/logout'].post.operationId).toBe('logout')
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['basic', 'session', 'bearer'])
    expect(doc.components.securitySchemes.session).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'starling_dashboard_session' })
    expect(doc.security).toEqual([{ basic: [] }, { session: [] }, { bearer: [] }])
  })

  it('on the management listener: HTTP Basic only, no dashboard sign-in', async () => {
    const doc = await getJson(`http://127.0.0.1:${node.api.server!.port}/api/v3/openapi.json`, API_AUTH)
    expect(doc.paths['/api/v3/auth']).toBeUndefined()
    expect(doc.paths['/api/v3/monitor/counters']).toBeUndefined()
    expect(doc.components.securitySchemes).toEqual({ basic: { type: 'http', scheme: 'basic' } })
    expect(doc.security).toEqual([{ basic: [] }])
  })
})
