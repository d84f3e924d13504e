/**
 * web_hook resources and actions against a real local HTTP server: the selected data as a
 * JSON body with the resource's headers and method, event_action's template filled with
 * `${key}` values, publish_action, the resource's health, and the counters: `matched` per
 * rule, `success` / `failed` per action (a server answering 500, a URL nobody listens on),
 * with delivery to MQTT subscribers unaffected by a failing hook.
 */
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
