/**
 * The cluster port door of the fuzzer (cluster/mesh.ts: libp2p over TCP, a private network
 * keyed by `node.cookie`, noise, yamux, gossipsub, the link and bridge protocols). Two kinds
 * of peer knock:
 *
 * - **One that failed the cookie**: raw TCP bytes (random garbage; a private-network nonce cut
 *   short and half-closed; a whole nonce then garbage that decrypts to garbage; a plain
 *   multistream-select header as a libp2p node without the key would send) and a real libp2p
 *   node with another pre-shared key. The node must close each before anything is said.
 * - **One that passed the cookie**: libp2p nodes built with the right key. One writes garbage
 *   in place of multistream-select right after the private-network handshake, one answers
 *   `/noise` with a garbled or truncated noise handshake; one is a well-formed peer that opens
 *   the node's protocols (`/starling/link/1.0.0`, `/starling/bridge/1.0.0`, gossipsub,
 *   identify, and any other the node lists) and writes frames: length-prefixed MessagePack with
 *   wrong, huge or truncated lengths, valid-looking frames of every kind the link knows
 *   (`hello`, `members`, `q` RPC calls of the cluster's methods and of read-only node
 *   operations, `r`, `data`, `reg`, `routes` ...) with fields of the wrong type, forwarded
 *   message batches and bridge batches that are mutated, and gossip messages on the cluster's
 *   topic (heartbeats naming fuzz peers and the real members, with garbage digests).
 *
 * The bar (the caller checks the process): the node does not exit or log an uncaught error,
 * the witness (publisher on this node, subscriber on `peerMqttPort`, another member, when
 * given: every message crosses the link) loses nothing, and the other member stays linked
 * (`checkMembers`). What the node does with garbage is counted: streams it closed, streams it
 * tolerated (left open until the fuzzer closed them), connections it refused.
 *
 * Left alone on purpose: a peer that passed the cookie is a member (docs/cluster.md,
 * Security: it may force nodes out, kick clients, run any node operation), so the frames never
 * name the real members in `members`, `reg` or `hello` frames, nor the witness's client ids,
 * and RPC calls name only read-only node operations (or none that exists).
 */
import net from 'node:net'
import os from 'node:os'
import { createLibp2p, type Libp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { identify } from '@libp2p/identify'
import { gossipsub } from '@libp2p/gossipsub'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { multiaddr } from '@multiformats/multiaddr'
import { Packr } from 'msgpackr'
import type { Connection, ConnectionProtector, Stream } from '@libp2p/interface'
import '../../cluster/polyfills.js'
import { multiaddrOf, pskFromCookie } from '../../cluster/mesh.js'
import { privateNetwork } from '../../cluster/private-network.js'
import { encodeBatch, type ForwardedMessage } from '../../cluster/pub-batch.js'
import { BRIDGE_PROTOCOL } from '../../cluster/bridge-transport.js'
import {
  count, fail, nastyNumber, nastyString, newStats, randomValue, runInputs, sleep, startWitness,
  type DoorOptions, type DoorStats, type Random
} from './door-kit.js'

const LINK_PROTOCOL = '/starling/link/1.0.0'
/**
 * The loopback addresses the door dials from (Linux routes all of 127.0.0.0/8 to lo): libp2p
 * accepts `inboundConnectionThreshold` (cluster/mesh.ts: 100) connections per second from one
 * host and refuses the rest before their handshake, so from one address a faster door would
 * test the refusal instead of the handshake.
 */
const SOURCE_ADDRESSES = Array.from({ length: 253 }, (_, i) => `127.0.0.${i + 2}`)
const CONTROL_TOPIC = 'starling/cluster/1'
const packr = new Packr({ useRecords: false, moreTypes: false })

/** What the cluster door needs of a node. */
export interface ClusterDoorOptions extends DoorOptions {
  /** The node's cluster port (`cluster.listen`) on 127.0.0.1. */
  clusterPort: number
  /** `node.cookie` of the cluster. */
  cookie: string
  /** `node.name` of the fuzzed node (a bridge hello must name it). */
  nodeName: string
  /** Its MQTT/TCP port: the witness publishes there. */
  mqttPort: number
  /** Another member's MQTT/TCP port: the witness subscribes there (default this node's). */
  peerMqttPort?: number
  /** Names of the real members (gossip heartbeats spoof them; no other frame names them). */
  memberNames?: string[]
  /** Resolves true while the other member is still linked (checked at the end). */
  checkMembers?: () => Promise<boolean>
  /**
   * Only these kinds of input (default all, {@link CLUSTER_INPUT_KINDS}): e.g. the frames on
   * one connection alone, which open no new connection.
   */
  kinds?: readonly ClusterInputKind[]
}

/** The kinds of input of the cluster door, each as often as it is listed. */
export const CLUSTER_INPUT_KINDS = [
  // failed the cookie
  'tcp-garbage', 'tcp-short-nonce', 'tcp-nonce-then-garbage', 'tcp-plain-multistream', 'wrong-psk-node',
  // passed the cookie
  'garbled-multistream', 'garbled-noise', 'link-frames', 'link-frames', 'link-frames', 'link-frames',
  'bridge-frames', 'bridge-frames', 'other-protocol', 'gossip', 'gossip'
] as const
/** The kinds that open a connection of their own (the others use the well-formed peer's). */
const NEW_CONNECTION_KINDS: ReadonlySet<string> = new Set(['tcp-garbage', 'tcp-short-nonce', 'tcp-nonce-then-garbage', 'tcp-plain-multistream', 'wrong-psk-node', 'garbled-multistream', 'garbled-noise'])
/**
 * New connections in flight at once. libp2p refuses any inbound connection while 10 are
 * still in their handshake (`maxIncomingPendingConnections`, for all hosts together), so
 * more would test that refusal instead of the handshake; the inputs on the well-formed
 * peer's connection (streams, gossip) run at the door's whole concurrency.
 */
const NEW_CONNECTIONS_AT_ONCE = 8

/** One kind of input of the cluster door. */
export type ClusterInputKind = typeof CLUSTER_INPUT_KINDS[number]
type Kind = ClusterInputKind

/** Runs the cluster door; resolves with the counts once the witness has caught up. */
export async function runClusterDoor (opts: ClusterDoorOptions): Promise<DoorStats> {
  const stats = newStats('cluster')
  const addr = multiaddr(multiaddrOf('127.0.0.1', opts.clusterPort))
  const psk = pskFromCookie(opts.cookie)
  const garbage = { next: Buffer.alloc(0) }
  const source = sourceAddresses()
  const peers = await Promise.all([
    peerNode(psk, 'full'),
    peerNode(psk, 'garble-multistream', garbage, source),
    peerNode(psk, 'garble-noise', garbage, source),
    peerNode(pskFromCookie(opts.cookie + '-wrong'), 'full', undefined, source)
  ])
  const [right, garbleMss, garbleNoise, wrong] = peers
  const ctx: Context = { opts, addr, right, garbleMss, garbleNoise, wrong, garbage, source, stats, conn: null, protocols: [], members: opts.memberNames ?? [] }
  const kinds = CLUSTER_INPUT_KINDS.filter(k => opts.kinds === undefined || opts.kinds.includes(k))
  const witness = await startWitness({ publishPort: opts.mqttPort, subscribePort: opts.peerMqttPort }, stats, `cluster${opts.seed}`)
  try {
    await rightConnection(ctx)
    const concurrency = opts.concurrency ?? 8
    const slots = new Slots(Math.min(concurrency, NEW_CONNECTIONS_AT_ONCE))
    await runInputs(opts, stats, concurrency, async (r) => {
      const kind = r.pick(kinds)
      count(stats.byKind, kind)
      const opensConnection = NEW_CONNECTION_KINDS.has(kind)
      if (opensConnection) await slots.take()
      try {
        await one(r, kind, ctx)
      } catch (err: any) {
        // the fuzzer's own dial or stream failing is an answer (refused, closed), not a finding
        count(stats.answers, `${kind}: ${String(err?.code ?? err?.name ?? 'error')}`)
      } finally {
        if (opensConnection) slots.give()
      }
      return 1
    })
    await witness.finish(opts.alive ?? (() => true))
    if (opts.checkMembers !== undefined && !(await opts.checkMembers())) fail(stats, 'the other member left the cluster', 'checkMembers() is false at the end')
  } finally {
    witness.close()
    await Promise.all(peers.map(async p => { try { await p.stop() } catch { /* already stopped */ } }))
  }
  return stats
}

interface Context {
  opts: ClusterDoorOptions
  addr: ReturnType<typeof multiaddr>
  right: Libp2p<any>
  garbleMss: Libp2p<any>
  garbleNoise: Libp2p<any>
  wrong: Libp2p<any>
  garbage: { next: Buffer }
  /** The next source address of a new connection (the well-formed peer's stays on 127.0.0.1). */
  source: () => string
  stats: DoorStats
  conn: Connection | null
  /** The protocols the node offers (from identify). */
  protocols: string[]
  members: string[]
}

/**
 * A libp2p node as the cluster builds one (tcp, noise, yamux, the private network; identify
 * and gossipsub for `full`), or one whose handshake goes wrong on purpose after the private
 * network: garbage instead of multistream-select, or a garbled noise handshake.
 */
async function peerNode (psk: Uint8Array, how: 'full' | 'garble-multistream' | 'garble-noise', garbage?: { next: Buffer }, source?: () => string): Promise<Libp2p<any>> {
  // the node's own protector: @libp2p/pnet's cipher leaks per connection (cluster/private-network.ts)
  // and would end the fuzzer's process as it ended the node's
  const pnet = privateNetwork({ psk })
  const protector = how !== 'garble-multistream'
    ? pnet
    : (components: any): ConnectionProtector => {
        const inner = pnet(components)
        return {
          async protect (connection, options) {
            const stream = await inner.protect(connection, options)
            stream.send(garbage!.next)
            await sleep(20)
            stream.abort(new Error('fuzz: garbled multistream'))
            throw new Error('fuzz: garbled multistream sent')
          }
        }
      }
  const garbledNoise = {
    protocol: '/noise',
    async secureInbound (): Promise<never> { throw new Error('fuzz: no inbound') },
    async secureOutbound (connection: any): Promise<never> {
      connection.send(garbage!.next)
      await sleep(20)
      connection.abort(new Error('fuzz: garbled noise'))
      throw new Error('fuzz: garbled noise sent')
    }
  }
  return await createLibp2p({
    privateKey: await generateKeyPair('Ed25519'),
    addresses: { listen: [] },
    // @libp2p/tcp spreads `dialOpts` into each net.connect: the getter gives each dial its address
    transports: [tcp(source === undefined ? {} : { dialOpts: { get localAddress () { return source() } } as any })],
    connectionEncrypters: [how === 'garble-noise' ? () => garbledNoise as any : noise()],
    streamMuxers: [yamux()],
    connectionProtector: protector,
    connectionMonitor: { enabled: false },
    services: how === 'full' ? { identify: identify(), pubsub: gossipsub({ allowPublishToZeroTopicPeers: true, floodPublish: true, emitSelf: false }) } : {}
  } as any)
}

/** A counting semaphore: at most `free` holders at once. */
class Slots {
  private readonly waiting: Array<() => void> = []
  constructor (private free: number) {}
  async take (): Promise<void> {
    if (this.free > 0) { this.free--; return }
    await new Promise<void>(resolve => this.waiting.push(resolve))
  }

  give (): void {
    const next = this.waiting.shift()
    if (next !== undefined) next(); else this.free++
  }
}

/** Round robin over {@link SOURCE_ADDRESSES}, or 127.0.0.1 alone where the others cannot be bound (not Linux). */
function sourceAddresses (): () => string {
  let n = 0
  const usable = os.platform() === 'linux' ? SOURCE_ADDRESSES : ['127.0.0.1']
  return () => usable[n++ % usable.length]
}

/** The well-formed peer's connection to the node (dialled again if the node closed it). */
async function rightConnection (ctx: Context): Promise<Connection> {
  if (ctx.conn !== null && ctx.conn.status === 'open') return ctx.conn
  ctx.conn = await ctx.right.dial(ctx.addr, { signal: AbortSignal.timeout(5000) })
  count(ctx.stats.answers, 'well-formed peer connected')
  if (ctx.protocols.length === 0) {
    ctx.right.services.pubsub.subscribe(CONTROL_TOPIC)
    // identify runs right after the connection opens
    for (let i = 0; i < 50 && ctx.protocols.length === 0; i++) {
      await sleep(50)
      ctx.protocols = (await ctx.right.peerStore.get(ctx.conn.remotePeer).catch(() => null))?.protocols ?? []
    }
  }
  return ctx.conn
}

async function one (r: Random, kind: Kind, ctx: Context): Promise<void> {
  const { stats } = ctx
  switch (kind) {
    case 'tcp-garbage': return await rawTcp(ctx, r.bytes(1 + r.int(r.chance(0.1) ? 65536 : 512)), r.chance(0.5))
    case 'tcp-short-nonce': return await rawTcp(ctx, r.bytes(r.int(24)), true)
    case 'tcp-nonce-then-garbage': return await rawTcp(ctx, r.bytes(24 + 1 + r.int(300)), r.chance(0.5))
    case 'tcp-plain-multistream': return await rawTcp(ctx, Buffer.concat([lp('/multistream/1.0.0\n'), lp(r.pick(['/noise\n', '/tls/1.0.0\n', '/plaintext/2.0.0\n', nastyString(r).slice(0, 200) + '\n']))]), r.chance(0.5))
    case 'wrong-psk-node': {
      // a dial that would succeed does within a few ms on loopback; one that does not either is
      // closed (the node took the peer's first bytes, decrypted with its own key, for a
      // multistream-select header it cannot be) or hangs, both sides waiting for the rest of
      // a length read from garbage, until the node's 10 s upgrade timeout: 1 s of that tells
      // as much as 3 s (about 40 % hang, and it was most of the door's time)
      await ctx.wrong.dial(ctx.addr, { signal: AbortSignal.timeout(1000) }).then(
        async (c) => { fail(stats, 'a node with another cookie connected', String(c.remoteAddr)); await c.close() },
        (err: any) => { count(stats.answers, err?.name === 'TimeoutError' || err?.name === 'AbortError' ? 'another cookie: no connection within 1 s' : 'another cookie: refused') }
      )
      return
    }
    case 'garbled-multistream':
      ctx.garbage.next = garbledMultistream(r)
      await ctx.garbleMss.dial(ctx.addr, { signal: AbortSignal.timeout(3000) }).then(
        () => { fail(stats, 'garbled multistream got a connection', '') },
        () => { count(stats.answers, 'garbled multistream: closed') }
      )
      return
    case 'garbled-noise':
      ctx.garbage.next = garbledNoise(r)
      await ctx.garbleNoise.dial(ctx.addr, { signal: AbortSignal.timeout(3000) }).then(
        () => { fail(stats, 'garbled noise got a connection', '') },
        () => { count(stats.answers, 'garbled noise: closed') }
      )
      return
    case 'link-frames': return await streamFrames(ctx, LINK_PROTOCOL, linkFrames(r, ctx), r)
    case 'bridge-frames': return await streamFrames(ctx, BRIDGE_PROTOCOL, bridgeFrames(r, ctx), r)
    case 'other-protocol': {
      const others = ctx.protocols.filter(p => p !== LINK_PROTOCOL && p !== BRIDGE_PROTOCOL)
      const protocol = r.chance(0.15) ? '/fuzz/' + r.int(100) : r.pick(others.length > 0 ? others : ['/ipfs/id/1.0.0'])
      const chunks = Array.from({ length: 1 + r.int(4) }, () => r.chance(0.5) ? Buffer.concat([varint(r.chance(0.2) ? 2 ** 28 : r.int(300)), r.bytes(r.int(300))]) : r.bytes(1 + r.int(600)))
      return await streamFrames(ctx, protocol, chunks, r)
    }
    case 'gossip': {
      await rightConnection(ctx)
      const message = r.chance(0.3) ? r.bytes(r.int(400)) : packr.pack(heartbeat(r, ctx))
      await ctx.right.services.pubsub.publish(r.chance(0.9) ? CONTROL_TOPIC : 'fuzz/' + r.int(5), message).then(
        () => { count(stats.answers, 'gossip published') },
        (err: any) => { count(stats.answers, `gossip: ${String(err?.name)}`) }
      )
    }
  }
}

/** How long a raw connection is given to be closed by the node before the fuzzer closes it. */
const RAW_WAIT_MS = 150

/** Writes `bytes` on a fresh TCP connection (half-closing when `end`), and waits for the node to close it. */
async function rawTcp (ctx: Context, bytes: Buffer, end: boolean): Promise<void> {
  await new Promise<void>(resolve => {
    const socket = net.connect({ port: ctx.opts.clusterPort, host: '127.0.0.1', localAddress: ctx.source() })
    socket.on('error', () => {})
    let byNode = false
    socket.on('data', () => {})
    socket.once('end', () => { byNode = true })
    socket.once('connect', () => { if (end) socket.end(bytes); else socket.write(bytes) })
    // the node closes a connection whose handshake stalls after 10 s (libp2p's upgrade
    // timeout), at once when it is half-closed or its bytes cannot be a handshake: waited
    // for 1.5 s, every close of 390 came within 150 ms (388 within 50 ms)
    const timer = setTimeout(() => { socket.destroy() }, RAW_WAIT_MS)
    socket.once('close', () => {
      clearTimeout(timer)
      count(ctx.stats.answers, byNode ? 'raw tcp: closed by the node' : `raw tcp: still open after ${RAW_WAIT_MS} ms (closed by the fuzzer)`)
      resolve()
    })
  })
}

/**
 * Opens `protocol` on the well-formed connection, writes `chunks` (in random splits), and
 * counts what the node did: closed (or reset) the stream, or left it open until we closed it.
 */
async function streamFrames (ctx: Context, protocol: string, chunks: Buffer[], r: Random): Promise<void> {
  const conn = await rightConnection(ctx)
  let stream: Stream
  try {
    stream = await conn.newStream(protocol, { signal: AbortSignal.timeout(3000) })
  } catch (err: any) {
    count(ctx.stats.answers, `${protocol}: stream refused (${String(err?.name)})`)
    return
  }
  let closed = false
  const gone = new Promise<void>(resolve => stream.addEventListener('close', () => { closed = true; resolve() }, { once: true }))
  stream.addEventListener('message', () => {})
  const bytes = Buffer.concat(chunks)
  for (let at = 0; at < bytes.length && !closed;) {
    const n = r.chance(0.3) ? 1 + r.int(64) : bytes.length - at
    try { stream.send(bytes.subarray(at, at + n)) } catch { break }
    at += n
    if (r.chance(0.1)) await sleep(1)
  }
  if (!closed && r.chance(0.3)) await stream.close({ signal: AbortSignal.timeout(1000) }).catch(() => {})
  await Promise.race([gone, sleep(50 + r.int(100))])
  const what = protocol === LINK_PROTOCOL ? 'link' : protocol === BRIDGE_PROTOCOL ? 'bridge' : 'other protocol'
  count(ctx.stats.answers, closed ? `${what}: stream closed by the node` : `${what}: stream tolerated`)
  if (!closed) stream.abort(new Error('fuzz: done'))
}

/** A name for a fuzz peer: a few only, so that whatever the node remembers of them stays small. */
function fuzzName (r: Random): string {
  return `fz${r.int(6)}@127.0.0.${1 + r.int(3)}`
}

/** One link frame: `u32 length, u8 type, body`; `body` MessagePack when type 0. */
function frame (type: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5)
  head.writeUInt32BE(body.length, 0)
  head[4] = type
  return Buffer.concat([head, body])
}

/** Read-only node operations (node/ops: `rpc.register`), for `node.call` with garbage arguments. */
const READ_ONLY_OPS = [
  'alarms.history', 'alarms.present', 'auth_clientid.list', 'auth_username.lookup', 'banned.list', 'bridges.list', 'bridges.forwards', 'bridges.subscriptions',
  'brokers.info', 'configs.get', 'connections.list', 'listeners.list', 'metrics.get', 'nodes.info', 'plugins.list', 'plugins.config.get',
  'plugins.config.entries', 'routes.list', 'sessions.list', 'stats.get', 'subscriptions.list', 'resources.status', 'rules.metrics', 'no.such.op'
]
const SHARED_TABLES = ['rules', 'resources', 'schemas', 'banned', 'auth_clientid', 'auth_username', 'mqtt_app', 'fz_table', '', '../x']

/** A frame of the link's vocabulary, fields mostly of the right type, some mutated. */
function linkFrame (r: Random): Record<string, unknown> {
  const v = (good: () => unknown): unknown => r.chance(0.25) ? randomValue(r, 2) : good()
  switch (r.int(13)) {
    case 0: return { k: 'hello', hello: v(() => ({ name: fuzzName(r), addr: v(() => `127.0.0.1:${r.int(65536)}`), incarnation: v(() => Date.now()), acks: v(() => r.chance(0.5)) })) }
    case 1: return { k: 'members', full: v(() => r.chance(0.5)), join: v(() => r.chance(0.3)), reply: v(() => r.chance(0.3)), list: v(() => Array.from({ length: r.int(4) }, () => ({ name: v(() => fuzzName(r)), addr: v(() => '127.0.0.1:1'), stamp: v(() => nastyNumber(r)), departed: v(() => r.chance(0.3)) }))) }
    case 2: return { k: r.pick(['accepted', 'not-member']), stamp: v(() => nastyNumber(r)) }
    case 3: {
      // not retained.snapshot: its answer is every retained message the fuzz left (large payloads
      // included), and read in one piece it passed the fuzzer's own private-network cipher's
      // 64 MiB (xsalsa20's WebAssembly memory) and killed the fuzzer
      const m = r.pick(['node.call', 'node.call', 'data.snapshot', 'data.digests', 'session.takeover', 'no.such.method'])
      const a = m === 'node.call' ? v(() => ({ name: r.pick(READ_ONLY_OPS), args: randomValue(r, 2) })) : m === 'data.snapshot' ? v(() => ({ table: r.pick(SHARED_TABLES) })) : m === 'session.takeover' ? v(() => ({ clientId: `fz-${r.int(50)}`, clean: r.chance(0.5) })) : randomValue(r, 2)
      return { k: 'q', id: v(() => r.int(1e9)), m: v(() => m), a }
    }
    case 4: return { k: 'r', id: v(() => r.int(100)), ok: v(() => r.chance(0.5)), v: randomValue(r, 2), e: v(() => ({ code: nastyNumber(r), message: nastyString(r), status: nastyNumber(r) })) }
    case 5: return { k: 'data', c: v(() => ({ table: v(() => r.pick(SHARED_TABLES)), key: v(() => `fz-${r.int(20)}`), value: randomValue(r, 3), stamp: v(() => `${Date.now() + r.int(1e6)}:${r.int(10)}:${fuzzName(r)}`) })) }
    case 6: return { k: 'reg', id: v(() => `fz-${r.int(50)}`), at: v(() => nastyNumber(r)), on: v(() => r.chance(0.5)), del: v(() => r.chance(0.3)) }
    case 7: return { k: 'reg=', e: v(() => Array.from({ length: r.int(5) }, () => v(() => [`fz-${r.int(50)}`, nastyNumber(r), r.chance(0.5)]))) }
    case 8: return { k: 'routes', add: v(() => Array.from({ length: r.int(5) }, () => v(() => r.pick(['fz/#', '#', '+/x', '$share/g/fz', nastyString(r).slice(0, 100)])))), del: v(() => [r.pick(['fz/#', '#'])]) }
    case 9: return { k: 'routes=', keys: v(() => Array.from({ length: r.int(5) }, () => v(() => r.pick(['fz/#', '$queue/fz', nastyString(r).slice(0, 100)])))) }
    case 10: return { k: 'ping' }
    // acknowledgements of forwarded batches (cluster/mesh.ts): counts of every kind, on this link
    case 11: return { k: 'pa', n: v(() => nastyNumber(r)) }
    default: return { k: v(() => nastyString(r).slice(0, 50)), x: randomValue(r, 2) }
  }
}

/** A batch of forwarded messages (cluster/pub-batch.ts), well-formed with odd fields or then cut and flipped. */
function publishBatch (r: Random, bridge: boolean): Buffer {
  const messages: ForwardedMessage[] = Array.from({ length: 1 + r.int(4) }, () => {
    const m: ForwardedMessage = {
      topic: r.pick(['fz/t', 'fz/' + r.int(100), '#', '+', '', '$SYS/fz', 'a\u0000b', 'fz/' + 'x'.repeat(r.int(70_000)), nastyString(r)]),
      payload: r.bytes(r.int(r.chance(0.05) ? 300_000 : 200)),
      qos: r.pick([0, 1, 2, 3, -1, 255]),
      retain: false,
      brokerCounter: nastyNumber(r)
    }
    // retained now and then, small: what is retained stays on the node for the whole run
    if (m.payload.length < 1000) m.retain = r.chance(0.2)
    if (r.chance(0.3)) m.clientId = r.chance(0.5) ? `fz-${r.int(50)}` : nastyString(r).slice(0, 100)
    if (r.chance(0.3)) m.properties = randomValue(r, 2) as Record<string, unknown>
    if (r.chance(0.2)) m.groups = [r.pick(['$share/g/fz/#', 'x', ''])]
    return m
  })
  let body: Buffer
  try {
    body = encodeBatch(r.chance(0.8) ? `fz-broker-${r.int(5)}` : nastyString(r).slice(0, 300), messages)
  } catch {
    body = r.bytes(30)
  }
  if (r.chance(0.4)) body = body.subarray(0, r.int(body.length + 1))
  if (r.chance(0.3)) { body = Buffer.from(body); for (let i = r.int(4); i >= 0 && body.length > 0; i--) body[r.int(body.length)] ^= 1 << r.int(8) }
  if (!bridge) return body
  const id = Buffer.alloc(4)
  id.writeUInt32BE(r.int(2 ** 32))
  return Buffer.concat([id, body])
}

/** Frames for the link protocol: a hello (usually first), then frames, some of them corrupt at the framing level. */
function linkFrames (r: Random, _ctx: Context): Buffer[] {
  const out: Buffer[] = []
  if (r.chance(0.85)) out.push(frame(0, packr.pack({ k: 'hello', hello: { name: fuzzName(r), addr: `127.0.0.1:${1 + r.int(65535)}`, incarnation: Date.now() } })))
  for (let n = 1 + r.int(8); n > 0; n--) out.push(mutatedFrame(r, () => r.chance(0.2) ? frame(1, publishBatch(r, false)) : frame(0, packr.pack(linkFrame(r)))))
  return out
}

/** Frames for the bridge protocol: a bridge hello (to this node, or another), then batches and control frames. */
function bridgeFrames (r: Random, ctx: Context): Buffer[] {
  const out: Buffer[] = []
  if (r.chance(0.85)) out.push(frame(0, packr.pack({ k: 'bridge', from: r.chance(0.9) ? fuzzName(r) : randomValue(r, 1), to: r.chance(0.85) ? ctx.opts.nodeName : nastyString(r).slice(0, 100) })))
  for (let n = 1 + r.int(6); n > 0; n--) {
    out.push(mutatedFrame(r, () => r.chance(0.6)
      ? frame(r.chance(0.9) ? 2 : r.int(256), publishBatch(r, true))
      : frame(0, packr.pack({ k: r.pick(['ack', 'nack', 'ping', 'bridge', 'welcome', 'refused']), id: nastyNumber(r), e: randomValue(r, 1) }))))
  }
  return out
}

/** `make()`'s frame, or one broken at the framing level: wrong, huge or zero length, a cut body, undecodable MessagePack. */
function mutatedFrame (r: Random, make: () => Buffer): Buffer {
  const f = make()
  switch (r.int(10)) {
    case 0: { const g = Buffer.from(f); g.writeUInt32BE(Math.max(0, f.length - 5 + r.pick([-3, -1, 1, 7, 1000])), 0); return g }
    case 1: { const g = Buffer.from(f); g.writeUInt32BE(r.pick([2 ** 32 - 1, 256 * 1024 * 1024 + 1, 256 * 1024 * 1024, 2 ** 31]), 0); return g }
    case 2: return f.subarray(0, r.int(f.length))
    case 3: return frame(0, r.bytes(1 + r.int(100)))
    case 4: return frame(0, Buffer.alloc(0))
    case 5: return frame(0, Buffer.from([0xc1]))
    default: return f
  }
}

/** A gossip heartbeat (`{name, addr, incarnation, digests}`), with the real members' names now and then. */
function heartbeat (r: Random, ctx: Context): unknown {
  const v = (good: () => unknown): unknown => r.chance(0.3) ? randomValue(r, 2) : good()
  if (r.chance(0.15)) return randomValue(r, 3)
  return {
    name: v(() => r.chance(0.5) && ctx.members.length > 0 ? r.pick(ctx.members) : fuzzName(r)),
    addr: v(() => `127.0.0.1:${r.int(65536)}`),
    incarnation: v(() => nastyNumber(r)),
    digests: v(() => Object.fromEntries(Array.from({ length: r.int(4) }, () => [r.pick(SHARED_TABLES), r.chance(0.5) ? 'x' : randomValue(r, 1)])))
  }
}

/** Bytes in place of multistream-select: a header cut short, a huge length, a protocol never heard of, garbage. */
function garbledMultistream (r: Random): Buffer {
  switch (r.int(5)) {
    case 0: return lp('/multistream/1.0.0\n').subarray(0, 1 + r.int(18))
    case 1: return Buffer.concat([varint(2 ** 30), Buffer.from('/multistream/1.0.0\n')])
    case 2: return Buffer.concat([lp('/multistream/1.0.0\n'), lp(nastyString(r).slice(0, 500) + '\n')])
    case 3: return Buffer.concat([lp('/multistream/1.0.0\n'), lp('/noise\n'), r.bytes(r.int(200))])
    default: return r.bytes(1 + r.int(500))
  }
}

/** Bytes in place of noise's first handshake message (u16 length, then the message). */
function garbledNoise (r: Random): Buffer {
  const len = r.pick([0, 1, 31, 32, 33, 48, 80, 65535, r.int(65536)])
  const head = Buffer.alloc(2)
  head.writeUInt16BE(len)
  const body = r.bytes(r.chance(0.5) ? Math.min(len, 4096) : r.int(Math.min(len, 4096) + 1))
  return Buffer.concat([head, body, r.chance(0.3) ? r.bytes(r.int(100)) : Buffer.alloc(0)])
}

/** An unsigned varint (multiformats). */
function varint (n: number): Buffer {
  const out: number[] = []
  while (n >= 0x80) { out.push((n % 0x80) | 0x80); n = Math.floor(n / 0x80) }
  out.push(n)
  return Buffer.from(out)
}

/** A multistream-select message: varint length, then the text. */
function lp (text: string): Buffer {
  const b = Buffer.from(text)
  return Buffer.concat([varint(b.length), b])
}
