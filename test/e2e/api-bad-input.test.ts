import { startTestNode, API_AUTH, type TestNode } from '../helpers/node.js'
import { API_ROUTES } from '../../api/routes/index.js'
import { MAX_BODY_BYTES } from '../../api/server.js'
import type { RouteDef } from '../../api/route-table.js'

/**
 * Bad input for every endpoint of the route table (so endpoints added later are covered too):
 * no credentials, a body that is not JSON, a body missing its required fields, an oversized
 * body. Each answer has the spec's code, and the index and metrics show nothing changed.
 */
let node: TestNode
let base: string
beforeAll(async () => {
  node = await startTestNode()
  base = `http://127.0.0.1:${node.api.server!.port}`
})
afterAll(async () => { await node.destroy() })

/** A concrete URL for a route: path parameters filled with values that name nothing. */
function urlOf (route: RouteDef): string {
  return base + '/api/v3' + route.path.replace(/:node\b/, encodeURIComponent(node.name)).replace(/:([A-Za-z_]+)/g, 'no-such-$1')
}

const withBody = (): RouteDef[] => API_ROUTES.filter(r => r.body !== undefined)

describe('bad input on every endpoint', () => {
  it('has endpoints to check', () => {
    expect(API_ROUTES.length).toBeGreaterThan(0)
  })

  it('answers every endpoint without credentials with HTTP 401 and code 104', async () => {
    for (const route of API_ROUTES) {
      const res = await fetch(urlOf(route), { method: route.method })
      expect({ route: route.name, status: res.status }).toEqual({ route: route.name, status: 401 })
      expect((await res.json() as any).code).toBe(104)
    }
  })

  it('answers a body that is not JSON with code 109 and changes nothing', async () => {
    for (const route of withBody()) {
      const before = JSON.stringify(node.metrics)
      const res = await fetch(urlOf(route), { method: route.method, headers: { authorization: API_AUTH, 'content-type': 'application/json' }, body: '{not json' })
      const body = await res.json() as any
      expect({ route: route.name, code: body.code }).toEqual({ route: route.name, code: 109 })
      expect(res.status).toBe(400)
      // no message went anywhere (metrics count every packet and message)
      expect(JSON.parse(JSON.stringify(node.metrics))['messages/received']).toBe(JSON.parse(before)['messages/received'])
    }
  })

  it('answers a body missing required fields with code 107, or 108 for a wrong shape', async () => {
    for (const route of withBody()) {
      const schema = route.body as { type?: string, required?: string[] }
      const empty = schema.type === 'array' ? [] : {}
      const res = await fetch(urlOf(route), { method: route.method, headers: { authorization: API_AUTH, 'content-type': 'application/json' }, body: JSON.stringify(schema.type === 'array' ? 'x' : empty) })
      const body = await res.json() as any
      const expected = schema.type === 'array' ? 108 : (schema.required?.length ?? 0) > 0 ? 107 : body.code
      expect({ route: route.name, code: body.code }).toEqual({ route: route.name, code: expected })
    }
  })

  it('answers an oversized body with HTTP 413 and a code', async () => {
    const route = withBody()[0] ?? API_ROUTES[0]
    const res = await fetch(urlOf(route), { method: route.method === 'GET' ? 'POST' : route.method, headers: { authorization: API_AUTH, 'content-type': 'application/json' }, body: '"' + 'x'.repeat(MAX_BODY_BYTES + 10) + '"' })
    expect(res.status).toBe(413)
    expect(typeof (await res.json() as any).code).toBe('number')
  })
})
