/**
 * A seeded slice of the management API door of the fuzzer (bench/fuzz/api-door.ts; the long
 * run is `npm run fuzz`) against a node process: every route of the route table with bodies
 * mutated from its schema, random queries, malicious path parameters, bodies that are not
 * JSON or cannot be read, wrong content types, oversized bodies, bad credentials, raw HTTP
 * garbage. No answer is a 5xx, every answer is the envelope, a refused change changes no list,
 * the node neither exits nor logs an error, and a QoS 1 witness loses nothing.
 */
import { runApiDoor } from '../../bench/fuzz/api-door.js'
import { spawnNode, killAllNodes, expectNodeUnharmed } from '../helpers/process.js'

afterAll(async () => { await killAllNodes() })

it('answers 1500 fuzzed API requests with the envelope and no 5xx, and loses nothing of the witness', async () => {
  const node = await spawnNode()
  const apiPort = node.logLines().find(l => l.msg === 'listener started' && l.protocol === 'http:management')!.port as number
  const stats = await runApiDoor({
    apiPort,
    mqttPort: node.port('mqtt:tcp'),
    inputs: 1500,
    seed: 21,
    concurrency: 6,
    checkEvery: 50,
    cleanEvery: 700,
    alive: () => node.child.exitCode === null && node.child.signalCode === null
  })
  expectNodeUnharmed(node)
  expect(stats.inputs).toBeGreaterThanOrEqual(1500)
  expect({ failures: stats.failures, examples: stats.examples }).toEqual({ failures: {}, examples: {} })
  expect(stats.answers['4xx']).toBeGreaterThan(0)
  expect(stats.answers['refused, unchanged']).toBeGreaterThan(0)
  expect(stats.witnessSent).toBeGreaterThan(0)
  expect(stats.witnessConnected).toBe(true)
  expect(stats.witnessReceived).toBe(stats.witnessSent)
}, 60_000)
