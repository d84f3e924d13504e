/**
 * A full garbage collection when the node is behind its publishers and the memory outside
 * V8's heap (Buffers' backing stores) has grown by {@link VALVE_GROWTH} since it was last low.
 *
 * Under a flood from many publishers every byte read waits in its socket's buffer for that
 * connection's turn at the read budget (read-gate.ts), long enough for V8 to move the Buffer
 * out of its young generation: once read, it is garbage of the old generation, which V8
 * collects when that generation grows or when the memory outside the heap has grown by 64
 * MiB since the last collection. The read Buffers are small on the heap, so the second comes
 * first: the node's resident memory went up and down by some 64 MiB every few seconds
 * (docs/performance.md "Memory under a flood"). This collects at a third of that, and only
 * while reads wait for the budget: a node that keeps up with its clients never gets here, and
 * pays nothing.
 */
import v8 from 'node:v8'
import vm from 'node:vm'

/** Growth of the Buffers' memory, above its lowest since the last collection, that collects. */
export const VALVE_GROWTH = 16 * 1024 * 1024

/** How often the memory is looked at while reads wait for the budget. */
const CHECK_MS = 100

let timer: NodeJS.Timeout | null = null
let contended = false
let floor = Infinity
let gc: (() => void) | null = null
/** Collections made (for tests and the bench's notes). */
let collections = 0

/** Collections the valve has made since the node started. */
export function valveCollections (): number { return collections }

/** Whether the valve is looking at the memory (reads have waited for the budget since its last look). */
export function valveWatching (): boolean { return timer !== null }

/** A read waited for the budget: the node is behind its publishers. */
export function noteContention (): void {
  contended = true
  timer ??= setInterval(check, CHECK_MS).unref()
}

function check (): void {
  if (!contended) {
    clearInterval(timer!)
    timer = null
    floor = Infinity
    return
  }
  contended = false
  const buffers = process.memoryUsage().arrayBuffers
  if (buffers < floor) floor = buffers
  if (buffers - floor > VALVE_GROWTH) {
    collect()
    floor = Infinity
  }
}

function collect (): void {
  if (gc === null) {
    const exposed = (globalThis as any).gc
    if (typeof exposed === 'function') gc = exposed
    else {
      // the documented way to reach V8's collector without starting Node.js with --expose-gc
      v8.setFlagsFromString('--expose-gc')
      gc = vm.runInNewContext('gc')
    }
  }
  collections++
  gc!()
}
