import net from 'node:net'
import http from 'node:http'
import { once } from 'node:events'
import { startTestNode, API_AUTH, waitFor, type TestNode } from '../helpers/node.js'

let node: TestNode
let base: string
beforeAll(async () => {
  node = await startTestNode()
  base = `http://127.0.0.1:${node.api.server!.port}/api/v3`
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
    expect(await res.json()).toEqual({ code: 102, message: 'no endpoint GET /api/v3/no/such/thing; GET /api/v3/ lists them' })
  })

  it('stops with svc_management unloaded and starts again when loaded', async () => {
    await node.services.plugins.unload('svc_management')
    expect(node.api.server).toBeUndefined()
    await node.services.plugins.load('svc_management')
    base = `http://127.0.0.1:${node.api.server!.port}/api/v3`
    expect((await fetch(`${base}/`, { headers: { authorization: API_AUTH } })).status).toBe(200)
  })
})

describe('management.listener.http.max_conns', () => {
  let limited: TestNode
  beforeAll(async () => { limited = await startTestNode({ 'management.listener.http.max_conns': '3' }) })
  afterAll(async () => { await limited.destroy() })

  /** One API request on its own connection, closed after the answer (no keep-alive pool). */
  async function request (port: number, method: string, path: string, body?: unknown): Promise<{ status: number, json: any }> {
    const req = http.request({ host: '127.0.0.1', port, method, path: `/api/v3${path}`, agent: false, headers: { authorization: API_AUTH, 'content-type': 'application/json', connection: 'close' } })
    req.end(body === undefined ? undefined : JSON.stringify(body))
    const [res] = await once(req, 'response') as [http.IncomingMessage]
    const chunks: Buffer[] = []
    for await (const chunk of res) chunks.push(chunk as Buffer)
    return { status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString()) }
  }

  /** Opens a raw TCP connection to the API and resolves once it is accepted or closed. */
  async function open (port: number): Promise<net.Socket> {
    const socket = net.connect(port, '127.0.0.1')
    await once(socket, 'connect')
    return socket
  }

  it('closes connections beyond the limit unanswered and accepts again once one is gone', async () => {
    const port = limited.api.server!.port
    const held = [await open(port), await open(port), await open(port)]
    try {
      await waitFor(() => limited.api.server!.connections() === 3, 'three API connections open')
      const extra = await open(port)
      await once(extra, 'close')
      expect(limited.api.server!.connections()).toBe(3)
      held.pop()!.destroy()
      await waitFor(() => limited.api.server!.connections() === 2, 'one API connection gone')
      expect((await request(port, 'GET', '/')).status).toBe(200)
    } finally {
      for (const s of held) s.destroy()
    }
  })

  it('follows a change of the limit through the configs API without a restart', async () => {
    const port = limited.api.server!.port
    const answer = (await request(port, 'PUT', '/configs/starling', { 'management.listener.http.max_conns': 5 })).json
    expect(answer.code).toBe(0)
    expect(answer.data[0].applied).toContain('management.listener.http.max_conns')
    expect(limited.config['management.listener.http.max_conns']).toBe(5)
    await waitFor(() => limited.api.server!.connections() === 0, 'the PUT connection closed')
    const held = await Promise.all([1, 2, 3, 4, 5].map(async () => await open(port)))
    try {
      const extra = await open(port)
      await once(extra, 'close')
      expect(limited.api.server!.connections()).toBe(5)
    } finally {
      for (const s of held) s.destroy()
    }
  })
})
