/**
 * svc_delayed_publish over real MQTT clients: `$delayed/<seconds>/<topic>` arrives on
 * `<topic>` later (never at publish time) as the original message, survives a node restart,
 * and is held, not published, while the plugin is unloaded.
 */
import mqtt, { type MqttClient } from 'mqtt'
import { connect, closeClients, collect, nextMessage, waitFor } from '../helpers/node.js'
import { startPluginNode, type PluginNode } from '../node/plugins/harness.js'
import { delayedPublisherOf } from '../../plugins/delayed_publish/plugin.js'
import type { MessageEvent } from '../../node/hooks.js'
import type { StarlingNode } from '../../node/node.js'

afterEach(async () => { await closeClients() })

/** Messages held by the node's delayed publisher. */
function held (node: StarlingNode): number {
  return delayedPublisherOf(node)?.count() ?? 0
}

describe('svc_delayed_publish', () => {
  let p: PluginNode
  const published: MessageEvent[] = []
  beforeAll(async () => {
    p = await startPluginNode()
    p.node.hooks.on('message.publish', (e) => { published.push(e) })
  })
  afterAll(async () => { await p.destroy() })

  it('publishes $delayed/1/t to t later, not at publish time, as the original message', async () => {
    const sub = await connect(p.node, { protocolVersion: 5 })
    const got = collect(sub)
    await sub.subscribeAsync('dl/t', { qos: 2 })
    const pub = await connect(p.node, { protocolVersion: 5, clientId: 'dl-publisher' })
    const properties = { userProperties: { k: 'v' }, contentType: 'text/plain', correlationData: Buffer.from('c1') }
    await pub.publishAsync('$delayed/1/dl/t', 'later', { qos: 2, properties })
    expect(got).toEqual([])
    expect(held(p.node)).toBe(1)
    await waitFor(() => got.length === 1, 'the delayed message')
    const { topic, payload, packet } = got[0]
    expect([topic, payload.toString(), packet.qos, packet.retain]).toEqual(['dl/t', 'later', 2, false])
    expect(packet.properties).toMatchObject({ userProperties: { k: 'v' }, contentType: 'text/plain' })
    expect(packet.properties.correlationData.toString()).toBe('c1')
    expect(published.find(e => e.topic === 'dl/t')?.client_id).toBe('dl-publisher')
    expect(held(p.node)).toBe(0)
  })

  it('keeps the retain flag: the message is retained on the target topic once published', async () => {
    const pub = await connect(p.node)
    await pub.publishAsync('$delayed/0/dl/retained', 'kept', { qos: 1, retain: true })
    await waitFor(() => held(p.node) === 0, 'the delayed message to be published')
    const late = await connect(p.node)
    const msg = nextMessage(late)
    await late.subscribeAsync('dl/retained', { qos: 1 })
    expect((await msg).payload.toString()).toBe('kept')
  })

  it('ignores a $delayed/ topic whose delay is not a number', async () => {
    const pub = await connect(p.node)
    await pub.publishAsync('$delayed/soon/dl/x', 'x', { qos: 1 })
    expect(held(p.node)).toBe(0)
  })

  it('holds the message while unloaded and publishes it once loaded again', async () => {
    const sub = await connect(p.node)
    const got = collect(sub)
    await sub.subscribeAsync('dl/unload', { qos: 1 })
    const pub = await connect(p.node)
    const sentAt = Date.now()
    await pub.publishAsync('$delayed/1/dl/unload', 'held', { qos: 1 })
    await p.manager.unload('svc_delayed_publish')
    await pub.publishAsync('$delayed/1/dl/unload', 'not a command while unloaded', { qos: 1 })
    await waitFor(() => Date.now() >= sentAt + 1200, 'the delay to pass')
    expect(got).toEqual([])
    await p.manager.load('svc_delayed_publish')
    await waitFor(() => got.length === 1, 'the held message')
    expect(got[0].payload.toString()).toBe('held')
  })
})

describe('svc_delayed_publish across a node restart', () => {
  /** A persistent QoS 1 subscriber of `topic` (its queue survives the restart). */
  async function persistentSubscriber (node: StarlingNode, clientId: string, topic: string): Promise<MqttClient> {
    const client = await connect(node, { clientId, clean: false, protocolVersion: 4 })
    await client.subscribeAsync(topic, { qos: 1 })
    return client
  }

  it.each([
    ['a delay still running at the restart', 2, false],
    ['a delay that passed while the node was down', 1, true]
  ])('publishes %s', async (_what, seconds, waitWhileDown) => {
    const first = await startPluginNode()
    let second: PluginNode | undefined
    let resumed: MqttClient | undefined
    try {
      const clientId = `dl-restart-${seconds}`
      await persistentSubscriber(first.node, clientId, 'dl/restart')
      const pub = await connect(first.node)
      const sentAt = Date.now()
      await pub.publishAsync(`$delayed/${seconds}/dl/restart`, `after ${seconds}s`, { qos: 1 })
      await closeClients()
      await first.stop()
      if (waitWhileDown) await waitFor(() => Date.now() >= sentAt + seconds * 1000 + 100, 'the delay to pass while down')
      second = await startPluginNode({ dataDir: first.node.dataDir, etcDir: first.etcDir })
      const restarted = second.node
      if (waitWhileDown) {
        // the due message is published right after start; let that finish before the
        // subscriber resumes (a QoS 1 publish racing a session resume may arrive twice)
        await waitFor(() => restarted.store.table('delayed').count() === 0, 'the due message to be published')
      }
      // listening before CONNACK: the queued message may come in the same read
      const sub = mqtt.connect({ host: '127.0.0.1', port: second.node.port('mqtt:tcp'), clientId, clean: false, protocolVersion: 4, reconnectPeriod: 0 })
      resumed = sub
      const got = collect(sub)
      await waitFor(() => got.length >= 1, 'the delayed message after the restart')
      expect(got.map(m => [m.topic, m.payload.toString(), m.packet.dup])).toEqual([['dl/restart', `after ${seconds}s`, false]])
      await waitFor(() => held(restarted) === 0 && restarted.store.table('delayed').count() === 0, 'the store to forget it')
    } finally {
      await resumed?.endAsync(true)
      if (second !== undefined) await second.destroy()
      else await first.destroy()
    }
  })
})
