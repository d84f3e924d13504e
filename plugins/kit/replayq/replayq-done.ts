/**
 * Which items of a replay queue are finished (acknowledged, dropped, or lost to a failed
 * write): every sequence number below `commit`, plus a few ranges above it.
 *
 * Invariants:
 * - `ranges` is sorted, its ranges are disjoint, not adjacent, non-empty, and all start above
 *   `commit` (a range reaching `commit` is folded into it). So `commit` is the first
 *   unfinished item and the end of each range is unfinished too.
 * - The set only grows: an item once finished is never unfinished (the COMMIT file is a
 *   snapshot of it, so an older snapshot is always a subset of a newer one).
 * - Ranges are few in practice: they come from acknowledgements out of order (at most the
 *   in-flight batches) and from items dropped behind in-flight ones.
 */
export class DoneSet {
  /** Every sequence number below it is finished. */
  commit: number
  private readonly ranges: Array<[number, number]>

  constructor (commit = 0, ranges: Array<[number, number]> = []) {
    this.commit = commit
    this.ranges = []
    for (const [from, to] of ranges) this.addRange(from, to)
  }

  /** Whether `seq` is finished. */
  has (seq: number): boolean {
    if (seq < this.commit) return true
    const r = this.ranges
    if (r.length === 0) return false
    const i = this.firstAfter(seq) - 1
    return i >= 0 && seq < r[i]![1]
  }

  /** Marks `seq` finished; false when it already was. */
  add (seq: number): boolean {
    if (seq < this.commit) return false
    if (seq === this.commit) {
      this.commit++
      this.absorb()
      return true
    }
    const r = this.ranges
    const i = this.firstAfter(seq)
    const prev = r[i - 1]
    const next = r[i]
    if (prev !== undefined && seq < prev[1]) return false
    const joinPrev = prev !== undefined && prev[1] === seq
    const joinNext = next !== undefined && next[0] === seq + 1
    if (joinPrev && joinNext) {
      prev[1] = next[1]
      r.splice(i, 1)
    } else if (joinPrev) prev[1] = seq + 1
    else if (joinNext) next[0] = seq
    else r.splice(i, 0, [seq, seq + 1])
    return true
  }

  /** Marks `[from, to)` finished. */
  addRange (from: number, to: number): void {
    if (to <= this.commit || to <= from) return
    from = Math.max(from, this.commit)
    const r = this.ranges
    let i = this.firstAfter(from)
    if (i > 0 && r[i - 1]![1] >= from) {
      i--
      from = r[i]![0]
    }
    let j = i
    while (j < r.length && r[j]![0] <= to) {
      to = Math.max(to, r[j]![1])
      j++
    }
    r.splice(i, j - i, [from, to])
    this.absorb()
  }

  /** The first unfinished sequence number at or after `seq`. */
  nextNotDone (seq: number): number {
    if (seq < this.commit) seq = this.commit
    if (this.ranges.length === 0) return seq
    const i = this.firstAfter(seq) - 1
    return i >= 0 && seq < this.ranges[i]![1] ? this.ranges[i]![1] : seq
  }

  /** Whether every item of `[from, to)` is finished. */
  covers (from: number, to: number): boolean {
    return from >= to || this.nextNotDone(from) >= to
  }

  /** The largest end of a range, or `commit` (what the sequence must continue past). */
  highWater (): number {
    const last = this.ranges[this.ranges.length - 1]
    return last === undefined ? this.commit : last[1]
  }

  /** What the COMMIT file records. */
  snapshot (): { commit: number, done: Array<[number, number]> } {
    return { commit: this.commit, done: this.ranges.map(([a, b]) => [a, b]) }
  }

  /** Index of the first range starting after `seq`. */
  private firstAfter (seq: number): number {
    const r = this.ranges
    let lo = 0
    let hi = r.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (r[mid]![0] <= seq) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  private absorb (): void {
    const r = this.ranges
    while (r.length > 0 && r[0]![0] <= this.commit) {
      this.commit = Math.max(this.commit, r[0]![1])
      r.shift()
    }
  }
}
