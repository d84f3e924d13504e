/**
 * `/api/v3/banned/`, `/api/v3/auth_username` and `/api/v3/auth_clientid` over real HTTP
 * with real mqtt.js clients: a banned entry refuses a CONNECT (CONNACK 0x8A), a credential
 * entry lets a client in when anonymous access is off, and the bad inputs change nothing.
 */
import { startTestNode, closeClients, connect, type TestNode } from '../helpers/node.js'
import { closeOpened, refusedConnack } from '../helpers/mqtt.js'
import { apiOf, expectError } from './api-actions-client.js'

afterEach(async () => { await closeClients(); await closeOpened() })

describe('banned', () => {
  let node: TestNode
  const api = apiOf(() => node)
  beforeAll(async () => { node = await startTestNode() })
  afterAll(async () => { await node.destroy() })
  const inAnHour = (): number => Math.floor(Date.now() / 1000) + 3600

  it('creates an entry that refuses a CONNECT with 0x8A, and deletes it', async () => {
    const entry = { who: 'api-banned', as: 'client_id', reason: 'testing', desc: 'by the API', until: inAnHour() }
    // `by`: the API application that made the request (EMQ X 3.4's field)
    const stored = { ...entry, by: 'admin' }
    expect(await api('POST', '/banned/', entry)).toEqual({ status: 200, body: { code: 0, data: stored } })
    expect((await refusedConnack(node, { clientId: 'api-banned', protocolVersion: 5 }))?.reasonCode).toBe(0x8a)
    expect((await api('GET', '/banned/')).body.data).toEqual([stored])
    expect((await api('DELETE', '/banned/api-banned?as=client_id')).body).toEqual({ code: 0 })
    expect((await api('GET', '/banned/')).body.data).toEqual([])
    await connect(node, { clientId: 'api-banned', protocolVersion: 5 })
  })

  it('lists entries by page with meta {page, limit, count}, defaulting reason, desc and until', async () => {
    for (const who of ['u1', 'u2', 'u3']) expect((await api('POST', '/banned/', { who, as: 'username' })).body.code).toBe(0)
    const page = await api('GET', '/banned/?_page=2&_limit=2')
    expect(page.body.meta).toEqual({ page: 2, limit: 2, count: 3 })
    expect(page.body.data).toHaveLength(1)
    const [first] = (await api('GET', '/banned/')).body.data
    expect(first).toMatchObject({ who: 'u1', as: 'username', reason: '', desc: '' })
    expect(first.until).toBeGreaterThan(Date.now() / 1000)
    for (const who of ['u1', 'u2', 'u3']) expect((await api('DELETE', `/banned/${who}?as=username`)).body.code).toBe(0)
  })

  it('refuses bad input with its code and stores nothing', async () => {
    const cases: Array<[unknown, number, boolean?]> = [
      ['{"who": ', 109, true],
      [{ as: 'client_id' }, 107],
      [{ who: 'x' }, 107],
      [{ who: '', as: 'client_id' }, 107],
      [{ who: 5, as: 'client_id' }, 108],
      [{ who: 'x', as: 'nickname' }, 108],
      [{ who: 'not-an-ip', as: 'ip_address' }, 108],
      [{ who: 'x', as: 'client_id', reason: 1 }, 108],
      [{ who: 'x', as: 'client_id', until: 'soon' }, 108],
      [{ who: 'x', as: 'client_id', until: 1000 }, 108],
      [{ who: 'x', as: 'client_id', until: Date.now() + 60000 }, 108]
    ]
    for (const [body, code, raw] of cases) expectError(await api('POST', '/banned/', body, { raw }), code, 400)
    expect(node.services.banned.list()).toEqual([])
  })

  it('answers a delete of an unknown entry with 404, and one without as with 107', async () => {
    await api('POST', '/banned/', { who: 'stays', as: 'client_id' })
    expectError(await api('DELETE', '/banned/nobody?as=client_id'), 102, 404)
    expectError(await api('DELETE', '/banned/stays?as=username'), 102, 404)
    expectError(await api('DELETE', '/banned/stays'), 107, 400)
    expectError(await api('DELETE', '/banned/stays?as=nickname'), 108, 400)
    expect(node.services.banned.list().map(e => e.who)).toEqual(['stays'])
    await api('DELETE', '/banned/stays?as=client_id')
  })
})

describe('auth_username and auth_clientid', () => {
  let node: TestNode
  const api = apiOf(() => node)
  beforeAll(async () => { node = await startTestNode({ allow_anonymous: 'false' }) })
  afterAll(async () => { await node.destroy() })

  it('adds a username that lets a client CONNECT while anonymous access is off', async () => {
    expect((await api('PUT', `/nodes/${node.name}/plugins/svc_auth_username/load`)).body.code).toBe(0)
    expect((await refusedConnack(node, { clientId: 'c-alice', username: 'alice', password: 'wonderland', protocolVersion: 4 }))?.returnCode).toBe(5)
    expect(await api('POST', '/auth_username', { username: 'alice', password: 'wonderland' })).toEqual({ status: 200, body: { code: 0 } })
    await connect(node, { clientId: 'c-alice', username: 'alice', password: 'wonderland', protocolVersion: 4 })
    expect((await refusedConnack(node, { clientId: 'c-alice-2', username: 'alice', password: 'wrong', protocolVersion: 4 }))?.returnCode).toBe(4)
  })

  it('lists, shows (the stored hash), updates and deletes a username', async () => {
    const list = await api('GET', '/auth_username')
    expect(list.body).toEqual({ code: 0, data: ['alice'], meta: { page: 1, limit: 10000, count: 1 } })
    const shown = await api('GET', '/auth_username/alice')
    expect(Object.keys(shown.body.data).sort()).toEqual(['password', 'username'])
    expect(shown.body.data.username).toBe('alice')
    expect(shown.body.data.password).toMatch(/^[0-9a-f]{64}$/) // salted sha256, never the password
    expect((await api('PUT', '/auth_username/alice', { password: 'looking-glass' })).body).toEqual({ code: 0 })
    await connect(node, { clientId: 'c-alice-3', username: 'alice', password: 'looking-glass', protocolVersion: 4 })
    expect((await refusedConnack(node, { clientId: 'c-alice-4', username: 'alice', password: 'wonderland', protocolVersion: 4 }))?.returnCode).toBe(4)
    expect((await api('DELETE', '/auth_username/alice')).body).toEqual({ code: 0 })
    expectError(await api('GET', '/auth_username/alice'), 105, 404)
    expect((await refusedConnack(node, { clientId: 'c-alice-5', username: 'alice', password: 'looking-glass', protocolVersion: 4 }))?.returnCode).toBe(5)
  })

  it('refuses bad input with its code and changes nothing', async () => {
    expect((await api('POST', '/auth_username', { username: 'bob', password: 'builder' })).body.code).toBe(0)
    const bobBefore = (await api('GET', '/auth_username/bob')).body.data
    const postCases: Array<[unknown, number, boolean?]> = [
      ['{"username": "x"', 109, true],
      [{ password: 'p' }, 107],
      [{ username: 'carol' }, 107],
      [{ username: 5, password: 'p' }, 108],
      [{ username: 'carol', password: ['p'] }, 108],
      [{ username: '', password: 'p' }, 104],
      [{ username: 'carol', password: '' }, 104],
      [{ username: 'bob', password: 'other' }, 113]
    ]
    for (const [body, code, raw] of postCases) expectError(await api('POST', '/auth_username', body, { raw }), code)
    expectError(await api('PUT', '/auth_username/bob', {}), 107, 400)
    expectError(await api('PUT', '/auth_username/bob', { password: 42 }), 108, 400)
    expectError(await api('PUT', '/auth_username/bob', { password: '' }), 104)
    expectError(await api('PUT', '/auth_username/bob', 'password=x', { raw: true }), 109, 400)
    expectError(await api('PUT', '/auth_username/nobody', { password: 'x' }), 105, 404)
    expectError(await api('DELETE', '/auth_username/nobody'), 105, 404)
    expect((await api('GET', '/auth_username')).body.data).toEqual(['bob'])
    expect((await api('GET', '/auth_username/bob')).body.data).toEqual(bobBefore)
  })

  it('manages client ids while svc_auth_clientid is not loaded; loading it checks CONNECTs against them', async () => {
    expect(node.services.plugins.isActive('svc_auth_clientid')).toBe(false)
    expect((await api('POST', '/auth_clientid', { clientid: 'sensor-1', password: 's3cret' })).body).toEqual({ code: 0 })
    expect((await api('GET', '/auth_clientid')).body.data).toEqual(['sensor-1'])
    expect((await api('GET', '/auth_clientid/sensor-1')).body.data.clientid).toBe('sensor-1')
    expectError(await api('POST', '/auth_clientid', { clientid: 'sensor-1', password: 'x' }), 113, 400)
    expectError(await api('GET', '/auth_clientid/sensor-2'), 105, 404)
    expect((await refusedConnack(node, { clientId: 'sensor-1', username: 'any', password: 's3cret', protocolVersion: 4 }))?.returnCode).toBe(5)
    expect((await api('PUT', `/nodes/${node.name}/plugins/svc_auth_clientid/load`)).body.code).toBe(0)
    await connect(node, { clientId: 'sensor-1', username: 'any', password: 's3cret', protocolVersion: 4 })
  })
})
