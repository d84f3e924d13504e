/**
 * What an OpenTSDB resource buffers and writes: data points in `/api/put`'s JSON form, made from
 * the selected data's `metric`, `tags`, `value` and `timestamp` (EMQ X 4.4's `data_to_opentsdb`
 * reads the same fields), with the action's `/api/put` options, so that a buffered write needs
 * nothing of the action to be written after a restart. A run whose data cannot be a data point
 * keeps why, and is refused by the client without being sent.
 */
import { WrongTypeError } from '../../node/errors.js'

/** One data point of `/api/put`. */
export interface DataPoint {
  metric: string
  /** ms since the epoch (OpenTSDB reads a 13-digit timestamp as ms). */
  timestamp: number
  value: number
  tags: Record<string, string>
}

/** A run: its data point, or why its data is none. */
export type PointOrWhy = { d: DataPoint } | { e: string }

/** One buffered write (JSON-encodable): the `/api/put` query, the most points per request, the points. */
export interface OpentsdbWrite {
  q: string
  m: number
  p: PointOrWhy[]
}

/** A compiled `data_to_opentsdb` action: its `/api/put` query and the most points per request. */
export interface OpentsdbAction {
  query: string
  maxBatchSize: number
}

const flag = (v: unknown, byDefault: boolean): boolean => v === undefined || v === '' ? byDefault : v === true || v === 'true'

/** Reads (and checks: 108) the action's params (EMQ X 4.4's names and defaults). */
export function compileOpentsdbAction (params: Record<string, unknown>): OpentsdbAction {
  const whole = (key: string, byDefault: number, min: number): number => {
    const v = params[key] === undefined || params[key] === '' ? byDefault : Number(params[key])
    if (!Number.isInteger(v) || v < min) throw new WrongTypeError(`action data_to_opentsdb: parameter ${key} must be a whole number of at least ${min}, got ${JSON.stringify(params[key])}`)
    return v
  }
  const maxBatchSize = whole('max_batch_size', 20, 1)
  const syncTimeout = whole('sync_timeout', 0, 0)
  const q = new URLSearchParams()
  if (flag(params.summary, true)) q.set('summary', 'true')
  if (flag(params.details, false)) q.set('details', 'true')
  if (flag(params.sync, false)) {
    q.set('sync', 'true')
    q.set('sync_timeout', String(syncTimeout))
  }
  return { query: q.toString(), maxBatchSize }
}

/** The data point of one run, or why the selected data is none. */
export function pointOf (selected: Record<string, unknown>, now = Date.now()): PointOrWhy {
  const { metric, tags, value, timestamp } = selected
  if (typeof metric !== 'string' || metric === '') return { e: 'the rule selected no metric (a string)' }
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
  if (typeof n !== 'number' || !Number.isFinite(n)) return { e: `value of metric ${metric} is not a number` }
  if (tags === null || typeof tags !== 'object' || Array.isArray(tags) || Object.keys(tags).length === 0) {
    return { e: `tags of metric ${metric} are not an object with at least one tag (OpenTSDB needs one)` }
  }
  const t = Number(timestamp)
  return {
    d: {
      metric,
      timestamp: timestamp !== undefined && Number.isInteger(t) && t > 0 ? t : now,
      value: n,
      tags: Object.fromEntries(Object.entries(tags).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))
    }
  }
}

/** The write of one run. */
export function opentsdbRow (action: OpentsdbAction, selected: Record<string, unknown>): OpentsdbWrite {
  return { q: action.query, m: action.maxBatchSize, p: [pointOf(selected)] }
}

/** The kit's merge, split and row count of {@link OpentsdbWrite}s (of one action). */
export const opentsdbWrites = {
  merge: (rows: readonly OpentsdbWrite[]): OpentsdbWrite => ({ q: rows[0].q, m: rows[0].m, p: rows.flatMap((w) => w.p) }),
  split: (w: OpentsdbWrite): OpentsdbWrite[] => w.p.map((p) => ({ q: w.q, m: w.m, p: [p] })),
  rows: (w: OpentsdbWrite): number => w.p.length
}
