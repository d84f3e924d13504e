/**
 * A rule sends what it selected to a real Mosquitto through a `bridge_mqtt` resource
 * (`data_to_mqtt_broker`): created through the API and through the CLI, payload_tmpl and
 * forward_topic rendered, the mountpoint with ${node}, the resource's status following the
 * remote, TLS with the server certificate checked, and while Mosquitto is down the messages
 * wait in the disk buffer (across a restart of the node too) and arrive, in order, once it is
 * back. The password is never shown. A `bridge_rpc` resource sends to a node of another
 * Starling cluster.
 */
import { existsSync } from 'node:fs'
import mqtt, { type MqttClient } from 'mqtt'
import { startTestNode, closeClients, connect, waitFor, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { apiOf } from './api-actions-client.js'
import { startMosquitto, type MosquittoServer } from '../helpers/servers/mosquitto.js'
import { SERVER_HOST } from '../helpers/servers/index.js'
import { replayDirOf } from '../../plugins/bridge_mqtt/actions.js'
import { ackedRowsSurviveSigkill } from './data-actions-client.js'

let node: TestNode
let remote: MosquittoServer
/** A persistent QoS 1 subscriber to everything on Mosquitto. */
let sub: MqttClient
const received: Array<{ topic: string, payload: string }> = []
const api = apiOf(() => node)
/** The bridge resource types are svc_bridge_mqtt's: loaded on every node that runs them. */
const BRIDGES = { plugins: ['svc_bridge_mqtt'] }

beforeAll(async () => {
  remote = await startMosquitto({ tls: true })
  node = await startTestNode({ 'broker.sys_interval': '0' }, undefined, BRIDGES)
  // not remote.connect(): that client ends itself on its first error, and this one must
  // reconnect after each stop of Mosquitto (its persistent session keeps what arrived meanwhile)
  sub = await mqtt.connectAsync({ host: SERVER_HOST, port: remote.port, clientId: 'remote-sub', clean: false, reconnectPeriod: 100 })
  sub.on('error', () => {}) // refused reconnects while Mosquitto is down
  sub.on('message', (topic, payload) => received.push({ topic, payload: payload.toString() }))
  await sub.subscribeAsync('#', { qos: 1 })
}, 30_000)
afterEach(async () => {
  await closeClients()
  for (const rule of (await api('GET', '/rules')).body.data) await api('DELETE', `/rules/${rule.id}`)
  for (const res of (await api('GET', '/resources')).body.data) await api('DELETE', `/resources/${res.id}`)
  received.length = 0
})
afterAll(async () => {
  await sub?.endAsync()
  await node?.destroy()
  await remote?.close()
})

const bridgeConfig = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  address: `${SERVER_HOST}:${remote.port}`, clientid: 'starling-rules', mountpoint: 'site/${node}/', reconnect_interval: '200ms', ...extra
})

async function isAlive (id: string): Promise<boolean> {
  return (await api('GET', `/resources/${id}`)).body.data.status[0].is_alive
}

/** Polls the resource's status (a health check per call) until it is `alive`. */
async function statusBecomes (id: string, alive: boolean): Promise<void> {
  const deadline = Date.now() + 10_000
  while (await isAlive(id) !== alive) {
    if (Date.now() > deadline) throw new Error(`resource ${id} never became ${alive ? 'alive' : 'not alive'}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

async function publishSensors (from: string, temps: number[], topic = 'sensors/room1'): Promise<void> {
  const pub = await connect(node, { clientId: from })
  for (const temp of temps) await pub.publishAsync(topic, JSON.stringify({ temp, unit: 'C' }), { qos: 1 })
}

const SQL = 'SELECT payload.temp as t, clientid FROM "sensors/#"'

describe('data_to_mqtt_broker through bridge_mqtt to Mosquitto', () => {
  it('sends payload_tmpl rendered to forward_topic under the mountpoint (API)', async () => {
    const res = await api('POST', '/resources', { name: 'mosq', type: 'bridge_mqtt', config: bridgeConfig({ username: 'u', password: 'secret' }) })
    expect(res.body.code).toBe(0)
    expect(res.body.data).toMatchObject({ id: 'bridge_mqtt:mosq', config: { password: '******', username: 'u', pool_size: 8, proto_ver: 'mqttv4' } })
    await statusBecomes('bridge_mqtt:mosq', true)
    expect(JSON.stringify((await api('GET', '/resources')).body.data)).not.toContain('secret')

    const rule = await api('POST', '/rules', {
      rawsql: SQL,
      actions: [{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_mqtt:mosq', forward_topic: 'out/${clientid}', payload_tmpl: '{"t":${t},"from":"${clientid}"}' } }]
    })
    expect(rule.body.code).toBe(0)
    await publishSensors('pub1', [21.5])
    await waitFor(() => received.length === 1, 'the message on Mosquitto')
    expect(received[0]).toEqual({ topic: `site/${node.name}/out/pub1`, payload: '{"t":21.5,"from":"pub1"}' })
    const metrics = (await api('GET', `/rules/${rule.body.data.id as string}`)).body.data.actions[0].metrics[0]
    expect(metrics).toMatchObject({ taken: 1, success: 1, failed: 0 })
  })

  it('sends the selection as JSON on the message topic by default', async () => {
    await api('POST', '/resources', { name: 'plain', type: 'bridge_mqtt', config: bridgeConfig({ mountpoint: '' }) })
    await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_mqtt:plain' } }] })
    await statusBecomes('bridge_mqtt:plain', true)
    await publishSensors('pub2', [19])
    await waitFor(() => received.length === 1, 'the message on Mosquitto')
    expect(received[0].topic).toBe('sensors/room1')
    expect(JSON.parse(received[0].payload)).toEqual({ t: 19, clientid: 'pub2' })
  })

  it('keeps messages in the disk buffer while Mosquitto is down and delivers them in order when it is back', async () => {
    await api('POST', '/resources', { name: 'buffered', type: 'bridge_mqtt', config: bridgeConfig({ disk_cache: 'on' }) })
    await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_mqtt:buffered', payload_tmpl: '${t}' } }] })
    await statusBecomes('bridge_mqtt:buffered', true)
    expect(existsSync(replayDirOf(node.dataDir, 'bridge_mqtt:buffered'))).toBe(true)

    await remote.stop()
    await statusBecomes('bridge_mqtt:buffered', false)
    const temps = Array.from({ length: 50 }, (_, i) => i)
    await publishSensors('pub3', temps)
    expect(received).toEqual([])

    await remote.restart()
    await statusBecomes('bridge_mqtt:buffered', true)
    await waitFor(() => received.length >= temps.length, `${temps.length} messages on Mosquitto`, 20_000)
    expect(received.map(m => m.topic)).toEqual(temps.map(() => `site/${node.name}/sensors/room1`))
    expect(received.map(m => Number(m.payload))).toEqual(temps)
    const rules = (await api('GET', '/rules')).body.data
    expect(rules[0].actions[0].metrics[0]).toMatchObject({ taken: temps.length, success: temps.length, failed: 0 })

    // deleting the resource removes its disk buffer
    await api('DELETE', `/rules/${rules[0].id as string}`)
    expect((await api('DELETE', '/resources/bridge_mqtt:buffered')).body.code).toBe(0)
    await waitFor(() => !existsSync(replayDirOf(node.dataDir, 'bridge_mqtt:buffered')), 'the buffer removed')
  }, 40_000)

  it('connects with TLS, checking the server certificate', async () => {
    const tls = { address: `${SERVER_HOST}:${remote.tlsPort as number}`, ssl: 'on', verify: true, cacertfile: remote.caFile, server_name_indication: 'localhost' }
    // a name the certificate does not hold: its handshakes fail (tried first, as soon as it is created)
    await api('POST', '/resources', { name: 'badname', type: 'bridge_mqtt', config: bridgeConfig({ ...tls, server_name_indication: 'other.example' }) })
    await api('POST', '/resources', { name: 'tls', type: 'bridge_mqtt', config: bridgeConfig(tls) })
    await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_mqtt:tls', payload_tmpl: 'tls ${t}' } }] })
    await statusBecomes('bridge_mqtt:tls', true)
    await publishSensors('pub5', [3])
    await waitFor(() => received.length === 1, 'the message on Mosquitto')
    expect(received[0]).toEqual({ topic: `site/${node.name}/sensors/room1`, payload: 'tls 3' })
    expect(await isAlive('bridge_mqtt:badname')).toBe(false)
  })

  it('keeps what it buffered across a restart of the node and sends it once the remote is back', async () => {
    await api('POST', '/resources', { name: 'restart', type: 'bridge_mqtt', config: bridgeConfig({ disk_cache: 'on' }) })
    await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_mqtt:restart', payload_tmpl: '${t}' } }] })
    await statusBecomes('bridge_mqtt:restart', true)
    await remote.stop()
    await statusBecomes('bridge_mqtt:restart', false)
    const temps = Array.from({ length: 20 }, (_, i) => 100 + i)
    await publishSensors('pub6', temps)
    // every run has put its message in the buffer before the node stops
    const deadline = Date.now() + 10_000
    while ((await api('GET', '/rules')).body.data[0].actions[0].metrics[0].success < temps.length) {
      if (Date.now() > deadline) throw new Error('the actions did not all run')
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    await closeClients()
    const dataDir = node.dataDir
    await node.stop()
    node = await startTestNode({ 'broker.sys_interval': '0' }, dataDir, BRIDGES)
    await remote.restart()
    await waitFor(() => received.length >= temps.length, `${temps.length} messages on Mosquitto`, 20_000)
    expect(received.map(m => Number(m.payload))).toEqual(temps)
  }, 40_000)

  it('with the disk buffer, a SIGKILL of the node loses no message its publisher was acknowledged for (the PUBACK waits for the buffer)', async () => {
    const crash = (): number[] => received.filter(m => m.topic === 'crash/a').map(m => Number(m.payload))
    const { acked } = await ackedRowsSurviveSigkill({
      plugin: 'svc_bridge_mqtt',
      setUp: async (spawned) => {
        const res = await spawned('POST', '/resources', { name: 'crash', type: 'bridge_mqtt', config: bridgeConfig({ clientid: 'starling-crash', mountpoint: '', disk_cache: 'on' }) })
        expect(res.body.code).toBe(0)
        const rule = await spawned('POST', '/rules', { rawsql: 'SELECT payload FROM "crash/#"', actions: [{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_mqtt:crash', payload_tmpl: '${payload}' } }] })
        expect(rule.body.code).toBe(0)
      },
      stopServer: async () => { await remote.stop() },
      restartServer: async () => { await remote.restart() },
      rows: async () => crash()
    })
    expect(acked).toBeGreaterThanOrEqual(1000)
  }, 90_000)

  it('is created and used through the CLI', async () => {
    const config = JSON.stringify(bridgeConfig({ username: 'site', password: 'pw', proto_ver: 'mqttv5' }))
    const created = await runCtlOn(node, ['resources', 'create', 'bridge_mqtt', '-c', config, '-n', 'cli', '-d', 'to mosquitto'])
    expect(created).toMatchObject({ code: 0, out: 'Resource bridge_mqtt:cli created\n' })
    await statusBecomes('bridge_mqtt:cli', true)
    const shown = await runCtlOn(node, ['resources', 'show', 'bridge_mqtt:cli'])
    expect(shown.out).toContain('"password":"******"')
    expect(shown.out).toContain(`status=[{"node":"${node.name}","is_alive":true}]`)
    expect(shown.out).not.toContain('"pw"')

    const rule = await runCtlOn(node, ['rules', 'create', SQL, JSON.stringify([{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_mqtt:cli', forward_topic: 'cli/${clientid}' } }])])
    expect(rule.code).toBe(0)
    await publishSensors('pub4', [7])
    await waitFor(() => received.length === 1, 'the message on Mosquitto')
    expect(received[0].topic).toBe(`site/${node.name}/cli/pub4`)
    expect(JSON.parse(received[0].payload)).toEqual({ t: 7, clientid: 'pub4' })

    const types = await runCtlOn(node, ['resource-types', 'show', 'bridge_mqtt'])
    expect(types.out).toMatch(/^resource_type\(name='bridge_mqtt', provider='svc_bridge_mqtt', title='MQTT Bridge'/)
    const refused = await runCtlOn(node, ['resources', 'create', 'bridge_mqtt', '-c', '{"address":"nohost"}'])
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(/address must be host:port/)
  })
})

describe('data_to_mqtt_broker through bridge_rpc to another Starling cluster', () => {
  let b: TestNode
  beforeAll(async () => { b = await startTestNode({ 'node.name': 'b@127.0.0.1', 'broker.sys_interval': '0' }) })
  afterAll(async () => { await b?.destroy() })

  it('publishes the rendered message on the remote node, under the mountpoint', async () => {
    const address = `b@127.0.0.1:${b.cluster.mesh.port as number}`
    const res = await api('POST', '/resources', { name: 'tob', type: 'bridge_rpc', config: { address, reconnect_interval: '200ms', disk_cache: 'on' } })
    expect(res.body.data.config).toMatchObject({ address, mountpoint: 'bridge/starling/${node}/', batch_size: 32, pool_size: 8 })
    await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_rpc:tob', forward_topic: 'rpc/${clientid}' } }] })
    await statusBecomes('bridge_rpc:tob', true)
    const onB = await connect(b, { clientId: 'b-sub' })
    const got: string[] = []
    onB.on('message', (topic, payload) => got.push(`${topic} ${payload.toString()}`))
    await onB.subscribeAsync('bridge/#', { qos: 1 })
    await publishSensors('pub7', [1, 2, 3])
    await waitFor(() => got.length === 3, 'three messages on B')
    expect(got).toEqual([1, 2, 3].map(t => `bridge/starling/${node.name}/rpc/pub7 ${JSON.stringify({ t, clientid: 'pub7' })}`))
    // the two nodes stay apart: the bridge is no cluster link
    expect(node.cluster.status().map(m => m.name)).toEqual([node.name])
  })
})

describe('bridge resources in a cluster', () => {
  let n1: TestNode, n2: TestNode
  const api1 = apiOf(() => n1)
  beforeAll(async () => {
    n1 = await startTestNode({ 'node.name': 'n1@127.0.0.1', 'broker.sys_interval': '0' }, undefined, BRIDGES)
    n2 = await startTestNode({ 'node.name': 'n2@127.0.0.1', 'broker.sys_interval': '0' }, undefined, BRIDGES)
    await n2.cluster.join(`n1@127.0.0.1:${n1.cluster.mesh.port as number}`)
  })
  afterAll(async () => {
    await n2?.destroy()
    await n1?.destroy()
  })

  it('runs one bridge per node: each node\'s status, and each node\'s rule runs send through its own', async () => {
    const created = await api1('POST', '/resources', { name: 'cl', type: 'bridge_mqtt', config: bridgeConfig() })
    expect(created.body.code).toBe(0)
    await api1('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_mqtt_broker', params: { $resource: 'bridge_mqtt:cl', payload_tmpl: '${clientid}' } }] })
    const deadline = Date.now() + 10_000
    let status: Array<{ node: string, is_alive: boolean }> = []
    while (!(status.length === 2 && status.every(s => s.is_alive))) {
      if (Date.now() > deadline) throw new Error(`both bridges never connected: ${JSON.stringify(status)}`)
      await new Promise(resolve => setTimeout(resolve, 50))
      status = (await api1('GET', '/resources/bridge_mqtt:cl')).body.data.status
    }
    expect(status.map(s => s.node).sort()).toEqual(['n1@127.0.0.1', 'n2@127.0.0.1'])
    const on2 = await connect(n2, { clientId: 'on-n2' })
    await on2.publishAsync('sensors/x', '{"temp":1}', { qos: 1 })
    await waitFor(() => received.length === 1, 'the message on Mosquitto')
    expect(received[0]).toEqual({ topic: 'site/n2@127.0.0.1/sensors/x', payload: 'on-n2' })
    // deleted on one node: gone on both (the other node closes its bridge)
    await api1('DELETE', `/rules/${(await api1('GET', '/rules')).body.data[0].id as string}`)
    expect((await api1('DELETE', '/resources/bridge_mqtt:cl')).body.code).toBe(0)
    await waitFor(() => n2.rules.resources.find('bridge_mqtt:cl') === undefined, 'the resource gone on n2')
  })
})
