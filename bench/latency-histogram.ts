/**
 * A log-bucketed latency histogram: fixed size, no allocation per sample, mergeable
 * across worker threads by adding the bucket arrays. Bucket width is 2^(1/32) ≈ 2.2 %,
 * which is finer than the run-to-run noise of any broker we measure.
 */

/** Buckets per power of two. */
const SUB_BUCKETS = 32
/** Largest tracked latency: 2^25 µs ≈ 33 s; anything slower lands in the last bucket. */
const MAX_LOG2 = 25
/** Number of buckets in {@link LatencyHistogram.counts}. */
export const HISTOGRAM_BUCKETS = SUB_BUCKETS * MAX_LOG2 + 1

/** Latency samples in microseconds. */
export class LatencyHistogram {
  /** Sample count per bucket; bucket 0 holds everything under 1 µs. */
  readonly counts: Float64Array
  /** Number of samples recorded. */
  total = 0
  /** Largest sample seen, in µs. */
  max = 0

  constructor (counts?: Float64Array) {
    this.counts = counts ?? new Float64Array(HISTOGRAM_BUCKETS)
    if (counts !== undefined) for (let i = 0; i < counts.length; i++) this.total += counts[i]
  }

  /** Records one sample (µs). Negative samples (clock skew) count as 0. */
  record (us: number): void {
    let index = 0
    if (us >= 1) {
      index = Math.floor(Math.log2(us) * SUB_BUCKETS) + 1
      if (index >= HISTOGRAM_BUCKETS) index = HISTOGRAM_BUCKETS - 1
    }
    this.counts[index]++
    this.total++
    if (us > this.max) this.max = us
  }

  /** Adds another histogram's samples into this one. */
  merge (other: LatencyHistogram): void {
    for (let i = 0; i < HISTOGRAM_BUCKETS; i++) this.counts[i] += other.counts[i]
    this.total += other.total
    if (other.max > this.max) this.max = other.max
  }

  /** Forgets every sample. */
  reset (): void {
    this.counts.fill(0)
    this.total = 0
    this.max = 0
  }

  /** The `p`-th percentile (0 < p ≤ 100) in µs, as the geometric middle of its bucket; NaN when empty. */
  percentile (p: number): number {
    if (this.total === 0) return NaN
    const rank = Math.ceil((p / 100) * this.total)
    let seen = 0
    for (let i = 0; i < HISTOGRAM_BUCKETS; i++) {
      seen += this.counts[i]
      if (seen >= rank) return i === 0 ? 0.5 : Math.pow(2, (i - 0.5) / SUB_BUCKETS)
    }
    return this.max
  }
}
