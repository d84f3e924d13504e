import { isUtf8 } from 'node:buffer'
import { filterError, parseShared } from './topic.js'

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
 * Reads a variable byte integer at `pos`; returns [value, bytes used].
 */
function readVarint (buf: Buffer, pos: number): [number, number] {
  let value = 0
  let mul = 1
  let i = 0
  let byte: number
  do {
    byte = buf[pos + i++]
    value += (byte & 127) * mul
    mul *= 128
  } while ((byte & 128) !== 0 && i < 4)
  return [value, i]
}

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
    const [propLen, used] = readVarint(buf, p)
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

/** What the SUBACK for one SUBSCRIBE must say where aedes' own answer is wrong. */
export interface PendingSuback {
  /** Filters in packet order, as aedes sees them (after the in-place rewrite). */
  filters: string[]
  /** Reason code to write per filter; null keeps aedes' code. */
  codes: Array<number | null>
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
    const [propLen, used] = readVarint(buf, p)
    p += used + propLen
  }
  for (let i = 0; i < codes.length && p + i < end; i++) {
    const code = codes[i]
    if (code !== null) buf[p + i] = code
  }
}
