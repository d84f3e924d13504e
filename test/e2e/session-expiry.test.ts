import { startTestNode, connect, closeClients, collect, waitFor, nextMessage, type TestNode } from '../helpers/node.js'
import { spawnNode, connectTo, closeProcessClients, killAllNodes, tempDir } from '../helpers/process.js'

let node: TestNode | undefined
afterEach(async () => {
  await closeClients()
  await closeProcessClients()
  await node?.destroy()
  node = undefined
})
afterAll(async () => { await killAllNodes() })

/** Waits until `ms` of wall time have passed (for expiry timers the broker runs). */
async function elapse (ms: number): Promise<void> {
  const until = Date.now() + ms
  await waitFor(() => Date.now() >= until, `${ms} ms to pass`, ms + 5000)
}

describe('session expiry beyond aedes', () => {
  it('expires an MQTT 3.1.1 persistent session after mqtt.session_expiry_interval', async () => {
    node = await startTestNode({ 'mqtt.session_expiry_interval': '1s' })
    const sub = await connect(node, { clientId: 'v3-expiring', clean: false, protocolVersion: 4 })
    await sub.subscribeAsync('exp/t', { qos: 1 })
    await sub.endAsync()
    await elapse(1500)
    const back = await connect(node, { clientId: 'v3-expiring', clean: false, protocolVersion: 4 })
    expect((back as any).connackPacket?.sessionPresent ?? false).toBe(false)
  })

  it('keeps an MQTT 3.1.1 persistent session while its client is connected', async () => {
    node = await startTestNode({ 'mqtt.session_expiry_interval': '1s' })
    const sub = await connect(node, { clientId: 'v3-staying', clean: false, protocolVersion: 4 })
    await sub.subscribeAsync('stay/t', { qos: 1 })
    await elapse(1500)
    const pub = await connect(node)
    const arrived = nextMessage(sub)
    await pub.publishAsync('stay/t', 'still subscribed', { qos: 1 })
    expect((await arrived).payload.toString()).toBe('still subscribed')
  })

  it('gives sessions restored after a restart a fresh expiry', async () => {
    const dir = tempDir()
    node = await startTestNode({ 'mqtt.session_expiry_interval': '1s' }, dir)
    const sub = await connect(node, { clientId: 'restored', clean: false, protocolVersion: 4 })
    await sub.subscribeAsync('restored/t', { qos: 1 })
    await sub.endAsync()
    await node.stop()
    node = await startTestNode({ 'mqtt.session_expiry_interval': '1s' }, dir)
    await elapse(1500)
    const back = await connect(node, { clientId: 'restored', clean: false, protocolVersion: 4 })
    expect((back as any).connackPacket?.sessionPresent ?? false).toBe(false)
  })

  it('publishes the will of a client whose node was killed, when the node starts again', async () => {
    const dataDir = tempDir()
    const first = await spawnNode({ dataDir })
    await connectTo(first.port('mqtt:tcp'), { clientId: 'doomed', clean: false, protocolVersion: 4, will: { topic: 'wills/doomed', payload: Buffer.from('node died'), qos: 1, retain: true } })
    first.kill('SIGKILL')
    await first.exited
    const second = await spawnNode({ dataDir })
    const watcher = await connectTo(second.port('mqtt:tcp'), { protocolVersion: 4 })
    const got = collect(watcher)
    await watcher.subscribeAsync('wills/#', { qos: 1 })
    await waitFor(() => got.length === 1, 'the retained will')
    expect(got[0].payload.toString()).toBe('node died')
  })

  it('delivers QoS 1 to a persistent member of a shared subscription and redelivers it after a reconnect', async () => {
    node = await startTestNode()
    const member = await connect(node, { clientId: 'shared-member', clean: false, protocolVersion: 4 })
    await member.subscribeAsync('$share/g/sh/t', { qos: 1 })
    const pub = await connect(node)
    const arrived = nextMessage(member)
    await pub.publishAsync('sh/t', 'one', { qos: 1 })
    expect((await arrived).payload.toString()).toBe('one')
  })
})
