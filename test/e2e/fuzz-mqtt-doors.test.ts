/**
 * A seeded slice of each MQTT door of the fuzzer but plain tcp (fuzz.test.ts), against one
 * node process (`npm run fuzz -- --door <name>` is the long run):
 * - connect: every field and property of a 3.1, 3.1.1 and 5.0 CONNECT, each answered as
 *   the standard says (CONNACK 0, or the refusal's code and a close);
 * - sessions: persistent sessions resuming, taking over and leaving deliveries in flight,
 *   with errors interleaved, while the witness subscriber leaves and comes back;
 * - tls, ws, wss: the packets of the tcp door over those listeners, and garbage below MQTT
 *   (not TLS, broken handshakes, bad WebSocket frames and handshakes).
 * For each: the node does not exit or print an error, everything that must be closed is
 * (MQTT 5 with a reason code, a takeover with 0x8E, nothing after a DISCONNECT), and the
 * witness QoS 1 client loses nothing.
 */
import { runFuzz, type FuzzStats, type MqttDoor } from '../../bench/fuzz/driver.js'
import { connectDoor, sessionsDoor, tlsDoor, wsDoor, wssDoor } from '../../bench/fuzz/doors.js'
import { spawnNode, killAllNodes, type NodeProcess } from '../helpers/process.js'

let node: NodeProcess

beforeAll(async () => {
  node = await spawnNode({ env: { STARLING_LISTENER__WSS__EXTERNAL__MAX_CONNS: '1024' } })
}, 30_000)
afterAll(async () => { await killAllNodes() })

async function slice (door: MqttDoor, inputs: number, seed: number): Promise<FuzzStats> {
  return await runFuzz({
    door,
    endpoint: { host: '127.0.0.1', port: node.port(door.listener), path: '/mqtt' },
    inputs,
    seed,
    concurrency: 8,
    alive: () => node.child.exitCode === null && node.child.signalCode === null
  })
}

function expectPassed (stats: FuzzStats): void {
  expect(node.child.exitCode).toBeNull()
  expect(node.child.signalCode).toBeNull()
  expect(node.stderr()).not.toMatch(/Error|Uncaught|unhandled/)
  expect(stats.protocolErrors).toBeGreaterThan(0)
  expect(stats.leftOpen).toEqual({})
  expect(stats.closedForProtocolError).toBe(stats.protocolErrors)
  expect(stats.closedWithoutReason).toEqual({})
  // a takeover tells every MQTT 5 connection it accepted with 0x8E [MQTT-3.1.4-3], and
  // nothing follows a DISCONNECT [MQTT-3.14.4-1]
  expect(stats.takeoverWithoutReason).toEqual({})
  expect(stats.afterDisconnect).toEqual({})
  expect(stats.unexpected).toEqual({})
  // valid traffic is never cut off, but by a takeover of its client id
  expect(Object.keys(stats.closedEarly).filter(k => !k.endsWith('(id taken over)'))).toEqual([])
  expect(stats.witnessSent).toBeGreaterThan(0)
  expect(stats.witnessConnected).toBe(true)
  expect(stats.witnessReceived).toBe(stats.witnessSent)
}

describe('fuzzing the MQTT doors (seeded slices)', () => {
  it('connect: answers every malformed or edge CONNECT field as the standard says', async () => {
    const stats = await slice(connectDoor, 2500, 21)
    expectPassed(stats)
    expect(stats.accepted).toBeGreaterThan(0)
    expect(stats.refused).toBeGreaterThan(0)
  }, 60_000)

  it('sessions: keeps serving while persistent sessions resume, take over and break the protocol', async () => {
    const stats = await slice(sessionsDoor, 2500, 22)
    expectPassed(stats)
    expect(stats.takenOver).toBeGreaterThan(0)
    expect(stats.witnessReconnects).toBeGreaterThan(0)
  }, 60_000)

  it.each([
    ['tls', tlsDoor],
    ['ws', wsDoor],
    ['wss', wssDoor]
  ] as Array<[string, MqttDoor]>)('%s: closes every protocol error and every bad handshake or frame, and loses nothing', async (_name, door) => {
    const stats = await slice(door, 3000, 23)
    expectPassed(stats)
    expect(stats.garbage).toBeGreaterThan(0)
  }, 60_000)
})
