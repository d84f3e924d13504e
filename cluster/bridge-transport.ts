/**
 * The RPC bridges' transport (issue 15, docs/bridges.md "RPC bridge", docs/cluster.md):
 * `bridge.mqtt.<name>.address = <node>@<host>[:<port>]` sends the bridge's messages to that
 * node of another Starling cluster over the cluster transport, where they are published
 * as local publishes. Forward-only, no MQTT encoding (the cluster's batch codec,
 * cluster/pub-batch.ts).
 *
 * Authentication: the connection is libp2p's private network keyed by `node.cookie`, as
 * the member links are, so only a node with the same cookie can open it (EMQ X's RPC
 * bridge likewise needed one Erlang cookie on both sides). Both clusters share the cookie;
 * that is the whole of the trust: a bridge's stream carries no credentials of its own.
 *
 * Invariants:
 * - A bridge stream is never a member link: it is dialled by a separate libp2p instance
 *   (no listener, no gossipsub, an identity of its own per run) on its own protocol
 *   ({@link BRIDGE_PROTOCOL}), and accepted through {@link Mesh.handle}; it never enters
 *   the mesh's link table, so no membership books, routes, sessions, RPC or gossip cross it
 *   and `cluster status` on either side does not list the other node.
 * - The receiving node publishes the messages of a stream one after another, in the order
 *   sent, each through the MQTT core's publish (stored, retained, routed in its own cluster
 *   and seen by its rules as any local publish), and acknowledges a batch only once every
 *   message of it was published there: when the publish resolved, it is durable. A batch
 *   not acknowledged when the stream drops is sent again by the bridge (QoS 1's
 *   at-least-once: a message may arrive twice, never not at all).
 * - Frames on a bridge stream are the mesh's ({@link Link}): length-prefixed MessagePack
 *   control frames (`bridge`, `welcome`, `refused`, `ack`, `nack`, `ping`) and raw batch
 *   frames ({@link FRAME_BRIDGE_BATCH}: u32 batch id, then an encodeBatch body).
 */
import type { Connection, Stream } from '@libp2p/interface'
import type { Logger } from '../node/logger.js'
import type { PublishMessage } from '../node/mqtt/core.js'
import { topicNameError } from '../node/mqtt/topic.js'
import type { BridgeLink, RpcBridgeTransport } from '../node/bridge-transport.js'
import type { MeshHost } from './mesh-host.js'
import { Link, multiaddrOf, pskFromCookie, PING_MS, SilenceClock, SILENCE_MS, type Frame, type Mesh } from './mesh.js'
import { decodeBatch, encodeBatch, type ForwardedMessage } from './pub-batch.js'
import { parseNodeAddress } from './node-address.js'

/** The libp2p protocol of a bridge stream. */
export const BRIDGE_PROTOCOL = '/starling/bridge/1.0.0'
/** A raw frame of a batch: u32 batch id (big-endian), then an encodeBatch body. */
export const FRAME_BRIDGE_BATCH = 2
/** How long a connect waits for the remote node's answer. */
const CONNECT_TIMEOUT_MS = 5000

/** What the transport uses of the node. */
export interface BridgeTransportComponents {
  /** `node.name`: the sender named in a bridge's hello, and what a bridge to this node must name. */
  name: string
  /** `node.cookie`: the private network's key. */
  cookie: string
  /** The MQTT core that received batches are published into (read when a batch arrives). */
  broker: { readonly core: { publishWith: (message: PublishMessage, done: (err?: Error | null) => void) => void } }
  logger: Logger
}

/** The RPC bridges' transport of one node: the links it dials and the streams it accepts. */
export class ClusterBridgeTransport implements RpcBridgeTransport {
  private readonly log: Logger
  /** Every open bridge stream, both directions, for the keepalive and stop. */
  private readonly streams = new Set<Link>()
  private dialer: Promise<MeshHost> | null = null
  private keepalive: NodeJS.Timeout | null = null
  private readonly silence = new SilenceClock()
  private stopped = false

  constructor (private readonly node: BridgeTransportComponents, private readonly mesh: Pick<Mesh, 'handle'>) {
    this.log = node.logger.child({ component: 'cluster:bridge' })
  }

  /** This node's name (a bridge's hello names it as the sender). */
  get nodeName (): string { return this.node.name }

  /** Accepts bridge streams on the mesh's listener (after the mesh started). */
  async start (): Promise<void> {
    this.stopped = false
    await this.mesh.handle(BRIDGE_PROTOCOL, (stream, connection) => { this.accept(stream, connection) })
    this.keepalive = setInterval(() => { this.checkStreams() }, PING_MS)
    this.keepalive.unref()
  }

  /**
   * A link to `address` (`<name>@<host>[:<port>]`, the cluster port 4370 when none). Throws
   * a WrongTypeError on a malformed address; does not connect.
   */
  link (address: string): BridgeLink {
    const target = parseNodeAddress(address)
    return new RpcBridgeLink(this, target, this.log)
  }

  /** Closes every bridge stream and the dialler; links refuse to connect until {@link start}. */
  async stop (): Promise<void> {
    this.stopped = true
    if (this.keepalive !== null) clearInterval(this.keepalive)
    this.keepalive = null
    for (const link of [...this.streams]) link.stream.abort(new Error('the node is stopping'))
    this.streams.clear()
    const dialer = this.dialer
    this.dialer = null
    if (dialer !== null) await (await dialer.catch(() => null))?.stop()
  }

  /** Opens a bridge stream to `host:port` (for {@link RpcBridgeLink}). */
  async open (host: string, port: number, signal: AbortSignal): Promise<{ stream: Stream, connection: Connection }> {
    if (this.stopped) throw new Error('the node is stopping')
    const dialer = await this.getDialer()
    return await dialer.open(multiaddrOf(host, port), BRIDGE_PROTOCOL, signal)
  }

  /** Keeps `link` alive (pings) and closes it when silent; forgotten when it closes. */
  track (link: Link): void { this.streams.add(link) }
  untrack (link: Link): void { this.streams.delete(link) }

  /**
   * The libp2p instance bridge streams are dialled from (cluster/mesh-host.ts
   * `startBridgeDialer`), started, with libp2p's modules, by the first bridge that connects.
   */
  private async getDialer (): Promise<MeshHost> {
    if (this.dialer === null) {
      this.dialer = import('./mesh-host.js').then(async ({ startBridgeDialer }) => await startBridgeDialer(pskFromCookie(this.node.cookie)))
      this.dialer.catch(() => { this.dialer = null })
    }
    return await this.dialer
  }

  /** Pings idle bridge streams and closes silent ones (a cut network sends no reset). */
  private checkStreams (): void {
    const now = Date.now()
    const judge = this.silence.onTime(now)
    for (const link of this.streams) {
      if (link.closed) { this.streams.delete(link); continue }
      if (judge && now - link.lastIn > SILENCE_MS) {
        this.log.warn(`bridge stream silent for ${SILENCE_MS / 1000} s: closing it`)
        link.stream.abort(new Error('silent'))
        // a new dial must not reuse a connection that went quiet
        link.connection.abort(new Error('bridge peer silent'))
        this.streams.delete(link)
        continue
      }
      if (now - link.lastOut >= PING_MS) link.send({ k: 'ping' })
    }
  }

  /** A bridge stream from another cluster's node: after its hello, batches in, acks out. */
  private accept (stream: Stream, connection: Connection): void {
    if (this.stopped) { stream.abort(new Error('the node is stopping')); return }
    new BridgeInbound(this.node, stream, connection, this, this.log).start()
  }
}

/** The receiving end of one bridge stream. */
class BridgeInbound {
  private readonly link: Link
  private from: string | null = null
  /** Batches received, published in order, one message at a time. */
  private readonly batches: Array<{ id: number, messages: PublishMessage[], next: number, error: Error | null }> = []
  private busy = false

  constructor (private readonly node: BridgeTransportComponents, stream: Stream, connection: Connection, private readonly transport: ClusterBridgeTransport, private readonly log: Logger) {
    this.link = new Link(stream, connection, '', (frame) => { this.onFrame(frame) }, () => {
      this.transport.untrack(this.link)
      // batches not yet published are sent again by the bridge (they were not acknowledged)
      this.batches.length = 0
      if (this.from !== null) this.log.info({ from: this.from }, 'bridge stream closed')
    }, log)
    this.link.onRaw = (type, body) => { this.onBatch(type, body) }
  }

  start (): void { this.transport.track(this.link) }

  private onFrame (frame: Frame): void {
    if (this.from !== null) return
    if (frame.k !== 'bridge' || typeof frame.from !== 'string') { this.refuse('expected a bridge hello'); return }
    if (frame.to !== this.node.name) { this.refuse(`this node is ${this.node.name}, not ${String(frame.to)}`); return }
    this.from = frame.from
    this.link.send({ k: 'welcome', name: this.node.name })
    this.log.info({ from: this.from }, 'bridge stream accepted')
  }

  private refuse (reason: string): void {
    this.link.send({ k: 'refused', reason })
    // after the refusal left (frames leave on the next turn)
    setTimeout(() => { this.link.stream.abort(new Error(reason)) }, 200).unref()
  }

  private onBatch (type: number, body: Buffer): void {
    if (type !== FRAME_BRIDGE_BATCH || this.from === null || body.length < 4) return
    const id = body.readUInt32BE(0)
    const messages: PublishMessage[] = []
    try {
      decodeBatch(body.subarray(4), (_origin, m) => {
        // what a client could not publish is not published for a bridge either: a wildcard or
        // empty topic went into the retained store as an unusable key, and a QoS past 2 into
        // the sessions (found by bench/fuzz/cluster-door.ts)
        const problem = topicNameError(m.topic) ?? (m.qos === 0 || m.qos === 1 || m.qos === 2 ? null : `QoS ${String(m.qos)} is not 0, 1 or 2`)
        if (problem !== null) throw new Error(`message ${messages.length + 1}: ${problem}`)
        // the topic as sent (the bridge applied its mountpoint), QoS and retain kept; a local
        // publish here: this node's broker numbers it, routes it in its cluster, runs its rules
        const message: PublishMessage = { cmd: 'publish', topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, dup: false }
        if (m.properties !== undefined) message.properties = m.properties
        messages.push(message)
      })
    } catch (err: any) {
      this.log.warn({ err, from: this.from }, 'malformed bridge batch')
      this.link.send({ k: 'nack', id, e: `malformed batch: ${String(err.message)}` })
      return
    }
    this.batches.push({ id, messages, next: 0, error: null })
    this.pump()
  }

  /**
   * Publishes the waiting messages one after another (order kept across batches) and
   * acknowledges each batch once its last message is published. A publish that completes
   * at once continues the loop; one that completes later resumes it from its callback.
   */
  private pump (): void {
    if (this.busy) return
    this.busy = true
    const core = this.node.broker.core
    while (!this.link.closed) {
      const batch = this.batches[0]
      if (batch === undefined) break
      if (batch.next === batch.messages.length) {
        this.batches.shift()
        if (batch.error === null) this.link.send({ k: 'ack', id: batch.id })
        else this.link.send({ k: 'nack', id: batch.id, e: batch.error.message })
        continue
      }
      const message = batch.messages[batch.next++]
      let returned = false
      let completed = false
      core.publishWith(message, (err) => {
        if (err != null) {
          this.log.warn({ err, topic: message.topic, from: this.from }, 'bridged message not published')
          batch.error ??= err
        }
        if (!returned) { completed = true; return }
        this.busy = false
        this.pump()
      })
      returned = true
      // resumed by the publish's callback (busy stays set until then)
      if (!completed) return
    }
    this.busy = false
  }
}

/** One bridge's link to a node of another cluster. */
class RpcBridgeLink implements BridgeLink {
  private link: Link | null = null
  /** The link answered our hello: batches may go. */
  private up = false
  private connecting: Promise<void> | null = null
  private nextId = 1
  private readonly pending = new Map<number, { resolve: () => void, reject: (err: Error) => void }>()
  private readonly downListeners: Array<(err: Error) => void> = []

  constructor (private readonly transport: ClusterBridgeTransport, private readonly target: { name: string, host: string, port: number }, private readonly log: Logger) {}

  /** `name@host:port`, for messages. */
  private get where (): string { return `${this.target.name} at ${this.target.host}:${this.target.port}` }

  async connect (): Promise<void> {
    if (this.up && this.link !== null && !this.link.closed) return
    this.connecting ??= this.open().finally(() => { this.connecting = null })
    await this.connecting
  }

  private async open (): Promise<void> {
    const signal = AbortSignal.timeout(CONNECT_TIMEOUT_MS)
    let opened: { stream: Stream, connection: Connection }
    try {
      opened = await this.transport.open(this.target.host, this.target.port, signal)
    } catch (err: any) {
      throw new Error(`cannot reach ${this.where} (${String(err.message)}); check the address, that the node runs, and that both clusters have the same node.cookie`)
    }
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        link.stream.abort(new Error('no answer'))
        reject(new Error(`${this.where} did not answer the bridge handshake in ${CONNECT_TIMEOUT_MS} ms`))
      }, CONNECT_TIMEOUT_MS)
      const link: Link = new Link(opened.stream, opened.connection, '', (frame) => {
        if (!this.up || this.link !== link) {
          clearTimeout(timer)
          if (frame.k === 'welcome') {
            this.link = link
            this.up = true
            this.log.info({ node: this.target.name }, 'bridge link up')
            resolve()
          } else {
            const reason = frame.k === 'refused' ? String(frame.reason) : `unexpected ${String(frame.k)} frame`
            // rejected first: the abort closes the stream at once, and its close handler rejects too
            reject(new Error(`${this.where} refused the bridge: ${reason}`))
            link.stream.abort(new Error(reason))
          }
          return
        }
        this.onFrame(frame)
      }, () => {
        clearTimeout(timer)
        this.transport.untrack(link)
        reject(new Error(`${this.where} closed the bridge stream`))
        if (this.link === link) this.dropped()
      }, this.log)
      this.transport.track(link)
      link.send({ k: 'bridge', from: this.transport.nodeName, to: this.target.name })
    })
  }

  private onFrame (frame: Frame): void {
    if (frame.k !== 'ack' && frame.k !== 'nack') return
    const p = this.pending.get(frame.id as number)
    if (p === undefined) return
    this.pending.delete(frame.id as number)
    if (frame.k === 'ack') p.resolve()
    else p.reject(new Error(`${this.target.name} could not publish the batch: ${String(frame.e)}`))
  }

  /** The stream closed: batches in flight fail (they go back to the buffer), listeners hear it. */
  private dropped (): void {
    const wasUp = this.up
    this.link = null
    this.up = false
    const err = new Error(`the bridge link to ${this.where} dropped`)
    for (const p of this.pending.values()) p.reject(err)
    this.pending.clear()
    if (!wasUp) return
    this.log.info({ node: this.target.name }, 'bridge link down')
    for (const listener of this.downListeners) {
      try { listener(err) } catch (e) { this.log.warn({ err: e }, 'bridge link listener failed') }
    }
  }

  async send (batch: readonly PublishMessage[]): Promise<void> {
    const link = this.link
    if (!this.up || link === null || link.closed) throw new Error(`the bridge link to ${this.where} is not connected`)
    if (batch.length === 0) return
    const id = this.nextId
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1
    const forwarded: ForwardedMessage[] = new Array(batch.length)
    for (let i = 0; i < batch.length; i++) {
      const m = batch[i]
      const f: ForwardedMessage = { topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain === true, brokerCounter: 0 }
      if (m.properties !== undefined) f.properties = wireProperties(m.properties)
      forwarded[i] = f
    }
    const encoded = encodeBatch(this.transport.nodeName, forwarded)
    const body = Buffer.allocUnsafe(4 + encoded.length)
    body.writeUInt32BE(id, 0)
    encoded.copy(body, 4)
    await new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      link.sendRaw(FRAME_BRIDGE_BATCH, body)
    })
  }

  onDown (listener: (err: Error) => void): void {
    this.downListeners.push(listener)
  }

  /** Closes the stream; batches in flight reject, and no `onDown` (the bridge asked). A later connect opens a new one. */
  async close (): Promise<void> {
    const link = this.link
    this.up = false
    this.link = null
    const err = new Error(`the bridge link to ${this.where} was closed`)
    for (const p of this.pending.values()) p.reject(err)
    this.pending.clear()
    if (link !== null && !link.closed) link.stream.abort(new Error('bridge closed'))
  }
}

/** MQTT 5 properties that travel with a message (not the per-connection ones), as cluster/routing.ts sends them. */
function wireProperties (properties: Record<string, unknown>): Record<string, unknown> {
  const { topicAlias: _alias, subscriptionIdentifier: _ids, ...rest } = properties
  return rest
}
