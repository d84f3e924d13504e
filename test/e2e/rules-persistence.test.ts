/**
 * Rules, their enabled state and resources survive a restart on the same data directory:
 * they are reloaded and compiled again, and the rules fire after the restart.
 */
import { startTestNode, closeClients, connect, collect, waitFor, type TestNode } from '../helpers/node.js'
import { apiOf, settle } from './api-actions-client.js'
import { startHttpSink, type HttpSink } from '../rules/runtime/http-sink.js'

let node: TestNode
let sink: HttpSink
const api = apiOf(() => node)

beforeAll(async () => { sink = await startHttpSink() })
afterAll(async () => {
  await closeClients()
  await node.destroy()
  await sink.close()
})

describe('persistence over a restart', () => {
  it('reloads rules (enabled or not) and resources, and the rules still fire', async () => {
    node = await startTestNode({ 'broker.sys_interval': '0' })
    const resource = (await api('POST', '/resources', { name: 'sink', type: 'web_hook', config: { url: `${sink.url}/after`, headers: { 'x-k': 'v' } } })).body.data
    const republish = (await api('POST', '/rules', { name: 'keep', rawsql: 'SELECT payload FROM "ps/in"', actions: [{ name: 'republish', params: { target_topic: 'ps/out' } }], description: 'kept' })).body.data
    const hook = (await api('POST', '/rules', { rawsql: 'SELECT clientid FROM "ps/in"', actions: [{ name: 'data_to_webserver', params: { $resource: resource.id } }] })).body.data
    const off = (await api('POST', '/rules', { rawsql: 'SELECT * FROM "ps/in"', actions: [{ name: 'republish', params: { target_topic: 'ps/off' } }] })).body.data
    await api('PUT', `/rules/${off.id}`, { enabled: false })
    const before = (await api('GET', '/rules')).body.data
    await node.stop()

    node = await startTestNode({ 'broker.sys_interval': '0' }, node.dataDir)
    const after = (await api('GET', '/rules')).body.data
    const strip = (rules: any[]): unknown => rules.map(({ metrics: _m, actions, ...r }) => ({ ...r, actions: actions.map(({ metrics: _a, ...a }: any) => a) }))
    expect(strip(after)).toEqual(strip(before))
    expect(after.find((r: any) => r.id === off.id).enabled).toBe(false)
    expect((await api('GET', `/resources/${resource.id}`)).body.data).toMatchObject({ id: 'web_hook:sink', config: { url: `${sink.url}/after` } })
    expect(republish.id).toMatch(/^keep:\d+$/)
    sink.requests.length = 0 // the health check of GET /resources/:id

    const sub = await connect(node, { clientId: 'ps-sub' })
    await sub.subscribeAsync('ps/#')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'ps-pub' })
    await pub.publishAsync('ps/in', 'again')
    await waitFor(() => got.some(m => m.topic === 'ps/out'), 'the republished message')
    await waitFor(() => sink.requests.length === 1, 'the web hook request')
    await settle()
    expect(got.map(m => m.topic).sort()).toEqual(['ps/in', 'ps/out'])
    expect(JSON.parse(sink.requests[0].body)).toEqual({ clientid: 'ps-pub' })
    expect(sink.requests[0].headers['x-k']).toBe('v')
    expect((await api('GET', `/rules/${hook.id}`)).body.data.metrics[0].matched).toBe(1)
  })
})
