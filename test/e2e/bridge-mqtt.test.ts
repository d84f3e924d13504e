/**
 * svc_bridge_mqtt end to end (issue 15): a Starling node bridged to a real Mosquitto over
 * mqttv3, mqttv4 and mqttv5, TCP and TLS (forwards with QoS and mountpoint, subscriptions
 * brought in), bridges started and stopped and their lists changed at run time, and two
 * Starling nodes bridged both ways without a loop.
 */
import type { MqttClient } from 'mqtt'
import { collect, closeClients, connect, waitFor, type Received } from '../helpers/node.js'
import { startPluginNode, type PluginNode } from '../node/plugins/harness.js'
import { startMosquitto, type MosquittoServer } from '../helpers/servers/mosquitto.js'
import type { BridgeInfo } from '../../plugins/bridge_mqtt/types.js'
import { ApiError } from '../../node/errors.js'

const PLUGIN = 'svc_bridge_mqtt'

/** The conf text of bridges: name -> key -> value. */
function bridgeConf (bridges: Record<string, Record<string, string | number>>): string {
  const lines: string[] = []
  for (const [name, keys] of Object.entries(bridges)) {
    for (const [key, value] of Object.entries(keys)) lines.push(`bridge.mqtt.${name}.${key} = ${value}`)
  }
  return lines.join('\n') + '\n'
}

async function call (p: PluginNode, op: string, args: Record<string, unknown> = {}): Promise<any> {
  return await p.node.rpc.local(op, args)
}

async function list (p: PluginNode): Promise<BridgeInfo[]> {
  return await call(p, 'bridges.list') as BridgeInfo[]
}

/** Bridge `name` of node `p` now (the operations run locally and synchronously underneath). */
async function info (p: PluginNode, name: string): Promise<BridgeInfo> {
  return (await list(p)).find((b) => b.name === name)!
}

/** Polls `check` until it holds (no fixed sleep). */
async function eventually (check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

async function waitStatus (p: PluginNode, name: string, status: BridgeInfo['status']): Promise<void> {
  await eventually(async () => (await info(p, name))?.status === status, `bridge ${name} ${status}`)
}

let mosquitto: MosquittoServer
const remoteClients: MqttClient[] = []

async function remoteSubscriber (topic: string): Promise<Received[]> {
  const c = await mosquitto.connect({ protocolVersion: 5, clientId: `sub-${Math.random().toString(16).slice(2)}` })
  remoteClients.push(c)
  const got = collect(c)
  await c.subscribeAsync(topic, { qos: 2 })
  return got
}

beforeAll(async () => { mosquitto = await startMosquitto({ tls: true }) }, 60_000)
afterAll(async () => {
  await Promise.all(remoteClients.map(async (c) => await c.endAsync(true)))
  await mosquitto?.close()
})
afterEach(async () => { await closeClients() })

describe('MQTT bridge to Mosquitto', () => {
  let p: PluginNode
  beforeAll(async () => {
    p = await startPluginNode()
    p.writeConf(PLUGIN, bridgeConf({
      v3: { address: `127.0.0.1:${mosquitto.port}`, proto_ver: 'mqttv3', forwards: 'f3/#', mountpoint: 'm/${node}/', reconnect_interval: '1s' },
      v4: { address: `127.0.0.1:${mosquitto.port}`, proto_ver: 'mqttv4', forwards: 'f4/#,f4b/#', mountpoint: 'm/${node}/', bridge_mode: 'on', reconnect_interval: '1s' },
      v5: {
        address: `127.0.0.1:${mosquitto.port}`,
        proto_ver: 'mqttv5',
        forwards: 'f5/#',
        mountpoint: 'm/${node}/',
        'subscription.1.topic': 'in/#',
        'subscription.1.qos': 1,
        receive_mountpoint: 'from/mosq/',
        reconnect_interval: '1s'
      },
      tls: {
        address: `127.0.0.1:${mosquitto.tlsPort!}`,
        proto_ver: 'mqttv4',
        forwards: 'ftls/#',
        ssl: 'on',
        cacertfile: mosquitto.caFile!,
        reconnect_interval: '1s'
      },
      badca: {
        address: `127.0.0.1:${mosquitto.tlsPort!}`,
        proto_ver: 'mqttv4',
        forwards: 'fbad/#',
        ssl: 'on',
        reconnect_interval: '1s'
      },
      later: { address: `127.0.0.1:${mosquitto.port}`, forwards: 'flater/#', start_type: 'manual', reconnect_interval: '1s' }
    }))
    await p.manager.load(PLUGIN)
    for (const name of ['v3', 'v4', 'v5', 'tls']) await waitStatus(p, name, 'connected')
  }, 30_000)
  afterAll(async () => { await p.destroy() })

  it('lists the bridges with their status, forwards and subscriptions', async () => {
    const bridges = await list(p)
    expect(bridges.map((b) => b.name)).toEqual(['badca', 'later', 'tls', 'v3', 'v4', 'v5'])
    const v5 = bridges.find((b) => b.name === 'v5')!
    expect(v5).toMatchObject({ status: 'connected', kind: 'mqtt', forwards: ['f5/#'], subscriptions: [{ topic: 'in/#', qos: 1 }] })
    expect(bridges.find((b) => b.name === 'later')!.status).toBe('stopped')
    expect(bridges.find((b) => b.name === 'badca')!.status).toBe('connecting')
  })

  it.each([['v3', 'f3'], ['v4', 'f4'], ['v5', 'f5']])('forwards over %s with QoS, retain and mountpoint kept', async (name, prefix) => {
    const got = await remoteSubscriber(`m/${p.node.name}/${prefix}/#`)
    const pub = await connect(p.node, { protocolVersion: 5 })
    await pub.publishAsync(`${prefix}/q0`, 'zero', { qos: 0 })
    await pub.publishAsync(`${prefix}/q1`, 'one', { qos: 1 })
    await pub.publishAsync(`${prefix}/q2`, 'two', { qos: 2 })
    await waitFor(() => got.length === 3, `3 messages through ${name}`)
    const byTopic = Object.fromEntries(got.map((m) => [m.topic.split('/').pop(), m]))
    expect(byTopic.q0.packet.qos).toBe(0)
    expect(byTopic.q1.packet.qos).toBe(1)
    expect(byTopic.q2.packet.qos).toBe(2)
    expect(byTopic.q1.payload.toString()).toBe('one')
    expect(got[0].topic.startsWith(`m/${p.node.name}/${prefix}/`)).toBe(true)
    const info = (await list(p)).find((b) => b.name === name)!
    expect(info.sent).toBeGreaterThanOrEqual(3)
  })

  it('keeps MQTT 5 properties on mqttv5 and the retain flag', async () => {
    const pub = await connect(p.node, { protocolVersion: 5 })
    await pub.publishAsync('f5/props', 'p', { qos: 1, retain: true, properties: { userProperties: { k: 'v' }, contentType: 'text/plain' } })
    const got = await remoteSubscriber(`m/${p.node.name}/f5/props`)
    await waitFor(() => got.length === 1, 'the retained message on Mosquitto')
    expect(got[0].packet.retain).toBe(true)
    expect(got[0].packet.properties).toMatchObject({ userProperties: { k: 'v' }, contentType: 'text/plain' })
  })

  it('brings in the remote subscriptions under receive_mountpoint, once', async () => {
    const local = await connect(p.node, { protocolVersion: 5 })
    const got = collect(local)
    await local.subscribeAsync('from/#', { qos: 1 })
    const remote = await mosquitto.connect({ protocolVersion: 5 })
    remoteClients.push(remote)
    await remote.publishAsync('in/a', 'hello', { qos: 1 })
    await waitFor(() => got.length === 1, 'the message from Mosquitto')
    expect(got[0].topic).toBe('from/mosq/in/a')
    expect(got[0].packet.qos).toBe(1)
    expect((await list(p)).find((b) => b.name === 'v5')!.received).toBeGreaterThanOrEqual(1)
  })

  it('forwards over TLS, and does not connect to a certificate it cannot verify', async () => {
    const got = await remoteSubscriber('ftls/#')
    const pub = await connect(p.node)
    await pub.publishAsync('ftls/a', 'secure', { qos: 1 })
    await waitFor(() => got.length === 1, 'the message through TLS')
    expect(got[0].payload.toString()).toBe('secure')
    const bad = (await list(p)).find((b) => b.name === 'badca')!
    expect(bad.status).toBe('connecting')
    await pub.publishAsync('fbad/a', 'held', { qos: 1 })
    await eventually(async () => (await info(p, 'badca')).buffered === 1, 'the message held in the buffer')
  })

  it('starts and stops bridges at run time', async () => {
    expect(await call(p, 'bridges.start', { name: 'later' })).toBe(true)
    expect(await call(p, 'bridges.start', { name: 'later' })).toBe(false)
    await waitStatus(p, 'later', 'connected')
    const got = await remoteSubscriber('flater/#')
    const pub = await connect(p.node)
    await pub.publishAsync('flater/1', 'a', { qos: 1 })
    await waitFor(() => got.length === 1, 'a message while started')
    expect(await call(p, 'bridges.stop', { name: 'later' })).toBe(true)
    expect(await call(p, 'bridges.stop', { name: 'later' })).toBe(false)
    expect((await list(p)).find((b) => b.name === 'later')!.status).toBe('stopped')
    // a stopped bridge buffers nothing new (flater/1 may still be held if its PUBACK came after the stop)
    const held = (await list(p)).find((b) => b.name === 'later')!.buffered
    await pub.publishAsync('flater/2', 'not forwarded', { qos: 1 })
    expect((await list(p)).find((b) => b.name === 'later')!.buffered).toBe(held)
    await call(p, 'bridges.start', { name: 'later' })
    await waitStatus(p, 'later', 'connected')
    await pub.publishAsync('flater/3', 'c', { qos: 1 })
    await waitFor(() => got.length === 2, 'a message after the restart')
    expect(got.map((m) => m.topic)).toEqual(['flater/1', 'flater/3'])
  })

  it('changes forwards and subscriptions at run time and keeps them across a reload', async () => {
    await call(p, 'bridges.forwards.add', { name: 'v4', topic: 'added/#' })
    await call(p, 'bridges.forwards.del', { name: 'v4', topic: 'f4b/#' })
    await call(p, 'bridges.subscriptions.add', { name: 'v5', topic: 'in2/#', qos: 0 })
    expect(await call(p, 'bridges.forwards', { name: 'v4' })).toEqual(['f4/#', 'added/#'])
    expect(await call(p, 'bridges.subscriptions', { name: 'v5' })).toEqual([{ topic: 'in/#', qos: 1 }, { topic: 'in2/#', qos: 0 }])
    const got = await remoteSubscriber(`m/${p.node.name}/#`)
    const pub = await connect(p.node)
    await pub.publishAsync('added/x', '1', { qos: 1 })
    await pub.publishAsync('f4b/x', 'not any more', { qos: 1 })
    await pub.publishAsync('f4/x', '2', { qos: 1 })
    await waitFor(() => got.some((m) => m.topic.endsWith('/f4/x')), 'the marker message')
    expect(got.filter((m) => m.packet.retain !== true).map((m) => m.topic.slice(`m/${p.node.name}/`.length))).toEqual(['added/x', 'f4/x'])
    const local = await connect(p.node)
    const inbound = collect(local)
    await local.subscribeAsync('from/mosq/in2/#', { qos: 1 })
    const remote = await mosquitto.connect()
    remoteClients.push(remote)
    await remote.publishAsync('in2/z', 'z', { qos: 1 })
    await waitFor(() => inbound.length === 1, 'a message of the added subscription')

    await p.manager.reload(PLUGIN)
    await waitStatus(p, 'v4', 'connected')
    expect(await call(p, 'bridges.forwards', { name: 'v4' })).toEqual(['f4/#', 'added/#'])
    expect(await call(p, 'bridges.subscriptions', { name: 'v5' })).toEqual([{ topic: 'in/#', qos: 1 }, { topic: 'in2/#', qos: 0 }])
    await call(p, 'bridges.subscriptions.del', { name: 'v5', topic: 'in2/#' })
    await call(p, 'bridges.forwards.del', { name: 'v4', topic: 'added/#' })
    await call(p, 'bridges.forwards.add', { name: 'v4', topic: 'f4b/#' })
    expect(await call(p, 'bridges.forwards', { name: 'v4' })).toEqual(['f4/#', 'f4b/#'])
    expect(await call(p, 'bridges.subscriptions', { name: 'v5' })).toEqual([{ topic: 'in/#', qos: 1 }])
  })

  it('answers NotFoundError for an unknown bridge, naming the known ones, and refuses a bad QoS', async () => {
    await expect(call(p, 'bridges.start', { name: 'nope' })).rejects.toThrow(/bridge nope not found; known: badca, later, tls, v3, v4, v5/)
    await expect(call(p, 'bridges.subscriptions.add', { name: 'v5', topic: 'x', qos: 3 })).rejects.toThrow(/bad QoS/)
    await expect(call(p, 'bridges.forwards.add', { name: 'v5', topic: 'a/#/b' })).rejects.toThrow(/# must be a whole last level/)
  })

  it('refuses the operations while the plugin is unloaded', async () => {
    await p.manager.unload(PLUGIN)
    const err = await call(p, 'bridges.list').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect((err as ApiError).message).toMatch(/plugin svc_bridge_mqtt is not loaded on .+; load it first/)
    await p.manager.load(PLUGIN)
    expect((await list(p)).length).toBe(6)
  })
})

describe('two Starling nodes bridged both ways', () => {
  let a: PluginNode
  let b: PluginNode
  beforeAll(async () => {
    a = await startPluginNode()
    b = await startPluginNode()
  })
  afterAll(async () => {
    await a?.destroy()
    await b?.destroy()
  })

  /** Publishes `count` messages on each side and returns what subscribers on both sides got. */
  async function exchange (prefix: string, count: number): Promise<{ onA: Received[], onB: Received[] }> {
    const subA = await connect(a.node, { protocolVersion: 5 })
    const subB = await connect(b.node, { protocolVersion: 5 })
    const onA = collect(subA)
    const onB = collect(subB)
    await subA.subscribeAsync(`${prefix}/#`, { qos: 1 })
    await subB.subscribeAsync(`${prefix}/#`, { qos: 1 })
    const pubA = await connect(a.node)
    const pubB = await connect(b.node)
    for (let i = 0; i < count; i++) {
      await pubA.publishAsync(`${prefix}/from-a`, String(i), { qos: 1 })
      await pubB.publishAsync(`${prefix}/from-b`, String(i), { qos: 1 })
    }
    await waitFor(() => onA.length >= 2 * count && onB.length >= 2 * count, 'every message on both sides')
    // a loop would keep adding: one more round trip each way, then count again
    await pubA.publishAsync(`${prefix}/end-a`, 'end', { qos: 1 })
    await pubB.publishAsync(`${prefix}/end-b`, 'end', { qos: 1 })
    await waitFor(() => ['end-a', 'end-b'].every((t) => onA.some((m) => m.topic.endsWith(t)) && onB.some((m) => m.topic.endsWith(t))), 'the end markers')
    return { onA, onB }
  }

  it('one mqttv5 bridge with forwards and subscriptions (No Local): every message once on each side', async () => {
    a.writeConf(PLUGIN, bridgeConf({
      tob: {
        address: `127.0.0.1:${b.node.port('mqtt:tcp')}`,
        proto_ver: 'mqttv5',
        forwards: 'loop5/#',
        'subscription.1.topic': 'loop5/#',
        'subscription.1.qos': 1,
        reconnect_interval: '1s'
      }
    }))
    await a.manager.load(PLUGIN)
    await waitStatus(a, 'tob', 'connected')
    const { onA, onB } = await exchange('loop5', 20)
    for (const got of [onA, onB]) {
      expect(got.filter((m) => m.topic === 'loop5/from-a').map((m) => m.payload.toString())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)))
      expect(got.filter((m) => m.topic === 'loop5/from-b').map((m) => m.payload.toString())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)))
      expect(got.length).toBe(42)
    }
    await a.manager.unload(PLUGIN)
  })

  it('two mqttv4 bridges in bridge mode, each forwarding to the other: every message once on each side', async () => {
    a.writeConf(PLUGIN, bridgeConf({
      tob: { address: `127.0.0.1:${b.node.port('mqtt:tcp')}`, proto_ver: 'mqttv4', bridge_mode: 'on', forwards: 'loop4/#', reconnect_interval: '1s' }
    }))
    b.writeConf(PLUGIN, bridgeConf({
      toa: { address: `127.0.0.1:${a.node.port('mqtt:tcp')}`, proto_ver: 'mqttv4', bridge_mode: 'on', forwards: 'loop4/#', reconnect_interval: '1s' }
    }))
    await a.manager.load(PLUGIN)
    await b.manager.load(PLUGIN)
    await waitStatus(a, 'tob', 'connected')
    await waitStatus(b, 'toa', 'connected')
    const { onA, onB } = await exchange('loop4', 20)
    expect(onA.length).toBe(42)
    expect(onB.length).toBe(42)
    const sentA = (await list(a))[0].sent
    const sentB = (await list(b))[0].sent
    expect(sentA).toBe(21)
    expect(sentB).toBe(21)
  })
})
