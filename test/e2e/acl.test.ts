/**
 * The ACL over real sockets with mqtt.js clients: the shipped etc/acl.conf (clients from
 * 127.0.0.1 and from 127.0.0.2, which the default rules treat as not local), SUBACK 0x80
 * on MQTT 3.1.1 and 5, PUBACK 0x87 on MQTT 5, a silently dropped MQTT 3.1.1 publish and
 * `acl_deny_action = disconnect`.
 */
import net from 'node:net'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MqttClient, type IClientOptions } from 'mqtt'
import { startTestNode, collect, waitFor, type TestNode } from '../helpers/node.js'
import { pubackCode, suback } from '../helpers/mqtt.js'
import type { AclService } from '../../node/acl/index.js'

const DEFAULT_ACL = fileURLToPath(new URL('../../etc/acl.conf', import.meta.url))

/** A node (which starts its ACL service) on `aclFile`. */
interface AclNode { node: TestNode, acl: AclService, stop: () => Promise<void> }

async function startAclNode (aclFile: string, overrides: Record<string, string> = {}): Promise<AclNode> {
  const node = await startTestNode({ acl_file: aclFile, ...overrides })
  const acl = node.services.acl
  return { node, acl, stop: async () => { await acl.stop(); await node.destroy() } }
}

/** An ACL file with `text` in a fresh temporary directory. */
function aclFile (text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'starling-acl-'))
  dirs.push(dir)
  const file = join(dir, 'acl.conf')
  writeFileSync(file, text)
  return file
}

const dirs: string[] = []
const opened = new Set<MqttClient>()

/** Connects an mqtt.js client whose socket comes from `localAddress` (default 127.0.0.1). */
async function connectFrom (node: TestNode, opts: IClientOptions & { localAddress?: string } = {}): Promise<MqttClient> {
  const { localAddress = '127.0.0.1', ...mqttOpts } = opts
  const port = node.port('mqtt:tcp')
  const client = new MqttClient(() => net.createConnection({ host: '127.0.0.1', port, localAddress }), {
    reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4, ...mqttOpts
  })
  opened.add(client)
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve())
    client.once('error', reject)
    client.once('close', () => reject(new Error('connection closed before CONNACK')))
  })
  return client
}

afterEach(async () => {
  await Promise.all([...opened].map(c => new Promise<void>(resolve => c.end(true, {}, () => resolve()))))
  opened.clear()
})
afterAll(() => { for (const dir of dirs) rmSync(dir, { recursive: true, force: true }) })

describe('the shipped etc/acl.conf', () => {
  let n: AclNode
  beforeAll(async () => { n = await startAclNode(DEFAULT_ACL) })
  afterAll(async () => { await n.stop() })

  it('loads the four default rules', () => {
    expect(n.acl.rules).toHaveLength(4)
  })

  it.each([4, 5] as const)('MQTT v%i: a client from 127.0.0.1 may subscribe to $SYS/#, to # and to $SYS/brokers/+/clients/#', async (protocolVersion) => {
    const client = await connectFrom(n.node, { protocolVersion })
    expect(await suback(client, ['$SYS/#', '#', '$SYS/brokers/+/clients/#'])).toEqual([1, 1, 1])
  })

  it.each([4, 5] as const)('MQTT v%i: a client from 127.0.0.2 is refused $SYS/# and # with 0x80 but may subscribe to a/#', async (protocolVersion) => {
    const client = await connectFrom(n.node, { protocolVersion, localAddress: '127.0.0.2' })
    expect(await suback(client, ['$SYS/#', '#', '$SYS/brokers', 'a/#', '+/#'])).toEqual([0x80, 0x80, 0x80, 1, 1])
  })

  it('user dashboard from 127.0.0.2 may subscribe to $SYS/# but not to #', async () => {
    const client = await connectFrom(n.node, { username: 'dashboard', localAddress: '127.0.0.2' })
    expect(await suback(client, ['$SYS/#', '#'])).toEqual([1, 0x80])
  })

  it('a client from 127.0.0.2 publishes and receives on ordinary topics', async () => {
    const client = await connectFrom(n.node, { localAddress: '127.0.0.2' })
    const received = collect(client)
    expect(await suback(client, 'acl/default/t')).toEqual([1])
    expect(await pubackCode(client, 'acl/default/t')).toBe(0)
    await waitFor(() => received.length === 1, 'the message to arrive')
  })

  it('a shared subscription is decided by its real filter', async () => {
    const client = await connectFrom(n.node, { protocolVersion: 5, localAddress: '127.0.0.2' })
    expect(await suback(client, ['$share/g/$SYS/#', '$share/g/acl/shared'])).toEqual([0x80, 1])
  })
})

describe('denied publishes and subscribes', () => {
  let n: AclNode
  beforeAll(async () => {
    n = await startAclNode(aclFile('{deny, all, publish, ["acl/denied/#"]}.\n{deny, all, subscribe, ["acl/secret"]}.\n{allow, all}.\n'))
  })
  afterAll(async () => { await n.stop() })

  it.each([4, 5] as const)('MQTT v%i: refuses a subscribe to a denied topic with 0x80 and grants the others', async (protocolVersion) => {
    const client = await connectFrom(n.node, { protocolVersion })
    expect(await suback(client, ['acl/secret', 'acl/open'])).toEqual([0x80, 1])
  })

  it('MQTT 5: answers a denied QoS 1 publish with PUBACK 0x87 and does not deliver it', async () => {
    const sub = await connectFrom(n.node, { protocolVersion: 5 })
    const received = collect(sub)
    expect(await suback(sub, 'acl/#')).toEqual([1])
    const pub = await connectFrom(n.node, { protocolVersion: 5 })
    expect(await pubackCode(pub, 'acl/denied/x')).toBe(0x87)
    expect(await pubackCode(pub, 'acl/allowed/x')).toBe(0)
    await waitFor(() => received.length === 1, 'the allowed message')
    expect(received.map(m => m.topic)).toEqual(['acl/allowed/x'])
  })

  it('MQTT 3.1.1: acknowledges a denied QoS 1 publish, drops it and keeps the connection', async () => {
    const sub = await connectFrom(n.node, { protocolVersion: 4 })
    const received = collect(sub)
    expect(await suback(sub, 'acl/#')).toEqual([1])
    const pub = await connectFrom(n.node, { protocolVersion: 4 })
    const droppedBefore = n.node.metrics['messages/dropped']
    expect(await pubackCode(pub, 'acl/denied/y')).toBe(0)
    expect(pub.connected).toBe(true)
    expect(n.node.metrics['messages/dropped']).toBe(droppedBefore + 1)
    expect(await pubackCode(pub, 'acl/allowed/y')).toBe(0)
    await waitFor(() => received.length === 1, 'the allowed message')
    expect(received.map(m => m.topic)).toEqual(['acl/allowed/y'])
    expect(pub.connected).toBe(true)
  })

  it('MQTT 3.1.1: drops a denied QoS 0 publish silently', async () => {
    const sub = await connectFrom(n.node)
    const received = collect(sub)
    expect(await suback(sub, 'acl/#')).toEqual([1])
    const pub = await connectFrom(n.node)
    pub.publish('acl/denied/z', 'x', { qos: 0 })
    expect(await pubackCode(pub, 'acl/allowed/z')).toBe(0)
    await waitFor(() => received.length === 1, 'the allowed message')
    expect(received.map(m => m.topic)).toEqual(['acl/allowed/z'])
  })
})

describe('acl_deny_action = disconnect', () => {
  let n: AclNode
  beforeAll(async () => {
    n = await startAclNode(aclFile('{deny, all, pubsub, ["acl/denied"]}.\n{allow, all}.\n'), { acl_deny_action: 'disconnect' })
  })
  afterAll(async () => { await n.stop() })

  it.each([4, 5] as const)('MQTT v%i: closes a client whose publish is denied', async (protocolVersion) => {
    const client = await connectFrom(n.node, { protocolVersion })
    let disconnect: any
    client.on('disconnect', (p: any) => { disconnect = p })
    const closed = new Promise<void>(resolve => client.once('close', () => resolve()))
    client.publish('acl/denied', 'x', { qos: 1 })
    await closed
    if (protocolVersion === 5) expect(disconnect?.reasonCode).toBe(0x87)
  })

  it('closes a client whose subscribe is denied', async () => {
    const client = await connectFrom(n.node, { protocolVersion: 5 })
    const closed = new Promise<void>(resolve => client.once('close', () => resolve()))
    client.subscribe('acl/denied', { qos: 0 })
    await closed
  })

  it('keeps a client whose requests are allowed', async () => {
    const client = await connectFrom(n.node, { protocolVersion: 5 })
    expect(await suback(client, 'acl/ok')).toEqual([1])
    expect(await pubackCode(client, 'acl/ok')).toBe(0)
    expect(client.connected).toBe(true)
  })
})
