/**
 * Flapping detection (EMQ X 4.4's emqx_flapping; docs/flapping.md): a client that
 * disconnects too often is banned for a while, so one device in a reconnect loop cannot
 * keep a node busy with CONNECTs. On with `zone.external.enable_flapping_detect` (off by
 * default, as in EMQ X; zones come with the EMQ X 4 migration, until then the `external`
 * zone's key applies to every listener); the policy is `flapping_detect_policy =
 * <count>, <window>, <ban time>` (default `30, 1m, 5m`).
 *
 * Invariants:
 * - Each client id has at most one record: the start of its window and the disconnects
 *   counted in it. A disconnect after the window starts a new one; records older than the
 *   window are purged, so the map holds only clients seen within one window.
 * - More than `count` disconnects within `window` ban the client id for `ban time`: a
 *   banned entry (cluster-wide, `by` "flapping detector"), the alarm `flapping/<client id>`
 *   (which publishes `$SYS/brokers/<node>/alarms/activate`) and a warning; the alarm clears
 *   when the ban ends. The record is dropped with the ban, so counting starts anew after it.
 * - Both keys are read at each disconnect: a change applies at once.
 */
import type { Alarms } from '../alarms/index.js'
import type { BannedService } from '../banned/index.js'
import type { StarlingNode } from '../node.js'
import { FLAPPING_POLICY_PATTERN, parseDuration } from '../config/value-types.js'

/** `by` of the entries the detector makes (EMQ X's). */
export const FLAPPING_BANNED_BY = 'flapping detector'

/** The reason of those entries (EMQ X's). */
export const FLAPPING_REASON = 'flapping is detected'

/** A parsed policy. */
export interface FlappingPolicy {
  /** Disconnects allowed within the window; one more bans. */
  maxCount: number
  windowMs: number
  banMs: number
}

/** Parses `flapping_detect_policy`; undefined when it is not `<count>, <window>, <ban time>`. */
export function parseFlappingPolicy (text: string): FlappingPolicy | undefined {
  if (!FLAPPING_POLICY_PATTERN.test(text)) return undefined
  const [count, window, ban] = text.split(',').map(s => s.trim())
  const windowMs = parseDuration(window)
  const banMs = parseDuration(ban)
  if (windowMs === undefined || banMs === undefined || windowMs === 0 || banMs === 0) return undefined
  return { maxCount: Number(count), windowMs, banMs }
}

/** What the detector uses of the node. */
export type FlappingNode = Pick<StarlingNode, 'config' | 'hooks' | 'logger'>

/** The detector of one node. */
export interface FlappingDetector {
  start: () => void
  stop: () => void
  /** Client ids with a record (tests, the purge). */
  tracked: () => number
}

interface Record_ { startedAt: number, count: number }

/** Creates the detector; it bans through `banned` and raises alarms on `alarms`. */
export function createFlappingDetector (node: FlappingNode, banned: Pick<BannedService, 'add'>, alarms: Pick<Alarms, 'activate' | 'deactivate'>, now: () => number = Date.now): FlappingDetector {
  const logger = node.logger.child({ component: 'flapping' })
  const records = new Map<string, Record_>()
  const bans = new Map<string, ReturnType<typeof setTimeout>>()
  let off: (() => void) | undefined
  let purge: ReturnType<typeof setInterval> | undefined

  const policy = (): FlappingPolicy | undefined =>
    node.config['zone.external.enable_flapping_detect'] === true ? parseFlappingPolicy(node.config.flapping_detect_policy) : undefined

  function ban (clientid: string, username: string | undefined, p: FlappingPolicy, count: number): void {
    records.delete(clientid)
    const until = now() + p.banMs
    logger.warn({ clientid, username, disconnects: count, window_ms: p.windowMs, ban_ms: p.banMs }, 'flapping detected: client banned')
    banned.add({ who: clientid, as: 'client_id', reason: FLAPPING_REASON, by: FLAPPING_BANNED_BY, desc: `${count} disconnects within ${node.config.flapping_detect_policy.split(',')[1].trim()}`, until: Math.ceil(until / 1000) })
      .catch((err: Error) => logger.error({ err, clientid }, 'flapping: cannot add the banned entry'))
    const id = `flapping/${clientid}`
    alarms.activate(id, `client ${clientid} disconnected ${count} times within ${p.windowMs} ms and is banned for ${p.banMs} ms`, { clientid, username: username ?? null, disconnects: count, window_ms: p.windowMs, banned_until: Math.ceil(until / 1000) })
    const previous = bans.get(clientid)
    if (previous !== undefined) clearTimeout(previous)
    const timer = setTimeout(() => { bans.delete(clientid); alarms.deactivate(id) }, p.banMs)
    timer.unref()
    bans.set(clientid, timer)
  }

  function disconnected (clientid: string, username: string | undefined): void {
    const p = policy()
    if (p === undefined || clientid === '') return
    const t = now()
    const r = records.get(clientid)
    if (r === undefined || t - r.startedAt > p.windowMs) {
      records.set(clientid, { startedAt: t, count: 1 })
      return
    }
    r.count++
    if (r.count > p.maxCount) ban(clientid, username, p, r.count)
  }

  return {
    start () {
      off = node.hooks.on('client.disconnected', (e) => { disconnected(e.client_id, e.username) })
      purge = setInterval(() => {
        const p = policy()
        const t = now()
        for (const [id, r] of records) if (p === undefined || t - r.startedAt > p.windowMs) records.delete(id)
      }, 10_000)
      purge.unref()
    },
    stop () {
      off?.()
      if (purge !== undefined) clearInterval(purge)
      for (const timer of bans.values()) clearTimeout(timer)
      bans.clear()
      records.clear()
    },
    tracked: () => records.size
  }
}
