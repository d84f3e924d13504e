import { isUtf8 } from 'node:buffer'
import { filterError, parseShared } from './topic.js'
import { readVarint, varintSize } from './wire-bytes.js'

/** Subscription features the broker offers (`mqtt.shared_subscription`, `mqtt.wildcard_subscription`, `mqtt.max_topic_levels`). */
export interface SubscribePolicy {
  sharedSubscription: boolean
  wildcardSubscription: boolean
  maxTopicLevels: number
}

/** MQTT 5 SUBACK reason codes the wire layer sets. MQTT 3.1.1 has only 0x80 for any failure. */
export const SUBACK_FAILURE_V3 = 0x80
export const TOPIC_FILTER_INVALID = 0x8f
export const SHARED_NOT_SUPPORTED = 0x9e
export const WILDCARDS_NOT_SUPPORTED = 0xa2

/**
 * Scans the filters of a complete SUBSCRIBE or UNSUBSCRIBE frame (body at [body, end)) and
 * rewrites some in place, keeping the frame's length:
 * - a valid `$share/<group>/<filter>` gets its `$` replaced by U+0000, so aedes (which refuses
 *   `$share/` with 0x9E) subscribes it as a plain filter and our router sees the group;
 * - a filter we refuse (invalid, or a feature that is off) has its separators and wildcards
 *   replaced by control characters, so aedes sees a valid one-level filter (distinct from the
 *   other refused ones, so aedes does not merge them), the authorizer denies it, and the
 *   SUBACK is patched with the code recorded here.
 * Returns, for a SUBSCRIBE, the filters as aedes will see them and the SUBACK code to apply
 * per filter (null = keep aedes' answer); null for an UNSUBSCRIBE.
 */
export function scanSubscribe (buf: Buffer, body: number, end: number, isSubscribe: boolean,
  version: number, policy: SubscribePolicy): PendingSuback | null {
  let p = body + 2 // packet identifier
  if (version === 5) {
    // the validator has checked the frame: the property length is well-formed
    const propLen = readVarint(buf, p, end)
    const used = varintSize(propLen)
    p += used + propLen
  }
  const codes: Array<number | null> = []
  const filters: string[] = []
  while (p + 2 <= end) {
    const len = buf.readUInt16BE(p)
    const start = p + 2
    const stop = start + len
    if (stop > end || len === 0) break // malformed: aedes' own checks answer it
    const code = isUtf8(buf.subarray(start, stop))
      ? refusal(buf.toString('utf8', start, stop), version, policy)
      : (version === 5 ? TOPIC_FILTER_INVALID : SUBACK_FAILURE_V3) // [MQTT-1.5.4-1]
    if (code === 'share') {
      buf[start] = 0 // '$share/' -> '\0share/'
      codes.push(null)
    } else if (code !== null) {
      markRefused(buf, start, stop)
      codes.push(code)
    } else {
      codes.push(null)
    }
    filters.push(buf.toString('utf8', start, stop))
    p = stop + (isSubscribe ? 1 : 0)
  }
  return isSubscribe ? { filters, codes } : null
}

/**
 * MQTT 5: 0x9E or 0xA2 when a filter of the SUBSCRIBE uses shared subscriptions or wildcards
 * while they are off, 0 otherwise. The CONNACK said they are not available, so using them is
 * "a Protocol Error. The Server uses DISCONNECT with Reason Code 0x9E (Shared Subscriptions
 * not supported)" / "0xA2 (Wildcard Subscriptions not supported)" (3.2.2.3.13, 3.2.2.3.11);
 * the first such filter decides. MQTT 3.1.1 clients, who were told nothing, get SUBACK 0x80.
 */
export function unsupportedFeature (pending: PendingSuback): number {
  const codes = pending.codes
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i]
    if (code === SHARED_NOT_SUPPORTED || code === WILDCARDS_NOT_SUPPORTED) return code
  }
  return 0
}

/** What the SUBACK for one SUBSCRIBE must say where aedes' own answer is wrong. */
export interface PendingSuback {
  /** Filters in packet order, as aedes sees them (after the in-place rewrite). */
  filters: string[]
  /** Reason code to write per filter; null keeps aedes' code. */
  codes: Array<number | null>
  /** Which filters the wire refused (set by {@link PendingSubacks.add}; later codes are the authorizer's). */
  refusedByWire?: boolean[]
}

/**
 * The SUBACK corrections of one connection's SUBSCRIBEs not yet answered, by packet id, and
 * an index of the filters that have a code in them, so that {@link isRefused} (called by the
 * authorizer for every filter aedes subscribes) is one lookup instead of a scan of every
 * pending SUBSCRIBE, which made a burst of pipelined SUBSCRIBEs cost quadratic time.
 *
 * Invariant: `refused.get(f)` is the number of entries of `byId` in which the first
 * occurrence of `f` (the one `indexOf` finds) was refused by the wire (it had a code when
 * the entry was added); filters with none are absent. Codes the authorizer sets later (a
 * QoS downgrade, an ACL denial) are not refusals: a copy of the filter pipelined behind is
 * authorized on its own. Entries change only through {@link add}, {@link take} and {@link setCode}, which
 * keep it. Owned by one Wire; not shared between connections.
 */
export class PendingSubacks {
  private readonly byId = new Map<number, PendingSuback>()
  /** Created when the first filter gets a code: most connections never have one. */
  private refused: Map<string, number> | null = null

  /** Records the corrections for SUBSCRIBE `id`; a packet id reused before its SUBACK replaces the older entry. */
  add (id: number, pending: PendingSuback): void {
    pending.refusedByWire = pending.codes.map(hasCode)
    const older = this.byId.get(id)
    if (older !== undefined) this.count(older, -1)
    this.byId.set(id, pending)
    this.count(pending, 1)
  }

  /** Removes and returns the corrections for SUBSCRIBE `id` (its SUBACK is going out); undefined if none. */
  take (id: number): PendingSuback | undefined {
    const pending = this.byId.get(id)
    if (pending !== undefined) {
      this.byId.delete(id)
      this.count(pending, -1)
    }
    return pending
  }

  /**
   * Sets `code` on the first occurrence of `filter` in the oldest pending SUBSCRIBE where it
   * has none yet. O(pending SUBSCRIBEs): called only for ACL denials and capped QoS.
   */
  setCode (filter: string, code: number): void {
    for (const pending of this.byId.values()) {
      const i = pending.filters.indexOf(filter)
      if (i !== -1 && pending.codes[i] === null) {
        pending.codes[i] = code
        return
      }
    }
  }

  /** True when `filter` has a code in some pending SUBSCRIBE (first occurrence per SUBSCRIBE). */
  isRefused (filter: string): boolean {
    return this.refused !== null && this.refused.has(filter)
  }

  /** Adds (`delta` 1) or removes (-1) the filters of `pending` whose first occurrence has a code. */
  private count (pending: PendingSuback, delta: 1 | -1): void {
    const { filters } = pending
    const refused = pending.refusedByWire ?? []
    if (!refused.includes(true)) return // the common case: nothing refused, nothing to index
    // a filter may repeat in one SUBSCRIBE: only its first occurrence counts (see the invariant)
    const seen = new Set<string>()
    for (let i = 0; i < filters.length; i++) {
      const filter = filters[i]
      if (seen.has(filter)) continue
      seen.add(filter)
      if (refused[i]) this.adjust(filter, delta)
    }
  }

  private adjust (filter: string, delta: 1 | -1): void {
    const refused = this.refused ??= new Map()
    const n = (refused.get(filter) ?? 0) + delta
    if (n > 0) refused.set(filter, n)
    else refused.delete(filter)
  }
}

function hasCode (code: number | null): boolean {
  return code !== null
}

/** The SUBACK code for a refused filter, 'share' for a valid shared one, or null. */
function refusal (filter: string, version: number, policy: SubscribePolicy): number | 'share' | null {
  const failure = (v5: number): number => version === 5 ? v5 : SUBACK_FAILURE_V3
  let shared
  try {
    shared = parseShared(filter)
  } catch {
    return failure(TOPIC_FILTER_INVALID)
  }
  const real = shared ? shared.filter : filter
  if (filterError(real, policy.maxTopicLevels) !== null) return failure(TOPIC_FILTER_INVALID)
  if (shared && !policy.sharedSubscription) return failure(SHARED_NOT_SUPPORTED)
  if (!policy.wildcardSubscription && (real.includes('+') || real.includes('#'))) return failure(WILDCARDS_NOT_SUPPORTED)
  if (shared && filter.startsWith('$share/')) return 'share'
  return null
}

/**
 * Turns a refused filter into a valid one-level filter of the same length, one to one:
 * `+` -> U+0002, `#` -> U+0003, `/` -> U+0004, U+0000 -> U+0005.
 */
function markRefused (buf: Buffer, start: number, stop: number): void {
  for (let k = start; k < stop; k++) {
    const b = buf[k]
    if (b === 0x2b) buf[k] = 2
    else if (b === 0x23) buf[k] = 3
    else if (b === 0x2f) buf[k] = 4
    else if (b === 0) buf[k] = 5
  }
}

/** Writes the recorded codes into a SUBACK frame body in place. */
export function patchSuback (buf: Buffer, body: number, end: number, version: number, codes: Array<number | null>): void {
  let p = body + 2
  if (version === 5) {
    // the validator has checked the frame: the property length is well-formed
    const propLen = readVarint(buf, p, end)
    const used = varintSize(propLen)
    p += used + propLen
  }
  for (let i = 0; i < codes.length && p + i < end; i++) {
    const code = codes[i]
    if (code !== null) buf[p + i] = code
  }
}
