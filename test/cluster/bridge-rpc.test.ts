/**
 * The RPC bridges' transport (cluster/bridge-transport.ts): two single-node clusters with
 * the same cookie that never join, and a link from A to B over B's cluster port. Batches
 * are published on B as local publishes (QoS, retain, properties and order kept), each
 * acknowledged only once published and stored there; B stopped drops the link, B back on
 * the same port is reachable again; a node with another cookie cannot be bridged to; and
 * the link never makes the two nodes members of each other.
 */
import type { BridgeLink } from '../../plugins/bridge_mqtt/types.js'
import type { PublishMessage } from '../../node/mqtt/core.js'
import { startTestNode, connect, closeClients, waitFor, collect, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'

let a: TestNode, b: TestNode
let bPort = 0
const extra: TestNode[] = []
const links: BridgeLink[] = []

const addressOf = (n: TestNode): string => `${n.name}:${n.cluster.mesh.port}`

function message (topic: string, payload: string, qos = 1, retain = false, properties?: Record<string, unknown>): PublishMessage {
  const m: PublishMessage = { cmd: 'publish', topic, payload: Buffer.from(payload), qos, retain, dup: false }
  if (properties !== undefined) m.properties = properties
  return m
}

function linkTo (from: TestNode, address: string): BridgeLink {
  const link = from.cluster.bridgeTransport.link(address)
  links.push(link)
  return link
}

beforeAll(async () => {
  a = await startTestNode({ 'node.name': 'a@127.0.0.1' })
  b = await startTestNode({ 'node.name': 'b@127.0.0.1' })
  bPort = b.cluster.mesh.port
})

afterEach(async () => { await closeClients() })

afterAll(async () => {
  for (const link of links) await link.close()
  for (const n of [...extra, b, a]) await n?.destroy()
})

test('a batch sent from A is published on B: topic as sent, QoS, retain and properties kept, the ack once published', async () => {
  const sub = await connect(b, { protocolVersion: 5 })
  const got = collect(sub)
  await sub.subscribeAsync('br/#', { qos: 2 })
  const link = linkTo(a, addressOf(b))
  await link.connect()
  await link.send([
    message('br/q0', 'zero', 0),
    message('br/q1', 'one', 1, false, { userProperties: { k: 'v' }, contentType: 'text/plain' }),
    message('br/q2', 'two', 2)
  ])
  await waitFor(() => got.length === 3, 'three messages on B')
  expect(got.map(m => [m.topic, m.payload.toString(), m.packet.qos])).toEqual([['br/q0', 'zero', 0], ['br/q1', 'one', 1], ['br/q2', 'two', 2]])
  expect(got[1].packet.properties).toMatchObject({ userProperties: { k: 'v' }, contentType: 'text/plain' })
  // an empty batch needs no round trip
  await link.send([])
})

test('the ack means stored on B: a retained message is kept, an offline session has it queued', async () => {
  const away = await connect(b, { clientId: 'bridge-away', clean: false })
  await away.subscribeAsync('held/#', { qos: 1 })
  await new Promise<void>(resolve => away.end(false, {}, () => resolve()))
  await waitFor(() => b.broker.core.client('bridge-away') === undefined, 'the session to be away')
  const link = linkTo(a, addressOf(b))
  await link.connect()
  await link.send([message('held/r', 'kept', 1, true), message('held/q', 'queued', 1)])
  // no waiting: the ack came after B published and stored them
  expect(b.broker.core.sessions.hasRetained('held/r')).toBe(true)
  expect(b.broker.core.sessions.queuedOf('bridge-away').map(p => p.topic)).toEqual(['held/r', 'held/q'])
  const later = await connect(b)
  const got = collect(later)
  await later.subscribeAsync('held/r', { qos: 1 })
  await waitFor(() => got.length === 1, 'the retained message')
  expect(got[0].packet.retain).toBe(true)
  expect(got[0].payload.toString()).toBe('kept')
  const back = await connect(b, { clientId: 'bridge-away', clean: false })
  const queued = collect(back)
  await waitFor(() => queued.length === 2, 'the queued messages')
  expect(queued.map(m => m.payload.toString())).toEqual(['kept', 'queued'])
})

test('batches sent back to back arrive in order, each acknowledged', async () => {
  const sub = await connect(b)
  const got = collect(sub)
  await sub.subscribeAsync('order/#', { qos: 1 })
  const link = linkTo(a, addressOf(b))
  await link.connect()
  const batches = 50
  const size = 100
  const sends: Array<Promise<void>> = []
  for (let i = 0; i < batches; i++) {
    sends.push(link.send(Array.from({ length: size }, (_, j) => message(`order/${j % 3}`, String(i * size + j), j % 2))))
  }
  await Promise.all(sends)
  await waitFor(() => got.length === batches * size, `${batches * size} messages`, 20000)
  expect(got.map(m => Number(m.payload.toString()))).toEqual(Array.from({ length: batches * size }, (_, i) => i))
})

test('the two nodes stay strangers: no members, no routes, no gossip peers', async () => {
  const link = linkTo(a, addressOf(b))
  await link.connect()
  await link.send([message('strangers/x', 'x')])
  for (const n of [a, b]) {
    expect(n.cluster.status()).toEqual([{ name: n.name, addr: n.cluster.mesh.addr, status: 'running' }])
    expect(n.cluster.mesh.peers()).toEqual([])
    expect(n.rpc.nodes()).toEqual([n.name])
    // gossipsub never met the bridge's dialler
    expect(n.cluster.mesh.gossipPeers()).toEqual([])
  }
  const sub = await connect(b)
  await sub.subscribeAsync('strangers/#', { qos: 0 })
  expect(a.cluster.routing.table.match('strangers/x')).toEqual([])
  const status = await runCtlOn(b, ['cluster', 'status'])
  expect(status.out).toContain(b.name)
  expect(status.out).not.toContain(a.name)
})

test('a link names the node it reaches: another name at that address is refused', async () => {
  const link = linkTo(a, `x@127.0.0.1:${bPort}`)
  await expect(link.connect()).rejects.toThrow(`refused the bridge: this node is ${b.name}, not x@127.0.0.1`)
  expect(() => a.cluster.bridgeTransport.link('no-host')).toThrow(/bad node name no-host/)
})

test('a node with another cookie cannot be bridged to, nor bridge here; an idle link meanwhile stays up', async () => {
  const idle = linkTo(a, addressOf(b))
  const downs: Error[] = []
  idle.onDown((err) => downs.push(err))
  await idle.connect()
  const since = Date.now()
  const stranger = await startTestNode({ 'node.name': 'c@127.0.0.1', 'node.cookie': 'another cookie' })
  extra.push(stranger)
  // the private network's handshake never completes: each connect gives up after its timeout
  await Promise.all([
    expect(linkTo(a, addressOf(stranger)).connect()).rejects.toThrow(/cannot reach c@127.0.0.1 .*same node.cookie/),
    expect(linkTo(stranger, addressOf(a)).connect()).rejects.toThrow(/cannot reach a@127.0.0.1 .*same node.cookie/)
  ])
  // longer than the silence after which a stream is closed: the pings kept it
  await new Promise(resolve => setTimeout(resolve, Math.max(0, 6000 - (Date.now() - since))))
  await idle.send([message('idle/x', 'still up')])
  expect(downs).toEqual([])
})

test('B stopped: the link goes down and sends reject; B back on the same port: the link connects again', async () => {
  const link = linkTo(a, addressOf(b))
  await link.connect()
  const downs: Error[] = []
  link.onDown((err) => downs.push(err))
  // a batch in flight when B stops settles one way or the other, never hangs
  const inFlight = link.send(Array.from({ length: 500 }, (_, i) => message('gone/x', String(i)))).then(() => 'acked', () => 'rejected')
  const dataDir = b.dataDir
  await b.stop()
  await waitFor(() => downs.length === 1, 'onDown', 10000)
  expect(downs[0].message).toMatch(/bridge link to b@127.0.0.1 .* dropped/)
  expect(['acked', 'rejected']).toContain(await inFlight)
  await expect(link.send([message('gone/x', 'late')])).rejects.toThrow(/not connected/)
  await expect(link.connect()).rejects.toThrow(/cannot reach b@127.0.0.1/)

  b = await startTestNode({ 'node.name': 'b@127.0.0.1', 'cluster.listen': `127.0.0.1:${bPort}` }, dataDir)
  const sub = await connect(b)
  const got = collect(sub)
  await sub.subscribeAsync('back/#', { qos: 1 })
  await link.connect()
  await link.send([message('back/x', 'again')])
  await waitFor(() => got.length === 1, 'the message after the restart')
  expect(got[0].payload.toString()).toBe('again')
  expect(downs).toHaveLength(1)
})

test('close ends the link without onDown, and a later connect opens it again', async () => {
  const link = linkTo(a, addressOf(b))
  const downs: Error[] = []
  link.onDown((err) => downs.push(err))
  await link.connect()
  await link.close()
  await expect(link.send([message('closed/x', 'x')])).rejects.toThrow(/not connected/)
  await link.connect()
  await link.send([message('closed/x', 'y')])
  expect(downs).toEqual([])
})

test('a batch with a topic no client could publish to, or a QoS past 2, is refused whole and nothing of it is published', async () => {
  // found by the cluster door of the fuzzer (bench/fuzz/cluster-door.ts): an empty retained
  // topic reached the retained store ("a key must be a non-empty string", logged as an error)
  const sub = await connect(b, { protocolVersion: 5 })
  const got = collect(sub)
  await sub.subscribeAsync('nk/#', { qos: 1 })
  const link = linkTo(a, addressOf(b))
  await link.connect()
  for (const bad of [message('', 'empty', 1, true), message('nk/+/x', 'wildcard'), message('nk/#', 'wildcard', 0, true), message('nk/\u0000', 'nul'), message('nk/q', 'qos', 3)]) {
    await expect(link.send([message('nk/before', 'before'), bad])).rejects.toThrow(/could not publish the batch: malformed batch: message 2: /)
  }
  await link.send([message('nk/after', 'after')])
  await waitFor(() => got.length > 0, 'the good batch on B')
  expect(got.map(m => m.topic)).toEqual(['nk/after'])
})
