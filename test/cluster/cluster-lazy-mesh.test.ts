/**
 * A standalone node runs without libp2p (cluster/mesh-door.ts): its cluster port is open,
 * libp2p starts at the first connection on it, at the node's own first dial (a join), or at
 * start when the node has members. Joins to such a node get in at the first try, several at
 * once too, and a standalone node reports itself alone and running throughout.
 * (What a process loads is checked in test/e2e/idle-node-packages.test.ts.)
 */
import { createConnection } from 'node:net'
import { startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'

const nodes: TestNode[] = []

async function start (name: string, dataDir?: string): Promise<TestNode> {
  const node = await startTestNode({ 'node.name': `${name}@127.0.0.1` }, dataDir)
  nodes.push(node)
  return node
}

const addressOf = (n: TestNode): string => `${n.name}:${n.cluster.mesh.port}`

afterAll(async () => {
  for (const n of nodes.reverse()) await n.destroy()
})

test('a fresh node runs its mesh without libp2p and reports itself alone and running', async () => {
  const a = await start('lazy-alone')
  expect(a.cluster.mesh.awake).toBe(false)
  expect(a.cluster.mesh.port).toBeGreaterThan(0)
  expect(a.cluster.status()).toEqual([{ name: a.name, addr: a.cluster.mesh.addr, status: 'running' }])
  expect(a.rpc.nodes()).toEqual([a.name])
  expect((await runCtlOn(a, ['cluster', 'status'])).out).toContain(`running_nodes => ['${a.name}']`)
  // its heartbeat round and the bridges' protocol wait for libp2p without it
  await new Promise(resolve => setTimeout(resolve, 2200))
  expect(a.cluster.mesh.awake).toBe(false)
})

test('a join to a fresh node succeeds at the first try, and starts libp2p on both', async () => {
  const a = await start('lazy-a')
  const b = await start('lazy-b')
  expect([a.cluster.mesh.awake, b.cluster.mesh.awake]).toEqual([false, false])
  const started = Date.now()
  const members = await b.cluster.join(addressOf(a))
  expect(Date.now() - started).toBeLessThan(5000)
  expect(members.map(m => [m.name, m.status])).toEqual([[b.name, 'running'], [a.name, 'running']])
  expect([a.cluster.mesh.awake, b.cluster.mesh.awake]).toEqual([true, true])
  expect(a.cluster.status().map(m => m.status)).toEqual(['running', 'running'])
})

test('two nodes joining one fresh node at once both get in', async () => {
  const a = await start('lazy-hub')
  const b = await start('lazy-b2')
  const c = await start('lazy-c2')
  await Promise.all([b.cluster.join(addressOf(a)), c.cluster.join(addressOf(a))])
  await waitFor(() => a.cluster.status().filter(m => m.status === 'running').length === 3, 'three running members on the hub')
  for (const n of [b, c]) await waitFor(() => n.cluster.status().filter(m => m.status === 'running').length === 3, `three running members on ${n.name}`)
})

test('a plain TCP connection on the cluster port starts libp2p, which serves the next join', async () => {
  const a = await start('lazy-knock')
  await new Promise<void>((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port: a.cluster.mesh.port })
    socket.once('connect', () => { socket.destroy(); resolve() })
    socket.once('error', reject)
  })
  await waitFor(() => a.cluster.mesh.awake, 'libp2p started by the knock')
  const b = await start('lazy-knock-b')
  expect((await b.cluster.join(addressOf(a))).map(m => m.status)).toEqual(['running', 'running'])
})

test('a node restarted with members starts libp2p at once and dials them', async () => {
  const a = await start('lazy-keep-a')
  const b = await start('lazy-keep-b')
  await b.cluster.join(addressOf(a))
  const dir = b.dataDir
  await b.stop()
  nodes.splice(nodes.indexOf(b), 1)
  const again = await start('lazy-keep-b', dir)
  expect(again.cluster.mesh.awake).toBe(true)
  await waitFor(() => again.cluster.status().every(m => m.status === 'running') && again.cluster.status().length === 2, 'the member linked again')
})
