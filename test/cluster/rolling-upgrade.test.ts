/**
 * A rolling upgrade: a node of an earlier release and a node of this one in one cluster
 * (MQTT messages cross both ways), then the earlier node upgraded in place (stopped, started
 * from this release on its own data directory and cluster port), rejoining by itself.
 *
 * It needs a build of the earlier release, named by PREVIOUS_STARLING_DIR (docs/operations.md,
 * "Upgrades", says how to make one from a commit; .ci/run builds release 0.1.0's); without it
 * the suite is skipped. The
 * protocol check itself runs everywhere (test/cluster/mesh-version.test.ts).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { spawnNode, killAllNodes, stopNode, tempDir, runCtl, type NodeProcess } from '../helpers/process.js'
import { freePort, waitFor } from '../helpers/node.js'

const PREVIOUS = process.env.PREVIOUS_STARLING_DIR
const previousBuilt = PREVIOUS !== undefined && existsSync(join(PREVIOUS, 'dist', 'bin', 'starling.js'))
const describeWithPrevious = previousBuilt ? describe : describe.skip
if (!previousBuilt) console.log('rolling-upgrade: skipped (set PREVIOUS_STARLING_DIR to a built checkout of an earlier release)')

const clients: MqttClient[] = []
afterAll(async () => {
  for (const c of clients) c.end(true)
  await killAllNodes()
})

async function client (node: NodeProcess): Promise<MqttClient> {
  const c = await mqtt.connectAsync({ host: '127.0.0.1', port: node.port('mqtt:tcp'), reconnectPeriod: 0 })
  clients.push(c)
  return c
}

/** Publishes on `from` and resolves once a subscriber on `to` has the message. */
async function crosses (from: NodeProcess, to: NodeProcess, topic: string): Promise<void> {
  const sub = await client(to)
  const got: string[] = []
  sub.on('message', (t, payload) => { got.push(`${t} ${payload.toString()}`) })
  await sub.subscribeAsync(topic, { qos: 1 })
  const pub = await client(from)
  // the route may reach the other node a moment after SUBACK: publish until it arrives
  const deadline = Date.now() + 15000
  while (got.length === 0) {
    if (Date.now() > deadline) throw new Error(`${topic} did not cross`)
    await pub.publishAsync(topic, 'hello', { qos: 1 })
    await new Promise(resolve => setTimeout(resolve, 200))
  }
  expect(got[0]).toBe(`${topic} hello`)
}

describeWithPrevious('a cluster one release apart', () => {
  it('links, carries messages both ways, and takes the earlier node back once upgraded', async () => {
    const oldPort = await freePort()
    const oldDir = tempDir()
    const oldEnv = { STARLING_NODE__NAME: 'prev@127.0.0.1', STARLING_CLUSTER__LISTEN: `127.0.0.1:${oldPort}` }
    let prev = await spawnNode({ program: join(PREVIOUS!, 'bin', 'starling'), dataDir: oldDir, env: oldEnv })
    const next = await spawnNode({ env: { STARLING_NODE__NAME: 'next@127.0.0.1' } })
    const join1 = await runCtl(['cluster', 'join', `prev@127.0.0.1:${oldPort}`], next.env)
    expect(join1).toMatchObject({ code: 0 })
    expect(join1.stdout).toContain('Join the cluster successfully.')
    await crosses(prev, next, 'ru/a')
    await crosses(next, prev, 'ru/b')

    // the upgrade: the earlier node stops, this release starts on its data directory and port
    expect((await stopNode(prev)).code).toBe(0)
    prev = await spawnNode({ dataDir: oldDir, env: oldEnv })
    await waitFor(() => prev.logLines().some(l => l.msg === 'cluster link up' && l.peer === 'next@127.0.0.1'), 'the upgraded node to rejoin', 20000)
    await crosses(prev, next, 'ru/c')
    await crosses(next, prev, 'ru/d')
  }, 90000)
})
