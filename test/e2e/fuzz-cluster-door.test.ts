/**
 * A seeded slice of the cluster port door of the fuzzer (bench/fuzz/cluster-door.ts; the long
 * run is `npm run fuzz`) against a two-node cluster of node processes: peers that fail the
 * cookie (TCP garbage, handshakes cut short, a libp2p node with another key) and peers that
 * pass it (garbled multistream and noise handshakes; mutated frames on the link and bridge
 * protocols and the node's other protocols; mutated gossip). Neither node exits or logs an
 * error, the second member stays in the cluster, and a QoS 1 witness publishing on the fuzzed
 * node to a subscriber on the other loses nothing.
 */
import { runClusterDoor } from '../../bench/fuzz/cluster-door.js'
import { spawnNode, killAllNodes, expectNodeUnharmed } from '../helpers/process.js'
import { runCtlOn } from '../helpers/ctl.js'
import { freePort } from '../helpers/node.js'

afterAll(async () => { await killAllNodes() })

it('survives 400 fuzzed peers on the cluster port, keeps the cluster and loses nothing of the witness', async () => {
  const cookie = 'fuzz-door-cookie'
  const [portA, portB] = [await freePort(), await freePort()]
  const [a, b] = await Promise.all([
    spawnNode({ env: { STARLING_NODE__NAME: 'fa@127.0.0.1', STARLING_NODE__COOKIE: cookie, STARLING_CLUSTER__LISTEN: `127.0.0.1:${portA}` } }),
    spawnNode({ env: { STARLING_NODE__NAME: 'fb@127.0.0.1', STARLING_NODE__COOKIE: cookie, STARLING_CLUSTER__LISTEN: `127.0.0.1:${portB}` } })
  ])
  const joined = await runCtlOn(b, ['cluster', 'join', `fa@127.0.0.1:${portA}`])
  expect(joined.code).toBe(0)
  const running = async (): Promise<string[]> => {
    const { out } = await runCtlOn(a, ['cluster', 'status', '--json'])
    return (JSON.parse(out) as Array<{ name: string, status: string }>).filter(m => m.status === 'running').map(m => m.name).sort()
  }
  const stats = await runClusterDoor({
    clusterPort: portA,
    cookie,
    nodeName: 'fa@127.0.0.1',
    mqttPort: a.port('mqtt:tcp'),
    peerMqttPort: b.port('mqtt:tcp'),
    memberNames: ['fa@127.0.0.1', 'fb@127.0.0.1'],
    checkMembers: async () => (await running()).join() === 'fa@127.0.0.1,fb@127.0.0.1',
    inputs: 400,
    seed: 41,
    concurrency: 8,
    alive: () => [a, b].every(n => n.child.exitCode === null && n.child.signalCode === null)
  })
  for (const n of [a, b]) expectNodeUnharmed(n)
  expect(stats.inputs).toBeGreaterThanOrEqual(400)
  expect({ failures: stats.failures, examples: stats.examples }).toEqual({ failures: {}, examples: {} })
  // what the node did with the garbage: refused the wrong cookie, closed the broken streams
  expect(stats.answers['another cookie: refused']).toBeGreaterThan(0)
  expect(stats.answers['link: stream closed by the node']).toBeGreaterThan(0)
  expect(stats.answers['bridge: stream closed by the node']).toBeGreaterThan(0)
  expect(stats.witnessSent).toBeGreaterThan(0)
  expect(stats.witnessConnected).toBe(true)
  expect(stats.witnessReceived).toBe(stats.witnessSent)
  expect(await running()).toEqual(['fa@127.0.0.1', 'fb@127.0.0.1'])
}, 90_000)
