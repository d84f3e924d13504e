/**
 * The bridge resource types and `data_to_mqtt_broker` without a network: config checks
 * (EMQ X 4.4's defaults, 107/108), the bridge settings a resource becomes, a resource's
 * bridge opened, status'd and closed on this node (its disk buffer kept on stop, removed with
 * the resource), and what the action sends: topic, payload template, QoS, retain.
 */
import { mkdirSync, mkdtempSync, existsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../../node/config/index.js'
import { silentLogger } from '../../../node/logger.js'
import type { PublishMessage } from '../../../node/mqtt/core.js'
import type { Bridge, BridgeConfig, BridgeInfo, BridgeLink, BridgeStatus } from '../../../plugins/bridge_mqtt/types.js'
import { createBridge } from '../../../plugins/bridge_mqtt/bridge.js'
import type { MqttCore } from '../../../node/mqtt/core.js'
import {
  BRIDGE_MQTT_PARAMS, BridgeResource, bridgeConfigOf, createBridgeResourceTypes, dataToMqttBrokerAction, replayDirOf, type BridgeRuntime
} from '../../../plugins/bridge_mqtt/actions.js'
import { createBuiltInRegistry } from '../../../rules/engine.js'
import { BRIDGE_ACTIONS, BRIDGE_RESOURCE_TYPES } from '../../../plugins/bridge_mqtt/actions.js'
import { createActionRegistry } from '../../../rules/registry.js'
import { checkParams } from '../../../rules/params.js'
import { ResourceInstances } from '../../../rules/resource-instances.js'
import { resourceView } from '../../../rules/views.js'
import type { ActionContext, Resource, ResourceComponents, ResourceTypeDefinition } from '../../../rules/types.js'

// svc_rule_engine's types and actions, and those svc_bridge_mqtt provides while it is loaded
const registry = createBuiltInRegistry()
for (const type of BRIDGE_RESOURCE_TYPES) registry.registerResourceType(type)
for (const action of BRIDGE_ACTIONS) registry.registerAction(action)

/** What ResourceService.create does with a config: params checked and filled, then the type's own checks. */
function configOf (type: string, given: Record<string, unknown>): Record<string, unknown> {
  const def = registry.resourceType(type)
  const config = checkParams(def.params, given, `resource type ${type} config`)
  def.checkConfig?.(config)
  return config
}

function resource (type: string, config: Record<string, unknown>, id = `${type}:r1`): Resource {
  return { id, type, config: configOf(type, config), description: '', attrs: 'undefined', created_at: 1 }
}

const place = { node: 'n1@127.0.0.1', dataDir: '/data', root: '/nowhere' }

describe('bridge_mqtt and bridge_rpc configs', () => {
  it('fills EMQ X 4.4\'s defaults', () => {
    expect(configOf('bridge_mqtt', {})).toEqual({
      address: '127.0.0.1:1883', pool_size: 8, clientid: 'client', append: true, username: '', password: '',
      mountpoint: 'bridge/aws/${node}/', disk_cache: 'off', proto_ver: 'mqttv4', keepalive: '60s',
      reconnect_interval: '30s', retry_interval: '20s', bridge_mode: false, ssl: 'off',
      cacertfile: 'etc/certs/cacert.pem', certfile: 'etc/certs/client-cert.pem', keyfile: 'etc/certs/client-key.pem',
      ciphers: '', verify: false
    })
    expect(configOf('bridge_rpc', {})).toEqual({
      address: 'starling2@127.0.0.1', mountpoint: 'bridge/starling/${node}/', pool_size: 8, reconnect_interval: '30s', batch_size: 32, disk_cache: 'off'
    })
  })

  it.each([
    ['bridge_mqtt', { proto_ver: 'mqttv6' }, /proto_ver must be one of/],
    ['bridge_mqtt', { disk_cache: true }, /disk_cache must be a string/],
    ['bridge_mqtt', { ssl: 'yes' }, /ssl must be one of "on", "off"/],
    ['bridge_mqtt', { address: 'emqx2@127.0.0.1' }, /address must be host:port.*bridge_rpc/],
    ['bridge_mqtt', { address: 'localhost:99999' }, /port outside/],
    ['bridge_mqtt', { keepalive: 'soon' }, /keepalive must be a duration/],
    ['bridge_mqtt', { reconnect_interval: '0s' }, /reconnect_interval must be more than 0/],
    ['bridge_mqtt', { mountpoint: 'a/#/' }, /mountpoint is not a topic prefix/],
    ['bridge_mqtt', { pool_size: 0 }, /pool_size must be a whole number/],
    ['bridge_rpc', { address: '127.0.0.1:1883' }, /address must be a node name/],
    ['bridge_rpc', { batch_size: 0 }, /batch_size must be at least 1/]
  ])('%s refuses %j with 108', (type, config, message) => {
    expect(() => configOf(type, config)).toThrow(expect.objectContaining({ code: 108, message: expect.stringMatching(message) }))
  })

  it('shows the password as ******, keeps it stored', () => {
    const r = resource('bridge_mqtt', { password: 'pw' })
    expect(r.config.password).toBe('pw')
    expect(resourceView(r, undefined, BRIDGE_MQTT_PARAMS).config).toMatchObject({ password: '******', username: '' })
    expect(resourceView(resource('bridge_mqtt', {}), undefined, BRIDGE_MQTT_PARAMS).config.password).toBe('')
  })
})

describe('the bridge a resource becomes', () => {
  it('maps an MQTT resource: client id with a random suffix, ${node}, durations, memory buffer', () => {
    const c = bridgeConfigOf(resource('bridge_mqtt', { address: 'remote:1884', clientid: 'site1', username: 'u', password: 'p', proto_ver: 'mqttv5', keepalive: '1m', bridge_mode: true }), place)
    expect(c).toMatchObject({
      name: 'bridge_mqtt:r1', kind: 'mqtt', address: 'remote:1884', protoVer: 'mqttv5', username: 'u', password: 'p',
      keepaliveMs: 60_000, reconnectIntervalMs: 30_000, retryIntervalMs: 20_000, bridgeMode: true, cleanStart: true,
      mountpoint: 'bridge/aws/n1@127.0.0.1/', forwards: [], subscriptions: [], startType: 'auto'
    })
    expect(c.clientId).toMatch(/^site1_[0-9a-f]{16}$/)
    expect(c.queue.replayqDir).toBeUndefined()
    expect(c.ssl.enabled).toBe(false)
  })

  it('takes client_id (the spec\'s name) over clientid, and no suffix with append false', () => {
    expect(bridgeConfigOf(resource('bridge_mqtt', { client_id: 'spec', clientid: 'emqx', append: false }), place).clientId).toBe('spec')
    expect(bridgeConfigOf(resource('bridge_mqtt', { append: false }), place).clientId).toBe('client')
    expect(bridgeConfigOf(resource('bridge_mqtt', { username: '', password: '' }), place)).toMatchObject({ username: undefined, password: undefined })
  })

  it('puts a disk cache under the data directory, one per resource', () => {
    const c = bridgeConfigOf(resource('bridge_rpc', { address: 'other@host', disk_cache: 'on', batch_size: 100 }, 'bridge_rpc:to-b'), place)
    expect(c).toMatchObject({ kind: 'rpc', address: 'other@host', mountpoint: 'bridge/starling/n1@127.0.0.1/' })
    expect(c.queue.replayqDir).toBe(join('/data', 'replayq', 'rule_bridge_rpc_to-b'))
    expect(c.queue.batchCountLimit).toBe(100)
    expect(replayDirOf('/d', 'resource:0a1b')).toBe(join('/d', 'replayq', 'rule_resource_0a1b'))
  })

  it('resolves TLS files against the configuration root and leaves out absent ones', () => {
    const root = mkdtempSync(join(tmpdir(), 'bridge-tls-'))
    mkdirSync(join(root, 'etc/certs'), { recursive: true })
    writeFileSync(join(root, 'etc/certs/cacert.pem'), 'x')
    const c = bridgeConfigOf(resource('bridge_mqtt', { ssl: 'on', verify: true, server_name_indication: 'broker.example', ciphers: 'AES128-SHA' }), { ...place, root })
    expect(c.ssl).toEqual({
      enabled: true, cacertfile: join(root, 'etc/certs/cacert.pem'), certfile: undefined, keyfile: undefined,
      ciphers: 'AES128-SHA', verify: true, serverNameIndication: 'broker.example'
    })
  })
})

/** A bridge that keeps what it is given; its status is set by the test. */
class FakeBridge implements Bridge {
  readonly sent: PublishMessage[] = []
  status: BridgeStatus = 'connecting'
  closed = 0
  constructor (readonly name: string, readonly config: BridgeConfig) {}
  info (): BridgeInfo {
    return { name: this.name, status: this.status, address: this.config.address, kind: this.config.kind, forwards: [], subscriptions: [], sent: this.sent.length, received: 0, buffered: 0, dropped: 0 }
  }

  start = async (): Promise<boolean> => true
  stop = async (): Promise<boolean> => true
  addForward = async (): Promise<void> => {}
  delForward = async (): Promise<void> => {}
  addSubscription = async (): Promise<void> => {}
  delSubscription = async (): Promise<void> => {}
  forward = async (m: PublishMessage): Promise<void> => { this.sent.push(m) }
  close = async (): Promise<void> => { this.closed++ }
}

const unusedLink = (): BridgeLink => ({ connect: async () => {}, send: async () => {}, onDown: () => {}, close: async () => {} })

describe('a resource\'s bridge on this node', () => {
  const bridges: FakeBridge[] = []
  const runtime: BridgeRuntime = {
    link: unusedLink,
    createBridge: async (config) => {
      if (config.queue.replayqDir !== undefined) mkdirSync(config.queue.replayqDir, { recursive: true })
      const b = new FakeBridge(config.name, config)
      bridges.push(b)
      return b
    }
  }
  const types = createBridgeResourceTypes(() => runtime)
  const reg = createActionRegistry()
  types.forEach((t: ResourceTypeDefinition) => reg.registerResourceType(t))
  const dataDir = mkdtempSync(join(tmpdir(), 'bridge-res-'))
  const components = {
    name: 'n1', logger: silentLogger(), config: loadConfig({ env: {} }), dataDir, broker: { core: {} }, services: { alarms: {} }
  } as unknown as ResourceComponents
  const instances = new ResourceInstances({ registry: reg, logger: silentLogger(), components })

  it('opens a bridge when the engine starts, reports its status, closes it on stop keeping the disk buffer', async () => {
    const r = resource('bridge_mqtt', { disk_cache: 'on' })
    instances.start([r])
    const instance = await instances.get(r.id)
    expect(instance).toBeInstanceOf(BridgeResource)
    expect(bridges).toHaveLength(1)
    expect(await instances.alive(r)).toBe(false)
    bridges[0].status = 'connected'
    expect(await instances.alive(r)).toBe(true)
    instances.sync(r.id, r) // the same resource again: nothing reopened
    expect(bridges).toHaveLength(1)
    await instances.stop()
    expect(bridges[0].closed).toBe(1)
    expect(existsSync(replayDirOf(dataDir, r.id))).toBe(true)
    expect(await instances.alive(r)).toBe(false)
  })

  it('reopens on a config change and removes the disk buffer with the resource', async () => {
    bridges.length = 0
    const r = resource('bridge_mqtt', { disk_cache: 'on' })
    instances.start([r])
    const changed = { ...r, config: { ...r.config, keepalive: '10s' } }
    instances.sync(r.id, changed)
    await instances.get(r.id)
    expect(bridges.map(b => [b.closed, b.config.keepaliveMs])).toEqual([[1, 60_000], [0, 10_000]])
    instances.sync(r.id, undefined) // deleted
    await waitUntil(() => !existsSync(replayDirOf(dataDir, r.id)))
    expect(bridges[1].closed).toBe(1)
    expect(await instances.get(r.id)).toBeUndefined()
    await instances.stop()
  })

  it('has no instance for types without open (status from the health check)', async () => {
    const web: Resource = { id: 'built_in:w', type: 'built_in', config: {}, description: '', attrs: 'undefined', created_at: 1 }
    expect(await new ResourceInstances({ registry, logger: silentLogger(), components }).alive(web)).toBeUndefined()
  })
})

async function waitUntil (ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise(resolve => setTimeout(resolve, 5))
  }
}

describe('data_to_mqtt_broker', () => {
  const config = bridgeConfigOf(resource('bridge_mqtt', {}), place)
  const run = async (params: Record<string, unknown>, selected: Record<string, unknown>, env: Record<string, unknown>, bridge = new FakeBridge('b', config)): Promise<PublishMessage[]> => {
    const ctx: ActionContext = {
      logger: silentLogger(),
      ruleId: 'r',
      actionId: 'a',
      params: checkParams(dataToMqttBrokerAction.params, { $resource: 'bridge_mqtt:r1', ...params }, 'action'),
      resource: undefined,
      env,
      publish: async () => {},
      instance: async () => new BridgeResource(bridge, undefined)
    }
    await dataToMqttBrokerAction.run(selected, ctx)
    return bridge.sent
  }
  const env = { topic: 'sensors/1', qos: 1, flags: { retain: true, dup: false }, clientid: 'c1' }

  it('is for message.publish, bound to either bridge type, with EMQ X\'s params', () => {
    expect(dataToMqttBrokerAction).toMatchObject({ for: 'message.publish', types: ['bridge_mqtt', 'bridge_rpc'], title: 'Data bridge to MQTT Broker' })
    expect(Object.keys(dataToMqttBrokerAction.params)).toEqual(['$resource', 'forward_topic', 'payload_tmpl', 'qos'])
    expect(() => checkParams(dataToMqttBrokerAction.params, {}, 'action')).toThrow(expect.objectContaining({ code: 107 }))
    expect(() => checkParams(dataToMqttBrokerAction.params, { $resource: 'x', forward_topic: 'a/#' }, 'action')).toThrow(expect.objectContaining({ code: 108 }))
  })

  it('sends the selection as JSON on the message\'s topic, QoS and retain flag by default', async () => {
    const [m] = await run({}, { t: 21.5, clientid: 'c1' }, env)
    expect(m).toMatchObject({ topic: 'sensors/1', qos: 1, retain: true, dup: false, clientId: 'c1' })
    expect(JSON.parse(m.payload.toString())).toEqual({ t: 21.5, clientid: 'c1' })
  })

  it('renders payload_tmpl and forward_topic with ${key} values, and a set qos', async () => {
    const [m] = await run({ forward_topic: 'out/${clientid}', payload_tmpl: '${clientid}: ${t} (${missing})', qos: 2 }, { t: 21.5, clientid: 'c1' }, { ...env, qos: 0, flags: { retain: false } })
    expect(m).toMatchObject({ topic: 'out/c1', qos: 2, retain: false })
    expect(m.payload.toString()).toBe('c1: 21.5 ()')
  })

  it('fails when the rendered topic is not a topic name, or the resource does not run here', async () => {
    await expect(run({ forward_topic: 'out/${x}' }, { x: 'a/+' }, env)).rejects.toThrow(/not a topic name/)
    const ctx = { params: { $resource: 'bridge_mqtt:gone' }, env, instance: async () => undefined } as unknown as ActionContext
    await expect(dataToMqttBrokerAction.run({}, ctx)).rejects.toThrow(/bridge_mqtt:gone is not running on this node/)
  })
})

describe('through the real bridge runtime, with a fake link', () => {
  /** A link whose remote is up or down as the test says; it keeps what it was sent. */
  class FakeLink implements BridgeLink {
    up = true
    readonly sent: PublishMessage[] = []
    private down: Array<(err: Error) => void> = []
    connect = async (): Promise<void> => { if (!this.up) throw new Error('connection refused') }
    send = async (batch: readonly PublishMessage[]): Promise<void> => {
      if (!this.up) throw new Error('link down')
      this.sent.push(...batch)
    }

    onDown = (listener: (err: Error) => void): void => { this.down.push(listener) }
    close = async (): Promise<void> => {}
    drop (): void {
      this.up = false
      for (const l of this.down) l(new Error('dropped'))
    }
  }

  const dataDir = mkdtempSync(join(tmpdir(), 'bridge-real-'))
  const link = new FakeLink()
  const types = createBridgeResourceTypes(() => ({ link: () => link, createBridge }))
  const reg = createActionRegistry()
  types.forEach((t: ResourceTypeDefinition) => reg.registerResourceType(t))
  const components = {
    name: 'n1',
    logger: silentLogger(),
    config: loadConfig({ env: {} }),
    dataDir,
    broker: { core: { publish: async () => {}, client: () => undefined, sink: () => () => {} } as unknown as MqttCore },
    services: { alarms: { activate: () => true, deactivate: () => true } }
  } as unknown as ResourceComponents
  const instances = new ResourceInstances({ registry: reg, logger: silentLogger(), components })
  afterAll(async () => await instances.stop())

  it('sends the action\'s messages under the mountpoint, keeps them while the link is down, and reports the status', async () => {
    const r = resource('bridge_mqtt', { disk_cache: 'on', reconnect_interval: '50ms', mountpoint: 'site/${node}/' })
    instances.start([r])
    const ctx = (): ActionContext => ({
      logger: silentLogger(), ruleId: 'r', actionId: 'a', resource: r, publish: async () => {},
      params: checkParams(dataToMqttBrokerAction.params, { $resource: r.id, payload_tmpl: '${n}' }, 'action'),
      env: { topic: 'sensors/1', qos: 1, flags: { retain: false } },
      instance: async () => await instances.get(r.id)
    })
    await waitUntil(() => link.sent.length === 0 && existsSync(replayDirOf(dataDir, r.id)))
    await dataToMqttBrokerAction.run({ n: 1 }, ctx())
    await waitUntil(() => link.sent.length === 1)
    expect(link.sent[0]).toMatchObject({ topic: 'site/n1/sensors/1', qos: 1 })
    expect(await instances.alive(r)).toBe(true)
    link.drop()
    expect(await instances.alive(r)).toBe(false)
    for (let n = 2; n <= 5; n++) await dataToMqttBrokerAction.run({ n }, ctx())
    link.up = true
    await waitUntil(() => link.sent.length === 5)
    expect(link.sent.map(m => m.payload.toString())).toEqual(['1', '2', '3', '4', '5'])
    expect(await instances.alive(r)).toBe(true)
  })
})
