/**
 * The inbound read side is bounded (issue 22, node/mqtt/read-gate.ts): a hundred publishers
 * writing small QoS 0 messages as fast as they can towards a subscriber that does not read
 * are held back by TCP, not buffered by the node. Without the bound each publisher's whole
 * socket buffer (64 KiB, about 900 small PUBLISHes) was parsed and kept in flight waiting
 * for the subscriber: some 90,000 messages. With it, a publisher has at most one 4 KiB read
 * in flight.
 */
import net from 'node:net'
import mqttPacket from 'mqtt-packet'
import { spawnNode, killAllNodes, residentBytes, within, type NodeProcess } from '../helpers/process.js'

const PUBLISHERS = 100
/**
 * What the node may grow by. Measured on 2 loaded cores: 64 to 75 MiB with the bound (the
 * sockets' own buffers, V8's old space after the ramp), 121 to 168 MiB without it.
 */
const MAX_GROWTH = 96 * 1024 * 1024
/** No publisher could write for this long: all of them are held back. */
const STALL_MS = 1000

/** A raw MQTT 3.1.1 connection, CONNECTed as `clientId`; resolves once the CONNACK has arrived. */
async function connected (port: number, clientId: string): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId, keepalive: 0 } as any))
  await within(new Promise<void>((resolve) => socket.once('data', () => resolve())), 10000, `CONNACK of ${clientId}`)
  return socket
}

let node: NodeProcess
// V8's young generation, which grows to tens of MB under a flood of allocations, is capped:
// what the node keeps is what the RSS shows
beforeAll(async () => { node = await spawnNode({ env: { NODE_OPTIONS: '--max-semi-space-size=1' } }) })
afterAll(async () => { await killAllNodes() })

it('holds back publishers flooding a subscriber that does not read, instead of buffering their messages', async () => {
  const port = node.port('mqtt:tcp')
  const subscriber = await connected(port, 'stalled-subscriber')
  subscriber.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'bound/#', qos: 0 }] } as any))
  await within(new Promise<void>((resolve) => subscriber.once('data', () => resolve())), 10000, 'SUBACK')
  subscriber.pause()
  const publishers = await Promise.all(Array.from({ length: PUBLISHERS }, async (_, i) => await connected(port, `flooder-${i}`)))
  const base = await residentBytes(node.pid)

  let lastProgress = Date.now()
  let stopped = false
  const writers = publishers.map(async (socket, i) => {
    // one batch per publisher, written again and again: the test holds 64 KiB each, not the flood
    const batch = Buffer.concat(Array.from({ length: 880 }, () => mqttPacket.generate({ cmd: 'publish', topic: `bound/${i}`, payload: Buffer.alloc(64, 0x78), qos: 0, retain: false, dup: false } as any)))
    while (!stopped && !socket.destroyed) {
      if (socket.write(batch)) { lastProgress = Date.now(); await new Promise(resolve => setImmediate(resolve)); continue }
      await new Promise<void>((resolve) => {
        const go = (): void => { clearInterval(check); socket.off('drain', go); lastProgress = Date.now(); resolve() }
        const check = setInterval(() => { if (stopped) go() }, 50)
        socket.on('drain', go)
      })
    }
  })
  let peak = base
  try {
    await within(new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        residentBytes(node.pid).then((r) => { peak = Math.max(peak, r) }, () => {})
        if (Date.now() - lastProgress > STALL_MS) { clearInterval(timer); resolve() }
      }, 100)
    }), 60_000, 'the publishers being held back')
    peak = Math.max(peak, await residentBytes(node.pid))
  } finally {
    stopped = true
    await Promise.all(writers)
    for (const s of [...publishers, subscriber]) s.destroy()
  }
  expect(node.child.exitCode).toBeNull()
  expect(peak - base).toBeLessThan(MAX_GROWTH)
}, 90_000)
