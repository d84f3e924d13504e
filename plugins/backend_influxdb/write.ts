/**
 * What an InfluxDB resource buffers and writes: points as line protocol without their
 * timestamp, each with the action's timestamp (in the resource's `precision`) or the node's
 * time (ns) when the action gave none; the timestamp is added when the point is written,
 * in the unit the transport needs.
 */
import { NS_PER, type Precision } from './line-protocol.js'

/** One point: `l` the line without timestamp; `t` the action's timestamp, or `n` the node's time (ns). */
export interface InfluxPoint {
  l: string
  t?: string
  n?: string
}

/** One buffered write (JSON-encodable: it goes to disk with the local buffer on). */
export interface InfluxWrite {
  p: InfluxPoint[]
}

/** The point's timestamp in `unit` (`t` is in `precision`); the node's time is cut to whole units. */
export function timestampIn (point: InfluxPoint, precision: Precision, unit: Precision): string {
  if (point.t !== undefined) {
    if (precision === unit) return point.t
    const ns = BigInt(point.t) * NS_PER[precision]
    return (ns / NS_PER[unit]).toString()
  }
  const ns = BigInt(point.n ?? '0')
  return unit === 'ns' ? ns.toString() : (ns / NS_PER[unit]).toString()
}

/** The line of `point` with its timestamp in `unit`. */
export function lineOf (point: InfluxPoint, precision: Precision, unit: Precision): string {
  return `${point.l} ${timestampIn(point, precision, unit)}`
}

/** The kit's merge, split and row count of {@link InfluxWrite}s. */
export const influxWrites = {
  merge: (rows: readonly InfluxWrite[]): InfluxWrite => ({ p: rows.flatMap((r) => r.p) }),
  split: (w: InfluxWrite): InfluxWrite[] => w.p.map((p) => ({ p: [p] })),
  rows: (w: InfluxWrite): number => w.p.length
}
