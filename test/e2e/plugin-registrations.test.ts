/**
 * Plugins register what they add and remove it when unloaded (issue 20): the rule engine's
 * resource types and actions follow svc_bridge_mqtt being loaded, over the real API and
 * starling-ctl; a stored bridge resource and a rule using it survive the plugin's absence and
 * work again once it is back; the credential tables' endpoints are their plugins' routes.
 */
import mqtt, { type MqttClient } from 'mqtt'
import { startTestNode, connect, closeClients, waitFor, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { apiOf, expectError } from './api-actions-client.js'
import { startMosquitto, type MosquittoServer } from '../helpers/servers/mosquitto.js'

let node: TestNode
let remote: MosquittoServer
let sub: MqttClient | undefined
const api = apiOf(() => node)

const names = async (path: string): Promise<string[]> => (await api('GET', path)).body.data.map((x: { name: string }) => x.name)

beforeAll(async () => {
  remote = await startMosquitto()
  node = await startTestNode({ 'broker.sys_interval': '0' })
}, 30_000)
afterAll(async () => {
  await sub?.endAsync()
  await closeClients()
  await node?.destroy()
  await remote?.stop()
})

describe('resource types and actions follow the plugins loaded', () => {
  it('a default node lists only svc_rule_engine\'s, each with its provider', async () => {
    expect(node.services.plugins.isActive('svc_bridge_mqtt')).toBe(false)
    const types = (await api('GET', '/resource_types')).body.data
    expect(types.map((t: any) => [t.name, t.provider])).toEqual([['built_in', 'svc_rule_engine'], ['web_hook', 'svc_rule_engine']])
    expect(await names('/actions')).not.toContain('data_to_mqtt_broker')
    expectError(await api('GET', '/resource_types/bridge_mqtt'), 102, 404)
    expectError(await api('POST', '/resources', { type: 'bridge_mqtt', config: { address: '127.0.0.1:1883' } }), 102, 400)
  })

  it('loading svc_bridge_mqtt adds its types and action, unloading removes them; a stored resource and rule stay and run again', async () => {
    expect((await api('PUT', `/nodes/${node.name}/plugins/svc_bridge_mqtt/load`)).status).toBe(200)
    expect(await names('/resource_types')).toEqual(['built_in', 'web_hook', 'bridge_mqtt', 'bridge_rpc'])
    expect((await api('GET', '/resource_types/bridge_rpc')).body.data.provider).toBe('svc_bridge_mqtt')
    expect((await api('GET', '/actions/data_to_mqtt_broker')).body.data.app).toBe('svc_bridge_mqtt')

    const res = await api('POST', '/resources', { name: 'away', type: 'bridge_mqtt', config: { address: `127.0.0.1:${remote.port}`, reconnect_interval: '200ms' } })
    expect(res.status).toBe(200)
    const rule = await api('POST', '/rules', { rawsql: 'SELECT payload FROM "t/#"', actions: [{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_mqtt:away', forward_topic: 'out' } }] })
    expect(rule.status).toBe(200)

    expect((await api('PUT', `/nodes/${node.name}/plugins/svc_bridge_mqtt/unload`)).status).toBe(200)
    expect(await names('/resource_types')).toEqual(['built_in', 'web_hook'])
    expect(await names('/actions')).not.toContain('data_to_mqtt_broker')
    // what the user saved stays
    expect((await api('GET', '/resources/bridge_mqtt:away')).status).toBe(200)
    expect((await api('GET', '/rules')).body.data.map((r: any) => r.id)).toEqual([rule.body.data.id])
    const ctl = await runCtlOn(node, ['resource-types', 'list'])
    expect(ctl.code).toBe(0)
    expect(ctl.out).not.toContain('bridge_mqtt')

    // back again: the resource starts on this node and the rule sends through it
    expect((await api('PUT', `/nodes/${node.name}/plugins/svc_bridge_mqtt/load`)).status).toBe(200)
    const deadline = Date.now() + 10_000
    while ((await api('GET', '/resources/bridge_mqtt:away')).body.data.status[0].is_alive !== true) {
      if (Date.now() > deadline) throw new Error('the bridge resource did not come back')
      await new Promise(resolve => setTimeout(resolve, 50))
    }
    sub = await mqtt.connectAsync({ host: '127.0.0.1', port: remote.port, clientId: 'registrations-sub' })
    const got: string[] = []
    sub.on('message', (topic, payload) => got.push(`${topic} ${payload.toString()}`))
    await sub.subscribeAsync('#', { qos: 1 })
    const pub = await connect(node, { clientId: 'registrations-pub' })
    await pub.publishAsync('t/1', 'hello', { qos: 1 })
    await waitFor(() => got.length === 1, 'the message on Mosquitto')
    expect(got[0]).toMatch(/\/out /) // under the resource's mountpoint
  })
})

describe('the credential tables\' endpoints are their plugins\' routes', () => {
  it('are listed in the index and served whether or not the plugin is loaded', async () => {
    const index = (await api('GET', '/')).body.data.map((r: any) => r.name)
    expect(index).toEqual(expect.arrayContaining(['list_clientid', 'add_username', 'list_bridges']))
    expect(node.services.plugins.isActive('svc_auth_clientid')).toBe(false)
    expect((await api('POST', '/auth_clientid', { clientid: 'c1', password: 'p' })).status).toBe(200)
    expect((await api('GET', '/auth_clientid')).body.data).toEqual(['c1'])
  })
})
