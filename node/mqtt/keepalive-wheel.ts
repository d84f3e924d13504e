/**
 * One timer for every connection's keep alive, in place of aedes' `setTimeout` per client
 * (issue 22: a Timeout, its closure and its numbers were about 300 bytes of every idle
 * connection's heap).
 *
 * aedes arms `client._keepaliveTimer` at CONNECT, calls `refresh()` on it for every packet
 * and `clearTimeout` on it at close. A {@link KeepaliveEntry} takes its place: `refresh()`
 * records the time (one clock read, cheaper than re-linking a Timeout), and a wheel of
 * {@link TICK_MS} buckets finds the silent ones. An entry sits in the bucket of the deadline
 * it had when filed; when that bucket comes due, an entry refreshed since moves to the
 * bucket of its new deadline, a silent one times out as aedes' timer would
 * ('keepaliveTimeout', then the client's 'error'). A connection is dropped between its
 * deadline and one tick after it. The timer runs only while entries are filed.
 */
import { performance } from 'node:perf_hooks'

/** The wheel's resolution: how late after its deadline a silent connection may be dropped. */
export const TICK_MS = 100

const KEEPALIVE_ENTRY = Symbol('starling.keepaliveEntry')

/** One client's keep alive: what aedes sees as its timer. */
export class KeepaliveEntry {
  /** When the last packet came (performance.now() ms). */
  last = performance.now()

  constructor (public client: any, public intervalMs: number) {}

  /** aedes calls this for every packet from the client, as on a Timeout. */
  refresh (): this {
    this.last = performance.now()
    return this
  }

  /** So that an accidental `unref()`/`ref()` as on a Timeout does not throw. */
  unref (): this { return this }
  ref (): this { return this }
  hasRef (): boolean { return true }
}

const buckets = new Map<number, KeepaliveEntry[]>()
let filed = 0
let timer: NodeJS.Timeout | null = null
let swept = 0

function tickOf (ms: number): number { return Math.ceil(ms / TICK_MS) }

function file (entry: KeepaliveEntry, deadline: number): void {
  const tick = tickOf(deadline)
  const bucket = buckets.get(tick)
  if (bucket === undefined) buckets.set(tick, [entry])
  else bucket.push(entry)
  filed++
  if (timer === null) {
    swept = Math.floor(performance.now() / TICK_MS)
    // the listeners keep the process alive; entries of closed clients must not
    timer = setInterval(sweep, TICK_MS).unref()
  }
}

function sweep (): void {
  const now = performance.now()
  // bucket t holds deadlines in ((t - 1) x TICK_MS, t x TICK_MS]: due once that has passed
  const due = Math.floor(now / TICK_MS)
  // after a stalled loop many ticks may be due: walk the filed buckets rather than every tick
  const ticks = due - swept > buckets.size ? [...buckets.keys()].filter(t => t <= due).sort((a, b) => a - b) : null
  if (ticks === null) {
    for (let t = swept + 1; t <= due; t++) sweepBucket(t, now)
  } else {
    for (const t of ticks) sweepBucket(t, now)
  }
  swept = due
  if (filed === 0 && timer !== null) { clearInterval(timer); timer = null }
}

function sweepBucket (tick: number, now: number): void {
  const bucket = buckets.get(tick)
  if (bucket === undefined) return
  buckets.delete(tick)
  filed -= bucket.length
  for (let i = 0; i < bucket.length; i++) {
    const entry = bucket[i]
    const client = entry.client
    // closed, or aedes replaced or cleared its timer: forgotten
    if (client === null || client.closed === true || client._keepaliveTimer !== entry) { entry.client = null; continue }
    const deadline = entry.last + entry.intervalMs
    if (deadline > now) { file(entry, deadline); continue }
    entry.client = null
    client.broker.emit('keepaliveTimeout', client)
    client.emit('error', new Error('keep alive timeout'))
  }
}

/**
 * Replaces aedes' keep alive timer of `client` by an entry of the wheel that times out
 * `intervalMs` after the last packet. Nothing for a client without one (keep alive 0).
 */
export function useKeepaliveWheel (client: any, intervalMs: number): void {
  const current = client._keepaliveTimer
  if (current === null || current === undefined) return
  if (!(current instanceof KeepaliveEntry)) {
    clearTimeout(current)
  } else if (current.client === client && (intervalMs >= current.intervalMs ||
    tickOf(current.last + intervalMs) === tickOf(current.last + current.intervalMs))) {
    // the entry is filed in a bucket no later than the new deadline's (connect.ts armed
    // aedes' 1.5 x keepalive + 1 ms; the default backoff's is 1 ms less): the same entry,
    // which that bucket's sweep times out or files again for the new deadline. A second
    // entry would wait in the first one's bucket until its deadline, for every client.
    current.intervalMs = intervalMs
    client._keepaliveInterval = intervalMs
    return
  } else {
    current.client = null
  }
  armKeepalive(client, intervalMs)
}

/**
 * Arms the keep alive of `client` as an entry of the wheel that times out `intervalMs` after
 * the last packet, where aedes would arm a timer (connect.ts, for the CONNECTs it handles).
 */
export function armKeepalive (client: any, intervalMs: number): void {
  const entry = new KeepaliveEntry(client, intervalMs)
  client._keepaliveInterval = intervalMs
  client._keepaliveTimer = entry
  client[KEEPALIVE_ENTRY] = entry
  file(entry, entry.last + intervalMs)
}

/** The connection of `client` closed: its entry no longer holds the client. */
export function releaseKeepalive (client: any): void {
  const entry: KeepaliveEntry | undefined = client?.[KEEPALIVE_ENTRY]
  if (entry !== undefined) entry.client = null
}

/** Number of entries filed (tests). */
export function keepaliveEntries (): number { return filed }
