/**
 * Hands back what a node's start-up allocated and no longer uses. Importing the modules,
 * reading the configuration and opening the store leave V8 with young-generation pages and
 * freed old-space pages it keeps committed: about 13 MiB of an idle node's RSS that no
 * ordinary collection returns (measured in docs/performance.md, "Idle node memory"). One
 * memory-reducing full collection, a little after the listeners are open, releases them.
 * It runs once, in the node's own process (`bin/starling`), never in a process that embeds
 * a node (the tests): a full collection of a large heap is not free.
 */
import v8 from 'node:v8'
import vm from 'node:vm'

/** How long after start the collection runs: after the start's last allocations, before anyone measures an idle node. */
export const START_MEMORY_DELAY_MS = 2000

/** V8's `gc()` with options (`--expose-gc`), the memory-reducing flavour. */
type GcFunction = (options: { type: 'major', execution: 'sync', flavor: 'last-resort' }) => void

/** Runs one memory-reducing full collection `delayMs` from now (an unreferenced timer: it never keeps a stopping node alive). */
export function releaseStartMemory (delayMs: number = START_MEMORY_DELAY_MS): void {
  setTimeout(() => {
    // exposes gc() to contexts created from now on; the node's own context is unchanged
    v8.setFlagsFromString('--expose-gc')
    const gc = vm.runInNewContext('gc') as GcFunction
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' })
  }, delayMs).unref()
}
