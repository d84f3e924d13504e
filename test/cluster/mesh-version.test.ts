/**
 * The cluster protocol is versioned (cluster/mesh.ts, MESH_PROTOCOL): a node's hello says which
 * protocol it speaks, the oldest it links with, and its Starling version. A cluster whose nodes
 * are one release apart keeps working during a rolling upgrade: a hello without a protocol (a
 * node of release 0.1.0, commit 501b4cc, whose hello had none) links as protocol 1, while a
 * node that no longer accepts this one's protocol is refused with a message naming both.
 */
import { multiaddr } from '@multiformats/multiaddr'
import { MESH_PROTOCOL, MIN_PEER_PROTOCOL, multiaddrOf, protocolMismatch } from '../../cluster/mesh.js'
import { VERSION } from '../../node/version.js'
import { startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import { cookiePeer, frame, readFrames } from '../helpers/mesh-peer.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode({ 'node.name': 'mv@127.0.0.1' }) })
afterAll(async () => { await node?.destroy() })

/** Opens a link to `node` with `hello`; resolves with the frames the node sent back and whether it closed the link. */
async function sayHello (hello: Record<string, unknown>): Promise<{ frames: any[], closed: boolean, stop: () => Promise<void> }> {
  const peer = await cookiePeer(node)
  const connection = await peer.dial(multiaddr(multiaddrOf('127.0.0.1', node.cluster.mesh.port)))
  const stream = await connection.newStream('/starling/link/1.0.0')
  let received = Buffer.alloc(0)
  const result = { frames: [] as any[], closed: false, stop: async () => { await peer.stop() } }
  stream.addEventListener('message', (event: any) => {
    const data: Uint8Array = event.data instanceof Uint8Array ? event.data : event.data.subarray()
    received = Buffer.concat([received, data])
    result.frames = readFrames(received)
  })
  stream.addEventListener('close', () => { result.closed = true })
  stream.send(frame({ k: 'hello', hello }))
  await waitFor(() => result.frames.length > 0, 'the node\'s hello', 10000)
  return result
}

it('links with a node of the previous release, whose hello names no protocol, and answers with its own', async () => {
  const old = await sayHello({ name: 'old@127.0.0.1', addr: '127.0.0.1:1', incarnation: Date.now(), acks: true })
  try {
    expect(old.frames[0]).toMatchObject({ k: 'hello', hello: { name: 'mv@127.0.0.1', proto: MESH_PROTOCOL, minPeer: MIN_PEER_PROTOCOL, version: VERSION } })
    await waitFor(() => node.cluster.mesh.isUp('old@127.0.0.1'), 'the link to the old node')
    expect(node.cluster.mesh.peer('old@127.0.0.1')?.proto).toBeUndefined()
  } finally {
    await old.stop()
  }
})

it('refuses a node that no longer links with this protocol, telling it which this is', async () => {
  const future = await sayHello({ name: 'future@127.0.0.1', addr: '127.0.0.1:1', incarnation: Date.now(), proto: MESH_PROTOCOL + 2, minPeer: MESH_PROTOCOL + 1, version: 'v9.0.0' })
  try {
    // the future node learns this one's protocol from the hello, then the link closes
    expect(future.frames[0]).toMatchObject({ k: 'hello', hello: { proto: MESH_PROTOCOL } })
    await waitFor(() => future.closed, 'the link to close', 10000)
    expect(node.cluster.mesh.isUp('future@127.0.0.1')).toBe(false)
  } finally {
    await future.stop()
  }
})

it('says what to upgrade when protocols do not meet', () => {
  const hello = { name: 'n@h', addr: 'h:1', incarnation: 1 }
  expect(protocolMismatch(hello)).toBeUndefined()
  expect(protocolMismatch({ ...hello, proto: 1, minPeer: 1 }, { proto: 3, minPeer: 2 })).toBe(`n@h speaks cluster protocol 1, older than 2, the oldest this node (Starling ${VERSION}) links with: upgrade it (one release at a time)`)
  expect(protocolMismatch({ ...hello, proto: 3, minPeer: 2, version: 'v0.3.0' }, { proto: 1, minPeer: 1 })).toBe(`n@h (Starling v0.3.0) speaks cluster protocol 3 and links with 2 or newer, not this node's 1 (Starling ${VERSION}): upgrade this node (one release at a time)`)
  // one release apart either way: linked
  expect(protocolMismatch({ ...hello, proto: 2, minPeer: 1 }, { proto: 1, minPeer: 1 })).toBeUndefined()
  expect(protocolMismatch({ ...hello, proto: 1, minPeer: 1 }, { proto: 2, minPeer: 1 })).toBeUndefined()
})
