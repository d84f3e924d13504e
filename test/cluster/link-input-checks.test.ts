/**
 * What a member link (cluster/routing.ts) takes from its peer is checked where it arrives,
 * so that a corrupt or hostile frame cannot reach the broker or the route table. Found by the
 * cluster door of the fuzzer (bench/fuzz/cluster-door.ts):
 * - a batch of forwarded messages delivers only what a client could have published: a message
 *   with an empty or wildcard topic, a U+0000 in it, or a QoS past 2 is dropped, the rest of
 *   its batch delivered (an empty retained topic reached the retained store as an unusable
 *   key, logged as an error, and wildcard topics reached subscribers);
 * - route keys that are not strings are dropped (a null key entered the table half-way, and
 *   dropping the peer's routes later threw in a timer, which killed the node);
 * - member entries of the wrong shape are dropped (an address that was not a string went into
 *   the book, and the next dial round threw on it in a timer, which killed the node);
 * - a hello without a non-empty name, an address and an incarnation closes the link (a link
 *   named "" wrote an empty key into the member book on its next frame and killed the node),
 *   and so does a frame that is not a map (reading the kind of a nil frame killed the node);
 * - an RPC answer settles a call only when it comes from the node the call went to (any
 *   linked peer could answer another node's routes, data or takeover call by guessing its id);
 * - `reg`/`reg=` entries of the wrong shape are skipped (a `reg=` list that was not one threw).
 */
import { encodeBatch, type ForwardedMessage } from '../../cluster/pub-batch.js'
import { FRAME_PUBLISH_BATCH, multiaddrOf } from '../../cluster/mesh.js'
import { multiaddr } from '@multiformats/multiaddr'
import { cookiePeer, frame } from '../helpers/mesh-peer.js'
import { startTestNode, connect, closeClients, waitFor, collect, type TestNode } from '../helpers/node.js'

let a: TestNode, b: TestNode

beforeAll(async () => {
  a = await startTestNode({ 'node.name': 'fwa@127.0.0.1' })
  b = await startTestNode({ 'node.name': 'fwb@127.0.0.1' })
  await b.cluster.join(`${a.name}:${a.cluster.mesh.port}`)
  await waitFor(() => a.cluster.mesh.isUp(b.name) && b.cluster.mesh.isUp(a.name), 'the link')
})

afterAll(async () => {
  await closeClients()
  for (const n of [b, a]) await n?.destroy()
})

const message = (topic: string, qos = 1, retain = false): ForwardedMessage => ({ topic, payload: Buffer.from(topic), qos, retain, brokerCounter: 0 })

test('a forwarded message no client could publish is dropped, and the rest of its batch delivered', async () => {
  const sub = await connect(b, { protocolVersion: 5 })
  const got = collect(sub)
  await sub.subscribeAsync('fw/#', { qos: 1 })
  const batch = [message('fw/ok'), message('', 1, true), message('fw/+/x'), message('fw/#', 0, true), message('fw/\u0000'), message('fw/q3', 3), message('fw/after', 0)]
  expect(a.cluster.mesh.sendRaw(b.name, FRAME_PUBLISH_BATCH, encodeBatch(a.name, batch))).toBe(true)
  await waitFor(() => got.some(m => m.topic === 'fw/after'), 'the last good message on b')
  // a message after it on the same link: everything of the batch was handled by then
  expect(a.cluster.mesh.sendRaw(b.name, FRAME_PUBLISH_BATCH, encodeBatch(a.name, [message('fw/later', 0)]))).toBe(true)
  await waitFor(() => got.some(m => m.topic === 'fw/later'), 'the next batch on b')
  expect(got.map(m => m.topic).sort()).toEqual(['fw/after', 'fw/later', 'fw/ok'])
})

test("route keys that are not strings are dropped, and the peer's routes can still be dropped", async () => {
  expect(a.cluster.mesh.send(b.name, { k: 'routes=', keys: [null, 7, {}, '', 'lk/one/#'] })).toBe(true)
  expect(a.cluster.mesh.send(b.name, { k: 'routes', add: [null, ['x'], 'lk/two/#'], del: [null, 3] })).toBe(true)
  expect(a.cluster.mesh.send(b.name, { k: 'routes', add: 'lk/not-a-list', del: null })).toBe(true)
  await waitFor(() => b.cluster.routing.table.keysOf(a.name).includes('lk/two/#'), 'the good keys on b')
  expect(b.cluster.routing.table.keysOf(a.name).filter(k => k.startsWith('lk/')).sort()).toEqual(['lk/one/#', 'lk/two/#'])
  // what the node does when a's link goes: this threw (TypeError in parseShared) before
  expect(() => { b.cluster.routing.forget(a.name) }).not.toThrow()
  expect(b.cluster.routing.table.keysOf(a.name)).toEqual([])
})

test('member entries of the wrong shape are dropped: the book and the dial rounds never see them', async () => {
  const before = b.cluster.status().map(m => m.name).sort()
  const stamp = Date.now()
  expect(a.cluster.mesh.send(b.name, {
    k: 'members',
    list: [{ name: 'ghost1@127.0.0.1', addr: 5, stamp }, { name: 'ghost2@127.0.0.1', addr: null, stamp }, { name: 7, addr: '127.0.0.1:1', stamp }, { name: 'ghost3@127.0.0.1', addr: '127.0.0.1:1', stamp: 'x' }, null, 'x']
  })).toBe(true)
  expect(a.cluster.mesh.send(b.name, { k: 'members', list: 'not a list', full: true })).toBe(true)
  // two dial rounds (cluster/cluster.ts TICK_MS): an address that is not a string threw there
  await new Promise(resolve => setTimeout(resolve, 4500))
  expect(b.cluster.status().map(m => m.name).sort()).toEqual(before)
  expect(b.cluster.status().every(m => m.status === 'running')).toBe(true)
})

/** A libp2p peer with the cluster's cookie, linked to `node` as `name` by a hello; `send` writes frames on the link. */
async function fakeMember (node: TestNode, name: string): Promise<{ send: (...frames: unknown[]) => void, stop: () => Promise<void> }> {
  const peer = await cookiePeer(node)
  const connection = await peer.dial(multiaddr(multiaddrOf('127.0.0.1', node.cluster.mesh.port)))
  const stream = await connection.newStream('/starling/link/1.0.0')
  const send = (...frames: unknown[]): void => { stream.send(Buffer.concat(frames.map(frame))) }
  send({ k: 'hello', hello: { name, addr: '127.0.0.1:1', incarnation: Date.now() } })
  await waitFor(() => node.cluster.mesh.isUp(name), `${name}'s link`)
  return { send, stop: async () => { await peer.stop() } }
}

test('an RPC answer from another peer than the one called does not settle the call', async () => {
  a.cluster.rpc.handle('test.slow', async () => { await new Promise(resolve => setTimeout(resolve, 300)); return 'from a' })
  const peer = await fakeMember(b, 'forger@127.0.0.1')
  try {
    const call = b.cluster.rpc.call(a.name, 'test.slow', {})
    const last = (b.cluster.rpc as unknown as { nextId: number }).nextId
    const forged = []
    for (let id = Math.max(1, last - 50); id <= last + 5; id++) forged.push({ k: 'r', id, ok: true, v: 'forged' })
    peer.send(...forged)
    expect(await call).toBe('from a')
  } finally {
    await peer.stop()
  }
})

test('reg and reg= entries of the wrong shape are skipped; the good ones are taken', async () => {
  const peer = await fakeMember(b, 'regs@127.0.0.1')
  try {
    peer.send({ k: 'reg=', e: 5 }, { k: 'reg=', e: [null, 7, ['', 1, true], [{}, 1, true], ['r-bad-at', 'x', true], ['r-good', 1, true]] },
      { k: 'reg', id: null, at: 1 }, { k: 'reg', id: 'r-reg', at: 'x' }, { k: 'reg', id: 'r-two', at: 2, on: true })
    await waitFor(() => b.cluster.sessions.whereIs('r-two') === 'regs@127.0.0.1', 'the good reg')
    expect(b.cluster.sessions.whereIs('r-good')).toBe('regs@127.0.0.1')
    expect(b.cluster.sessions.whereIs('r-bad-at')).toBeUndefined()
    expect(b.cluster.sessions.whereIs('r-reg')).toBeUndefined()
  } finally {
    await peer.stop()
  }
})

test('a link whose hello has no proper name, or whose frame is not a map, is closed', async () => {
  const peer = await cookiePeer(b)
  try {
    const connection = await peer.dial(multiaddr(multiaddrOf('127.0.0.1', b.cluster.mesh.port)))
    for (const hello of [{ name: '', addr: '127.0.0.1:1', incarnation: 1 }, { name: 5, addr: '127.0.0.1:1', incarnation: 1 }, { name: 'x@127.0.0.1' }, null]) {
      const stream = await connection.newStream('/starling/link/1.0.0')
      const closed = new Promise<void>(resolve => stream.addEventListener('close', () => resolve(), { once: true }))
      stream.send(Buffer.concat([frame({ k: 'hello', hello }), frame({ k: 'not-member', stamp: Date.now() })]))
      await closed
    }
    // a frame that is not a map (MessagePack nil, a number, a list), first or after a hello
    for (const bytes of [frame(null), frame(7), Buffer.concat([frame({ k: 'hello', hello: { name: 'fz@127.0.0.1', addr: '127.0.0.1:1', incarnation: 1 } }), frame(null)]), frame(['k'])]) {
      const stream = await connection.newStream('/starling/link/1.0.0')
      const closed = new Promise<void>(resolve => stream.addEventListener('close', () => resolve(), { once: true }))
      stream.send(bytes)
      await closed
    }
    expect(b.cluster.mesh.peers()).toEqual([a.name])
    expect(b.cluster.status().map(m => m.name).sort()).toEqual([a.name, b.name].sort())
  } finally {
    await peer.stop()
  }
})
