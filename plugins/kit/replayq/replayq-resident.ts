/**
 * The head of a replay queue held in memory: queued items in sequence order, with their
 * total size, taken from the front. replayq.ts fills it from appends and from the segment
 * files, and puts popped items back into it (`nack`, `reset`).
 *
 * Invariants: entries are in ascending sequence order; `bytes` is the sum of their sizes.
 */

/** One queued item. `size` counts against the cap and the memory budget. */
export interface Entry<T> { seq: number, item: T, size: number }

/** A FIFO of entries with an O(1) take from the front. */
export class ResidentItems<T> {
  /** Sum of the entries' sizes. */
  bytes = 0
  private items: Array<Entry<T> | undefined> = []
  private head = 0

  get length (): number {
    return this.items.length - this.head
  }

  /** The first entry, if any. */
  peek (): Entry<T> | undefined {
    return this.items[this.head]
  }

  /** Adds an entry after every other (its sequence number is the highest). */
  push (e: Entry<T>): void {
    this.items.push(e)
    this.bytes += e.size
  }

  /** Takes the first entry; the caller checked there is one. */
  shift (): Entry<T> {
    const e = this.items[this.head]!
    this.items[this.head++] = undefined
    this.bytes -= e.size
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return e
  }

  /** Puts entries (sorted, none already here) back in sequence order among the entries. */
  putBack (back: Array<Entry<T>>): void {
    if (back.length === 0) return
    const last = back[back.length - 1]!.seq
    const front: Array<Entry<T>> = []
    while (this.length > 0 && this.peek()!.seq < last) front.push(this.shift())
    const merged: Array<Entry<T>> = []
    let i = 0
    let j = 0
    while (i < back.length || j < front.length) {
      merged.push(j >= front.length || (i < back.length && back[i]!.seq < front[j]!.seq) ? back[i++]! : front[j++]!)
    }
    this.items = [...merged, ...this.items.slice(this.head)]
    this.head = 0
    this.bytes = 0
    for (const e of this.items) this.bytes += e!.size
  }
}
