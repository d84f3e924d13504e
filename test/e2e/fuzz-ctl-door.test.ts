/**
 * A seeded slice of the control socket door of the fuzzer (bench/fuzz/ctl-door.ts; the long
 * run is `npm run fuzz`) against a node process: `starling-ctl`'s commands with wrong and
 * nasty arguments and options, requests of the wrong shape, unknown commands, lines that are
 * not JSON, long lines, pipelined requests and half-closed connections. Every line gets one
 * answer (an error for every bad one, none of them naming the node's own failure), the node
 * neither exits nor logs an error, and a QoS 1 witness loses nothing.
 */
import { join } from 'node:path'
import { runCtlDoor } from '../../bench/fuzz/ctl-door.js'
import { spawnNode, killAllNodes, tempDir, expectNodeUnharmed } from '../helpers/process.js'

afterAll(async () => { await killAllNodes() })

it('answers every line of 1500 fuzzed control connections, a usage or input error for each bad one, and loses nothing of the witness', async () => {
  const node = await spawnNode()
  const stats = await runCtlDoor({
    socketPath: join(node.dataDir, 'starling-ctl.sock'),
    traceDir: tempDir('stt-'),
    mqttPort: node.port('mqtt:tcp'),
    inputs: 1500,
    seed: 31,
    concurrency: 6,
    cleanEvery: 700,
    alive: () => node.child.exitCode === null && node.child.signalCode === null
  })
  expectNodeUnharmed(node)
  expect(stats.inputs).toBeGreaterThanOrEqual(1500)
  expect({ failures: stats.failures, examples: stats.examples }).toMatchObject({ failures: {} })
  // the node checks arguments against the command table: no answer names its own failure
  // (before: "rule undefined not found", "The "string" argument must be of type string")
  expect({ internal: stats.answers['error: an internal failure shows through'], examples: stats.examples }).toMatchObject({ internal: undefined })
  expect(stats.answers.error).toBeGreaterThan(0)
  expect(stats.answers['error (id null)']).toBeGreaterThan(0)
  expect(stats.answers.ok).toBeGreaterThan(0)
  expect(stats.witnessSent).toBeGreaterThan(0)
  expect(stats.witnessConnected).toBe(true)
  expect(stats.witnessReceived).toBe(stats.witnessSent)
}, 60_000)
