/**
 * The private network on the cluster port (cluster/private-network.ts): its handshake runs
 * before anything proves the cookie, so whatever a peer sends there must leave the node as it
 * was. With `@libp2p/pnet` (the `xsalsa20` package's WebAssembly cipher, never freed), every
 * connection that got as far as the nonces leaked cipher state; once the leak had grown the
 * cipher's memory, every cipher still in use grew it again on its next read or write (it
 * sized the growth from a view the last growth had detached), up to the 64 MiB limit, and
 * `WebAssembly.Memory.grow(): Maximum memory size exceeded`, thrown in a socket's data
 * handler, ended the node. Found by the cluster door of the fuzzer after 5 000-15 000 inputs.
 *
 * The replacement stays what pnet is on the wire: its keystream is the `xsalsa20` package's
 * however the bytes are cut, and libp2p nodes with `@libp2p/pnet` and with this protector
 * connect to each other (and not with another key).
 */
import net from 'node:net'
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { createLibp2p, type Libp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { preSharedKey } from '@libp2p/pnet'
import type { Stream } from '@libp2p/interface'
import { privateNetwork, XSalsa20Stream, KeystreamExhaustedError, LAST_BLOCK } from '../../cluster/private-network.js'
import { pskFromCookie } from '../../cluster/mesh.js'
import { spawnNode, killAllNodes, expectNodeUnharmed, connectTo, closeProcessClients, within, type NodeProcess } from '../helpers/process.js'
import { runCtlOn } from '../helpers/ctl.js'
import { freePort, waitFor } from '../helpers/node.js'

describe('a node on the cluster port', () => {
  let a: NodeProcess, b: NodeProcess
  let clusterPortA: number

  beforeAll(async () => {
    const cookie = 'private-network-cookie'
    const [portA, portB] = [await freePort(), await freePort()]
    clusterPortA = portA
    ;[a, b] = await Promise.all([
      spawnNode({ env: { STARLING_NODE__NAME: 'pna@127.0.0.1', STARLING_NODE__COOKIE: cookie, STARLING_CLUSTER__LISTEN: `127.0.0.1:${portA}` } }),
      spawnNode({ env: { STARLING_NODE__NAME: 'pnb@127.0.0.1', STARLING_NODE__COOKIE: cookie, STARLING_CLUSTER__LISTEN: `127.0.0.1:${portB}` } })
    ])
    expect((await runCtlOn(b, ['cluster', 'join', `pna@127.0.0.1:${portA}`])).code).toBe(0)
  }, 30_000)

  afterAll(async () => {
    await closeProcessClients()
    await killAllNodes()
  })

  /** The members `node` sees running. */
  async function running (node: NodeProcess): Promise<string[]> {
    const { out } = await runCtlOn(node, ['cluster', 'status', '--json'])
    return (JSON.parse(out) as Array<{ name: string, status: string }>).filter(m => m.status === 'running').map(m => m.name).sort()
  }

  /**
   * A peer without the cookie: a private-network nonce and garbage (what it decrypts to is no
   * multistream-select header), from `localAddress`; resolves when the node has closed it.
   */
  async function nonceThenGarbage (localAddress: string): Promise<void> {
    await new Promise<void>(resolve => {
      const socket = net.connect({ port: clusterPortA, host: '127.0.0.1', localAddress })
      socket.on('error', () => {})
      socket.on('data', () => {})
      socket.once('connect', () => { socket.end(randomBytes(24 + 40)) })
      // the node closes it at once (its bytes cannot be a handshake); a node that does not is harmed
      const timer = setTimeout(() => { socket.destroy() }, 2000)
      socket.once('close', () => { clearTimeout(timer); resolve() })
    })
  }

  /** A connection that sends nothing; resolves with it once connected. */
  async function silent (localAddress: string): Promise<net.Socket> {
    return await new Promise(resolve => {
      const socket = net.connect({ port: clusterPortA, host: '127.0.0.1', localAddress })
      socket.on('error', () => {})
      socket.once('connect', () => resolve(socket))
    })
  }

  test('silent connections do not shut the cluster port: a peer gets the node\'s nonce while 40 sit there, and they are dropped after the nonce timeout', async () => {
    // libp2p refuses every new inbound connection while 10 are in their handshake (its default),
    // and a peer that sends nothing held one for 10 s: ten of them shut the port
    const idle = await Promise.all(Array.from({ length: 40 }, (_, i) => silent(`127.0.0.${10 + (i % 20)}`)))
    const closed = idle.map(s => new Promise<number>(resolve => { const t = Date.now(); s.once('close', () => resolve(Date.now() - t)) }))
    // one more peer: the node answers with its own 24-byte nonce (refused, it would be closed)
    const nonce = await new Promise<number>((resolve, reject) => {
      const socket = net.connect({ port: clusterPortA, host: '127.0.0.1', localAddress: '127.0.0.9' })
      let got = 0
      socket.on('error', reject)
      socket.once('connect', () => { socket.write(randomBytes(24)) })
      socket.on('data', (d: Buffer) => { got += d.length; if (got >= 24) { socket.destroy(); resolve(got) } })
      socket.once('close', () => resolve(got))
    })
    expect(nonce).toBeGreaterThanOrEqual(24)
    const waited = await Promise.all(closed)
    expect(Math.max(...waited)).toBeLessThan(5000)
    expect(await running(a)).toEqual(['pna@127.0.0.1', 'pnb@127.0.0.1'])
  }, 20_000)

  test('thousands of peers that send a nonce and garbage leave the node running, linked and forwarding both ways', async () => {
    // traffic both ways over the link while the peers come: the node's two ciphers of that
    // connection take turns, which is where the old cipher's memory grew
    const got: Record<string, string[]> = { ab: [], ba: [] }
    const subB = await connectTo(b.port('mqtt:tcp'), { protocolVersion: 5 }, c => c.on('message', (_t, p) => got.ab.push(p.toString())))
    const subA = await connectTo(a.port('mqtt:tcp'), { protocolVersion: 5 }, c => c.on('message', (_t, p) => got.ba.push(p.toString())))
    await subB.subscribeAsync('pn/ab', { qos: 1 })
    await subA.subscribeAsync('pn/ba', { qos: 1 })
    const pubA = await connectTo(a.port('mqtt:tcp'), { protocolVersion: 5 })
    const pubB = await connectTo(b.port('mqtt:tcp'), { protocolVersion: 5 })
    let sent = 0
    const both = async (): Promise<void> => {
      for (const [name, node] of [['a', a], ['b', b]] as const) {
        if (node.child.exitCode !== null) throw new Error(`node ${name} exited: ${node.stderr().split('\n').find(l => /Error/.test(l)) ?? node.stderr().slice(-400)}`)
      }
      const n = String(sent++)
      await within(Promise.all([pubA.publishAsync('pn/ab', n, { qos: 1 }), pubB.publishAsync('pn/ba', n, { qos: 1 })]), 2000, `the PUBACKs of message ${n}`)
    }
    // the routes are there once a message crosses (publishing until one does)
    for (let i = 0; got.ab.length === 0 || got.ba.length === 0; i++) {
      if (i > 200) throw new Error('no route across the link')
      await both()
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    const first = sent
    // 6 400 peers, 16 at a time; libp2p refuses more than 100 connections per second from one
    // host (cluster/mesh.ts), so they come from 64 loopback addresses (Linux: all of 127/8)
    const peers = 6400
    let next = 0
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < peers) {
        const i = next++
        await nonceThenGarbage(`127.0.1.${1 + (i % 64)}`)
        if (i % 20 === 0) await both().catch((err) => { next = peers; throw err })
      }
    }))
    for (let i = 0; i < 100; i++) await both()
    expectNodeUnharmed(a)
    const want = Array.from({ length: sent - first }, (_, i) => String(first + i))
    await waitFor(() => want.every(n => got.ab.includes(n) && got.ba.includes(n)), 'every message across the link, both ways')
    expect(await running(a)).toEqual(['pna@127.0.0.1', 'pnb@127.0.0.1'])
    expect(await running(b)).toEqual(['pna@127.0.0.1', 'pnb@127.0.0.1'])
    expectNodeUnharmed(a)
    expectNodeUnharmed(b)
  }, 60_000)
})

/** An echo protocol: what a stream sends comes back. */
const ECHO = '/starling-test/echo/1.0.0'

async function peer (protector: 'pnet' | 'ours', cookie: string, listen: boolean): Promise<Libp2p> {
  const psk = pskFromCookie(cookie)
  const node = await createLibp2p({
    addresses: { listen: listen ? ['/ip4/127.0.0.1/tcp/0'] : [] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: protector === 'pnet' ? preSharedKey({ psk }) : privateNetwork({ psk })
  })
  if (listen) {
    await node.handle(ECHO, (stream: Stream) => {
      stream.addEventListener('message', (event) => { stream.send(event.data) })
      stream.addEventListener('remoteCloseWrite', () => { void stream.close() })
    })
  }
  return node
}

/** Sends `bytes` on a new echo stream from `from` to `to` in pieces of odd sizes, and resolves with what came back. */
async function echo (from: Libp2p, to: Libp2p, bytes: Buffer): Promise<Buffer> {
  const stream = await from.dialProtocol(to.getMultiaddrs()[0], ECHO, { signal: AbortSignal.timeout(5000) })
  const back: Buffer[] = []
  let length = 0
  const done = new Promise<void>(resolve => {
    stream.addEventListener('message', (event) => {
      const data = event.data instanceof Uint8Array ? event.data : event.data.subarray()
      back.push(Buffer.from(data))
      length += data.byteLength
      if (length >= bytes.length) resolve()
    })
  })
  for (let at = 0, n = 1; at < bytes.length; at += n, n = (n * 7 + 13) % 70_000) stream.send(bytes.subarray(at, at + n))
  await within(done, 10_000, 'the echo')
  await stream.close()
  return Buffer.concat(back)
}

describe('the private network on the wire', () => {
  test('its keystream is the xsalsa20 package\'s (as @libp2p/pnet uses it), however the bytes are cut', () => {
    const xsalsa20 = createRequire(import.meta.url)('xsalsa20') as (nonce: Uint8Array, key: Uint8Array) => { update: (input: Uint8Array) => Uint8Array }
    const key = randomBytes(32)
    const nonce = randomBytes(24)
    const ours = new XSalsa20Stream(key, nonce)
    const theirs = xsalsa20(nonce, key)
    for (const n of [0, 1, 63, 64, 65, 1, 4095, 4096, 4097, 127, 20_000, 3, 300_000, 64, 5]) {
      const piece = randomBytes(n)
      expect(Buffer.from(ours.update(piece)).equals(Buffer.from(theirs.update(piece)))).toBe(true)
    }
  })

  test('a keystream used up throws KeystreamExhaustedError (the connection is then closed), never past its last block', () => {
    const stream = new XSalsa20Stream(randomBytes(32), randomBytes(24), LAST_BLOCK - 1)
    expect(stream.update(new Uint8Array(100)).length).toBe(100)
    expect(stream.update(new Uint8Array(28)).length).toBe(28)
    expect(() => stream.update(new Uint8Array(1))).toThrow(KeystreamExhaustedError)
  })

  test('nodes with @libp2p/pnet and with this protector connect both ways, and not with another key', async () => {
    const nodes = await Promise.all([peer('pnet', 'compat', true), peer('ours', 'compat', true), peer('ours', 'other', false), peer('pnet', 'other', false)])
    const [theirs, ours, oursOtherKey, theirsOtherKey] = nodes
    try {
      const bytes = randomBytes(1_000_000)
      expect((await echo(ours, theirs, bytes)).equals(bytes)).toBe(true)
      expect((await echo(theirs, ours, bytes)).equals(bytes)).toBe(true)
      // another key: the handshake after the nonces reads garbage, and fails at once or waits
      // for bytes that never come (a garbage length); either way no connection
      await expect(oursOtherKey.dial(theirs.getMultiaddrs()[0], { signal: AbortSignal.timeout(1500) })).rejects.toThrow()
      await expect(theirsOtherKey.dial(ours.getMultiaddrs()[0], { signal: AbortSignal.timeout(1500) })).rejects.toThrow()
    } finally {
      await Promise.all(nodes.map(async n => { await n.stop() }))
    }
  })
})
