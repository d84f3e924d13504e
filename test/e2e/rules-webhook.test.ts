/**
 * web_hook resources and actions against a real local HTTP server: the selected data as a
 * JSON body with the resource's headers and method, data_to_webserver's EMQ X 4.4 params
 * (method, path and headers with `${key}` placeholders, body template), event_action's
 * template filled with `${key}` values, publish_action, resources and rules as earlier
 * versions stored them, the resource's health, and the counters: `matched` per rule,
 * `success` / `failed` per action (a server answering 500, a URL nobody listens on), with
 * delivery to MQTT subscribers unaffected by a failing hook.
 */
import { Hlc } from '../../node/store/shared.js'
import { RESOURCES_TABLE, RULES_TABLE } from '../../rules/engine.js'
import type { Resource, Rule } from '../../rules/types.js'
import { startTestNode, closeClients, connect, collect, waitFor, type TestNode } from '../helpers/node.js'
import { apiOf } from './api-actions-client.js'
import { deadUrl, startHttpSink, type HttpSink } from '../rules/runtime/http-sink.js'

let node: TestNode
let sink: HttpSink
const api = apiOf(() => node)

beforeAll(async () => {
  node = await startTestNode({ 'broker.sys_interval': '0' })
  sink = await startHttpSink()
})
afterEach(async () => {
  await closeClients()
  for (const rule of (await api('GET', '/rules')).body.data) await api('DELETE', `/rules/${rule.id}`)
  for (const res of (await api('GET', '/resources')).body.data) await api('DELETE', `/resources/${res.id}`)
  sink.requests.length = 0
  sink.status = 200
})
afterAll(async () => {
  await sink.close()
  await node.destroy()
})

async function createHook (name: string, config: Record<string, unknown>): Promise<string> {
  const res = await api('POST', '/resources', { name, type: 'web_hook', config, description: 'test hook' })
  expect(res.body.code).toBe(0)
  return res.body.data.id
}

async function createRule (rawsql: string, actions: unknown[]): Promise<string> {
  const res = await api('POST', '/rules', { rawsql, actions })
  expect(res.body).toMatchObject({ code: 0 })
  return res.body.data.id
}

/** The rule as `GET /rules/:id` shows it, once `ready` holds (polled; actions run asynchronously). */
async function ruleWhen (id: string, ready: (rule: any) => boolean): Promise<any> {
  let rule: any
  const deadline = Date.now() + 10000
  while (Date.now() < deadline) {
    rule = (await api('GET', `/rules/${id}`)).body.data
    if (ready(rule)) return rule
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return rule
}

describe('web_hook', () => {
  it('data_to_webserver POSTs the selected data as JSON with the resource headers', async () => {
    const id = await createHook('plain', { url: `${sink.url}/hook`, headers: { 'X-Token': 'abc', 'X-Other': 1 } })
    expect(id).toBe('web_hook:plain')
    await createRule('SELECT clientid, payload.temp as temp, topic FROM "wh/#"', [{ name: 'data_to_webserver', params: { $resource: id } }])
    const pub = await connect(node, { clientId: 'wh-pub' })
    await pub.publishAsync('wh/1', '{"temp":21.5}')
    await waitFor(() => sink.requests.length === 1, 'the request')
    const [req] = sink.requests
    expect([req.method, req.url]).toEqual(['POST', '/hook'])
    expect(req.headers['content-type']).toBe('application/json')
    expect(req.headers['x-token']).toBe('abc')
    expect(req.headers['x-other']).toBe('1')
    expect(JSON.parse(req.body)).toEqual({ clientid: 'wh-pub', temp: 21.5, topic: 'wh/1' })
  })

  it('uses the resource method', async () => {
    const id = await createHook('put', { url: `${sink.url}/put`, method: 'PUT' })
    await createRule('SELECT * FROM "client.connected" WHERE client_id = \'wh-put\'', [{ name: 'web_hook:event_action', params: { $resource: id } }])
    await connect(node, { clientId: 'wh-put' })
    await waitFor(() => sink.requests.length === 1, 'the request')
    expect(sink.requests[0].method).toBe('PUT')
    expect(JSON.parse(sink.requests[0].body)).toMatchObject({ event: 'client.connected', client_id: 'wh-put' })
  })

  it('event_action fills its template object with ${key} values', async () => {
    const id = await createHook('tmpl', { url: `${sink.url}/events`, headers: { authorization: 'Bearer t' } })
    await createRule('SELECT * FROM "$events/client_connected" WHERE clientid = \'wh-tmpl\'', [{
      name: 'web_hook:event_action',
      params: { $resource: id, template: { who: '${clientid}', alive: '${keepalive}', text: '${clientid} on ${node}', fixed: true } }
    }])
    await connect(node, { clientId: 'wh-tmpl', keepalive: 42 })
    await waitFor(() => sink.requests.length === 1, 'the request')
    expect(sink.requests[0].headers.authorization).toBe('Bearer t')
    expect(JSON.parse(sink.requests[0].body)).toEqual({ who: 'wh-tmpl', alive: 42, text: `wh-tmpl on ${node.name}`, fixed: true })
  })

  it('publish_action sends published messages; it cannot be bound to another event', async () => {
    const id = await createHook('pub', { url: `${sink.url}/pub` })
    await createRule('SELECT topic, payload FROM "message.publish" WHERE topic = \'wh/pa\'', [{ name: 'web_hook:publish_action', params: { $resource: id } }])
    const pub = await connect(node, { clientId: 'wh-pa' })
    await pub.publishAsync('wh/pa', 'hi')
    await waitFor(() => sink.requests.length === 1, 'the request')
    expect(JSON.parse(sink.requests[0].body)).toEqual({ topic: 'wh/pa', payload: 'hi' })
    const refused = await api('POST', '/rules', { rawsql: 'SELECT * FROM "client.connected"', actions: [{ name: 'web_hook:publish_action', params: { $resource: id } }] })
    expect(refused.status).toBe(400)
    expect(refused.body).toMatchObject({ code: 102, message: expect.stringMatching(/publish_action is for message.publish; it cannot run on client.connected/) })
  })

  it('data_to_webserver sends EMQ X 4.4\'s method, path and headers with placeholders, and its body template', async () => {
    const id = await createHook('emqx', { url: `${sink.url}/hook?from=starling`, connect_timeout: '2s', request_timeout: '3s', pool_size: 2, enable_pipelining: false })
    await createRule('SELECT clientid, topic, payload FROM "whp/#"', [{
      name: 'data_to_webserver',
      params: {
        $resource: id,
        method: 'PUT',
        path: '/devices/${clientid}?topic=${topic}',
        headers: { 'content-type': 'text/plain', 'X-Client': 'id ${clientid}', authorization: 'Bearer k' },
        body: 'temp=${payload.temp} from ${clientid}'
      }
    }])
    const pub = await connect(node, { clientId: 'dev 1/a' })
    await pub.publishAsync('whp/x', '{"temp":21.5}')
    await waitFor(() => sink.requests.length === 1, 'the request')
    const [req] = sink.requests
    // each value URL-encoded: a client id or topic never adds path segments
    expect([req.method, req.url]).toEqual(['PUT', '/hook/devices/dev%201%2Fa?from=starling&topic=whp%2Fx'])
    expect(req.headers).toMatchObject({ 'content-type': 'text/plain', 'x-client': 'id dev 1/a', authorization: 'Bearer k' })
    expect(req.body).toBe('temp=21.5 from dev 1/a')
  })

  it('data_to_webserver\'s defaults: POST, the URL as it is, content-type JSON, the selection as the body; GET and DELETE send no body', async () => {
    const id = await createHook('defaults', { url: `${sink.url}/d` })
    const ruleId = await createRule('SELECT payload FROM "whd/#"', [
      { name: 'data_to_webserver', params: { $resource: id } },
      { name: 'data_to_webserver', params: { $resource: id, method: 'GET', path: 'get' } },
      { name: 'data_to_webserver', params: { $resource: id, method: 'DELETE', path: 'del' } }
    ])
    expect((await api('GET', `/rules/${ruleId}`)).body.data.actions[0].params).toEqual({ $resource: id, method: 'POST', path: '', headers: { 'content-type': 'application/json' }, body: '' })
    const pub = await connect(node, { clientId: 'whd' })
    await pub.publishAsync('whd/1', 'hi')
    await waitFor(() => sink.requests.length === 3, 'three requests')
    const seen = sink.requests.map(r => [r.method, r.url, r.body, r.headers['content-type']]).sort()
    expect(seen).toEqual([['DELETE', '/d/del', '', 'application/json'], ['GET', '/d/get', '', 'application/json'], ['POST', '/d', '{"payload":"hi"}', 'application/json']])
  })

  it('refuses a resource whose TLS files cannot be read, naming the key (108)', async () => {
    const res = await api('POST', '/resources', { name: 'tls', type: 'web_hook', config: { url: 'https://127.0.0.1:1/x', verify: true, cacertfile: '/nonexistent/ca.pem' } })
    expect(res.status).toBe(400)
    expect(res.body).toEqual({ code: 108, message: 'resource type web_hook config: parameter cacertfile names a file that cannot be read (/nonexistent/ca.pem: ENOENT)' })
    expect(await api('POST', '/resources', { name: 'pool', type: 'web_hook', config: { url: sink.url, pool_size: 0 } })).toMatchObject({ status: 400, body: { code: 108 } })
    expect(await api('POST', '/resources', { name: 'dur', type: 'web_hook', config: { url: sink.url, connect_timeout: 'soon' } })).toMatchObject({ status: 400, body: { code: 108 } })
  })

  it('runs resources and rules as earlier versions stored them: resource headers, method and request_timeout in ms; payload_tmpl', async () => {
    // written as another node of the earlier version writes them (its clock a minute ahead, so they win)
    const peer = new Hlc('old@127.0.0.1', () => Date.now() + 60_000)
    const resource: Resource = {
      id: 'web_hook:old', name: 'old', type: 'web_hook', description: 'stored before',
      config: { url: `${sink.url}/old`, headers: { 'X-K': 'v', authorization: 'Bearer old' }, method: 'PUT', request_timeout: 3000 },
      attrs: 'undefined', created_at: Date.now()
    }
    const rule: Rule = {
      id: 'old_rule:1', for: 'message.publish', rawsql: 'SELECT clientid, payload FROM "who/#"', enabled: true, description: '', created_at: Date.now(),
      actions: [
        { id: 'data_to_webserver_old_0', name: 'data_to_webserver', params: { $resource: resource.id, payload_tmpl: 'from ${clientid}' } },
        { id: 'data_to_webserver_old_1', name: 'data_to_webserver', params: { $resource: resource.id, payload_tmpl: '' } },
        { id: 'publish_action_old_2', name: 'web_hook:publish_action', params: { $resource: resource.id } }
      ]
    }
    expect(await node.shared.apply({ table: RESOURCES_TABLE, key: resource.id, value: resource, stamp: peer.next() })).toBe(true)
    expect(await node.shared.apply({ table: RULES_TABLE, key: rule.id, value: rule, stamp: peer.next() })).toBe(true)
    await waitFor(() => node.rules.rules.list().some(r => r.id === rule.id), 'the stored rule')
    const pub = await connect(node, { clientId: 'who-pub' })
    await pub.publishAsync('who/1', 'x')
    await waitFor(() => sink.requests.length === 3, 'three requests')
    for (const req of sink.requests) {
      expect([req.method, req.url]).toEqual(['PUT', '/old'])
      expect(req.headers).toMatchObject({ 'content-type': 'application/json', 'x-k': 'v', authorization: 'Bearer old' })
    }
    expect(sink.requests.map(r => r.body).sort()).toEqual(['from who-pub', '{"clientid":"who-pub","payload":"x"}', '{"clientid":"who-pub","payload":"x"}'])
    // shown as stored, the header values masked
    expect((await api('GET', '/resources/web_hook:old')).body.data.config).toEqual({ ...resource.config, headers: { 'X-K': '******', authorization: '******' } })
    await api('DELETE', `/rules/${rule.id}`)
  })

  it('reports the health of a resource in status.is_alive', async () => {
    const alive = await createHook('alive', { url: `${sink.url}/x` })
    const dead = await createHook('dead', { url: await deadUrl() })
    expect((await api('GET', `/resources/${alive}`)).body.data.status).toEqual([{ node: node.name, is_alive: true }])
    expect((await api('GET', `/resources/${dead}`)).body.data.status).toEqual([{ node: node.name, is_alive: false }])
  })
})

describe('metrics', () => {
  it('counts matches and action success / failed; a failing hook never stops delivery', async () => {
    const ok = await createHook('ok', { url: `${sink.url}/ok` })
    const dead = await createHook('gone', { url: await deadUrl(), request_timeout: 2000 })
    const ruleId = await createRule('SELECT * FROM "mt/#" WHERE payload.n > 0', [
      { name: 'data_to_webserver', params: { $resource: ok } },
      { name: 'data_to_webserver', params: { $resource: dead } },
      { name: 'do_nothing', params: {} }
    ])
    const sub = await connect(node, { clientId: 'mt-sub' })
    await sub.subscribeAsync('mt/#', { qos: 1 })
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'mt-pub' })
    for (const n of [1, 2, 0, 3]) await pub.publishAsync('mt/a', JSON.stringify({ n }), { qos: 1 })
    await pub.publishAsync('mt/a', 'not json', { qos: 1 })
    await waitFor(() => got.length === 5, 'every message delivered')
    await waitFor(() => sink.requests.length === 3, 'three requests')
    const rule = await ruleWhen(ruleId, r => r.actions[1].metrics[0].failed === 3)
    expect(rule.metrics).toEqual([{ node: node.name, matched: 3, speed: expect.any(Number), speed_max: expect.any(Number), speed_last5m: expect.any(Number), failed: 1 }])
    expect(rule.actions.map((a: any) => a.metrics[0])).toEqual([
      { node: node.name, taken: 3, success: 3, failed: 0 },
      { node: node.name, taken: 3, success: 0, failed: 3 },
      { node: node.name, taken: 3, success: 3, failed: 0 }
    ])
  })

  it('counts an HTTP error status as failed', async () => {
    sink.status = 500
    const id = await createHook('err', { url: `${sink.url}/err` })
    const ruleId = await createRule('SELECT * FROM "me/1"', [{ name: 'data_to_webserver', params: { $resource: id } }])
    const pub = await connect(node, { clientId: 'me-pub' })
    await pub.publishAsync('me/1', 'x')
    await waitFor(() => sink.requests.length === 1, 'the request')
    const rule = await ruleWhen(ruleId, r => r.actions[0].metrics[0].failed === 1)
    expect(rule.actions[0].metrics[0]).toMatchObject({ success: 0, failed: 1 })
  })
})
