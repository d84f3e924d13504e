/**
 * The bridges' control surfaces over the real svc_bridge_mqtt and a real Mosquitto as the
 * remote broker: `bridges list|start|stop|forwards|add-forward|del-forward|subscriptions|
 * add-subscription|del-subscription` through starling-ctl with EMQ X 4.4's texts, the same
 * through `/api/v3/nodes/:node/bridges`, messages really crossing the bridge after a change
 * made at run time, counts and `$SYS` topics, and the changes kept across a node restart.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { startTestNode, API_AUTH, connect, closeClients, collect, waitFor, type TestNode, type Received } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { startMosquitto, type MosquittoServer } from '../helpers/servers/mosquitto.js'
import { attachBridgeControl } from '../../plugins/bridge_mqtt/ctl.js'
import type { BridgeInfo } from '../../plugins/bridge_mqtt/types.js'

let remote: MosquittoServer
let etcDir: string
let node: TestNode
let detach: (() => Promise<void>) | null = null
let remoteClient: MqttClient
let fromLocal: Received[]

async function startNode (dataDir?: string): Promise<TestNode> {
  const n = await startTestNode({ 'broker.sys_interval': '200ms' }, dataDir, { etcDir })
  // until svc_bridge_mqtt's attach attaches the control surfaces itself
  if (!n.control.commands().includes('bridges list')) detach = await attachBridgeControl(n)
  // loaded once; a restart loads it again from data/loaded_plugins
  if (n.services.plugins.list().find(p => p.name === 'svc_bridge_mqtt')?.active !== true) await n.services.plugins.load('svc_bridge_mqtt')
  return n
}

async function stopNode (): Promise<void> {
  await detach?.()
  detach = null
  await node.stop()
}

const ctl = async (...argv: string[]): Promise<{ code: number, out: string, err: string }> => await runCtlOn(node, argv)

async function api (path: string, method = 'GET', body?: unknown): Promise<{ status: number, body: any }> {
  const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3${path}`, {
    method,
    headers: { authorization: API_AUTH, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: await res.json() }
}

const base = (): string => `/nodes/${encodeURIComponent(node.name)}/bridges`
const status = async (): Promise<string> => ((await api(`${base()}/aws`)).body.data as BridgeInfo).status

beforeAll(async () => {
  remote = await startMosquitto()
  etcDir = mkdtempSync(join(tmpdir(), 'starling-etc-'))
  cpSync('etc/plugins', join(etcDir, 'plugins'), { recursive: true })
  writeFileSync(join(etcDir, 'plugins', 'svc_bridge_mqtt.conf'), [
    `bridge.mqtt.aws.address = 127.0.0.1:${remote.port}`,
    'bridge.mqtt.aws.proto_ver = mqttv4',
    'bridge.mqtt.aws.start_type = manual',
    'bridge.mqtt.aws.forwards = topic1/#',
    'bridge.mqtt.aws.mountpoint = site/',
    'bridge.mqtt.aws.subscription.1.topic = cmd/#',
    'bridge.mqtt.aws.subscription.1.qos = 1',
    'bridge.mqtt.aws.reconnect_interval = 1s',
    ''
  ].join('\n'))
  node = await startNode()
  remoteClient = await remote.connect()
  fromLocal = collect(remoteClient)
  await remoteClient.subscribeAsync('site/#', { qos: 1 })
}, 30000)

afterAll(async () => {
  await closeClients()
  remoteClient?.end(true)
  await detach?.()
  await node?.destroy()
  await remote?.close()
  rmSync(etcDir, { recursive: true, force: true })
})

describe('bridges over svc_bridge_mqtt and a Mosquitto', () => {
  it('lists the manual bridge as stopped, then starts it (Running) and answers a second start', async () => {
    expect(await ctl('bridges', 'list')).toEqual({ code: 0, out: 'name: aws     status: Stopped\n', err: '' })
    expect(await ctl('bridges', 'start', 'aws')).toEqual({ code: 0, out: 'Start bridge successfully.\n', err: '' })
    const deadline = Date.now() + 10000
    while (await status() !== 'connected' && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 20))
    expect(await ctl('bridges', 'list')).toEqual({ code: 0, out: 'name: aws     status: Running\n', err: '' })
    expect((await ctl('bridges', 'start', 'aws')).out).toBe('Bridge already started.\n')
    expect((await api(`${base()}/aws/start`, 'PUT')).body).toEqual({ code: 0, data: false })
    expect(await ctl('bridges', 'start', 'nope')).toEqual({ code: 1, out: '', err: expect.stringMatching(/^Start bridge failed\. bridge nope not found/) })
  })

  it('forwards a topic added at run time to the remote, counted in sent', async () => {
    expect((await ctl('bridges', 'forwards', 'aws')).out).toBe('topic:   topic1/#\n')
    expect((await ctl('bridges', 'add-forward', 'aws', 'sensors/#')).out).toBe('Add-forward topic successfully.\n')
    expect((await api(`${base()}/aws/forwards`)).body.data).toEqual(['topic1/#', 'sensors/#'])
    const pub = await connect(node)
    await pub.publishAsync('sensors/1', 'hot', { qos: 1 })
    await waitFor(() => fromLocal.some(m => m.topic === 'site/sensors/1'), 'the forwarded message at the remote')
    expect(fromLocal.find(m => m.topic === 'site/sensors/1')?.payload.toString()).toBe('hot')
    await waitFor(() => node.metrics['bridge.mqtt.sent'] >= 1, 'bridge.mqtt.sent')
    expect(((await api(`${base()}/aws`)).body.data as BridgeInfo).sent).toBeGreaterThanOrEqual(1)
  })

  it('brings in a remote subscription added through the API, counted in received', async () => {
    expect((await ctl('bridges', 'subscriptions', 'aws')).out).toBe('topic: cmd/#, qos: 1\n')
    expect((await api(`${base()}/aws/subscriptions`, 'POST', { topic: 'cfg/+', qos: 2 })).body).toEqual({ code: 0 })
    expect((await ctl('bridges', 'subscriptions', 'aws')).out).toBe('topic: cmd/#, qos: 1\ntopic: cfg/+, qos: 2\n')
    const sub = await connect(node)
    const got = collect(sub)
    await sub.subscribeAsync('cfg/#', { qos: 1 })
    // the remote subscription is made asynchronously: publish until one arrives
    const deadline = Date.now() + 10000
    while (!got.some(m => m.topic === 'cfg/a') && Date.now() < deadline) {
      await remoteClient.publishAsync('cfg/a', 'v1', { qos: 1 })
      await new Promise(resolve => setTimeout(resolve, 50))
    }
    expect(got.find(m => m.topic === 'cfg/a')?.payload.toString()).toBe('v1')
    await waitFor(() => node.metrics['bridge.mqtt.received'] >= 1, 'bridge.mqtt.received')
  })

  it('publishes the bridge\'s $SYS topics', async () => {
    const sub = await connect(node)
    const got = collect(sub)
    await sub.subscribeAsync(`$SYS/brokers/${node.name}/bridges/aws/+`)
    await waitFor(() => got.some(m => m.topic.endsWith('/aws/dropped')), '$SYS bridge topics', 5000)
    expect(got.find(m => m.topic.endsWith('/aws/status'))?.payload.toString()).toBe('connected')
    expect(Number(got.find(m => m.topic.endsWith('/aws/sent'))?.payload.toString())).toBeGreaterThanOrEqual(1)
  })

  it('refuses a bad qos (116) and a bad topic (115), in the CLI and the API', async () => {
    expect(await ctl('bridges', 'add-subscription', 'aws', 'x/#', '3')).toEqual({ code: 1, out: '', err: 'Add-subscription failed reason: qos must be 0, 1 or 2, not "3".\n' })
    expect((await api(`${base()}/aws/subscriptions`, 'POST', { topic: 'x/#', qos: 3 })).body.code).toBe(116)
    expect((await api(`${base()}/aws/forwards`, 'POST', { topic: 'a/#/b' })).body.code).toBe(115)
    expect((await api(`${base()}/nope/forwards`)).status).toBe(404)
  })

  it('keeps forwards and subscriptions changed at run time across a node restart', async () => {
    expect((await ctl('bridges', 'del-forward', 'aws', 'topic1/#')).out).toBe('Del-forward topic successfully.\n')
    expect((await ctl('bridges', 'del-subscription', 'aws', 'cmd/#')).out).toBe('Del-subscription topic successfully.\n')
    expect((await api(`${base()}/aws/forwards/sensors%2F%23`, 'DELETE')).body).toEqual({ code: 0 })
    expect((await ctl('bridges', 'add-forward', 'aws', 'kept/#')).out).toBe('Add-forward topic successfully.\n')
    await closeClients()
    const dataDir = node.dataDir
    await stopNode()
    node = await startNode(dataDir)
    expect((await ctl('bridges', 'forwards', 'aws')).out).toBe('topic:   kept/#\n')
    expect((await ctl('bridges', 'subscriptions', 'aws')).out).toBe('topic: cfg/+, qos: 2\n')
    expect((await ctl('bridges', 'stop', 'aws')).out).toBe('Stop bridge successfully.\n')
    expect(await status()).toBe('stopped')
  }, 30000)

  it('answers "not loaded" once the plugin is unloaded, and the cluster-wide list is empty', async () => {
    await node.services.plugins.unload('svc_bridge_mqtt')
    expect((await ctl('bridges', 'list')).err).toMatch(/^plugin svc_bridge_mqtt is not loaded on /)
    expect((await api(`${base()}/`)).body.code).toBe(102)
    expect((await api('/bridges/')).body.data).toEqual([])
  })
})
