import { startTestNode, API_AUTH, type TestNode } from '../helpers/node.js'
import { EVERY_API_ROUTE as API_ROUTES } from '../helpers/api-routes.js'
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

// found by the API door of the fuzzer (bench/fuzz/api-door.ts): each was answered 500, code 102
describe('bad input Express meets before a handler', () => {
  const withParam = (): RouteDef[] => API_ROUTES.filter(r => /:[A-Za-z_]+/.test(r.path))

  it('answers a path parameter that is not valid percent-encoding with HTTP 400 and code 108', async () => {
    for (const route of withParam()) {
      for (const bad of ['%ZZ', '%', '%E0%A4%A']) {
        const url = base + '/api/v3' + route.path.replace(/:([A-Za-z_]+)/g, bad)
        const res = await fetch(url, { method: route.method, headers: { authorization: API_AUTH, 'content-type': 'application/json' }, body: route.method === 'GET' ? undefined : '{}' })
        expect({ route: route.name, bad, status: res.status, code: (await res.json() as any).code }).toEqual({ route: route.name, bad, status: 400, code: 108 })
      }
    }
  })

  it('answers a body it cannot read (unknown Content-Encoding, gzip that does not inflate) with HTTP 400 and code 109, and changes nothing', async () => {
    const before = await (await fetch(`${base}/api/v3/banned/`, { headers: { authorization: API_AUTH } })).json()
    const route = API_ROUTES.find(r => r.name === 'create_banned')!
    for (const encoding of ['x-bogus', 'identity, gzip', 'gzip', 'deflate', 'br']) {
      const res = await fetch(urlOf(route), { method: 'POST', headers: { authorization: API_AUTH, 'content-type': 'application/json', 'content-encoding': encoding }, body: JSON.stringify({ who: 'c1', as: 'client_id' }) })
      expect({ encoding, status: res.status, code: (await res.json() as any).code }).toEqual({ encoding, status: 400, code: 109 })
    }
    expect(await (await fetch(`${base}/api/v3/banned/`, { headers: { authorization: API_AUTH } })).json()).toEqual(before)
  })
})

describe("requests Node's HTTP parser refuses", () => {
  /** Writes `request` on a fresh connection and resolves with everything the node answered before closing. */
  async function raw (request: string): Promise<string> {
    const { connect } = await import('node:net')
    return await new Promise((resolve) => {
      const socket = connect(node.api.server!.port, '127.0.0.1')
      let text = ''
      socket.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
      socket.on('error', () => {})
      socket.once('connect', () => socket.write(request))
      socket.once('close', () => resolve(text))
    })
  }

  it('answers a request line and headers over 16 KiB with HTTP 431 and the error envelope', async () => {
    const res = await fetch(`${base}/api/v3/connections/${'x'.repeat(20_000)}`, { headers: { authorization: API_AUTH } })
    expect(res.status).toBe(431)
    expect(await res.json()).toEqual({ code: 102, message: 'request line and headers larger than 16384 bytes' })
  })

  it('answers a malformed request with HTTP 400 and the error envelope', async () => {
    const answer = await raw('GET /api/v3/ HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n')
    expect(answer).toMatch(/^HTTP\/1\.1 400 /)
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 102, message: expect.stringMatching(/^malformed HTTP request/) })
  })
})
