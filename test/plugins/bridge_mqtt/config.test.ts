/**
 * svc_bridge_mqtt's keys: defaults, parsing into BridgeConfig, the errors, the environment,
 * the shipped file's sample, the plugin_configs API, the item encoding of the disk buffer.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ConfigError, loadConfig, loadPluginConfig } from '../../../node/config/index.js'
import { BRIDGE_CONFIG_SCHEMA, expandMountpoint, parseBridgeConfigs } from '../../../plugins/bridge_mqtt/config.js'
import { decodeItem, encodeItem } from '../../../plugins/bridge_mqtt/bridge.js'
import { mqttClientOptions } from '../../../plugins/bridge_mqtt/mqtt-link.js'
import { apiRequest } from '../../helpers/node.js'
import { startPluginNode, type PluginNode } from '../../node/plugins/harness.js'

const shipped = fileURLToPath(new URL('../../../etc/plugins/svc_bridge_mqtt.conf', import.meta.url))
const ROOT = '/opt/starling'

let dir: string
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'st-bridge-conf-')) })
afterAll(() => { rmSync(dir, { recursive: true, force: true }) })

/** Loads `text` as the plugin's file (and `env`), then parses the bridges. */
function parse (text: string, env: Record<string, string> = {}): ReturnType<typeof parseBridgeConfigs> {
  const file = join(dir, `c${Math.random().toString(16).slice(2)}.conf`)
  writeFileSync(file, text)
  return parseBridgeConfigs(loadPluginConfig(file, BRIDGE_CONFIG_SCHEMA, { env }), { root: ROOT })
}

describe('bridge config', () => {
  it('gives a bridge with only an address EMQ X 4.4\'s defaults (reconnect 30s per the spec)', () => {
    const [b] = parse('bridge.mqtt.aws.address = 127.0.0.1:1883\n')
    expect(b).toEqual({
      name: 'aws',
      address: '127.0.0.1:1883',
      kind: 'mqtt',
      protoVer: 'mqttv4',
      clientId: 'bridge_aws',
      cleanStart: true,
      username: undefined,
      password: undefined,
      keepaliveMs: 60_000,
      bridgeMode: false,
      ssl: {
        enabled: false, cacertfile: undefined, certfile: undefined, keyfile: undefined, ciphers: undefined, pskCiphers: undefined,
        tlsVersions: ['tlsv1.3', 'tlsv1.2'], verify: true, serverNameIndication: undefined
      },
      reconnectIntervalMs: 30_000,
      retryIntervalMs: 20_000,
      maxInflightBatches: 32,
      mountpoint: '',
      receiveMountpoint: '',
      forwards: [],
      subscriptions: [],
      queue: { batchCountLimit: 32, batchBytesLimit: 1024 * 1024, replayqDir: undefined, replayqSegBytes: 10 * 1024 * 1024, maxTotalBytes: 5 * 1024 ** 3 },
      startType: 'auto'
    })
  })

  it('parses every key of the spec\'s table', () => {
    const [b] = parse([
      'bridge.mqtt.aws.address = broker.example.com:8883',
      'bridge.mqtt.aws.proto_ver = mqttv5',
      'bridge.mqtt.aws.client_id = site-1',
      'bridge.mqtt.aws.clean_start = off',
      'bridge.mqtt.aws.username = user',
      'bridge.mqtt.aws.password = passwd',
      'bridge.mqtt.aws.keepalive = 30s',
      'bridge.mqtt.aws.forwards = topic1/#, topic2/#,topic1/#',
      'bridge.mqtt.aws.mountpoint = bridge/aws/${node}/',
      'bridge.mqtt.aws.subscription.1.topic = cmd/topic1',
      'bridge.mqtt.aws.subscription.1.qos = 1',
      'bridge.mqtt.aws.subscription.3.topic = cmd/topic3',
      'bridge.mqtt.aws.subscription.3.qos = 0',
      'bridge.mqtt.aws.ssl = on',
      'bridge.mqtt.aws.cacertfile = etc/certs/cacert.pem',
      'bridge.mqtt.aws.certfile = /abs/cert.pem',
      'bridge.mqtt.aws.ciphers = ECDHE-RSA-AES256-GCM-SHA384,AES128-SHA',
      'bridge.mqtt.aws.psk_ciphers = PSK-AES128-CBC-SHA',
      'bridge.mqtt.aws.tls_versions = tlsv1.2',
      'bridge.mqtt.aws.reconnect_interval = 5s',
      'bridge.mqtt.aws.retry_interval = 10s',
      'bridge.mqtt.aws.max_inflight_batches = 4',
      'bridge.mqtt.aws.queue.batch_count_limit = 100',
      'bridge.mqtt.aws.queue.batch_bytes_limit = 64KB',
      'bridge.mqtt.aws.queue.replayq_dir = data/replayq/aws',
      'bridge.mqtt.aws.queue.replayq_seg_bytes = 1MB',
      'bridge.mqtt.aws.start_type = manual',
      'bridge.mqtt.aws.bridge_mode = on'
    ].join('\n'))
    expect(b).toMatchObject({
      protoVer: 'mqttv5',
      clientId: 'site-1',
      cleanStart: false,
      username: 'user',
      password: 'passwd',
      keepaliveMs: 30_000,
      forwards: ['topic1/#', 'topic2/#'],
      mountpoint: 'bridge/aws/${node}/',
      subscriptions: [{ topic: 'cmd/topic1', qos: 1 }, { topic: 'cmd/topic3', qos: 0 }],
      ssl: { enabled: true, cacertfile: `${ROOT}/etc/certs/cacert.pem`, certfile: '/abs/cert.pem', tlsVersions: ['tlsv1.2'], pskCiphers: 'PSK-AES128-CBC-SHA' },
      reconnectIntervalMs: 5000,
      retryIntervalMs: 10_000,
      maxInflightBatches: 4,
      queue: { batchCountLimit: 100, batchBytesLimit: 64 * 1024, replayqDir: `${ROOT}/data/replayq/aws`, replayqSegBytes: 1024 * 1024 },
      startType: 'manual',
      bridgeMode: true
    })
    expect(expandMountpoint(b.mountpoint, 'n1@host')).toBe('bridge/aws/n1@host/')
    const opts = mqttClientOptions({ ...b, ssl: { ...b.ssl, cacertfile: undefined, certfile: undefined } })
    expect(opts).toMatchObject({ host: 'broker.example.com', port: 8883, protocol: 'mqtts', protocolVersion: 5, clientId: 'site-1', clean: false, keepalive: 30, reconnectPeriod: 0 })
    expect(opts).toMatchObject({ ciphers: 'ECDHE-RSA-AES256-GCM-SHA384:AES128-SHA', minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2', servername: 'broker.example.com', rejectUnauthorized: true })
  })

  it('takes a node name as an RPC bridge, which has no subscriptions', () => {
    expect(parse('bridge.mqtt.emqx.address = emqx2@192.168.1.2\nbridge.mqtt.emqx.forwards = a/#\n')[0]).toMatchObject({ kind: 'rpc', address: 'emqx2@192.168.1.2' })
    expect(() => parse('bridge.mqtt.r.address = n@h\nbridge.mqtt.r.subscription.1.topic = x\n')).toThrow(/an RPC bridge is forward-only/)
  })

  it('refuses a bad address, TLS version, topic filter or a shared buffer directory, naming the key', () => {
    const fails = (text: string, key: string, what: RegExp): void => {
      let err: unknown
      try { parse(text) } catch (e) { err = e }
      expect(err).toBeInstanceOf(ConfigError)
      expect((err as ConfigError).key).toBe(key)
      expect((err as ConfigError).message).toMatch(what)
    }
    fails('bridge.mqtt.a.address = localhost\n', 'bridge.mqtt.a.address', /expected host:port \(MQTT bridge\) or a node name/)
    fails('bridge.mqtt.a.address = h:70000\n', 'bridge.mqtt.a.address', /out of range/)
    fails('bridge.mqtt.a.address = h:1\nbridge.mqtt.a.tls_versions = tlsv1.2,sslv3\n', 'bridge.mqtt.a.tls_versions', /unknown TLS version "sslv3"/)
    fails('bridge.mqtt.a.address = h:1\nbridge.mqtt.a.forwards = a/#/b\n', 'bridge.mqtt.a.forwards', /# must be a whole last level/)
    fails('bridge.mqtt.a.address = h:1\nbridge.mqtt.a.queue.replayq_dir = q\nbridge.mqtt.b.address = h:2\nbridge.mqtt.b.queue.replayq_dir = /opt/starling/q\n',
      'bridge.mqtt.b.queue.replayq_dir', /share the buffer directory/)
    expect(() => parse('bridge.mqtt.a.forwards = x\n')).toThrow(/missing key "bridge.mqtt.a.address"/)
  })

  it('reads bridge keys from STARLING_ variables (names in lower case)', () => {
    const bridges = parse('', {
      STARLING_BRIDGE__MQTT__SITE__ADDRESS: '127.0.0.1:1884',
      STARLING_BRIDGE__MQTT__SITE__FORWARDS: 'a/#',
      STARLING_BRIDGE__MQTT__SITE__QUEUE__REPLAYQ_DIR: 'data/q'
    })
    expect(bridges).toHaveLength(1)
    expect(bridges[0]).toMatchObject({ name: 'site', address: '127.0.0.1:1884', forwards: ['a/#'], queue: { replayqDir: `${ROOT}/data/q` } })
  })

  it('ships a file that configures no bridge, whose sample bridge loads once uncommented', () => {
    expect(parse(readFileSync(shipped, 'utf8'))).toEqual([])
    const sample = readFileSync(shipped, 'utf8').split('\n').map((l) => l.replace(/^## (bridge\.mqtt\.)/, '$1')).join('\n')
    const [aws] = parse(sample)
    expect(aws).toMatchObject({ name: 'aws', address: '127.0.0.1:1883', forwards: ['topic1/#', 'topic2/#'], subscriptions: [{ topic: 'cmd/topic1', qos: 1 }, { topic: 'cmd/topic2', qos: 1 }] })
  })

  it('is refused in etc/starling.conf as a plugin\'s key', () => {
    expect(() => loadConfig({ env: {}, overrides: { 'bridge.mqtt.aws.address': '127.0.0.1:1883' } })).toThrow(/belongs to a plugin: set it in etc\/plugins\/svc_bridge_mqtt.conf/)
  })

  it('encodes a buffered message and its MQTT 5 properties for the disk buffer', () => {
    const m = {
      cmd: 'publish' as const, topic: 't/1', payload: Buffer.from([0, 1, 2, 255]), qos: 2, retain: true, dup: false,
      properties: { correlationData: Buffer.from('cd'), userProperties: { a: 'b' }, contentType: 'x' }
    }
    expect(decodeItem(encodeItem(m))).toEqual(m)
    const plain = { cmd: 'publish' as const, topic: 'é/2', payload: Buffer.alloc(0), qos: 0, retain: false, dup: false }
    expect(decodeItem(encodeItem(plain))).toEqual(plain)
  })
})

describe('bridge keys through /api/v3/nodes/:node/plugin_configs/svc_bridge_mqtt', () => {
  let p: PluginNode
  beforeAll(async () => {
    p = await startPluginNode()
    p.writeConf('svc_bridge_mqtt', 'bridge.mqtt.aws.address = 127.0.0.1:1\nbridge.mqtt.aws.password = secret\nbridge.mqtt.aws.start_type = manual\n')
  })
  afterAll(async () => { await p.destroy() })

  it('reads every key of each bridge with the password hidden, and writes keys back', async () => {
    const node = p.node.name
    const got = await apiRequest(p.node, `/nodes/${encodeURIComponent(node)}/plugin_configs/svc_bridge_mqtt?format=object`)
    expect(got.code).toBe(0)
    expect(got.data['bridge.mqtt.aws.address']).toBe('127.0.0.1:1')
    expect(got.data['bridge.mqtt.aws.password']).toBe('******')
    expect(got.data['bridge.mqtt.aws.reconnect_interval']).toBe('30s')
    const put = await apiRequest(p.node, `/nodes/${encodeURIComponent(node)}/plugin_configs/svc_bridge_mqtt`, 'PUT', { 'bridge.mqtt.aws.forwards': 'a/#,b/#' })
    expect(put.code).toBe(0)
    expect(put.data.reload_required).toEqual(['bridge.mqtt.aws.forwards'])
    await p.manager.load('svc_bridge_mqtt')
    expect(await p.node.rpc.local('bridges.forwards', { name: 'aws' })).toEqual(['a/#', 'b/#'])
    const bad = await apiRequest(p.node, `/nodes/${encodeURIComponent(node)}/plugin_configs/svc_bridge_mqtt`, 'PUT', { 'bridge.mqtt.aws.proto_ver': 'mqttv6' })
    expect(bad.code).toBe(108)
  })
})
