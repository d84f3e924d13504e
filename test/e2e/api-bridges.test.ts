/**
 * `/api/v3/bridges` and `/api/v3/nodes/:node/bridges/...` on a real node, and the `bridges`
 * commands through starling-ctl, first without svc_bridge_mqtt (every answer says it is not
 * loaded), then over the bridge operations registered by a stand-in of the plugin (plain
 * objects, no remote): envelope, pagination, codes (115, 116, 107, 404), URL-encoded topics,
 * the cluster-wide list, and the per-bridge `$SYS` topics and `bridge.mqtt.*` metrics.
 * test/e2e/bridges-ctl.test.ts runs the same surfaces over the real plugin and a Mosquitto.
 */
import { startTestNode, API_AUTH, connect, closeClients, collect, waitFor, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { attachBridgeControl } from '../../plugins/bridge_mqtt/ctl.js'
import type { BridgeInfo } from '../../plugins/bridge_mqtt/types.js'
import { bridgeInfo, registerBridgesStandIn } from '../helpers/bridges-stand-in.js'

let node: TestNode
let detach: (() => Promise<void>) | null = null
const bridges: BridgeInfo[] = []

const info = bridgeInfo

/** svc_bridge_mqtt's operations over `bridges` (what the plugin registers while loaded). */
function registerStandIn (): void {
  registerBridgesStandIn(node.rpc, bridges, 'connected')
}

async function api (path: string, method = 'GET', body?: unknown): Promise<{ status: number, body: any }> {
  const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3${path}`, {
    method,
    headers: { authorization: API_AUTH, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: await res.json() }
}

const ctl = async (...argv: string[]): Promise<{ code: number, out: string, err: string }> => await runCtlOn(node, argv)
let base: string

beforeAll(async () => {
  // a short $SYS interval, so the bridges' topics come within the test
  node = await startTestNode({ 'broker.sys_interval': '200ms' })
  // svc_bridge_mqtt's definition attaches the control surfaces; without the plugin in this
  // node's list, the test attaches them as the plugin manager would
  if (!node.control.commands().includes('bridges list')) detach = await attachBridgeControl(node)
  base = `/nodes/${encodeURIComponent(node.name)}/bridges`
})
afterAll(async () => {
  await closeClients()
  await detach?.()
  await node.destroy()
})

describe('without svc_bridge_mqtt', () => {
  it('answers 102 (HTTP 400) "not loaded" on the node\'s endpoints, an empty cluster-wide list', async () => {
    const notLoaded = `plugin svc_bridge_mqtt is not loaded on ${node.name}; load it first with \`starling-ctl plugins load svc_bridge_mqtt\``
    for (const [method, path, body] of [
      ['GET', '/'], ['GET', '/aws'], ['PUT', '/aws/start'], ['PUT', '/aws/stop'], ['GET', '/aws/forwards'],
      ['POST', '/aws/forwards', { topic: 'a/#' }], ['DELETE', '/aws/forwards/a%2F%23'], ['GET', '/aws/subscriptions'],
      ['POST', '/aws/subscriptions', { topic: 'c/#', qos: 1 }], ['DELETE', '/aws/subscriptions/c%2F%23']
    ] as Array<[string, string, unknown?]>) {
      const res = await api(base + path, method, body)
      expect({ path: `${method} ${path}`, status: res.status, body: res.body }).toEqual({ path: `${method} ${path}`, status: 400, body: { code: 102, message: notLoaded } })
    }
    expect((await api('/bridges/')).body).toEqual({ code: 0, data: [], meta: { page: 1, limit: 10000, count: 0 } })
  })

  it('answers every bridges command with the same message, exit 1', async () => {
    const r = await ctl('bridges', 'list')
    expect(r).toEqual({ code: 1, out: '', err: expect.stringMatching(/^plugin svc_bridge_mqtt is not loaded on /) })
    expect((await ctl('bridges', 'start', 'aws')).err).toMatch(/^plugin svc_bridge_mqtt is not loaded/)
  })

  it('still checks input first: 116 for a bad qos, 115 for a bad topic', async () => {
    expect((await api(`${base}/aws/subscriptions`, 'POST', { topic: 'c/#', qos: 3 })).body.code).toBe(116)
    expect((await api(`${base}/aws/forwards`, 'POST', { topic: 'a/#/b' })).body.code).toBe(115)
    expect(await ctl('bridges', 'add-subscription', 'aws', 'cmd/#', '3'))
      .toEqual({ code: 1, out: '', err: 'Add-subscription failed reason: qos must be 0, 1 or 2, not "3".\n' })
  })

  it('prints the bridges subcommands for `bridges` alone', async () => {
    const r = await ctl('bridges')
    expect(r.code).not.toBe(0)
    const help = r.out + r.err
    for (const sub of ['list', 'start', 'stop', 'forwards', 'add-forward', 'del-forward', 'subscriptions', 'add-subscription', 'del-subscription']) expect(help).toContain(sub)
  })
})

describe('over the bridge operations (stand-in plugin)', () => {
  beforeAll(() => {
    bridges.push(info('aws', { forwards: ['topic1/#'], sent: 7, received: 3, buffered: 2, dropped: 1 }), info('site', { kind: 'rpc', address: 'starling@10.0.0.9' }))
    registerStandIn()
  })

  it('lists the node\'s bridges, paginated, and one bridge', async () => {
    const list = await api(`${base}/`)
    expect(list.status).toBe(200)
    expect(list.body.meta).toEqual({ page: 1, limit: 10000, count: 2 })
    expect(list.body.data.map((b: BridgeInfo) => [b.name, b.status, b.sent, b.received, b.buffered, b.dropped])).toEqual([['aws', 'stopped', 7, 3, 2, 1], ['site', 'stopped', 0, 0, 0, 0]])
    expect((await api(`${base}/?_page=2&_limit=1`)).body).toMatchObject({ data: [{ name: 'site' }], meta: { page: 2, limit: 1, count: 2 } })
    expect((await api(`${base}/?_limit=0`)).body.code).toBe(108)
    expect((await api(`${base}/aws`)).body).toEqual({ code: 0, data: expect.objectContaining({ name: 'aws', address: '127.0.0.1:1883', kind: 'mqtt', forwards: ['topic1/#'] }) })
    const missing = await api(`${base}/nope`)
    expect(missing).toEqual({ status: 404, body: { code: 102, message: 'bridge nope not found; bridges on ' + node.name + ': aws, site' } })
    expect((await api('/nodes/nobody@nowhere/bridges/')).status).toBe(404)
  })

  it('lists every node\'s bridges with their node', async () => {
    const all = await api('/bridges/')
    expect(all.body.data.map((b: BridgeInfo & { node: string }) => `${b.node} ${b.name}`)).toEqual([`${node.name} aws`, `${node.name} site`])
    expect(all.body.meta.count).toBe(2)
  })

  it('starts and stops, answering false the second time; the CLI prints EMQ X\'s texts', async () => {
    expect((await api(`${base}/aws/start`, 'PUT')).body).toEqual({ code: 0, data: true })
    expect((await api(`${base}/aws/start`, 'PUT')).body).toEqual({ code: 0, data: false })
    expect(await ctl('bridges', 'list')).toEqual({ code: 0, out: 'name: aws     status: Running\nname: site     status: Stopped\n', err: '' })
    expect((await ctl('bridges', 'start', 'aws')).out).toBe('Bridge already started.\n')
    expect((await ctl('bridges', 'stop', 'aws')).out).toBe('Stop bridge successfully.\n')
    expect((await api(`${base}/aws/stop`, 'PUT')).body).toEqual({ code: 0, data: false })
    expect((await ctl('bridges', 'start', 'aws')).out).toBe('Start bridge successfully.\n')
    expect(await ctl('bridges', 'start', 'nope')).toEqual({ code: 1, out: '', err: expect.stringMatching(/^Start bridge failed\. bridge nope not found/) })
    expect(JSON.parse((await ctl('--json', 'bridges', 'list')).out)[0]).toMatchObject({ name: 'aws', status: 'connected', sent: 7 })
  })

  it('adds and removes forwards (URL-encoded topics in DELETE)', async () => {
    expect((await api(`${base}/aws/forwards`, 'POST', { topic: 'sensors/#' })).body).toEqual({ code: 0 })
    expect((await api(`${base}/aws/forwards`)).body).toEqual({ code: 0, data: ['topic1/#', 'sensors/#'] })
    expect((await ctl('bridges', 'forwards', 'aws')).out).toBe('topic:   topic1/#\ntopic:   sensors/#\n')
    expect((await api(`${base}/aws/forwards/sensors%2F%23`, 'DELETE')).body).toEqual({ code: 0 })
    expect((await ctl('bridges', 'add-forward', 'aws', 'a/+/b')).out).toBe('Add-forward topic successfully.\n')
    expect((await ctl('bridges', 'del-forward', 'aws', 'a/+/b')).out).toBe('Del-forward topic successfully.\n')
    expect(bridges[0].forwards).toEqual(['topic1/#'])
    expect((await api(`${base}/aws/forwards`, 'POST', {})).body.code).toBe(107)
    expect((await api(`${base}/aws/forwards`, 'POST', { topic: 7 })).body.code).toBe(108)
    expect((await api(`${base}/aws/forwards`, 'POST', { topic: '$share/g/a' })).body.code).toBe(115)
    expect((await api(`${base}/nope/forwards`, 'POST', { topic: 'a' })).status).toBe(404)
  })

  it('adds and removes subscriptions (qos default 0)', async () => {
    expect((await api(`${base}/aws/subscriptions`, 'POST', { topic: 'cmd/#', qos: 1 })).body).toEqual({ code: 0 })
    expect((await api(`${base}/aws/subscriptions`, 'POST', { topic: 'cfg' })).body).toEqual({ code: 0 })
    expect((await api(`${base}/aws/subscriptions`)).body.data).toEqual([{ topic: 'cmd/#', qos: 1 }, { topic: 'cfg', qos: 0 }])
    expect((await ctl('bridges', 'subscriptions', 'aws')).out).toBe('topic: cmd/#, qos: 1\ntopic: cfg, qos: 0\n')
    expect((await api(`${base}/aws/subscriptions/cmd%2F%23`, 'DELETE')).body).toEqual({ code: 0 })
    expect((await ctl('bridges', 'del-subscription', 'aws', 'cfg')).out).toBe('Del-subscription topic successfully.\n')
    expect((await ctl('bridges', 'add-subscription', 'aws', 'x/#', '2')).out).toBe('Add-subscription topic successfully.\n')
    expect(bridges[0].subscriptions).toEqual([{ topic: 'x/#', qos: 2 }])
    // a qos out of range is 116; one of the wrong type 108, as for /mqtt/subscribe
    for (const qos of [3, -1]) expect((await api(`${base}/aws/subscriptions`, 'POST', { topic: 'c', qos })).body.code).toBe(116)
    for (const qos of ['1', 1.5]) expect((await api(`${base}/aws/subscriptions`, 'POST', { topic: 'c', qos })).body.code).toBe(108)
    expect((await api(`${base}/aws/subscriptions`, 'POST', { topic: 'a/#/b' })).body.code).toBe(115)
  })

  it('publishes $SYS/brokers/<node>/bridges/<name>/... and counts bridge.mqtt.* metrics', async () => {
    const sub = await connect(node)
    const got = collect(sub)
    await sub.subscribeAsync(`$SYS/brokers/${node.name}/bridges/#`)
    const topic = (name: string, leaf: string): string => `$SYS/brokers/${node.name}/bridges/${name}/${leaf}`
    await waitFor(() => got.some(m => m.topic === topic('site', 'dropped')), '$SYS bridge topics', 5000)
    const last = (t: string): string | undefined => got.filter(m => m.topic === t).at(-1)?.payload.toString()
    expect([last(topic('aws', 'status')), last(topic('aws', 'sent')), last(topic('aws', 'received')), last(topic('aws', 'buffered')), last(topic('aws', 'dropped'))])
      .toEqual(['connected', '7', '3', '2', '1'])
    expect(last(topic('site', 'status'))).toBe('stopped')
    bridges[0].sent = 10
    await waitFor(() => node.metrics['bridge.mqtt.sent'] === 10, 'bridge.mqtt.sent', 5000)
    expect([node.metrics['bridge.mqtt.received'], node.metrics['bridge.mqtt.dropped']]).toEqual([3, 1])
    const metrics = await api('/metrics/')
    expect(JSON.stringify(metrics.body)).toContain('"bridge.mqtt.sent":10')
  })
})
