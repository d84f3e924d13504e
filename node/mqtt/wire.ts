import type { Duplex } from 'node:stream'
import { type Metrics, RECEIVED_PACKET_METRIC, SENT_PACKET_METRIC, QOS_SENT_METRIC } from '../metrics.js'
import type { ConnectionOrigin } from './broker.js'
import type { PacketTap } from '../sys/packet-tap.js'
import { scanSubscribe, patchSuback, unsupportedFeature, PendingSubacks } from './wire-subscribe.js'
import type { WireLimits, WireCounters, ViolationHandler, SentMessage, AckWatch, ForceShutdown } from './wire-types.js'
import { checkPacket, checkHeader, publishPrefix, sessionExpiryOf, MALFORMED, PROTOCOL_ERROR } from './packet-check.js'
import { seen } from './packet-properties.js'
import { readVarint, varintFault, varintSize, withoutPublishes } from './wire-bytes.js'
import { LINGER_STEP_MS, lingerWhileSending } from './linger.js'
import type { OutboundWindow } from './outbound-window.js'
import { watchDrain, unwatchDrain } from './drain-deadline.js'
import { ReadGate, sliceSize, admitRead, holdRead, releaseRead, setReaderLookup, type BudgetedReader } from './read-gate.js'
export type { WireLimits, WireCounters, ViolationHandler, SentMessage, AckWatch } from './wire-types.js'

const PUBLISH = 3
const CONNECT = 1
const SUBSCRIBE = 8
const UNSUBSCRIBE = 10
const CONNACK = 2
const PUBACK = 4
const PUBREC = 5
const PUBREL = 6
const PUBCOMP = 7
const SUBACK = 9
const UNSUBACK = 11
const PINGREQ = 12
const PINGRESP = 13
const DISCONNECT = 14
const AUTH = 15

/**
 * 1 for a frame from the client (by its first byte) that the server answers with exactly one
 * frame: PUBLISH QoS 1/2 (PUBACK/PUBREC), PUBREL (PUBCOMP), SUBSCRIBE (SUBACK), UNSUBSCRIBE
 * (UNSUBACK), PINGREQ (PINGRESP). Not PUBREC: the PUBREL that answers it is also resent on
 * its own (retries, a resumed session), so it would not balance.
 */
function owesAnswer (b0: number): number {
  const type = b0 >> 4
  if (type === PUBLISH) return (b0 & 6) !== 0 ? 1 : 0
  return type === PUBREL || type === SUBSCRIBE || type === UNSUBSCRIBE || type === PINGREQ ? 1 : 0
}

/** Wires with buffered output; flushed together once per event-loop turn. */
const dirty: Wire[] = []
let flushScheduled = false

function flushAll (): void {
  flushScheduled = false
  // a wire may re-dirty itself while flushing (e.g. held output released): loop by index
  for (let i = 0; i < dirty.length; i++) dirty[i].flush()
  dirty.length = 0
}

/**
 * Interposes on one client connection between the socket and aedes, without changing aedes:
 * the socket's own `read` and `write` are replaced on that socket instance.
 *
 * Outbound: everything aedes writes in one event-loop turn goes to the socket as ONE write
 * (aedes otherwise makes a writev per packet, the top of its CPU profile). While `holds > 0`
 * output is kept back: the broker holds a publisher's QoS 1 PUBACK until the message is
 * durable. `write` returns false above the high-water mark so aedes waits for 'drain', which
 * slows the publishers feeding this subscriber instead of growing memory.
 *
 * Inbound: every frame is checked by the strict validator (packet-check.ts) before aedes,
 * whose decoding is lenient, sees it; a protocol error stops the reading there and closes the
 * connection (violation.ts says how). Frames are also scanned to count packets and bytes, enforce Receive
 * Maximum, Maximum QoS and Retain Available, and to rewrite SUBSCRIBE/UNSUBSCRIBE filters in
 * place (same length) for the features aedes refuses or mishandles: shared subscriptions and
 * per-filter reason codes (see wire-subscribe.ts).
 */
export class Wire implements BudgetedReader {
  readonly counters: WireCounters = { recvCnt: 0, recvOct: 0, recvPkt: 0, recvMsg: 0, sendCnt: 0, sendOct: 0, sendPkt: 0, sendMsg: 0 }
  /** MQTT protocol level from CONNECT (3, 4 or 5); 0 before CONNECT. */
  protocolVersion = 0
  /** Output is held while > 0 (see class doc). */
  holds = 0
  /** Rewrites a successful v5 CONNACK frame (properties aedes cannot set); set by the broker. */
  connackRewriter: ((frame: Buffer) => Buffer) | null = null
  /** SUBACK corrections of the SUBSCRIBEs not yet answered (created on the first SUBSCRIBE). */
  private subacks: PendingSubacks | null = null
  /** Peer address and port, set by the listener. */
  peer = { address: '', port: 0 }
  /** Why the connection ended, for the listener's `shutdown_count` (set by whoever closes it). */
  closeReason = 'closed'
  /** Where the connection came from (listener, addresses); set by the broker. */
  origin: ConnectionOrigin | null = null
  /** MQTT 5 CONNACK reason code to write instead of aedes' (e.g. 0x8A Banned); null keeps it. */
  connackCode: number | null = null
  /** Sees every complete frame (missed-ack counters, client traces); set by the broker. */
  tap: PacketTap | null = null
  /** Reports acknowledged deliveries; set by the broker. */
  acks: AckWatch | null = null
  /** The client's Receive Maximum on QoS 1/2 PUBLISHes sent to it (outbound-window.ts); null when it set none. */
  window: OutboundWindow | null = null
  /** Sets CONNACK session present: a resumed session aedes does not see (no subscriptions) [MQTT-3.2.2-2]. */
  sessionPresent = false
  /** QoS 1/2 messages sent and not yet acknowledged, by packet id (only while acks are watched). */
  private sent: Map<number, SentMessage> | null = null
  /**
   * @internal The read side (read-gate.ts): created with the wire when rate limits are set,
   * else on the first read of more than a slice.
   */
  gate: ReadGate | null = null
  /** @internal Bytes of the last read still counted in the node's read budget (read-gate.ts). */
  readHeld = 0
  /** @internal When {@link readHeld}'s bytes were read (read-gate.ts). */
  readHeldAt = 0
  /** @internal Waiting for the node's read budget (read-gate.ts). */
  readWaiting = false

  private chunks: Buffer[] = []
  private pendingBytes = 0
  private queued = false
  private owedDrain = false
  private carry: Buffer | null = null
  /** zone.external.force_shutdown_policy was exceeded: the client is being disconnected. */
  private overQuota = false
  private skip = 0
  private dead = false
  /** The connection is closing: its last frame is written, the socket ended (see {@link closeWith}). */
  private lingering = false
  /**
   * @internal A CONNACK accepting the connection has been written (a DISCONNECT may follow it
   * [MQTT-3.14.0-1]; its reads count against the node's read budget).
   */
  accepted = false
  /**
   * Frames aedes was given that it still owes an answer (see `owesAnswer`): +1 as such a
   * frame is scanned in, -1 as its answer is scanned out. Two integer updates per such
   * frame; it lets a close after a violation wait for exactly those answers ({@link whenAnswered}).
   */
  private unanswered = 0
  private onAnswered: (() => void) | null = null
  /** MQTT 5: the CONNECT had no Session Expiry Interval, or 0 (a DISCONNECT may not raise it [MQTT-3.14.2.2.2]). */
  private expiryZero = false
  /** MQTT 5: the Topic Aliases the client has set on this connection (created on the first). */
  private aliases: Set<number> | null = null
  /** Packet ids of QoS 1/2 publishes received and not yet acknowledged (created on first use). */
  private inflight: Set<number> | null = null
  private callbacks: Array<(err?: Error | null) => void> | null = null
  private drainWaiters: Array<() => void> | null = null
  private readonly origWrite: (this: Duplex, chunk: any, cb?: any) => boolean
  /** @internal the socket's own read, called by the shared interposed one. */
  readonly origRead: (this: Duplex, n?: number) => any
  /** @internal the socket's own destroy, called by the shared interposed one. */
  readonly origDestroy: (this: Duplex, err?: Error) => Duplex

  constructor (
    readonly socket: Duplex,
    private readonly limits: WireLimits,
    private readonly metrics: Metrics,
    private readonly onViolation: ViolationHandler
  ) {
    // Shared functions that find the wire through the socket: no closures per connection
    // (an idle connection's memory is what the 10k-connection benchmark measures).
    this.origWrite = socket.write as any
    this.origRead = socket.read as any
    this.origDestroy = socket.destroy as any
    ;(socket as any)[WIRE_OF_SOCKET] = this
    socket.write = bufferedWrite as any
    socket.read = scannedRead as any
    socket.destroy = lingeringDestroy as any
    socket.on('close', releaseOnClose)
    if (limits.rateLimits !== null) this.gate = new ReadGate(socket, limits.rateLimits)
  }

  /** The client id: aedes sets `socket.client` once it has taken the CONNECT. */
  get clientId (): string | undefined { return (this.socket as any).client?.id ?? undefined }

  /** Bytes written by aedes but not yet handed to the socket (Connection `send_pend`), held ones included. */
  get pending (): number { return this.pendingBytes + this.heldBytes }

  /** Bytes of QoS 1/2 PUBLISHes the outbound window holds back: unsent, so they count for back-pressure. */
  private get heldBytes (): number { return this.window === null ? 0 : this.window.heldBytes }

  /** Number of QoS 1/2 publishes from the client not yet acknowledged. */
  get inflightIn (): number { return this.inflight === null ? 0 : this.inflight.size }

  /**
   * Sets the SUBACK reason code for `filter` in the SUBSCRIBE being answered (the authorizer
   * calls this: ACL denials answer 0x80, a QoS above `mqtt.max_qos_allowed` is granted lower).
   */
  setSubackCode (filter: string, code: number): void {
    this.subacks?.setCode(filter, code)
  }

  /**
   * Queues one complete frame of ours (not written through aedes). Returns false when the
   * writer should wait for the socket's 'drain' event.
   */
  writeFrame (frame: Buffer): boolean {
    return this.enqueue(frame)
  }

  /**
   * Calls `cb` at the socket's next 'drain' (ours after a flush, the socket's own, or the one
   * aedes emits when it closes a client). One listener per wire however many writers wait:
   * under a flood thousands of deliveries wait at once.
   */
  waitDrain (cb: () => void): void {
    if (this.drainWaiters === null) {
      this.drainWaiters = []
      this.socket.once('drain', () => { this.drained() })
      watchDrain(this)
    }
    this.drainWaiters.push(cb)
  }

  /**
   * @internal No 'drain' within drain-deadline.ts's deadline: QoS 0 deliveries to this client
   * are dropped (`queue_full`) until its socket drains.
   */
  stalled = false

  private drained (): void {
    this.stalled = false
    unwatchDrain(this)
    const waiters = this.drainWaiters
    this.drainWaiters = null
    if (waiters !== null) for (let i = 0; i < waiters.length; i++) waiters[i]()
  }

  /**
   * @internal The client has not drained within the deadline (drain-deadline.ts): the
   * deliveries waiting for it go on (their frames stay queued), and it is {@link stalled}
   * until the 'drain' still awaited.
   */
  stall (): void {
    this.stalled = true
    unwatchDrain(this)
    const waiters = this.drainWaiters
    if (waiters === null) return
    this.drainWaiters = []
    for (let i = 0; i < waiters.length; i++) waiters[i]()
  }

  /**
   * True when the wire refused `filter` (as aedes sees it) in a SUBSCRIBE being answered, or a
   * code was already set for it there (see {@link PendingSubacks.isRefused}). One map lookup
   * however many SUBSCRIBEs are pending: aedes authorizes every filter of every SUBSCRIBE,
   * and a client may pipeline thousands of them.
   */
  isRefused (filter: string): boolean {
    return this.subacks !== null && this.subacks.isRefused(filter)
  }

  /**
   * @internal Queues frames the outbound window released ahead of everything not yet
   * flushed: they were written before it, and order is kept [MQTT-4.6.0-6].
   */
  sendFirst (frames: Buffer[]): void {
    if (frames.length === 0 || this.socket.destroyed) return
    for (let i = 0; i < frames.length; i++) this.pendingBytes += frames[i].length
    this.chunks.unshift(...frames)
    this.schedule()
  }

  /** Releases one hold and flushes what was kept back. */
  release (): void {
    if (this.holds > 0 && --this.holds === 0 && this.chunks.length > 0) this.schedule()
  }

  /**
   * True when this client's socket is congested beyond waiting: unsent bytes above the
   * drop threshold. QoS 0 deliveries are then dropped (`queue_full`) instead of holding the
   * publishers back, so a frozen subscriber cannot stall a topic (EMQ X drops QoS 0 from a
   * full queue likewise).
   */
  get congested (): boolean {
    return this.pendingBytes + this.heldBytes + this.socket.writableLength > this.limits.dropThreshold
  }

  /** @internal socket.write as aedes calls it. */
  enqueue (chunk: any, cb?: (err?: Error | null) => void): boolean {
    // `dead` (a violation was found) stops reading only: the DISCONNECT must still go out
    if (this.socket.destroyed || this.socket.writableEnded) {
      if (cb) queueMicrotask(() => cb(new Error('connection closed')))
      return false
    }
    if (typeof chunk !== 'string' && !Buffer.isBuffer(chunk)) {
      // mqtt-packet writes `undefined` for a field it cannot encode: the frame is broken, and
      // so is the connection (never the node)
      this.closeReason = 'protocol_error'
      this.socket.destroy()
      if (cb) queueMicrotask(() => cb(new Error('unencodable packet')))
      return false
    }
    const buf: Buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    this.chunks.push(buf)
    this.pendingBytes += buf.length
    if (cb) (this.callbacks ??= []).push(cb)
    this.schedule()
    // Held output must not ask for 'drain': the hold is released only when the publish that
    // caused it completes, and that publish may be waiting on this very write.
    // what the socket still holds counts too: otherwise a turn could queue a whole high-water
    // mark of frames on top of a socket buffer just below its own
    if (this.holds === 0 && (this.pendingBytes + this.heldBytes + this.socket.writableLength >= this.limits.highWaterMark || (this.socket as any).writableNeedDrain)) {
      this.owedDrain = true
      return false
    }
    return true
  }

  private schedule (): void {
    if (this.queued) return
    this.queued = true
    dirty.push(this)
    if (!flushScheduled) {
      flushScheduled = true
      setImmediate(flushAll)
    }
  }

  /** Hands everything buffered to the socket in one write. Called once per turn. */
  flush (): void {
    this.queued = false
    if (this.limits.forceShutdown !== null) this.checkQuota(this.limits.forceShutdown)
    if (this.holds > 0 || this.chunks.length === 0) return
    const socket = this.socket
    const parts = this.chunks
    const cbs = this.callbacks
    this.chunks = []
    this.callbacks = null
    this.pendingBytes = 0
    if (socket.destroyed) {
      if (cbs) for (const cb of cbs) cb(new Error('connection closed'))
      return
    }
    let buf = parts.length === 1 ? parts[0] : Buffer.concat(parts)
    // a connection being closed gets what it is owed, not more deliveries: they would only
    // stand between the peer and the DISCONNECT (QoS 1/2 ones stay queued in the session)
    if (this.dead) buf = withoutPublishes(buf)
    if (this.window !== null) {
      buf = this.window.filter(buf)
      if (buf.length === 0) {
        // everything was held back: the writers are done with their part
        if (cbs) for (const cb of cbs) cb()
        if (this.owedDrain && this.heldBytes < this.limits.highWaterMark) { this.owedDrain = false; socket.emit('drain') }
        return
      }
    }
    buf = this.scanOutbound(buf)
    this.counters.sendCnt++
    const ok = this.origWrite.call(socket, buf, cbs === null ? undefined : (err?: Error | null) => { for (const cb of cbs) cb(err) })
    // held frames are unsent bytes: 'drain' waits until the window has let enough of them go
    if (this.owedDrain && ok && this.heldBytes < this.limits.highWaterMark) {
      this.owedDrain = false
      socket.emit('drain')
    } else if (!ok) {
      this.owedDrain = false // the socket's own 'drain' will reach aedes' listener
    }
  }

  /**
   * `zone.external.force_shutdown_policy` (see {@link ForceShutdown}): a client with more
   * messages or bytes waiting for it than the policy allows is disconnected, MQTT 5 with
   * DISCONNECT 0x97 Quota exceeded (the reason code MQTT 5 gives for an implementation limit
   * exceeded; EMQ X 4.4 closes without one). Checked once per flush: cost per turn, not per
   * message. From a microtask: the disconnect flushes this wire again.
   */
  private checkQuota (policy: ForceShutdown): void {
    if (this.dead || this.overQuota) return
    const queue = (this.window === null ? 0 : this.window.heldCount) + (this.drainWaiters === null ? 0 : this.drainWaiters.length)
    const bytes = this.pendingBytes + this.heldBytes + this.socket.writableLength
    if (queue <= policy.maxQueue && bytes <= policy.maxBytes) return
    this.overQuota = true
    this.closeReason = queue > policy.maxQueue ? 'message_queue_too_long' : 'queue_too_large'
    queueMicrotask(() => {
      const client = (this.socket as any).client
      if (client != null && client.closed !== true) client.disconnect({ reasonCode: 0x97 })
      else this.closeWith(null)
    })
  }

  /** Counts outbound frames and patches SUBACK/CONNACK; returns the bytes to send. */
  private scanOutbound (buf: Buffer): Buffer {
    const m = this.metrics
    const c = this.counters
    c.sendOct += buf.length
    m['bytes/sent'] += buf.length
    let pos = 0
    let out = buf
    while (pos < out.length) {
      const b0 = out[pos]
      const type = b0 >> 4
      // frames aedes and we encoded: well-formed, their lengths in shortest form
      const len = readVarint(out, pos + 1, out.length)
      if (len < 0) break
      const body = pos + 1 + varintSize(len)
      const end = body + len
      c.sendPkt++
      m['packets/sent']++
      if (type === CONNACK && len >= 2) this.accepted = out[body + 1] === 0
      const metric = SENT_PACKET_METRIC[type]
      if (metric !== null) m[metric]++
      if (type === CONNACK && this.sessionPresent && len >= 2 && out[body + 1] === 0) {
        out[body] |= 1 // session present [MQTT-3.2.2-2]; only on a success [MQTT-3.2.2-6]
        this.sessionPresent = false
      }
      if (type === PUBLISH) {
        c.sendMsg++
        m['messages/sent']++
        m[QOS_SENT_METRIC[(b0 >> 1) & 3]]++
        if ((b0 & 6) !== 0 && this.acks !== null && this.acks.enabled()) this.rememberSent(out, b0, body, end)
      } else if (type === PUBACK || type === PUBCOMP || type === PUBREC) {
        this.unanswered--
        const id = out.readUInt16BE(body)
        // PUBREC ends the exchange only when it carries an error reason code (v5)
        if (this.inflight !== null && (type !== PUBREC || (len > 2 && out[body + 2] >= 0x80))) this.inflight.delete(id)
      } else if (type === SUBACK) {
        this.unanswered--
        const id = out.readUInt16BE(body)
        const pending = this.subacks?.take(id)
        if (pending !== undefined) patchSuback(out, body, end, this.protocolVersion, pending.codes)
      } else if (type === CONNACK && this.connackCode !== null && this.protocolVersion === 5 && len >= 2) {
        out[body + 1] = this.connackCode
        this.connackCode = null
      } else if (type === CONNACK && this.connackRewriter !== null && this.protocolVersion === 5) {
        const rewritten = this.connackRewriter(out.subarray(pos, end))
        this.connackRewriter = null
        out = Buffer.concat([out.subarray(0, pos), rewritten, out.subarray(end)])
        pos += rewritten.length
        continue
      } else if (type === UNSUBACK || type === PINGRESP) {
        this.unanswered--
      }
      if (this.tap !== null) this.tap.outbound(this, out, pos, body, end)
      pos = end
      // [MQTT-3.14.4-1] nothing after the server's DISCONNECT
      if (type === DISCONNECT) { out = out.subarray(0, end); break }
    }
    if (this.onAnswered !== null && this.unanswered <= 0) this.answered()
    return out
  }

  /**
   * After a violation, calls `cb` once the server has answered every frame before the
   * offending one (the PUBACKs, SUBACKs ... aedes owes for them, whichever read they came
   * in): at once when none is owed.
   */
  whenAnswered (cb: () => void): void {
    if (this.unanswered <= 0) { cb(); return }
    this.onAnswered = cb
  }

  /** The last owed answer is in the frames being flushed: `cb` runs once they are written. */
  private answered (): void {
    const cb = this.onAnswered
    this.onAnswered = null
    if (cb !== null) queueMicrotask(cb)
  }

  /**
   * @internal Bytes of an incomplete frame kept for the next read. That read is at least as
   * large: a large frame's carry at least doubles per read, never re-copied a slice at a time.
   */
  get carried (): number { return this.carry === null ? 0 : this.carry.length }

  /**
   * @internal True while the CONNECT has been read and not yet answered: what the client sent
   * after it stays in the socket (and the kernel: back-pressure) until it is. aedes queues the
   * packets that came in the CONNECT's own read until the CONNACK, but a later read while it
   * processes the CONNECT (its `readable` event re-enters its read loop) had them handled at
   * once: a PUBLISH authorized and published before the client was authenticated, its client
   * id still null (the fuzzer's tls door: such QoS 2 PUBLISHes of every connection counted
   * against one client id's `mqtt.max_awaiting_rel`, and past 100 each new one closed its
   * connection without a word). [MQTT-3.2.0-1] nothing is answered before the CONNACK.
   */
  awaitsConnectAnswer (): boolean {
    if (this.protocolVersion === 0 || this.dead) return false
    const client = (this.socket as any).client
    return client != null && client.connecting === true && client.connected !== true && client.connackSent !== true
  }

  /** @internal Scans inbound bytes; returns what aedes may parse now (incomplete control frames wait). */
  scanInbound (chunk: Buffer): Buffer | null {
    if (this.dead) return null
    const c = this.counters
    c.recvCnt++
    c.recvOct += chunk.length
    this.metrics['bytes/received'] += chunk.length
    let buf = chunk
    if (this.carry !== null) { buf = Buffer.concat([this.carry, chunk]); this.carry = null }
    let pos = 0
    if (this.skip > 0) {
      const n = Math.min(this.skip, buf.length)
      this.skip -= n
      pos = n
    }
    while (pos < buf.length) {
      // fixed header: type/flags byte, then 1..4 bytes of remaining length
      const len = readVarint(buf, pos + 1, buf.length)
      if (len < 0) {
        const fault = varintFault(buf, pos + 1, buf.length)
        if (fault === 'incomplete') return this.keep(buf, pos)
        // 1.5.5: at most four bytes; [MQTT-1.5.5-1] in its shortest form. Not parsable: Malformed (0x81)
        if (fault === 'too_long') this.violation(MALFORMED, 'remaining length longer than four bytes', 0)
        else this.violation(MALFORMED, 'remaining length not in its shortest form', buf[pos] >> 4)
        return this.stop(buf, pos)
      }
      const b0 = buf[pos]
      const type = b0 >> 4
      const body = pos + 1 + varintSize(len)
      const end = body + len
      // the first byte and the connection's state, before waiting for a body that may never come
      if (!this.validHeader(b0, type)) return this.stop(buf, pos)
      // [MQTT-3.2.2-15] refused on its declared size, before its body is buffered: a Protocol
      // Error answered with 0x95 Packet too large (3.2.2.3.6)
      if (end - pos > this.limits.maxPacketSize) { this.violation(0x95, `packet of ${end - pos} bytes is above mqtt.max_packet_size`, type); return this.stop(buf, pos) }
      // the validator reads the whole frame, or a PUBLISH's prefix (its payload may be large)
      const need = type === PUBLISH && !this.limits.strictMode ? publishPrefix(buf, body, end, (b0 & 6) !== 0, this.protocolVersion === 5) : end
      if (need > buf.length) return this.keep(buf, pos)
      if (!this.validate(buf, b0, type, body, end)) return this.stop(buf, pos)
      this.countInbound(type)
      if (this.tap !== null && end <= buf.length) this.tap.inbound(this, buf, pos, body, end)
      if ((type === PUBACK || type === PUBCOMP) && this.sent !== null && end <= buf.length && len >= 2) {
        const id = buf.readUInt16BE(body)
        const message = this.sent.get(id)
        if (message !== undefined) {
          this.sent.delete(id)
          this.acks!.acked(this, message)
        }
      }
      if (type === PUBLISH) {
        if (!this.checkPublish(buf, b0, body)) return this.stop(buf, pos)
      } else if ((type === SUBSCRIBE || type === UNSUBSCRIBE) && end <= buf.length && this.protocolVersion !== 0) {
        const pending = scanSubscribe(buf, body, end, type === SUBSCRIBE, this.protocolVersion, this.limits)
        if (pending !== null) {
          const unsupported = this.protocolVersion === 5 ? unsupportedFeature(pending) : 0
          if (unsupported !== 0) {
            this.violation(unsupported, `SUBSCRIBE to a feature the CONNACK said is not available (0x${unsupported.toString(16)}) [3.2.2.3.11] [3.2.2.3.13]`, type)
            return this.stop(buf, pos)
          }
          (this.subacks ??= new PendingSubacks()).add(buf.readUInt16BE(body), pending)
        }
      }
      this.unanswered += owesAnswer(b0)
      if (end > buf.length) { this.skip = end - buf.length; break }
      pos = end
    }
    return buf
  }

  /** Keeps topic and payload of a QoS 1/2 PUBLISH frame until its PUBACK/PUBCOMP arrives. */
  private rememberSent (out: Buffer, b0: number, body: number, end: number): void {
    const topicLen = out.readUInt16BE(body)
    const topic = out.toString('utf8', body + 2, body + 2 + topicLen)
    const id = out.readUInt16BE(body + 2 + topicLen)
    let p = body + 4 + topicLen
    if (this.protocolVersion === 5) {
      const propLen = readVarint(out, p, end)
      p += varintSize(propLen) + propLen
    }
    const sent = this.sent ??= new Map()
    sent.set(id, { topic, payload: Buffer.from(out.subarray(p, end)), qos: (b0 >> 1) & 3, id, retain: (b0 & 1) === 1 })
  }

  private countInbound (type: number): void {
    this.counters.recvPkt++
    this.metrics['packets/received']++
    const metric = RECEIVED_PACKET_METRIC[type]
    if (metric !== null) this.metrics[metric]++
  }

  /** The connection-state rules and the first byte's (type, reserved flags); false after a violation. */
  private validHeader (b0: number, type: number): boolean {
    if (type === CONNECT) {
      // [MQTT-3.1.0-2] a Protocol Error (0x82), in a packet after the CONNECT: answered with DISCONNECT, not CONNACK
      if (this.protocolVersion !== 0) return this.violation(PROTOCOL_ERROR, 'a second CONNECT [MQTT-3.1.0-2]', SECOND_CONNECT)
    } else if (this.protocolVersion === 0) {
      // [MQTT-3.1.0-1] closed without a packet: nothing but a CONNACK may come first [MQTT-3.2.0-1]
      return this.violation(PROTOCOL_ERROR, `packet type ${type} before CONNECT [MQTT-3.1.0-1]`, type)
    }
    const problem = checkHeader(b0, this.protocolVersion)
    return problem === null || this.violation(problem.reasonCode, problem.message, type)
  }

  /**
   * Runs the packet validator (packet-check.ts) on one frame before aedes sees it; false
   * after a violation (reported, the connection closing).
   */
  private validate (buf: Buffer, b0: number, type: number, body: number, end: number): boolean {
    // the level says how a refusal is answered (CONNACK form); bit 7 marks a bridge
    if (type === CONNECT && body + 2 <= end && body + 2 + buf.readUInt16BE(body) < end) this.protocolVersion = buf[body + 2 + buf.readUInt16BE(body)] & 0x7f
    const problem = checkPacket(buf, b0, body, end, this.protocolVersion, this.limits.strictMode)
    if (problem !== null) return this.violation(problem.reasonCode, problem.message, type)
    if (type >= DISCONNECT || type === CONNECT) return this.validateSession(buf, type, body, end)
    return true
  }

  /** The rules on CONNECT, DISCONNECT and AUTH that need the connection's state; false after a violation. */
  private validateSession (buf: Buffer, type: number, body: number, end: number): boolean {
    if (type === CONNECT) {
      this.expiryZero = this.protocolVersion === 5 && sessionExpiryOf(buf, body, end, CONNECT) <= 0
      return true
    }
    // enhanced authentication is not offered (a CONNECT with a method is refused with 0x8C):
    // 3.15 "a Protocol Error ... to send an AUTH packet if the CONNECT packet did not contain
    // the same Authentication Method" [MQTT-4.12.0-7]
    if (type === AUTH) return this.violation(PROTOCOL_ERROR, 'AUTH without enhanced authentication [MQTT-4.12.0-7]', type)
    // 3.14.2.2.2: a non-zero Session Expiry Interval on DISCONNECT after a CONNECT with 0 is a
    // Protocol Error; the DISCONNECT is not valid (aedes never sees it: the will is published)
    if (this.expiryZero && end - body > 1 && sessionExpiryOf(buf, body, end, DISCONNECT) > 0) {
      return this.violation(PROTOCOL_ERROR, 'DISCONNECT sets a Session Expiry Interval after a CONNECT with 0 [MQTT-3.14.2.2.2]', type)
    }
    return true
  }

  /** Receive Maximum, Maximum QoS, Retain Available and Topic Aliases for one inbound PUBLISH (already validated). */
  private checkPublish (buf: Buffer, b0: number, body: number): boolean {
    this.counters.recvMsg++
    // the validator has just read this PUBLISH's properties: `seen.topicAlias` is its alias
    if (this.protocolVersion === 5 && seen.topicAlias > 0 && !this.knowsAlias(buf, body, seen.topicAlias)) {
      // 3.3.4: an alias with no mapping and a zero length Topic Name "is a Protocol Error and the
      // receiver uses DISCONNECT with Reason Code of 0x82" (aedes would answer 0x94)
      return this.violation(PROTOCOL_ERROR, `Topic Alias ${seen.topicAlias} with an empty topic and no mapping [3.3.4]`, PUBLISH)
    }
    const qos = (b0 >> 1) & 3
    // 3.2.2.3.4 [MQTT-3.2.2-11]: a Protocol Error answered with 0x9B QoS not supported
    if (qos > this.limits.maxQos) return this.violation(0x9b, `QoS ${qos} is above mqtt.max_qos_allowed`, PUBLISH)
    // 3.2.2.3.5 [MQTT-3.2.2-14]: a Protocol Error answered with 0x9A Retain not supported
    if ((b0 & 1) === 1 && !this.limits.retainAvailable) return this.violation(0x9a, 'retain is not available', PUBLISH)
    if (qos > 0) {
      const id = buf.readUInt16BE(body + 2 + buf.readUInt16BE(body))
      const inflight = this.inflight ??= new Set()
      inflight.add(id)
      // 3.3.4 [MQTT-3.3.4-7]: more than Receive Maximum unacknowledged is answered with 0x93 Receive Maximum exceeded
      if (this.protocolVersion === 5 && inflight.size > this.limits.receiveMaximum) {
        return this.violation(0x93, `more than ${this.limits.receiveMaximum} unacknowledged QoS 1/2 publishes (Receive Maximum)`, PUBLISH)
      }
    }
    return true
  }

  /** False for an alias used with an empty topic before a PUBLISH set it; records the ones set (3.3.2.3.4). */
  private knowsAlias (buf: Buffer, body: number, alias: number): boolean {
    if (buf.readUInt16BE(body) === 0) return this.aliases !== null && this.aliases.has(alias)
    ;(this.aliases ??= new Set()).add(alias)
    return true
  }

  /** @internal The inbound scan failed on this connection's bytes: treat as a malformed packet. */
  malformed (err: Error): void {
    if (!this.dead) this.violation(MALFORMED, `malformed packet: ${err.message}`, 0)
  }

  /**
   * Packet type of the frame that broke the protocol (0 when not known, {@link SECOND_CONNECT}
   * for a CONNECT after the first); set with the violation.
   */
  violationType = 0

  private violation (reasonCode: number, message: string, type: number): boolean {
    this.dead = true
    this.violationType = type
    this.onViolation(this, reasonCode, message)
    return false
  }

  /**
   * Ends the connection: `frame` (a DISCONNECT or CONNACK, or null for none) goes out after
   * the answers already queued (held output included: nothing is held for a closing
   * connection; queued deliveries are dropped), nothing after it [MQTT-3.14.4-1], then the
   * socket is ended. The peer closes on the FIN. Ending rather than destroying at once keeps
   * the last frames from being lost to a reset, or to the destroy of a TLS or WebSocket
   * stream whose backlog is still going out: the connection lingers while its unsent bytes
   * shrink (linger.ts says how that is measured), and is cut off `lingerMs` after they
   * stopped shrinking (a peer that does not read), or after `LINGER_MAX_MS` at most. A
   * connection that was never sent anything and gets no frame is destroyed at once. Only
   * the first call counts.
   */
  closeWith (frame: Buffer | null, lingerMs = LINGER_STEP_MS): void {
    this.dead = true
    this.onAnswered = null
    const socket = this.socket
    if (socket.destroyed || this.lingering) return
    // nothing to deliver: cut at once; otherwise what is queued (answers to the packets
    // before the violation) still goes out first
    if (frame === null && this.chunks.length === 0 && this.counters.sendPkt === 0) { this.origDestroy.call(socket); return }
    this.holds = 0
    if (frame !== null) this.enqueue(frame)
    this.flush()
    this.lingering = true
    socket.end()
    this.linger(lingerMs)
  }

  /**
   * The server's DISCONNECT (aedes' `client.disconnect`: a takeover, a kick, shutdown ...):
   * `frame` goes out when the client was accepted, its CONNACK written or still queued,
   * whether or not aedes counts it as connected yet [MQTT-3.1.4-3]; never before the
   * CONNACK [MQTT-3.14.0-1]. Then as {@link closeWith}.
   */
  disconnect (frame: Buffer | null): void {
    if (this.socket.destroyed || this.lingering) return
    this.dead = true
    this.holds = 0
    // a CONNACK still queued is scanned (and sent) now: it says whether a DISCONNECT may follow
    this.flush()
    this.closeWith(this.accepted ? frame : null)
  }

  /** While lingering: cut off once the unsent bytes stop shrinking (see {@link closeWith}, linger.ts). */
  private linger (stepMs: number): void {
    const socket = this.socket
    lingerWhileSending(socket, this.origin?.transport ?? socket, stepMs, () => { this.origDestroy.call(socket) })
  }

  /**
   * @internal aedes destroys the socket when it closes a client, and when a write it makes
   * after the close is refused (its own error, without a system error code): while the last
   * frames are still going out, the socket stays (the linger ends it), and what the peer
   * still sends is read and discarded, so that its FIN, its answer to ours, is seen. A
   * destroy then would close the descriptor with the peer's bytes unread, which sends a
   * reset instead of the FIN and discards the DISCONNECT still in the kernel's buffers.
   * The socket's own errors (a reset by the peer, EPIPE) destroy it at once.
   */
  destroyRequested (err?: Error): boolean {
    const socket: any = this.socket
    if (!this.lingering || (err as any)?.code !== undefined || socket.readableEnded === true) return true
    if (socket.listenerCount('readable') === 0) {
      socket.read = this.origRead
      socket.resume()
    }
    return false
  }

  /** Passes bytes before `pos` on and keeps the incomplete frame at `pos` for the next read. */
  private keep (buf: Buffer, pos: number): Buffer | null {
    this.carry = Buffer.from(buf.subarray(pos))
    return pos === 0 ? null : buf.subarray(0, pos)
  }

  /** After a violation: aedes gets what came before the offending frame, nothing after. */
  private stop (buf: Buffer, pos: number): Buffer | null {
    return pos === 0 ? null : buf.subarray(0, pos)
  }
}

const WIRE_OF_SOCKET = Symbol('starling.wireOfSocket')
setReaderLookup(wireOfSocket)

/** {@link Wire.violationType} of a CONNECT after the first: a later packet, answered with DISCONNECT [MQTT-3.1.0-2]. */
export const SECOND_CONNECT = 16

/** The socket's `write` while a wire interposes: buffer for the once-per-turn flush. */
function bufferedWrite (this: any, chunk: any, encoding?: any, cb?: any): boolean {
  return (this[WIRE_OF_SOCKET] as Wire).enqueue(chunk, typeof encoding === 'function' ? encoding : cb)
}

/** The socket's `destroy` while a wire interposes: not while its last frames are going out (see {@link Wire.closeWith}). */
function lingeringDestroy (this: any, err?: Error): any {
  const wire: Wire = this[WIRE_OF_SOCKET]
  if (!wire.destroyRequested(err)) return this
  wire.gate?.close()
  return wire.origDestroy.call(this, err)
}

/** A closed connection's last read leaves the node's read budget. */
function releaseOnClose (this: any): void {
  releaseRead(this[WIRE_OF_SOCKET] as Wire)
}

/** The wire interposed on `socket`, if any. */
export function wireOfSocket (socket: unknown): Wire | undefined {
  return (socket as any)?.[WIRE_OF_SOCKET]
}

/**
 * The socket's `read` while a wire interposes: scan what the socket returns. aedes reads with
 * `read(null)`; when more than a slice is waiting (the node is behind this connection) it is
 * handed a slice, never from inside its own parse (read-gate.ts); otherwise everything, as
 * without the gate.
 */
function scannedRead (this: any, n?: number): any {
  const wire: Wire = this[WIRE_OF_SOCKET]
  if (n === 0) return wire.origRead.call(this, n)
  if (wire.awaitsConnectAnswer()) return null
  let gate = wire.gate
  // aedes reads again once the last read's packets are handled (not from inside their parse)
  if (gate === null || !gate.parsing) releaseRead(wire)
  if (gate !== null && !gate.admit()) return null
  // the CONNECT and what came with it are read whatever the budget: a slow authentication
  // must not hold back the node's other connections
  const budgeted = wire.accepted
  if (budgeted && !admitRead(this, wire)) return null
  const slice = n === null || n === undefined ? sliceSize(this, wire.carried) : undefined
  if (slice !== undefined && gate === null) gate = wire.gate = new ReadGate(this, null)
  const buf = wire.origRead.call(this, slice ?? n)
  if (buf === null || buf === undefined || !Buffer.isBuffer(buf)) return buf
  if (budgeted) holdRead(wire, buf.length)
  try {
    if (gate === null || (slice === undefined && !gate.limited)) return wire.scanInbound(buf)
    const messages = wire.counters.recvMsg
    const out = wire.scanInbound(buf)
    if (slice !== undefined) gate.sliced()
    if (gate.limited) gate.count(buf.length, wire.counters.recvMsg - messages)
    return out
  } catch (err: any) {
    // a frame the scan could not read: that connection is closed, the node keeps serving
    wire.malformed(err)
    return null
  }
}
