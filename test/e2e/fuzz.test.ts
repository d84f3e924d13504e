/**
 * A seeded slice of the fuzzer's tcp door (bench/fuzz; `npm run fuzz` is the long run)
 * against a node process: malformed, truncated, oversized and out-of-rule packets of every
 * type, on MQTT 3.1.1 and 5.0, in every split. The node must not exit or throw, must close
 * every connection that sent a protocol error (MQTT 5: with a reason code), and must serve
 * a well-behaved QoS 1 client throughout without losing a message. The other MQTT doors:
 * fuzz-mqtt-doors.test.ts.
 */
import { runFuzz, type FuzzStats } from '../../bench/fuzz/driver.js'
import { tcpDoor } from '../../bench/fuzz/doors.js'
import { spawnNode, killAllNodes, type NodeProcess } from '../helpers/process.js'

afterAll(async () => { await killAllNodes() })

/** Runs `inputs` fuzz inputs with `seed` against a fresh node started with `env`. */
async function fuzzSlice (inputs: number, seed: number, env: Record<string, string> = {}): Promise<{ stats: FuzzStats, node: NodeProcess }> {
  const node = await spawnNode({ env })
  const stats = await runFuzz({
    door: tcpDoor,
    endpoint: { host: '127.0.0.1', port: node.port('mqtt:tcp') },
    inputs,
    seed,
    strict: env.STARLING_MQTT__STRICT_MODE === 'true',
    concurrency: 8,
    alive: () => node.child.exitCode === null && node.child.signalCode === null
  })
  return { stats, node }
}

function expectSurvived ({ stats, node }: { stats: FuzzStats, node: NodeProcess }): void {
  expect(node.child.exitCode).toBeNull()
  expect(node.child.signalCode).toBeNull()
  expect(node.stderr()).not.toMatch(/Error|Uncaught|unhandled/)
  expect(stats.inputs).toBeGreaterThan(0)
  expect(stats.protocolErrors).toBeGreaterThan(0)
  expect(stats.leftOpen).toEqual({})
  expect(stats.closedForProtocolError).toBe(stats.protocolErrors)
  expect(stats.closedWithoutReason).toEqual({})
  expect(stats.witnessSent).toBeGreaterThan(0)
  expect(stats.witnessConnected).toBe(true)
  expect(stats.witnessReceived).toBe(stats.witnessSent)
}

describe('fuzzing the MQTT listener (seeded slice)', () => {
  it('survives 6000 fuzz packets, closes every protocol error and loses nothing of the witness', async () => {
    expectSurvived(await fuzzSlice(6000, 11))
  }, 60_000)

  it('does the same with mqtt.strict_mode on', async () => {
    expectSurvived(await fuzzSlice(2000, 12, { STARLING_MQTT__STRICT_MODE: 'true' }))
  }, 60_000)
})
