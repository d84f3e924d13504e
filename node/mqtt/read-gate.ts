import type { Duplex } from 'node:stream'
import { noteContention } from './memory-valve.js'

/**
 * The inbound read side of one connection: how much aedes is handed per read, and when the
 * connection is not read at all.
 *
 * aedes reads a socket only once every packet of its previous read has been handled (its
 * `_parsingBatch` count back to 0). A PUBLISH waiting for a slow subscriber's 'drain' is not
 * handled yet, so a publisher is not read while the node is behind: the socket's buffer
 * fills, the kernel's too, and TCP flow control slows the publisher (back-pressure instead of
 * buffering). What that leaves in memory is one read per publisher, parsed: with aedes' plain
 * `read(null)` up to a whole 64 KiB socket buffer, about 900 small PUBLISHes, each a Packet,
 * its copy and its closures (about 1.5 KB of heap apiece). Under a 100 -> 1 flood that was
 * 86,000 publishes in flight, 130 MB live and 750 MB of RSS as V8 let the heap grow.
 * {@link READ_SLICE} bounds it: a read hands aedes at most that many bytes, the rest stays in
 * the socket's buffer (which stops reading the kernel at its high-water mark).
 *
 * A read nested in aedes' parse (a packet handled synchronously calls aedes' next read from
 * inside the parse of the previous slice) is refused: mqtt-packet's parser is not re-entrant.
 * The refused read is made again from a microtask, once that parse has returned; after
 * {@link SLICES_PER_TURN} slices in a row, from the event loop's next turn instead.
 *
 * The rate limits (`zone.external.rate_limit.conn_messages_in` / `conn_bytes_in`) pause the
 * reading the same way: after a read that takes a connection past its rate, no read until
 * the token bucket allows one again (EMQ X 4.4 pauses the connection likewise: it neither
 * drops nor disconnects).
 */

/** Bytes handed to aedes per read (a frame larger than this arrives over several reads, as from the network). */
export const READ_SLICE = 4096

/**
 * Slices one connection is read in a row before the event loop is let turn: its next read
 * then waits for a `setImmediate`, after every other socket's data and the timers due. A
 * connection the node is behind (more than a slice buffered) is otherwise read slice after
 * slice from microtasks, and libuv reads its socket up to 32 times per poll: a publisher's
 * burst of 700 KB held the loop for 30-60 ms, while every other socket's data (a data
 * integration's database answering, other clients) and every timer waited
 * (docs/performance.md, "2026-11-28, session 32: PostgreSQL").
 */
export const SLICES_PER_TURN = 8

/**
 * Bytes read from all connections of the node and handed to aedes whose packets are not all
 * handled yet (node-wide; a QoS 0 PUBLISH is handled once delivered, or its subscriber's
 * socket has drained). Past it, a connection is not read until others' packets are handled:
 * however many publishers flood the node, what it holds in flight (each PUBLISH a Packet,
 * its copy and its closures, about 1.5 KB of heap) is about this many bytes of their frames,
 * not one slice per publisher (5,500 PUBLISHes from 100 publishers with 4 KiB slices, and
 * more with every publisher). One read may take the node past it by its own size (a slice,
 * or a large frame's carried bytes).
 */
export const READ_BUDGET = 64 * 1024

/**
 * How long a connection's read counts against the budget at most while its packets are not
 * handled (ms). A connection known to wait on something slow leaves the budget at once (the
 * broker calls {@link releaseRead} when an ACL backend is asked, or a publish is held for a
 * data action's write); past this, any other read is excused too, so that no slow step stops
 * the node reading every other client for longer. Above the drain deadline
 * (drain-deadline.ts): a flood towards a subscriber that stopped reading is settled by that
 * deadline (its QoS 0 dropped) within the budget. An excused connection is not read again
 * until its packets are handled: what it holds stays bounded by its own read.
 */
export const READ_HOLD_MS = 2000

/** What the budget keeps per connection: the wire. */
export interface BudgetedReader {
  /** Bytes of this connection's last read that count against {@link READ_BUDGET}. */
  readHeld: number
  /** When they were read (ms since the epoch). */
  readHeldAt: number
  /** Waiting in the budget's queue. */
  readWaiting: boolean
}

let readsHeld = 0
let readsPeak = 0
/** The readers whose bytes count now. */
const holders = new Set<BudgetedReader>()
/** The check for reads held past {@link READ_HOLD_MS}, armed while connections wait. */
let excuseTimer: NodeJS.Timeout | null = null
/** Connections refused by the budget, first refused first: they read again in this order. */
const budgetQueue: Duplex[] = []
let wakeScheduled = false
/** The connection being woken from the queue: it may read ahead of the others still waiting. */
let waking: Duplex | null = null

/** Bytes read node-wide whose packets are not all handled yet (for tests and stats). */
export function readBytesInFlight (): number { return readsHeld }

/** The most {@link readBytesInFlight} has been since the last reset (for tests and the bench). */
export function readBytesPeak (reset = false): number {
  const peak = readsPeak
  if (reset) readsPeak = readsHeld
  return peak
}

/** Connections waiting for the read budget (for tests and stats). */
export function readsWaiting (): number { return budgetQueue.length }

/**
 * The connection's previous read is over: aedes reads again only once every packet of its
 * last read is handled, and a closed connection's are gone; or it waits on something slow
 * (see {@link READ_HOLD_MS}). Its bytes leave the budget.
 */
export function releaseRead (reader: BudgetedReader): void {
  if (reader.readHeld === 0) return
  readsHeld -= reader.readHeld
  reader.readHeld = 0
  holders.delete(reader)
  if (budgetQueue.length > 0 && readsHeld < READ_BUDGET && !wakeScheduled) {
    wakeScheduled = true
    queueMicrotask(wakeReaders)
  }
}

/**
 * Whether `socket` may be read now. Below the budget and with nobody waiting, one
 * comparison; otherwise the connection joins the queue (once) and is read again from it, in
 * turn, when the budget has room.
 */
export function admitRead (socket: Duplex, reader: BudgetedReader): boolean {
  if (readsHeld < READ_BUDGET && (budgetQueue.length === 0 || waking === socket)) return true
  if (!reader.readWaiting) {
    reader.readWaiting = true
    budgetQueue.push(socket)
  }
  noteContention()
  excuseLater()
  return false
}

/** Arms the check of {@link excuseStale} (once). */
function excuseLater (): void {
  if (excuseTimer !== null) return
  excuseTimer = setTimeout(excuseStale, READ_HOLD_MS)
  excuseTimer.unref()
}

/**
 * Stops counting the reads held past {@link READ_HOLD_MS}, then reads the waiting
 * connections that now fit; again later while some still wait.
 */
function excuseStale (): void {
  excuseTimer = null
  const before = Date.now() - READ_HOLD_MS
  for (const reader of holders) {
    if (reader.readHeldAt > before) continue
    readsHeld -= reader.readHeld
    reader.readHeld = 0
    holders.delete(reader)
  }
  if (budgetQueue.length > 0) {
    if (readsHeld < READ_BUDGET && !wakeScheduled) {
      wakeScheduled = true
      queueMicrotask(wakeReaders)
    }
    excuseLater()
  }
}

/** A read handed aedes `bytes` bytes (after {@link admitRead}). */
export function holdRead (reader: BudgetedReader, bytes: number): void {
  reader.readHeld = bytes
  reader.readHeldAt = Date.now()
  holders.add(reader)
  readsHeld += bytes
  if (readsHeld > readsPeak) readsPeak = readsHeld
}

/** Reads the waiting connections again, in order, while the budget has room. */
function wakeReaders (): void {
  wakeScheduled = false
  while (budgetQueue.length > 0 && readsHeld < READ_BUDGET) {
    const socket = budgetQueue.shift()!
    const reader = readerOf(socket)
    if (reader !== undefined) reader.readWaiting = false
    waking = socket
    try {
      readAgain(socket)
    } finally {
      waking = null
    }
  }
}

/** How the budget finds a socket's wire (set by wire.ts: read-gate.ts does not import it). */
let readerOf: (socket: Duplex) => BudgetedReader | undefined = () => undefined

/** @internal wire.ts says how to find a socket's wire. */
export function setReaderLookup (lookup: (socket: Duplex) => BudgetedReader | undefined): void {
  readerOf = lookup
}

/** Makes aedes read `socket`, when it is waiting for nothing else (no packet of its last read still being handled). */
function readAgain (socket: Duplex): void {
  const client = (socket as any).client as AedesReader | undefined
  if (socket.destroyed || client === undefined || client._parsingBatch > 0) return
  client._nextBatch()
}

/** A per-connection rate: `count` units per `periodMs` (EMQ X's `100,10s`, `100KB,10s`). */
export interface Rate { count: number, periodMs: number }

/** The connection rate limits; null when off. */
export interface RateLimits { messagesIn: Rate | null, bytesIn: Rate | null }

/**
 * A token bucket of `count` tokens refilled at `count` per `periodMs`: a connection may burst
 * one period's worth, and over time gets no more than its rate (esockd's rate limiter, which
 * EMQ X 4.4 uses for these keys).
 */
class TokenBucket {
  private tokens: number
  private last: number
  private readonly perMs: number
  constructor (private readonly rate: Rate, now: number) {
    this.tokens = rate.count
    this.last = now
    this.perMs = rate.count / rate.periodMs
  }

  /** Takes `n` tokens (the bucket may go below zero); returns ms until it is back at zero. */
  take (n: number, now: number): number {
    this.tokens = Math.min(this.rate.count, this.tokens + (now - this.last) * this.perMs) - n
    this.last = now
    return this.tokens >= 0 ? 0 : Math.ceil(-this.tokens / this.perMs)
  }
}

/** What a gate needs of aedes' client: its batch count and its next read. */
interface AedesReader { _parsingBatch: number, _nextBatch: () => void }

/**
 * The bytes to ask the socket for on aedes' `read(null)`: a slice (or `carried`, the bytes of
 * an incomplete frame the wire keeps, when larger) when more is buffered, else `undefined`
 * (everything, as aedes would read). The common case, a connection the node keeps up with,
 * costs one comparison: its socket holds less than a slice.
 */
export function sliceSize (socket: Duplex, carried: number): number | undefined {
  if (socket.readableLength <= READ_SLICE) return undefined
  const slice = carried > READ_SLICE ? carried : READ_SLICE
  return socket.readableLength > slice && !socket.readableObjectMode ? slice : undefined
}

/**
 * The read side of one connection (see the file's doc). Created by the wire on the first
 * sliced read, or with the wire when rate limits are set. A read that takes everything the
 * socket holds (the node is keeping up) goes through it untouched: no microtask, no clock;
 * only a sliced read is guarded against the parse re-entering, and only a rate-limited
 * connection counts its reads.
 */
export class ReadGate {
  /** A sliced read handed aedes bytes and the microtask that ends its parse has not run yet. */
  private inRead = false
  /** A read was refused while {@link inRead}, or left bytes behind: make it again once the parse has returned. */
  private refused = false
  /** Set while the connection is paused by its rate limits. */
  private timer: NodeJS.Timeout | null = null
  private readonly messages: TokenBucket | null
  private readonly bytes: TokenBucket | null
  /** Whether reads are counted against rate limits. */
  readonly limited: boolean
  /** Times this connection was paused by its rate limits (for tests and the connection's stats). */
  pauses = 0
  /** Slices read in a row (each read again from the last one's microtask) since the event loop last turned for them. */
  private run = 0
  /** Waiting for the event loop's next turn (see {@link SLICES_PER_TURN}). */
  private yielding = false
  private readonly settle = (): void => {
    this.inRead = false
    // nothing left behind: the run of slices is over (the node caught up with this connection)
    if (!this.refused) this.run = 0
    if (this.refused) {
      this.refused = false
      if (this.run < SLICES_PER_TURN) {
        this.readAgain()
      } else {
        this.run = 0
        this.yielding = true
        setImmediate(this.nextTurn)
      }
    }
  }

  private readonly nextTurn = (): void => {
    this.yielding = false
    this.readAgain()
  }

  private readonly resume = (): void => {
    this.timer = null
    this.readAgain()
  }

  constructor (private readonly socket: Duplex, limits: RateLimits | null) {
    const now = Date.now()
    this.messages = limits?.messagesIn != null ? new TokenBucket(limits.messagesIn, now) : null
    this.bytes = limits?.bytesIn != null ? new TokenBucket(limits.bytesIn, now) : null
    this.limited = this.messages !== null || this.bytes !== null
  }

  /** A read now would be nested in the parse of this connection's last slice (see {@link sliced}). */
  get parsing (): boolean { return this.inRead }

  /** Whether aedes may read now; when it may not, the read is made again later by the gate. */
  admit (): boolean {
    if (this.timer !== null) return false
    if (this.inRead || this.yielding) { this.refused = true; return false }
    return true
  }

  /**
   * After a read of a slice: no read until its parse has returned (a microtask), and the
   * bytes left behind are read then. They get no new 'readable' (the stream waits for reads
   * until it is empty), so they are read again once this parse is over, unless aedes is still
   * handling a packet of it (its completion reads), e.g. when this slice ended inside a frame
   * and gave aedes no packet.
   */
  sliced (): void {
    this.run++
    if (!this.inRead) {
      this.inRead = true
      queueMicrotask(this.settle)
    }
    if (this.socket.readableLength > 0) this.refused = true
  }

  /** After a read that handed aedes `bytes` bytes holding `messages` PUBLISHes (only when {@link limited}). */
  count (bytes: number, messages: number): void {
    const now = Date.now()
    const wait = Math.max(this.messages === null ? 0 : this.messages.take(messages, now), this.bytes === null ? 0 : this.bytes.take(bytes, now))
    if (wait > 0 && this.timer === null) {
      this.pauses++
      this.timer = setTimeout(this.resume, wait)
    }
  }

  /** The connection is gone: no read will be made again. */
  close (): void {
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null }
  }

  /** Makes aedes read, when it is waiting for nothing else (no packet of its last read still being handled). */
  private readAgain (): void {
    readAgain(this.socket)
  }
}
