/**
 * The cluster mesh (DESIGN.md, cluster/): libp2p over TCP with noise and yamux, the
 * private-network key derived from `node.cookie` (a node with another cookie cannot finish
 * the connection handshake), gossipsub for control state (membership heartbeats with data
 * digests), and one direct stream per pair of nodes, the link, for everything that needs
 * order or volume: deltas, forwarded messages, RPC.
 *
 * A link carries length-prefixed MessagePack frames. Frames queued in one event-loop turn
 * leave in one write. The dialer sends `hello` first, the other side answers `hello`; the
 * link is up once each side has the other's hello, and each side has checked that it speaks
 * a cluster protocol the other accepts ({@link MESH_PROTOCOL}). Two nodes dialling each other at once
 * keep the stream dialled by the node with the lower name, so both use the same one.
 *
 * libp2p itself (cluster/mesh-host.ts) starts with the mesh's first use: a connection on the
 * cluster port, a dial from this node, or at start when the node has members to dial
 * ({@link Mesh.start}). Until then the port is held by a plain server (cluster/mesh-door.ts),
 * which libp2p takes over, and a standalone node runs without libp2p in its memory.
 */
import { EventEmitter } from 'node:events'
import { scryptSync } from 'node:crypto'
import { isIP } from 'node:net'
import { Packr } from 'msgpackr'
import type { Stream, Connection } from '@libp2p/interface'
import type { Logger } from '../node/logger.js'
import { VERSION } from '../node/version.js'
import { MeshDoor, knock } from './mesh-door.js'
import type { MeshHost, StreamHandler } from './mesh-host.js'

const LINK_PROTOCOL = '/starling/link/1.0.0'
const CONTROL_TOPIC = 'starling/cluster/1'
/** Frame header: body length (u32, big-endian), then the body's type (u8). */
const HEADER_BYTES = 5
/** A frame body in MessagePack ({@link Frame}). */
const FRAME_MSGPACK = 0
/** A frame body of forwarded messages (cluster/pub-batch.ts). */
export const FRAME_PUBLISH_BATCH = 1
/** A frame larger than this closes the link (a corrupt length prefix). */
const MAX_FRAME = 256 * 1024 * 1024
/**
 * Bytes handed to the link's stream per write, so that no write is the whole backlog of a
 * congested link (the private network enciphers each write in one piece).
 */
const WRITE_CHUNK = 64 * 1024
/**
 * A link with more than this many bytes waiting to be written is congested: the publishers
 * whose messages go there are paused until it is back under {@link LINK_LOW_WATER}.
 */
export const LINK_HIGH_WATER = 4 * 1024 * 1024
const LINK_LOW_WATER = 1024 * 1024
/** An idle link sends a ping this often ... */
export const PING_MS = 1000
/** ... and a link silent this long is closed: its peer is gone or the network is cut. */
export const SILENCE_MS = 5000

/**
 * The clock of the silence checks. After this process was itself stalled (a GC, a starved
 * CPU), its check timer runs before the pending reads of the same loop turn: every peer then
 * looked silent for as long as the stall, and a 5 s stall closed healthy links (found by
 * bench/fuzz/cluster-door.ts on a loaded machine, where each false close lost messages).
 * A check that comes late judges no silence; the next one, a second later, does.
 */
export class SilenceClock {
  private last = Date.now()

  /** True when this check comes on time, so silence can be judged. */
  onTime (now: number): boolean {
    const late = now - this.last > 2 * PING_MS
    this.last = now
    return !late
  }
}

/**
 * The cluster protocol this node speaks: what its links, frames and control messages mean. It
 * goes in the hello (`proto`); a hello without it comes from protocol 1, the protocol of
 * release 0.1.0 (whose hello had no version). A change that an older node would misread raises
 * it; a change an older node can ignore (a new optional field, a frame kind it drops, as
 * `acks` was) does not.
 */
export const MESH_PROTOCOL = 1
/**
 * The oldest protocol this node still links with (its hello's `minPeer`). It stays one release
 * behind {@link MESH_PROTOCOL}, so that a cluster whose nodes are one release apart keeps
 * working during a rolling upgrade (docs/operations.md, "Upgrades").
 */
export const MIN_PEER_PROTOCOL = 1

/** A frame on a link: `k` names its kind. */
export interface Frame { k: string, [field: string]: unknown }

/** What a node says about itself when a link opens. */
export interface Hello {
  /** `node.name`. */
  name: string
  /** host:port other nodes dial to reach this node's mesh. */
  addr: string
  /** When this node process started: a new value means the node restarted. */
  incarnation: number
  /**
   * The node acknowledges batches of forwarded messages (`{k: 'pa', n}`, see {@link Link}),
   * so its peers keep each batch until then. Absent from nodes before it: nothing is kept.
   */
  acks?: boolean
  /** The cluster protocol the node speaks ({@link MESH_PROTOCOL}); absent: 1. */
  proto?: number
  /** The oldest protocol the node links with ({@link MIN_PEER_PROTOCOL}); absent: 1. */
  minPeer?: number
  /** The node's Starling version (`v0.1.0`), for the log and the operator; absent before 0.1.0's successor. */
  version?: string
}

/**
 * Why this node cannot link with the node that sent `hello`, or undefined when it can: each
 * must speak a protocol the other accepts.
 */
export function protocolMismatch (hello: Hello, ours = { proto: MESH_PROTOCOL, minPeer: MIN_PEER_PROTOCOL }): string | undefined {
  const proto = typeof hello.proto === 'number' ? hello.proto : 1
  const minPeer = typeof hello.minPeer === 'number' ? hello.minPeer : 1
  const who = `${hello.name}${typeof hello.version === 'string' ? ` (Starling ${hello.version})` : ''}`
  if (proto < ours.minPeer) return `${who} speaks cluster protocol ${proto}, older than ${ours.minPeer}, the oldest this node (Starling ${VERSION}) links with: upgrade it (one release at a time)`
  if (ours.proto < minPeer) return `${who} speaks cluster protocol ${proto} and links with ${minPeer} or newer, not this node's ${ours.proto} (Starling ${VERSION}): upgrade this node (one release at a time)`
  return undefined
}

/**
 * A hello as a node sends it: a non-empty name, an address and an incarnation. A hello whose
 * name was empty or not a string made a link to that "peer", and a frame on it wrote the
 * name into the member book (an empty key) and killed the node (found by
 * bench/fuzz/cluster-door.ts).
 */
function isHello (value: unknown): value is Hello {
  const hello = value as Partial<Hello> | null
  return typeof hello?.name === 'string' && hello.name !== '' && typeof hello.addr === 'string' && typeof hello.incarnation === 'number'
}

/** The mesh's events. */
export interface MeshEvents {
  /** A link to `hello.name` is up. */
  up: [hello: Hello]
  /** The link to `name` closed. */
  down: [name: string]
  /** A frame arrived on the link from `from`. */
  frame: [from: string, frame: Frame]
  /** A frame with a pre-encoded body (`type` > 0) arrived on the link from `from`. */
  raw: [from: string, type: number, body: Buffer]
  /** A gossipsub control message arrived (from any node, relayed or not). */
  control: [message: any]
  /** The link to `name` is no longer congested (its backlog fell under the low-water mark, or it closed). */
  drain: [name: string]
}

/** Why a node with `cluster.listen = off` cannot dial or be dialled. */
export const LISTEN_OFF = 'cluster.listen is off on this node: it does not cluster; set cluster.listen to an address (default 0.0.0.0:4370) and restart'

export interface MeshInit {
  name: string
  cookie: string
  /** Address to listen on; null (`cluster.listen = off`): no mesh port, and the mesh never starts. */
  listen: { host: string, port: number } | null
  /** File the node's libp2p key is kept in (identity survives restarts). */
  keyFile: string
  logger: Logger
}

const packr = new Packr({ useRecords: false, moreTypes: false })

/** The 32-byte pre-shared key of the private network, from the cookie. */
export function pskFromCookie (cookie: string): Uint8Array {
  const key = scryptSync(cookie, 'starling cluster cookie', 32).toString('hex')
  return new TextEncoder().encode(`/key/swarm/psk/1.0.0/\n/base16/\n${key}`)
}

/** A libp2p multiaddr for `host:port` (IPv4, IPv6 or a DNS name). */
export function multiaddrOf (host: string, port: number): string {
  const kind = isIP(host) === 4 ? 'ip4' : isIP(host) === 6 ? 'ip6' : 'dns4'
  return `/${kind}/${host}/tcp/${port}`
}

/**
 * One link: a stream to a peer, its incoming frame parser and outgoing batch. Also the
 * framing of the RPC bridges' streams (cluster/bridge-transport.ts), which are no member
 * links: they never enter the mesh's link table.
 */
export class Link {
  hello: Hello | null = null
  /** Frames not yet handed to the stream: `pending[head..]`, `pendingBytes` in all. */
  private pending: Buffer[] = []
  private head = 0
  private pendingBytes = 0
  private scheduled = false
  /** Over {@link LINK_HIGH_WATER} and not yet back under {@link LINK_LOW_WATER}. */
  congested = false
  /** Called when {@link congested} clears (set by the mesh). */
  onDrained: () => void = () => {}
  private readBuffer: Buffer = Buffer.alloc(0)
  closed = false
  /** When the last bytes arrived / left. */
  lastIn = Date.now()
  lastOut = Date.now()

  /** Frames with a body of another type than MessagePack (set by the mesh). */
  onRaw: (type: number, body: Buffer) => void = () => {}
  /** The peer acknowledges batches of forwarded messages (its hello says so; set by the mesh). */
  peerAcks = false
  /** Batches of forwarded messages received on this link, acknowledged to the peer once a turn. */
  private batchesIn = 0
  private ackScheduled = false
  /** Batches of forwarded messages sent on this link. */
  private batchesOut = 0
  /** Those the peer has not acknowledged: `unacked[unackedHead..]`, oldest first, `unackedBytes` in all. */
  private unacked: HeldBatch[] = []
  private unackedHead = 0
  private unackedBytes = 0
  /**
   * Told about unacknowledged batches given up on: a peer that never acknowledges keeps at
   * most {@link HELD_MAX_BYTES} here (set by the mesh, which counts them as dropped).
   */
  onUnackedDropped: (batches: HeldBatch[]) => void = () => {}

  constructor (readonly stream: Stream, readonly connection: Connection, readonly dialer: string, private readonly onFrame: (frame: Frame) => void, private readonly onClose: () => void, private readonly log: Logger) {
    stream.addEventListener('message', (event) => {
      this.lastIn = Date.now()
      const data = event.data instanceof Uint8Array ? event.data : event.data.subarray()
      // a view, not a copy: frames are cut out of it
      this.receive(Buffer.from(data.buffer, data.byteOffset, data.byteLength))
    })
    stream.addEventListener('close', () => {
      this.closed = true
      this.pending = []
      this.head = 0
      this.pendingBytes = 0
      // publishers waiting for this link are released (their messages for it are lost, and counted)
      if (this.congested) { this.congested = false; this.onDrained() }
      this.onClose()
    })
  }

  /** Bytes waiting to be written: queued here, and in the stream's own buffer. */
  get backlog (): number { return this.pendingBytes + this.stream.writeBufferLength }

  /** Queues a frame; all frames of this turn leave in one write. */
  send (frame: Frame): void {
    this.sendRaw(FRAME_MSGPACK, packr.pack(frame))
  }

  /**
   * Queues a frame whose body is already encoded (`type` says how). A batch of forwarded
   * messages holding `messages` that must not be lost (QoS 1/2 to subscribers) is kept until
   * the peer acknowledges it, when the peer acknowledges batches.
   */
  sendRaw (type: number, body: Buffer, messages = 0): void {
    if (this.closed) return
    if (type === FRAME_PUBLISH_BATCH) {
      const i = this.batchesOut++
      if (this.peerAcks && messages > 0) {
        this.unacked.push({ i, type, body, messages })
        this.unackedBytes += body.length
        if (this.unackedBytes > HELD_MAX_BYTES) this.trimUnacked()
      }
    }
    const head = Buffer.allocUnsafe(HEADER_BYTES)
    head.writeUInt32BE(body.length, 0)
    head[4] = type
    this.pending.push(head, body)
    this.pendingBytes += HEADER_BYTES + body.length
    if (!this.congested && this.pendingBytes >= LINK_HIGH_WATER) this.congested = true
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(() => { void this.flush() })
    }
  }

  /**
   * Writes the queued frames in pieces of at most {@link WRITE_CHUNK} bytes (a larger frame
   * alone), waiting for the stream to drain between them. One flush runs at a time: it is
   * scheduled by the first frame queued while none runs.
   */
  private async flush (): Promise<void> {
    while (this.head < this.pending.length && !this.closed) {
      if (this.stream.writableNeedsDrain) {
        await this.drained()
        continue
      }
      const pending = this.pending
      let end = this.head
      let bytes = 0
      while (end < pending.length && (end === this.head || bytes + pending[end].length <= WRITE_CHUNK)) bytes += pending[end++].length
      const chunk = end - this.head === 1 ? pending[this.head] : Buffer.concat(pending.slice(this.head, end), bytes)
      this.head = end
      if (this.head === pending.length) { this.pending = []; this.head = 0 } else if (this.head > 4096 && this.head * 2 > pending.length) { this.pending = pending.slice(this.head); this.head = 0 }
      this.pendingBytes -= bytes
      this.lastOut = Date.now()
      try {
        this.stream.send(chunk)
      } catch (err) {
        this.log.debug({ err }, 'link write failed')
        break
      }
      if (this.congested && this.pendingBytes <= LINK_LOW_WATER) { this.congested = false; this.onDrained() }
    }
    this.scheduled = false
  }

  /**
   * Resolves at the stream's next 'drain' (or close). Not `stream.onDrain()`: its promise is
   * made once per stream and stays resolved after the first drain, so a flush that awaited
   * it again spun in microtasks and starved the node (API and links silent under load).
   */
  private async drained (): Promise<void> {
    await new Promise<void>(resolve => {
      const done = (): void => {
        this.stream.removeEventListener('drain', done)
        this.stream.removeEventListener('close', done)
        resolve()
      }
      this.stream.addEventListener('drain', done)
      this.stream.addEventListener('close', done)
    })
  }

  private receive (data: Buffer): void {
    let buffer = this.readBuffer.length === 0 ? data : Buffer.concat([this.readBuffer, data])
    while (buffer.length >= HEADER_BYTES) {
      const size = buffer.readUInt32BE(0)
      if (size > MAX_FRAME) { this.abort(new Error(`frame of ${size} bytes`)); return }
      if (buffer.length < HEADER_BYTES + size) break
      const type = buffer[4]
      const body = buffer.subarray(HEADER_BYTES, HEADER_BYTES + size)
      buffer = buffer.subarray(HEADER_BYTES + size)
      if (type !== FRAME_MSGPACK) {
        if (type === FRAME_PUBLISH_BATCH) this.countBatchIn()
        try { this.onRaw(type, body) } catch (err) { this.log.warn({ err, type }, 'cluster frame handler failed') }
        continue
      }
      let frame: Frame
      try {
        // a copy: binary values in the frame are views of what they were decoded from, and
        // they may be kept (retained messages, queued packets)
        frame = packr.unpack(Buffer.from(body))
      } catch (err: any) {
        this.abort(new Error(`undecodable frame: ${err.message}`))
        return
      }
      // MessagePack's nil, a number or a list is no frame: reading its kind threw outside the
      // handler's guard and killed the node (found by bench/fuzz/cluster-door.ts)
      if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) { this.abort(new Error('a frame that is not a map')); return }
      if (frame.k === 'ping') continue
      // `pa`: the peer handled our batches of forwarded messages (not `ack`: the bridges' frame)
      if (frame.k === 'pa') { this.acked(frame.n); continue }
      try { this.onFrame(frame) } catch (err) { this.log.warn({ err, kind: frame?.k }, 'cluster frame handler failed') }
    }
    this.readBuffer = buffer.length === 0 ? Buffer.alloc(0) : Buffer.from(buffer)
  }

  abort (err: Error): void {
    if (this.closed) return
    this.log.warn({ err }, 'closing cluster link')
    this.stream.abort(err)
  }

  /** One more batch of forwarded messages handled: acknowledged (cumulatively) at the end of the turn. */
  private countBatchIn (): void {
    this.batchesIn++
    if (this.ackScheduled) return
    this.ackScheduled = true
    setImmediate(() => {
      this.ackScheduled = false
      this.send({ k: 'pa', n: this.batchesIn })
    })
  }

  /** The oldest unacknowledged batches go until what is kept fits {@link HELD_MAX_BYTES}. */
  private trimUnacked (): void {
    const from = this.unackedHead
    while (this.unackedBytes > HELD_MAX_BYTES && this.unackedHead < this.unacked.length - 1) this.unackedBytes -= this.unacked[this.unackedHead++].body.length
    this.onUnackedDropped(this.unacked.slice(from, this.unackedHead))
    this.compactUnacked()
  }

  /** The peer handled the first `n` batches sent on this link: they are no longer kept. */
  private acked (n: unknown): void {
    if (typeof n !== 'number') return
    const list = this.unacked
    while (this.unackedHead < list.length && list[this.unackedHead].i < n) this.unackedBytes -= list[this.unackedHead++].body.length
    this.compactUnacked()
  }

  private compactUnacked (): void {
    const list = this.unacked
    if (this.unackedHead === list.length) { this.unacked = []; this.unackedHead = 0 } else if (this.unackedHead > 1024 && this.unackedHead * 2 > list.length) { this.unacked = list.slice(this.unackedHead); this.unackedHead = 0 }
  }

  /** The batches sent and never acknowledged (the link closed): handed over once. */
  takeUnacked (): HeldBatch[] {
    const out = this.unacked.slice(this.unackedHead)
    this.unacked = []
    this.unackedHead = 0
    this.unackedBytes = 0
    return out
  }
}

/** A batch of forwarded messages kept until a peer acknowledges it. */
export interface HeldBatch {
  /** Its number on the link it was sent on. */
  i: number
  type: number
  body: Buffer
  /** The messages in it that must not be lost (QoS 1/2 to subscribers). */
  messages: number
}

/**
 * Bytes of batches kept per peer while its link is down (beyond it the oldest go, counted by
 * the owner of {@link Mesh.onHeldDropped}).
 */
export const HELD_MAX_BYTES = 64 * 1024 * 1024

/**
 * The node's end of the mesh. Emits `up`/`down` per peer, `frame` for link frames and
 * `control` for gossipsub messages.
 */
export class Mesh extends EventEmitter<MeshEvents> {
  /** libp2p, once it runs ({@link wake}). */
  private host: MeshHost | null = null
  private waking: Promise<MeshHost> | null = null
  private readonly door = new MeshDoor()
  /** Protocols accepted besides the links ({@link handle}), registered when libp2p starts. */
  private readonly handlers: Array<{ protocol: string, handler: StreamHandler, maxInboundStreams: number }> = []
  private readonly links = new Map<string, Link>()
  private readonly dialing = new Map<string, Promise<Hello>>()
  readonly incarnation = Date.now()
  private stopped = false
  private keepalive: NodeJS.Timeout | null = null
  private readonly silence = new SilenceClock()
  private readonly log: Logger
  /** The host:port this node announces (its name's host, the bound port). */
  addr = ''
  /**
   * Batches of forwarded messages for a peer whose link is down: unacknowledged when it
   * closed, or held while it was down ({@link hold}). Sent first on its next link.
   */
  private readonly held = new Map<string, { batches: HeldBatch[], bytes: number }>()
  /** Told about held batches given up on (over {@link HELD_MAX_BYTES}, a peer not kept for, or {@link dropHeld}). */
  onHeldDropped: (name: string, batches: HeldBatch[]) => void = () => {}
  /** Whether what a closed link to `name` still owed is held for its next link (a member: set by the cluster). */
  keepsHeldFor: (name: string) => boolean = () => false

  constructor (private readonly init: MeshInit) {
    super()
    this.log = init.logger.child({ component: 'cluster:mesh' })
  }

  get name (): string { return this.init.name }

  /**
   * Binds the cluster port. libp2p starts now when `wake` (the node has members to dial),
   * else at the first connection on the port or the first {@link dial}.
   */
  async start (options: { wake?: boolean } = {}): Promise<void> {
    if (this.init.listen === null) {
      this.log.info('cluster.listen is off: no cluster port; this node does not cluster')
      return
    }
    await this.door.listen(this.init.listen.host, this.init.listen.port)
    this.addr = `${this.init.name.split('@')[1]}:${this.door.port}`
    this.log.info({ addr: this.addr }, 'cluster mesh listening')
    this.door.on('knock', () => { this.wake().catch(() => {}) })
    this.keepalive = setInterval(() => { this.checkLinks() }, PING_MS)
    this.keepalive.unref()
    if (options.wake === true) await this.wake()
  }

  /** True once libp2p runs (a node nobody joined, that joined nobody, runs without it). */
  get awake (): boolean { return this.host !== null }

  /**
   * Starts libp2p (once; later calls wait for the same start): the door's connections, the
   * link protocol, the protocols given to {@link handle}, the control topic. A start that
   * failed is logged, the connections waiting are dropped, and the next use tries again.
   */
  async wake (): Promise<MeshHost> {
    if (this.init.listen === null) throw new Error(LISTEN_OFF)
    if (this.waking === null) {
      this.waking = this.startHost()
      this.waking.catch((err: Error) => {
        this.waking = null
        this.door.release()
        if (!this.stopped) this.log.error({ err }, 'cannot start the cluster mesh')
      })
    }
    return await this.waking
  }

  private async startHost (): Promise<MeshHost> {
    const started = Date.now()
    const { startMeshHost } = await import('./mesh-host.js')
    if (this.stopped) throw new Error('the mesh is stopping')
    const host = await startMeshHost({
      door: this.door,
      listen: multiaddrOf(this.init.listen!.host, this.door.port),
      psk: pskFromCookie(this.init.cookie),
      keyFile: this.init.keyFile
    })
    try {
      await host.handle(LINK_PROTOCOL, (stream, connection) => { this.accept(stream, connection) }, 8, 8)
      for (const { protocol, handler, maxInboundStreams } of this.handlers) await host.handle(protocol, handler, maxInboundStreams)
      host.subscribe(CONTROL_TOPIC, (data) => {
        try {
          this.emit('control', packr.unpack(data))
        } catch (err) {
          this.log.debug({ err }, 'undecodable control message')
        }
      })
    } catch (err) {
      await host.stop()
      throw err
    }
    if (this.stopped) { await host.stop(); throw new Error('the mesh is stopping') }
    this.host = host
    this.log.info({ addr: this.addr, peerId: host.peerId, ms: Date.now() - started }, 'cluster mesh started')
    return host
  }

  /**
   * Pings idle links and closes silent ones. TCP alone does not notice a cut cable (no
   * reset arrives), and libp2p's own ping must not cut busy links, so the links keep
   * themselves alive: every peer sends something at least every second.
   */
  private checkLinks (): void {
    const now = Date.now()
    const judge = this.silence.onTime(now)
    for (const [name, link] of this.links) {
      if (link.closed) continue
      if (judge && now - link.lastIn > SILENCE_MS) {
        this.log.warn({ peer: name }, `cluster link to ${name} silent for ${SILENCE_MS / 1000} s: closing it`)
        // a cut network may never deliver the close: drop the whole connection (a new dial
        // must not reuse it) and count the peer as gone now
        link.abort(new Error('silent'))
        link.closed = true
        link.connection.abort(new Error(`peer ${name} silent`))
        this.closed(link)
        continue
      }
      if (now - link.lastOut >= PING_MS) link.send({ k: 'ping' })
    }
  }

  /**
   * Accepts streams of `protocol` on the mesh's connections besides the member links (the
   * RPC bridges' `/starling/bridge/1.0.0`, cluster/bridge-transport.ts). Such a stream is
   * none of the mesh's business: no hello, no link, no `up`. Call after {@link start}; the
   * private network already ensured the dialler has this node's cookie. Before libp2p runs,
   * the protocol is kept and registered when it starts.
   */
  async handle (protocol: string, handler: StreamHandler, maxInboundStreams = 64): Promise<void> {
    this.handlers.push({ protocol, handler, maxInboundStreams })
    if (this.host !== null) await this.host.handle(protocol, handler, maxInboundStreams)
  }

  /** The peers gossipsub exchanges control messages with (none before libp2p starts). */
  gossipPeers (): string[] { return this.host?.gossipPeers() ?? [] }

  /** The port the mesh listens on; 0 when `cluster.listen` is off. */
  get port (): number { return this.init.listen === null ? 0 : this.door.port }

  /** Where the mesh listens (`cluster.listen`'s host, the bound port), for the start banner. */
  get listenOn (): string {
    if (this.init.listen === null) return 'off'
    const host = this.init.listen.host
    return `${host.includes(':') ? `[${host}]` : host}:${this.port}`
  }

  /** The hello this node sends. */
  hello (): Hello {
    return { name: this.name, addr: this.addr, incarnation: this.incarnation, acks: true, proto: MESH_PROTOCOL, minPeer: MIN_PEER_PROTOCOL, version: VERSION }
  }

  /** Names of the peers with a link up. */
  peers (): string[] { return [...this.links.entries()].filter(([, l]) => l.hello !== null && !l.closed).map(([n]) => n) }

  /** The hello of a connected peer. */
  peer (name: string): Hello | undefined { return this.links.get(name)?.hello ?? undefined }

  isUp (name: string): boolean {
    const link = this.links.get(name)
    return link !== undefined && link.hello !== null && !link.closed
  }

  /**
   * Opens a link to the node at `host:port`; resolves with its hello. Rejects when the
   * node cannot be reached, has another cookie, or is not named `expected` (when given).
   */
  async dial (host: string, port: number, expected?: string, timeoutMs = 5000): Promise<Hello> {
    if (expected !== undefined && this.isUp(expected)) return this.peer(expected)!
    const key = `${host}:${port}`
    let dialing = this.dialing.get(key)
    if (dialing === undefined) {
      dialing = this.openLink(host, port, timeoutMs).finally(() => this.dialing.delete(key))
      this.dialing.set(key, dialing)
    }
    const hello = await dialing
    if (expected !== undefined && hello.name !== expected) {
      throw new Error(`the node at ${host}:${port} is ${hello.name}, not ${expected}`)
    }
    return hello
  }

  private async openLink (host: string, port: number, timeoutMs: number): Promise<Hello> {
    const signal = AbortSignal.timeout(timeoutMs)
    let stream: Stream
    let connection: Connection
    // a standalone node there loads libp2p while this one does
    if (this.host === null) knock(host, port)
    try {
      const libp2p = await this.wake()
      ;({ stream, connection } = await libp2p.open(multiaddrOf(host, port), LINK_PROTOCOL, signal))
    } catch (err: any) {
      throw new Error(`cannot reach a node at ${host}:${port} (${err.message}); check the address, that the node runs, and that both nodes have the same node.cookie`)
    }
    return await new Promise<Hello>((resolve, reject) => {
      const timer = setTimeout(() => { link.abort(new Error('no hello')); reject(new Error(`the node at ${host}:${port} did not answer the cluster handshake in ${timeoutMs} ms`)) }, timeoutMs)
      const link: Link = new Link(stream, connection, this.name, (frame) => {
        if (link.hello === null) {
          clearTimeout(timer)
          if (frame.k !== 'hello' || !isHello(frame.hello)) { link.abort(new Error('expected hello')); reject(new Error(`the node at ${host}:${port} spoke out of turn`)); return }
          const hello = frame.hello
          if (hello.name === this.name) { link.abort(new Error('self')); reject(new Error(`${host}:${port} is this node`)); return }
          const mismatch = protocolMismatch(hello)
          if (mismatch !== undefined) { this.log.warn({ peer: hello.name, addr: `${host}:${port}` }, `cluster link refused: ${mismatch}`); link.abort(new Error('protocol')); reject(new Error(`cannot link with the node at ${host}:${port}: ${mismatch}`)); return }
          this.adopt(link, hello)
          resolve(hello)
          return
        }
        this.emit('frame', link.hello.name, frame)
      }, () => { clearTimeout(timer); this.closed(link); reject(new Error(`the node at ${host}:${port} closed the cluster link`)) }, this.log)
      link.send({ k: 'hello', hello: this.hello() })
    })
  }

  private accept (stream: Stream, connection: Connection): void {
    let dialer = ''
    const link: Link = new Link(stream, connection, '', (frame) => {
      if (link.hello === null) {
        if (frame.k !== 'hello' || !isHello(frame.hello)) { link.abort(new Error('expected hello')); return }
        const hello = frame.hello
        dialer = hello.name
        ;(link as { dialer: string }).dialer = dialer
        // the dialer gets our hello either way: a newer one says why it cannot link, in its own log
        link.send({ k: 'hello', hello: this.hello() })
        const mismatch = protocolMismatch(hello)
        if (mismatch !== undefined) {
          this.log.warn({ peer: hello.name }, `cluster link refused: ${mismatch}`)
          setTimeout(() => link.abort(new Error('protocol')), 1000)
          return
        }
        this.adopt(link, hello)
        return
      }
      this.emit('frame', link.hello.name, frame)
    }, () => { this.closed(link) }, this.log)
  }

  /** Makes `link` the link to `hello.name`, or drops it when the existing one wins. */
  private adopt (link: Link, hello: Hello): void {
    link.onRaw = (type, body) => { this.emit('raw', hello.name, type, body) }
    link.onDrained = () => { this.emit('drain', hello.name) }
    link.peerAcks = hello.acks === true
    link.onUnackedDropped = (batches) => { this.onHeldDropped(hello.name, batches) }
    const existing = this.links.get(hello.name)
    if (existing !== undefined && !existing.closed && existing.hello !== null) {
      const sameIncarnation = existing.hello.incarnation === hello.incarnation
      // two links to one live peer: keep the one dialled by the lower name
      const keepNew = !sameIncarnation || link.dialer < existing.dialer
      link.hello = hello
      if (!keepNew) { setTimeout(() => link.abort(new Error('duplicate link')), 1000); return }
      this.links.set(hello.name, link)
      setTimeout(() => existing.abort(new Error('duplicate link')), 1000)
      if (!sameIncarnation) { this.emit('down', hello.name); this.emit('up', hello) }
      return
    }
    link.hello = hello
    this.links.set(hello.name, link)
    this.log.info({ peer: hello.name, addr: hello.addr, version: hello.version, proto: hello.proto ?? 1 }, 'cluster link up')
    this.resendHeld(hello.name, link)
    this.emit('up', hello)
  }

  /** Sends the batches held for `name` on its new link, before anything else. */
  private resendHeld (name: string, link: Link): void {
    const held = this.held.get(name)
    if (held === undefined) return
    this.held.delete(name)
    for (const b of held.batches) link.sendRaw(b.type, b.body, b.messages)
    this.log.info({ peer: name, batches: held.batches.length, messages: held.batches.reduce((n, b) => n + b.messages, 0) }, 'cluster link up: sent again what the peer had not acknowledged')
  }

  /**
   * Keeps a batch of forwarded messages for `name`, whose link is down, to be sent first on
   * its next link (the owner decides how long: {@link dropHeld}).
   */
  hold (name: string, type: number, body: Buffer, messages: number): void {
    this.keep(name, [{ i: 0, type, body, messages }])
  }

  /** Gives up the batches held for `name` (it left, or stayed away too long); returns them. */
  dropHeld (name: string): HeldBatch[] {
    const held = this.held.get(name)
    this.held.delete(name)
    return held?.batches ?? []
  }

  private keep (name: string, batches: HeldBatch[]): void {
    if (batches.length === 0) return
    let held = this.held.get(name)
    if (held === undefined) this.held.set(name, held = { batches: [], bytes: 0 })
    for (const b of batches) { held.batches.push(b); held.bytes += b.body.length }
    let over = 0
    while (held.bytes > HELD_MAX_BYTES && over < held.batches.length - 1) held.bytes -= held.batches[over++].body.length
    if (over > 0) this.onHeldDropped(name, held.batches.splice(0, over))
  }

  /** True while the link to `name` is congested (see {@link LINK_HIGH_WATER}). */
  isCongested (name: string): boolean {
    return this.links.get(name)?.congested === true
  }

  /** Bytes waiting to be written on the link to `name` (0 without a link). */
  backlog (name: string): number {
    return this.links.get(name)?.backlog ?? 0
  }

  private closed (link: Link): void {
    const name = link.hello?.name
    if (name === undefined) return
    const unacked = link.takeUnacked()
    if (this.links.get(name) !== link) {
      // a duplicate link replaced by another: what it still owed goes on the one kept
      const current = this.links.get(name)
      if (current !== undefined && !current.closed) for (const b of unacked) current.sendRaw(b.type, b.body, b.messages)
      else if (this.keepsHeldFor(name)) this.keep(name, unacked)
      else if (unacked.length > 0) this.onHeldDropped(name, unacked)
      return
    }
    if (this.keepsHeldFor(name)) this.keep(name, unacked)
    else if (unacked.length > 0) this.onHeldDropped(name, unacked)
    this.links.delete(name)
    if (!this.stopped) this.log.info({ peer: name }, 'cluster link down')
    this.emit('down', name)
  }

  /** Sends a frame to `name` on its link; false when the link is down (the frame is dropped). */
  send (name: string, frame: Frame): boolean {
    const link = this.links.get(name)
    if (link === undefined || link.hello === null || link.closed) return false
    link.send(frame)
    return true
  }

  /**
   * Sends a pre-encoded frame body to `name`; false when the link is down. A batch of
   * forwarded messages with `messages` that must not be lost is kept until acknowledged, and
   * held (sent again on the next link) when the link closes first.
   */
  sendRaw (name: string, type: number, body: Buffer, messages = 0): boolean {
    const link = this.links.get(name)
    if (link === undefined || link.hello === null || link.closed) return false
    link.sendRaw(type, body, messages)
    return true
  }

  /** Sends a frame to every connected peer. */
  broadcast (frame: Frame): void {
    for (const name of this.peers()) this.send(name, frame)
  }

  /** Publishes a control message on gossipsub. */
  async publishControl (message: unknown): Promise<void> {
    // before libp2p runs no node can hear it
    if (this.host === null) return
    try {
      await this.host.publish(CONTROL_TOPIC, packr.pack(message))
    } catch (err) {
      this.log.debug({ err }, 'control publish failed')
    }
  }

  /** Closes the link to `name` (leave, force-leave). */
  hangUp (name: string): void {
    const link = this.links.get(name)
    if (link !== undefined) link.abort(new Error('hung up'))
  }

  async stop (): Promise<void> {
    this.stopped = true
    if (this.keepalive !== null) clearInterval(this.keepalive)
    for (const link of this.links.values()) {
      try { await link.stream.close({ signal: AbortSignal.timeout(500) }) } catch { link.abort(new Error('stopping')) }
    }
    const waking = this.waking
    if (waking !== null) await (await waking.catch(() => null))?.stop()
    this.host = null
    await this.door.close()
  }
}
