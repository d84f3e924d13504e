/**
 * An RPC bridge end to end (docs/bridges.md "RPC bridge"): node A runs svc_bridge_mqtt with
 * `bridge.mqtt.tob.address = b@127.0.0.1:<B's cluster port>`, forwarding `sensor/#` under a
 * mountpoint through a disk buffer to node B, a single-node cluster of its own with the same
 * cookie. MQTT clients publish on A and subscribe on B. B is stopped for a while (A buffers,
 * the bridge shows `connecting`) and started again on the same cluster port: every message
 * arrives on B, in order, a QoS 1 one at most repeated, and the two nodes never become
 * members of each other.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { startTestNode, connect, closeClients, waitFor, collect, type TestNode, type Received } from '../helpers/node.js'
import { BRIDGE_OPS } from '../../plugins/bridge_mqtt/ops-client.js'
import type { BridgeInfo } from '../../plugins/bridge_mqtt/types.js'

let a: TestNode, b: TestNode
let bPort = 0
let bDir = ''
let bufferDir = ''

async function bridgeInfo (): Promise<BridgeInfo> {
  const list = await a.rpc.local(BRIDGE_OPS.list, {}) as BridgeInfo[]
  return list.find(x => x.name === 'tob')!
}

/** Resolves with the bridge's info once `check` holds of it; fails after `timeoutMs`. */
async function bridgeWhen (check: (info: BridgeInfo) => boolean, what: string, timeoutMs = 10000): Promise<BridgeInfo> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const info = await bridgeInfo()
    if (check(info)) return info
    if (Date.now() > deadline) throw new Error(`timed out waiting for the bridge to be ${what}: ${JSON.stringify(info)}`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

/** Publishes `sensor/n/<k>` payloads `from`..`to - 1` at QoS 1 on A, each acknowledged by A. */
async function publishRange (pub: MqttClient, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += 100) {
    const sends: Array<Promise<unknown>> = []
    for (let j = i; j < Math.min(to, i + 100); j++) sends.push(pub.publishAsync(`sensor/n/${j % 4}`, String(j), { qos: 1 }))
    await Promise.all(sends)
  }
}

/** The payloads as numbers, each kept at its first arrival; fails on one out of order. */
function firstArrivals (got: Received[]): number[] {
  const seen = new Set<number>()
  const out: number[] = []
  for (const m of got) {
    const n = Number(m.payload.toString())
    if (seen.has(n)) continue
    seen.add(n)
    out.push(n)
  }
  return out
}

beforeAll(async () => {
  b = await startTestNode({ 'node.name': 'b@127.0.0.1' })
  bPort = b.cluster.mesh.port
  bDir = b.dataDir
  bufferDir = mkdtempSync(join(tmpdir(), 'starling-rpc-buffer-'))
  a = await startTestNode({ 'node.name': 'a@127.0.0.1' }, undefined, {
    env: {
      STARLING_BRIDGE__MQTT__TOB__ADDRESS: `b@127.0.0.1:${bPort}`,
      STARLING_BRIDGE__MQTT__TOB__FORWARDS: 'sensor/#',
      STARLING_BRIDGE__MQTT__TOB__MOUNTPOINT: 'site/${node}/',
      STARLING_BRIDGE__MQTT__TOB__RECONNECT_INTERVAL: '200ms',
      STARLING_BRIDGE__MQTT__TOB__QUEUE__REPLAYQ_DIR: bufferDir
    }
  })
  await a.services.plugins.load('svc_bridge_mqtt')
})

afterEach(async () => { await closeClients() })

afterAll(async () => {
  await a?.destroy()
  await b?.destroy()
  rmSync(bufferDir, { recursive: true, force: true })
})

test('the bridge connects to B and forwards under the mountpoint, QoS and retain kept', async () => {
  const info = await bridgeWhen(i => i.status === 'connected', 'connected')
  expect(info).toMatchObject({ kind: 'rpc', address: `b@127.0.0.1:${bPort}`, status: 'connected', forwards: ['sensor/#'] })
  const sub = await connect(b)
  const got = collect(sub)
  await sub.subscribeAsync('site/#', { qos: 2 })
  const pub = await connect(a)
  await pub.publishAsync('sensor/q0', 'zero', { qos: 0 })
  await pub.publishAsync('sensor/q1', 'one', { qos: 1 })
  await pub.publishAsync('sensor/q2', 'two', { qos: 2 })
  await pub.publishAsync('other/x', 'not forwarded', { qos: 1 })
  await pub.publishAsync('sensor/kept', 'retained', { qos: 1, retain: true })
  await waitFor(() => got.length === 4, 'four messages on B')
  expect(got.map(m => [m.topic, m.payload.toString(), m.packet.qos])).toEqual([
    ['site/a@127.0.0.1/sensor/q0', 'zero', 0],
    ['site/a@127.0.0.1/sensor/q1', 'one', 1],
    ['site/a@127.0.0.1/sensor/q2', 'two', 2],
    ['site/a@127.0.0.1/sensor/kept', 'retained', 1]
  ])
  expect(b.broker.core.sessions.hasRetained('site/a@127.0.0.1/sensor/kept')).toBe(true)
  for (const n of [a, b]) expect(n.cluster.status().map(m => m.name)).toEqual([n.name])
})

test('B stopped mid-stream: A buffers, B back on the same port gets everything in order', async () => {
  const subscribe = async (): Promise<MqttClient> => await connect(b, { clientId: 'site-sink', clean: false })
  const sub = await subscribe()
  const got = collect(sub)
  await sub.subscribeAsync('site/a@127.0.0.1/sensor/n/+', { qos: 1 })
  const pub = await connect(a)
  const total = 5000
  // one QoS 1 stream; B goes away and comes back while it runs
  const publishing = publishRange(pub, 0, total)
  await waitFor(() => firstArrivals(got).length >= 1000, 'the first 1000 on B', 20000)
  await b.stop()
  // A acknowledges its publishers meanwhile: the messages are in its disk buffer
  await bridgeWhen(i => i.status === 'connecting' && i.buffered >= 1000, 'connecting with messages buffered')

  b = await startTestNode({ 'node.name': 'b@127.0.0.1', 'cluster.listen': `127.0.0.1:${bPort}` }, bDir)
  const again = await subscribe()
  const gotAgain = collect(again)
  await publishing
  await waitFor(() => firstArrivals([...got, ...gotAgain]).length === total, `${total} messages on B`, 30000)
  expect(firstArrivals([...got, ...gotAgain])).toEqual(Array.from({ length: total }, (_, i) => i))
  // QoS 1's allowance: the batches in flight when B stopped may come twice, nothing more
  expect(got.length + gotAgain.length - total).toBeLessThanOrEqual(1000)
  const after = await bridgeWhen(i => i.buffered === 0, 'emptied')
  expect(after).toMatchObject({ status: 'connected', dropped: 0 })
  for (const n of [a, b]) expect(n.cluster.status().map(m => m.name)).toEqual([n.name])
})
