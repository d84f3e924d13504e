/**
 * A connection the node is behind does not hold the event loop (node/mqtt/read-gate.ts,
 * `SLICES_PER_TURN`): a publisher's burst of 2.6 MB of QoS 0 PUBLISHes is read a few slices
 * per turn of the loop, so every other socket's data and the timers are served between them
 * (a data integration's database answer waited 30-60 ms behind such bursts before).
 *
 * In-process node, a raw publisher's socket: a `setImmediate` chain counts the loop's turns
 * and the messages the node took in between two of them.
 */
import net from 'node:net'
import mqttPacket from 'mqtt-packet'
import { startTestNode, type TestNode } from '../helpers/node.js'
import { READ_SLICE, SLICES_PER_TURN } from '../../node/mqtt/read-gate.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode() })
afterAll(async () => { await node.destroy() })

const MESSAGES = 60_000

it('reads a publisher it is behind a few slices per turn of the event loop, and takes every message', async () => {
  const socket = net.connect(node.port('mqtt:tcp'), '127.0.0.1')
  socket.on('error', () => {})
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: 'burst', keepalive: 0 } as any))
  await new Promise<void>((resolve) => socket.once('data', () => resolve()))
  const frame = mqttPacket.generate({ cmd: 'publish', topic: 'burst/a', payload: Buffer.from('{"seq":12345,"temp":21.5}'), qos: 0, retain: false, dup: false } as any)
  const received = (): number => node.metrics['messages/received']
  const start = received()
  // the loop's turns while the burst is read: the most messages taken in between two
  let turns = 0
  let most = 0
  let last = start
  let done = false
  const finished = new Promise<void>((resolve) => {
    const turn = (): void => {
      const now = received()
      most = Math.max(most, now - last)
      last = now
      turns++
      if (now - start >= MESSAGES) { done = true; resolve() } else setImmediate(turn)
    }
    setImmediate(turn)
  })
  socket.write(Buffer.concat(Array.from({ length: MESSAGES }, () => frame)))
  const deadline = setTimeout(() => { if (!done) throw new Error(`${received() - start} of ${MESSAGES} messages taken in`) }, 60_000)
  await finished
  clearTimeout(deadline)
  socket.destroy()
  // a turn reads at most SLICES_PER_TURN slices from the poll and as many from the check
  // phase, plus a read of less than a slice: without the limit, whole 64 KiB socket reads,
  // up to 32 of them per poll
  const perTurn = Math.ceil((2 * SLICES_PER_TURN + 1) * READ_SLICE / frame.length)
  expect(most).toBeLessThanOrEqual(perTurn)
  expect(turns).toBeGreaterThan(MESSAGES / perTurn)
}, 90_000)
