/**
 * How long a QoS 0 delivery holds its publisher back for a subscriber that does not read.
 *
 * A QoS 0 delivery to a subscriber whose socket is above its high-water mark waits for the
 * socket's 'drain' before its publish is handled (fast-deliver.ts): the publisher is not read
 * meanwhile (back-pressure, nothing dropped while the subscriber keeps reading, however
 * slowly). The node's read budget (read-gate.ts) is shared by every connection, so a
 * subscriber that stops reading altogether would, through the publishes waiting for it, stop
 * the node reading anyone. After {@link DRAIN_DEADLINE_MS} without a 'drain' the subscriber
 * is stalled: its waiting deliveries are let go (their frames stay queued for it) and QoS 0
 * messages for it are dropped, counted in `messages/dropped` with reason `queue_full`, until
 * its socket drains again. EMQ X 4.4 does not hold publishers back for a subscriber at all:
 * it queues for it and closes a connection whose send blocks for `send_timeout` (15 s) or
 * whose queue passes `force_shutdown_policy`.
 */
import type { Wire } from './wire.js'

/** A subscriber that has not drained for this long is stalled (see the file's doc). */
export const DRAIN_DEADLINE_MS = 1000

/** Wires with deliveries waiting for 'drain', and since when. */
const waiting = new Map<Wire, number>()
let sweeper: NodeJS.Timeout | null = null

/** `wire` has deliveries waiting for its 'drain' from now on. */
export function watchDrain (wire: Wire): void {
  waiting.set(wire, Date.now())
  sweeper ??= setInterval(sweep, DRAIN_DEADLINE_MS / 4).unref()
}

/** `wire` drained, or its waiting deliveries were let go. */
export function unwatchDrain (wire: Wire): void {
  waiting.delete(wire)
  if (waiting.size === 0 && sweeper !== null) {
    clearInterval(sweeper)
    sweeper = null
  }
}

function sweep (): void {
  const before = Date.now() - DRAIN_DEADLINE_MS
  for (const [wire, since] of waiting) {
    if (since <= before) wire.stall()
  }
}
