/**
 * A seeded slice of the fuzzer's `proxy` door (`npm run fuzz -- --door proxy` is the long
 * run) against a node process with `listener.tcp.external.proxy_protocol = on`: every
 * connection a random valid PROXY v1 or v2 header then the tcp door's packets, and on a
 * fifth of them no header, a broken or a cut one. The node does not exit or print an error,
 * closes every protocol error and every connection it must refuse, and the witness (behind
 * headers of its own) loses nothing.
 */
import { runFuzz } from '../../bench/fuzz/driver.js'
import { proxyDoor } from '../../bench/fuzz/doors.js'
import { spawnNode, killAllNodes, type NodeProcess } from '../helpers/process.js'

let node: NodeProcess

beforeAll(async () => { node = await spawnNode({ env: proxyDoor.nodeEnv }) }, 30_000)
afterAll(async () => { await killAllNodes() })

it('proxy: serves what follows a valid header, closes what has none or a broken one, and loses nothing', async () => {
  const stats = await runFuzz({
    door: proxyDoor,
    endpoint: { host: '127.0.0.1', port: node.port('mqtt:tcp') },
    inputs: 3000,
    seed: 29,
    concurrency: 8,
    alive: () => node.child.exitCode === null && node.child.signalCode === null
  })
  expect(node.child.exitCode).toBeNull()
  expect(node.child.signalCode).toBeNull()
  expect(node.stderr()).not.toMatch(/Error|Uncaught|unhandled/)
  expect(stats.garbage).toBeGreaterThan(0)
  expect(stats.protocolErrors).toBeGreaterThan(0)
  expect(stats.leftOpen).toEqual({})
  expect(stats.closedForProtocolError).toBe(stats.protocolErrors)
  expect(stats.unexpected).toEqual({})
  expect(Object.keys(stats.closedEarly).filter(k => !k.endsWith('(id taken over)'))).toEqual([])
  expect(stats.witnessSent).toBeGreaterThan(0)
  expect(stats.witnessConnected).toBe(true)
  expect(stats.witnessReceived).toBe(stats.witnessSent)
}, 90_000)
