/**
 * What scripts written for EMQ X 3.4's `/api/v3/` call, over real HTTP: the API applications
 * (`/apps/`, codes 105/106/113, a secret answered once and never again, the same service as
 * `starling-ctl mgmt`), cleaning an away client's persistent session (cluster-wide and per
 * node), reloading a plugin, `DELETE /banned/:who` with `{"as": ...}` in the body, `by` in
 * banned entries and `type` in plugin entries. Bad input changes nothing.
 */
import { startTestNode, closeClients, connect, collect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, open } from '../helpers/mqtt.js'
import { runCtlOn } from '../helpers/ctl.js'
import { APPS_TABLE } from '../../node/apps/apps.js'
import { apiOf, expectError, type ApiAnswer } from './api-actions-client.js'

let node: TestNode
const api = apiOf(() => node)

beforeAll(async () => { node = await startTestNode() })
afterEach(async () => { await closeClients(); await closeOpened() })
afterAll(async () => { await node.destroy() })

const basic = (id: string, secret: string): string => 'Basic ' + Buffer.from(`${id}:${secret}`).toString('base64')

/** Calls the API with the credentials of application `id`. */
async function as (id: string, secret: string, method: string, path: string, body?: unknown): Promise<ApiAnswer> {
  const headers: Record<string, string> = { authorization: basic(id, secret) }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

/** The stored application records, for "nothing changed" checks. */
const storedApps = (): string => JSON.stringify([...node.shared.table(APPS_TABLE).entries()].sort())

describe('API applications (/apps/)', () => {
  afterEach(async () => {
    for (const app of node.services.apps.list()) if (app.app_id !== 'admin') await node.services.apps.delete(app.app_id)
  })

  it('adds an application and answers its generated secret once; that secret authenticates', async () => {
    const added = await api('POST', '/apps/', { app_id: 'reporting', name: 'Reporting', desc: 'nightly reports' })
    expect(added.status).toBe(200)
    expect(added.body.code).toBe(0)
    const secret: string = added.body.data.secret
    expect(secret).toMatch(/^\S{16,}$/)
    expect(added.body.data).toEqual({ app_id: 'reporting', name: 'Reporting', desc: 'nightly reports', status: true, expired: null, secret })
    expect((await as('reporting', secret, 'GET', '/brokers/')).status).toBe(200)
    expect((await as('reporting', 'wrong', 'GET', '/brokers/')).status).toBe(401)
  })

  it('keeps a given secret, and never serves a secret back in the list or the lookup', async () => {
    const added = await api('POST', '/apps/', { app_id: 'given', secret: 's3cret-of-mine', status: true, expired: null })
    expect(added.body.data.secret).toBe('s3cret-of-mine')
    const list = await api('GET', '/apps/')
    expect(list.body.code).toBe(0)
    expect(list.body.data.map((a: any) => a.app_id).sort()).toEqual(['admin', 'given'])
    for (const app of list.body.data) expect(Object.keys(app).sort()).toEqual(['app_id', 'desc', 'expired', 'name', 'status'])
    const one = await api('GET', '/apps/given')
    expect(one.body).toEqual({ code: 0, data: { app_id: 'given', name: 'given', desc: '', status: true, expired: null } })
    for (const body of [list.body, one.body, (await api('GET', '/apps/admin')).body]) {
      expect(JSON.stringify(body)).not.toMatch(/s3cret-of-mine|public|secret/)
    }
    expect(storedApps()).not.toContain('s3cret-of-mine')
  })

  it('changes name, desc, status and expired with PUT; a disabled or expired application cannot authenticate', async () => {
    const { secret } = (await api('POST', '/apps/', { app_id: 'ops' })).body.data
    const changed = await api('PUT', '/apps/ops', { name: 'Operations', desc: 'on call', status: false })
    expect(changed.body).toEqual({ code: 0, data: { app_id: 'ops', name: 'Operations', desc: 'on call', status: false, expired: null } })
    expect((await as('ops', secret, 'GET', '/brokers/')).status).toBe(401)
    expect((await api('PUT', '/apps/ops', { status: true })).body.data.name).toBe('Operations') // only the fields given change
    expect((await as('ops', secret, 'GET', '/brokers/')).status).toBe(200)
    await api('PUT', '/apps/ops', { expired: Math.floor(Date.now() / 1000) - 10 })
    expect((await as('ops', secret, 'GET', '/brokers/')).status).toBe(401)
    expect((await api('PUT', '/apps/ops', { expired: null })).body.data.expired).toBeNull()
    expect((await as('ops', secret, 'GET', '/brokers/')).status).toBe(200)
  })

  it('deletes an application; its credentials stop working', async () => {
    const { secret } = (await api('POST', '/apps/', { app_id: 'gone' })).body.data
    expect((await api('DELETE', '/apps/gone')).body).toEqual({ code: 0 })
    expect((await as('gone', secret, 'GET', '/brokers/')).status).toBe(401)
    expect(node.services.apps.lookup('gone')).toBeUndefined()
  })

  it('answers 113 for an id that exists, 105 for an unknown one, 106 for the default application, changing nothing', async () => {
    await api('POST', '/apps/', { app_id: 'taken', name: 'Taken' })
    const before = storedApps()
    const exists = await api('POST', '/apps/', { app_id: 'taken', name: 'Other', secret: 'other' })
    expectError(exists, 113, 400)
    expect(exists.body.message).toMatch(/taken already exists/)
    expectError(await api('POST', '/apps/', { app_id: 'admin' }), 113, 400)
    for (const [method, body] of [['GET'], ['PUT', { name: 'x' }], ['DELETE']] as Array<[string, unknown?]>) {
      const res = await api(method, '/apps/nobody', body)
      expectError(res, 105, 404)
      expect(res.body.message).toMatch(/application nobody does not exist/)
    }
    const admin = await api('DELETE', '/apps/admin')
    expectError(admin, 106, 400)
    expect(admin.body.message).toMatch(/default application admin cannot be deleted/)
    expect(storedApps()).toBe(before)
    expect((await api('GET', '/brokers/')).status).toBe(200) // the default application still works
  })

  it('refuses bad bodies with 107/108/109, storing nothing', async () => {
    const before = storedApps()
    const cases: Array<[string, string, unknown, number, boolean?]> = [
      ['POST', '/apps/', {}, 107],
      ['POST', '/apps/', { app_id: '' }, 107],
      ['POST', '/apps/', { app_id: 7 }, 108],
      ['POST', '/apps/', { app_id: 'a:b' }, 108],
      ['POST', '/apps/', { app_id: 'ok', status: 'yes' }, 108],
      ['POST', '/apps/', { app_id: 'ok', expired: 'soon' }, 108],
      ['POST', '/apps/', { app_id: 'ok', expired: -5 }, 108],
      ['POST', '/apps/', { app_id: 'ok', secret: '' }, 108],
      ['POST', '/apps/', { app_id: 'ok', name: ['x'] }, 108],
      ['POST', '/apps/', '{"app_id": ', 109, true],
      ['PUT', '/apps/admin', {}, 107],
      ['PUT', '/apps/admin', { status: 'off' }, 108],
      ['PUT', '/apps/admin', { secret: 'new-one' }, 108],
      ['PUT', '/apps/admin', [], 108]
    ]
    for (const [method, path, body, code, raw] of cases) {
      const res = await api(method, path, body, { raw })
      expect([method, path, body, res.body.code]).toEqual([method, path, body, code])
      expect(res.status).toBe(400)
    }
    expect(storedApps()).toBe(before)
    expect((await api('GET', '/brokers/')).status).toBe(200)
  })

  it('is the service starling-ctl mgmt uses: the API and the CLI list the same applications', async () => {
    const { secret } = (await api('POST', '/apps/', { app_id: 'from-api', name: 'FromApi' })).body.data
    const inserted = await runCtlOn(node, ['mgmt', 'insert', 'from-ctl', 'FromCtl'])
    expect(inserted.code).toBe(0)
    const json = await runCtlOn(node, ['--json', 'mgmt', 'list'])
    expect(json.code).toBe(0)
    const byId = (apps: any[]): any[] => [...apps].sort((a, b) => a.app_id < b.app_id ? -1 : 1)
    expect(byId(JSON.parse(json.out))).toEqual(byId((await api('GET', '/apps/')).body.data))
    expect(json.out).not.toContain(secret)
    const table = await runCtlOn(node, ['mgmt', 'list'])
    expect(table.out).toMatch(/from-api/)
    expect(table.out).not.toContain(secret)
    // an unknown id is 105 in both
    const lookup = await runCtlOn(node, ['mgmt', 'lookup', 'nobody'])
    expect(lookup.code).toBe(1)
    expect(lookup.err).toMatch(/application nobody does not exist/)
  })

  it('lists the five endpoints in the index under EMQ X\'s names', async () => {
    const index = (await api('GET', '/')).body.data.map((e: any) => `${e.name} ${e.method} ${e.path}`)
    expect(index).toEqual(expect.arrayContaining([
      'list_apps GET /api/v3/apps/', 'lookup_app GET /api/v3/apps/:appid', 'add_app POST /api/v3/apps/',
      'update_app PUT /api/v3/apps/:appid', 'del_app DELETE /api/v3/apps/:appid'
    ]))
  })
})

describe('cleaning a persistent session (/sessions/persistent/:clientid)', () => {
  /** Leaves a persistent session of `clientId` subscribed to `topic`, its client away. */
  async function awaySession (clientId: string, topic: string): Promise<void> {
    const client = await connect(node, { clientId, clean: false })
    await client.subscribeAsync(topic, { qos: 1 })
    await new Promise<void>(resolve => client.end(false, {}, () => resolve()))
    await waitFor(() => node.broker.core.client(clientId) === undefined, 'client gone')
  }
  const sessionOf = async (clientId: string): Promise<any[]> => (await api('GET', `/sessions/${clientId}`)).body.data

  it('drops an away session\'s subscriptions and queue: messages no longer queue and a reconnect finds no session', async () => {
    await awaySession('away-1', 'compat/away/1')
    expect((await api('POST', '/mqtt/publish', { topic: 'compat/away/1', payload: 'queued', qos: 1 })).body.code).toBe(0)
    expect(await sessionOf('away-1')).toEqual([expect.objectContaining({ client_id: 'away-1', mqueue_len: 1, subscriptions_count: 1 })])

    expect((await api('DELETE', '/sessions/persistent/away-1')).body).toEqual({ code: 0 })
    expect(await sessionOf('away-1')).toEqual([])
    expect((await api('GET', '/subscriptions/away-1')).body.data).toEqual([])
    expect((await api('GET', '/routes/compat%2Faway%2F1')).body.data).toEqual([])
    expect((await api('POST', '/mqtt/publish', { topic: 'compat/away/1', payload: 'lost', qos: 1 })).body.code).toBe(0)

    const back = await open(node, { clientId: 'away-1', clean: false })
    expect(back.connack.sessionPresent).toBe(false)
    await new Promise(resolve => setTimeout(resolve, 200))
    expect(back.messages).toEqual([])
  })

  it('cleans on the node named in the path', async () => {
    await awaySession('away-2', 'compat/away/2')
    expect((await api('DELETE', `/nodes/${node.name}/sessions/persistent/away-2`)).body).toEqual({ code: 0 })
    expect(await sessionOf('away-2')).toEqual([])
  })

  it('refuses a connected client\'s session (kick it first) and an unknown client, changing nothing', async () => {
    const online = await connect(node, { clientId: 'online-1', clean: false })
    await online.subscribeAsync('compat/online', { qos: 1 })
    for (const path of ['/sessions/persistent/online-1', `/nodes/${node.name}/sessions/persistent/online-1`]) {
      const res = await api('DELETE', path)
      expectError(res, 102, 400)
      expect(res.body.message).toMatch(/client online-1 is connected.*kick it first/)
    }
    expect(await sessionOf('online-1')).toEqual([expect.objectContaining({ subscriptions_count: 1 })])
    expect(online.connected).toBe(true)

    for (const path of ['/sessions/persistent/nobody', `/nodes/${node.name}/sessions/persistent/nobody`]) {
      const res = await api('DELETE', path)
      expectError(res, 102, 404)
      expect(res.body.message).toMatch(/no persistent session of client nobody/)
    }
    expectError(await api('DELETE', '/nodes/nobody@nowhere/sessions/persistent/online-1'), 102, 404)
  })

  it('publishes the will of a session it ends while the will waits for its delay [MQTT-3.1.3-9]', async () => {
    const watcher = await connect(node, { clientId: 'will-watcher' })
    await watcher.subscribeAsync('compat/will', { qos: 1 })
    const got = collect(watcher)
    const client = await connect(node, {
      clientId: 'will-away',
      protocolVersion: 5,
      clean: false,
      properties: { sessionExpiryInterval: 3600 },
      will: { topic: 'compat/will', payload: Buffer.from('gone'), qos: 1, retain: false, properties: { willDelayInterval: 3600 } }
    })
    await client.subscribeAsync('compat/will/self', { qos: 1 })
    ;(client as any).stream.destroy() // an unclean end: the will waits for its delay
    await waitFor(() => node.broker.core.client('will-away') === undefined, 'client gone')
    await new Promise(resolve => setTimeout(resolve, 100))
    expect(got).toEqual([])
    expect((await api('DELETE', '/sessions/persistent/will-away')).body).toEqual({ code: 0 })
    await waitFor(() => got.length === 1, 'the will')
    expect(got[0].payload.toString()).toBe('gone')
  })

  it('lists both endpoints in the index', async () => {
    const paths = (await api('GET', '/')).body.data.filter((e: any) => e.method === 'DELETE').map((e: any) => e.path)
    expect(paths).toEqual(expect.arrayContaining(['/api/v3/sessions/persistent/:clientid', '/api/v3/nodes/:node/sessions/persistent/:clientid']))
  })
})

describe('reloading a plugin (/plugins/:plugin/reload)', () => {
  it('reloads a loaded plugin cluster-wide and on a node: it stays active and keeps working', async () => {
    const loadsBefore = node.services.plugins.list().filter(p => p.active).map(p => p.name)
    expect((await api('PUT', '/plugins/svc_retainer/reload')).body).toEqual({ code: 0 })
    expect((await api('PUT', `/nodes/${node.name}/plugins/svc_retainer/reload`)).body).toEqual({ code: 0 })
    expect(node.services.plugins.isActive('svc_retainer')).toBe(true)
    expect(node.services.plugins.list().filter(p => p.active).map(p => p.name)).toEqual(loadsBefore)
    expect((await api('POST', '/mqtt/publish', { topic: 'compat/reload', payload: 'kept', retain: true, qos: 1 })).body.code).toBe(0)
    const late = await connect(node)
    const got = collect(late)
    await late.subscribeAsync('compat/reload', { qos: 1 })
    await waitFor(() => got.length === 1, 'retained message')
  })

  it('loads an inactive plugin, as EMQ X 3.4\'s reload did', async () => {
    expect(node.services.plugins.isActive('svc_auth_clientid')).toBe(false)
    expect((await api('PUT', `/nodes/${node.name}/plugins/svc_auth_clientid/reload`)).body).toEqual({ code: 0 })
    expect(node.services.plugins.isActive('svc_auth_clientid')).toBe(true)
    expect((await api('PUT', `/nodes/${node.name}/plugins/svc_auth_clientid/unload`)).body).toEqual({ code: 0 })
  })

  it('answers an unknown plugin or node with HTTP 404, changing nothing', async () => {
    const before = node.services.plugins.list()
    for (const path of ['/plugins/svc_nothing/reload', `/nodes/${node.name}/plugins/svc_nothing/reload`]) {
      const res = await api('PUT', path)
      expectError(res, 102, 404)
      expect(res.body.message).toMatch(/unknown plugin "svc_nothing"/)
    }
    expectError(await api('PUT', '/nodes/nobody@nowhere/plugins/svc_retainer/reload'), 102, 404)
    expect(node.services.plugins.list()).toEqual(before)
  })

  it('shows EMQ X 3.4\'s type in plugin entries', async () => {
    const plugins: any[] = (await api('GET', `/nodes/${node.name}/plugins/`)).body.data
    const types = Object.fromEntries(plugins.map(p => [p.name, p.type]))
    expect(types).toMatchObject({ svc_auth_clientid: 'auth', svc_auth_username: 'auth', svc_retainer: 'feature', svc_delayed_publish: 'feature', svc_rule_engine: 'feature', svc_management: 'feature' })
  })
})

describe('banned entries: DELETE with {"as": ...} in the body, and by', () => {
  const until = (): number => Math.floor(Date.now() / 1000) + 3600
  afterEach(async () => {
    for (const entry of node.services.banned.list()) await node.services.banned.delete(entry.who, entry.as)
  })

  it('records who banned: the request\'s by, else the API application', async () => {
    const mine = await api('POST', '/banned/', { who: 'by-app', as: 'client_id', until: until() })
    expect(mine.body.data).toEqual(expect.objectContaining({ who: 'by-app', as: 'client_id', by: 'admin' }))
    const { secret } = (await api('POST', '/apps/', { app_id: 'moderator' })).body.data
    await as('moderator', secret, 'POST', '/banned/', { who: 'by-moderator', as: 'username', until: until() })
    await api('POST', '/banned/', { who: 'by-given', as: 'client_id', by: 'dashboard', until: until() })
    const list = (await api('GET', '/banned/')).body.data
    expect(Object.fromEntries(list.map((e: any) => [e.who, e.by]))).toEqual({ 'by-app': 'admin', 'by-moderator': 'moderator', 'by-given': 'dashboard' })
    for (const entry of list) expect(Object.keys(entry)).toEqual(['who', 'as', 'reason', 'desc', 'by', 'until'])
    expectError(await api('POST', '/banned/', { who: 'x', as: 'client_id', by: 5 }), 108, 400)
    await node.services.apps.delete('moderator')
  })

  it('deletes with "as" in the JSON body (the spec\'s names and EMQ X 4\'s clientid / peerhost), or in the query', async () => {
    for (const [who, as] of [['b-client', 'client_id'], ['b-user', 'username'], ['10.9.8.7', 'ip_address'], ['b-client2', 'client_id'], ['10.9.8.6', 'ip_address'], ['b-query', 'client_id']]) {
      await api('POST', '/banned/', { who, as, until: until() })
    }
    expect((await api('DELETE', '/banned/b-client', { as: 'client_id' })).body).toEqual({ code: 0 })
    expect((await api('DELETE', '/banned/b-user', { as: 'username' })).body).toEqual({ code: 0 })
    expect((await api('DELETE', '/banned/10.9.8.7', { as: 'ip_address' })).body).toEqual({ code: 0 })
    expect((await api('DELETE', '/banned/b-client2', { as: 'clientid' })).body).toEqual({ code: 0 })
    expect((await api('DELETE', '/banned/10.9.8.6', { as: 'peerhost' })).body).toEqual({ code: 0 })
    expect((await api('DELETE', '/banned/b-query?as=client_id', { as: 'client_id' })).body).toEqual({ code: 0 })
    expect(node.services.banned.list()).toEqual([])
  })

  it('refuses a delete without as, with a wrong one, or with two different ones, changing nothing', async () => {
    await api('POST', '/banned/', { who: 'stays', as: 'client_id', until: until() })
    const before = node.services.banned.list()
    const cases: Array<[string, unknown, number, number, boolean?]> = [
      ['/banned/stays', undefined, 107, 400],
      ['/banned/stays', {}, 107, 400],
      ['/banned/stays', { as: '' }, 107, 400],
      ['/banned/stays', { as: 'nickname' }, 108, 400],
      ['/banned/stays', { as: 1 }, 108, 400],
      ['/banned/stays', ['client_id'], 108, 400],
      ['/banned/stays', '"client_id"', 108, 400, true],
      ['/banned/stays', '{"as": ', 109, 400, true],
      ['/banned/stays?as=username', { as: 'client_id' }, 108, 400],
      ['/banned/stays', { as: 'username' }, 102, 404]
    ]
    for (const [path, body, code, status, raw] of cases) {
      const res = await api('DELETE', path, body, { raw })
      expect([path, body, res.body.code, res.status]).toEqual([path, body, code, status])
    }
    expect(node.services.banned.list()).toEqual(before)
  })
})

it('authenticates every new route: no credentials is 401', async () => {
  for (const [method, path] of [['GET', '/apps/'], ['POST', '/apps/'], ['DELETE', '/sessions/persistent/x'], ['PUT', '/plugins/svc_retainer/reload']]) {
    const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3${path}`, { method })
    expect([path, res.status]).toEqual([path, 401])
  }
})
