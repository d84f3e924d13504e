/**
 * EMQ X 4's zones and mountpoints from real clients on real sockets (docs/migration.md, Zones):
 * a listener's `zone` holds its clients to `zone.<name>.*`, the connections API reports the zone,
 * and a listener's or zone's `mountpoint` prefixes what a client publishes and subscribes to
 * and is taken off what it receives.
 */
import type { IClientOptions } from 'mqtt'
import { apiRequest, waitFor } from '../helpers/node.js'
import { closeOpened, nodeWith, open, refusedConnack, suback } from '../helpers/mqtt.js'
import type { TestNode } from '../helpers/node.js'

afterEach(async () => { await closeOpened() })

/** Options for the node's MQTT over WebSocket listener. */
function ws (node: TestNode, opts: IClientOptions = {}): IClientOptions {
  return { protocol: 'ws', port: node.port('mqtt:ws'), path: '/mqtt', ...opts }
}

describe('a listener in zone devices (max_qos_allowed 1), the WebSocket listener in zone external', () => {
  const node = nodeWith({ 'listener.tcp.external.zone': 'devices', 'zone.devices.max_qos_allowed': '1', 'zone.devices.strict_mode': 'true' })

  it('grants the TCP client QoS 1 for a QoS 2 subscription and the WebSocket client QoS 2', async () => {
    const tcp = await open(node(), { clientId: 'zone-tcp' })
    const web = await open(node(), ws(node(), { clientId: 'zone-ws' }))
    expect(await suback(tcp.client, 'z/qos', { qos: 2 })).toEqual([1])
    expect(await suback(web.client, 'z/qos', { qos: 2 })).toEqual([2])
  })

  it('reports each client\'s zone in /api/v3/connections', async () => {
    await open(node(), { clientId: 'zone-tcp-2' })
    await open(node(), ws(node(), { clientId: 'zone-ws-2' }))
    const tcp = await apiRequest(node(), '/connections/zone-tcp-2')
    const web = await apiRequest(node(), '/connections/zone-ws-2')
    expect(tcp.data[0].zone).toBe('devices')
    expect(web.data[0].zone).toBe('external')
  })
})

describe('zone external refuses anonymous clients, the TCP listener is in zone internal (allow_anonymous, no ACL)', () => {
  const node = nodeWith({
    'zone.external.allow_anonymous': 'false',
    'listener.tcp.external.zone': 'internal',
    'zone.internal.allow_anonymous': 'true',
    'zone.internal.enable_acl': 'off',
    acl_nomatch: 'deny'
  })

  it('accepts an anonymous client on the internal listener and refuses it on the external one', async () => {
    const internal = await open(node(), { clientId: 'anon-internal' })
    expect(internal.connack.returnCode).toBe(0)
    const refused = await refusedConnack(node(), ws(node(), { clientId: 'anon-external' }))
    expect(refused.returnCode).toBe(5)
  })

  it('skips the ACL for the internal zone: acl_nomatch = deny does not apply to it', async () => {
    const internal = await open(node(), { clientId: 'acl-internal' })
    expect(await suback(internal.client, 'any/topic', { qos: 1 })).toEqual([1])
  })
})

describe('a second TCP listener, listener.tcp.internal, in zone internal (EMQ X\'s shipped pair)', () => {
  const node = nodeWith({
    'listener.tcp.internal': '127.0.0.1:0',
    'listener.tcp.internal.zone': 'internal',
    'zone.external.allow_anonymous': 'false',
    'zone.internal.allow_anonymous': 'true'
  })

  it('opens both and holds each one\'s clients to its zone', async () => {
    const internalPort = node().listeners.find(l => l.spec.key === 'listener.tcp.internal')!.port
    expect(internalPort).not.toBe(node().port('mqtt:tcp'))
    const inside = await open(node(), { port: internalPort, clientId: 'named-internal' })
    expect(inside.connack.returnCode).toBe(0)
    expect((await refusedConnack(node(), { clientId: 'named-external' })).returnCode).toBe(5)
    const listed = await apiRequest(node(), '/connections/named-internal')
    expect(listed.data[0].zone).toBe('internal')
  })
})

describe('listener.tcp.external.mountpoint = devices/%c/', () => {
  const node = nodeWith({ 'listener.tcp.external.mountpoint': 'devices/%c/' })

  it('puts the mountpoint before what the client publishes', async () => {
    const backend = await open(node(), ws(node(), { clientId: 'mp-backend' }))
    await backend.client.subscribeAsync('devices/#', { qos: 1 })
    const device = await open(node(), { clientId: 'dev1' })
    await device.client.publishAsync('up/temp', '21', { qos: 1 })
    await waitFor(() => backend.messages.length > 0, 'the device\'s message')
    expect(backend.messages.map(m => [m.topic, m.payload.toString()])).toEqual([['devices/dev1/up/temp', '21']])
  })

  it('subscribes the client inside its mountpoint and takes it off what the client receives', async () => {
    const device = await open(node(), { clientId: 'dev2' })
    await device.client.subscribeAsync('cmd/#', { qos: 1 })
    const backend = await open(node(), ws(node(), { clientId: 'mp-backend-2' }))
    await backend.client.publishAsync('cmd/go', 'outside', { qos: 1 })
    await backend.client.publishAsync('devices/dev2/cmd/go', 'inside', { qos: 1 })
    await waitFor(() => device.messages.length > 0, 'the command')
    await backend.client.publishAsync('devices/dev2/cmd/end', 'last', { qos: 1 })
    await waitFor(() => device.messages.length > 1, 'the last command')
    expect(device.messages.map(m => [m.topic, m.payload.toString()])).toEqual([['cmd/go', 'inside'], ['cmd/end', 'last']])
    const subs = await apiRequest(node(), '/subscriptions/dev2')
    expect(subs.data.map((s: any) => s.topic)).toEqual(['devices/dev2/cmd/#'])
  })

  it('unsubscribes the filter inside the mountpoint', async () => {
    const device = await open(node(), { clientId: 'dev3' })
    await device.client.subscribeAsync(['cmd/#', 'ping'], { qos: 1 })
    await device.client.unsubscribeAsync('cmd/#')
    const backend = await open(node(), ws(node(), { clientId: 'mp-backend-3' }))
    await backend.client.publishAsync('devices/dev3/cmd/go', 'after', { qos: 1 })
    // everything published before the ping has been delivered once the ping is
    await backend.client.publishAsync('devices/dev3/ping', 'marker', { qos: 1 })
    await waitFor(() => device.messages.some(m => m.topic === 'ping'), 'the ping')
    expect(device.messages.map(m => m.topic)).toEqual(['ping'])
  })

  it('takes the mountpoint off the messages queued for an away persistent session, once', async () => {
    const first = await open(node(), { clientId: 'dev5', clean: false, protocolVersion: 4 })
    await first.client.subscribeAsync('devices/#', { qos: 1 })
    await first.client.endAsync()
    const backend = await open(node(), ws(node(), { clientId: 'mp-backend-5' }))
    await backend.client.publishAsync('devices/dev5/devices/dev5/x', 'nested', { qos: 1 })
    const again = await open(node(), { clientId: 'dev5', clean: false, protocolVersion: 4 })
    await waitFor(() => again.messages.length > 0, 'the queued message')
    expect(again.messages.map(m => m.topic)).toEqual(['devices/dev5/x'])
  })

  it('mounts a shared subscription inside its group', async () => {
    const device = await open(node(), { clientId: 'dev4' })
    await device.client.subscribeAsync('$share/g/jobs/#', { qos: 1 })
    const subs = await apiRequest(node(), '/subscriptions/dev4')
    expect(subs.data.map((s: any) => s.topic)).toEqual(['$share/g/devices/dev4/jobs/#'])
    const backend = await open(node(), ws(node(), { clientId: 'mp-backend-4' }))
    await backend.client.publishAsync('devices/dev4/jobs/1', 'job', { qos: 1 })
    await waitFor(() => device.messages.length > 0, 'the job')
    expect(device.messages[0].topic).toBe('jobs/1')
  })
})

describe('zone.external.mountpoint = tenant/%u/ (WebSocket listener) and a TCP listener in zone plain', () => {
  const node = nodeWith({ 'zone.external.mountpoint': 'tenant/%u/', 'listener.tcp.external.zone': 'plain' })

  it('mounts a WebSocket client under its username, and not the TCP client of the other zone', async () => {
    const watcher = await open(node(), { clientId: 'watcher' })
    await watcher.client.subscribeAsync('#', { qos: 1 })
    const tenant = await open(node(), ws(node(), { clientId: 'tenant-client', username: 'acme' }))
    await tenant.client.publishAsync('status', 'ok', { qos: 1 })
    await waitFor(() => watcher.messages.some(m => m.payload.toString() === 'ok'), 'the tenant\'s message')
    expect(watcher.messages.find(m => m.payload.toString() === 'ok')?.topic).toBe('tenant/acme/status')
  })
})
