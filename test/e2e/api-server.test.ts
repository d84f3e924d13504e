import { startTestNode, API_AUTH, type TestNode } from '../helpers/node.js'
import { managementApi } from '../../api/plugin.js'

let node: TestNode
let base: string
beforeAll(async () => {
  node = await startTestNode()
  base = `http://127.0.0.1:${managementApi(node)!.port}/api/v3`
})
afterAll(async () => { await node.destroy() })

describe('management API server', () => {
  it('refuses a request without credentials with HTTP 401 and code 104', async () => {
    const res = await fetch(`${base}/`)
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ code: 104 })
  })

  it('refuses wrong credentials with HTTP 401 and code 103', async () => {
    const res = await fetch(`${base}/`, { headers: { authorization: 'Basic ' + Buffer.from('admin:wrong').toString('base64') } })
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ code: 103 })
  })

  it('lists every endpoint at GET /api/v3/ with name, method, path and descr', async () => {
    const res = await fetch(`${base}/`, { headers: { authorization: API_AUTH } })
    expect(res.status).toBe(200)
    const body = await res.json() as any
    expect(body.code).toBe(0)
    expect(Array.isArray(body.data)).toBe(true)
    for (const entry of body.data) expect(Object.keys(entry).sort()).toEqual(['descr', 'method', 'name', 'path'])
  })

  it('serves an OpenAPI 3 document generated from the same table', async () => {
    const res = await fetch(`${base}/openapi.json`, { headers: { authorization: API_AUTH } })
    const doc = await res.json() as any
    expect(doc.openapi).toMatch(/^3\./)
    const index = await (await fetch(`${base}/`, { headers: { authorization: API_AUTH } })).json() as any
    expect(Object.keys(doc.paths).length).toBe(new Set(index.data.map((e: any) => e.path)).size)
  })

  it('answers an unknown path with HTTP 404 and a code', async () => {
    const res = await fetch(`${base}/no/such/thing`, { headers: { authorization: API_AUTH } })
    expect(res.status).toBe(404)
    expect((await res.json() as any).code).toBe(102)
  })

  it('stops with svc_management unloaded and starts again when loaded', async () => {
    await node.services.plugins.unload('svc_management')
    expect(managementApi(node)).toBeUndefined()
    await node.services.plugins.load('svc_management')
    base = `http://127.0.0.1:${managementApi(node)!.port}/api/v3`
    expect((await fetch(`${base}/`, { headers: { authorization: API_AUTH } })).status).toBe(200)
  })
})
