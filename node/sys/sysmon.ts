/**
 * Runtime warnings, EMQ X's `sysmon` for a Node.js process: publishes
 * `$SYS/brokers/<node>/sysmon/long_gc`, `long_schedule` and `large_heap` (and logs a
 * warning) when
 *
 * - one garbage-collection pause lasts longer than `sysmon.long_gc` (perf_hooks 'gc' entries);
 * - the event loop was blocked longer than `sysmon.long_schedule` (the largest delay
 *   `monitorEventLoopDelay` saw since the last check, checked every {@link SYSMON_CHECK_MS});
 * - the JavaScript heap in use is above `sysmon.large_heap` (checked with the loop delay).
 *
 * As EMQ X suppresses repeats, each warning is published at most once per
 * {@link SYSMON_SUPPRESS_MS}. `busy_port` and `busy_dist_port` have no Node.js equivalent
 * and are never published. Payloads: docs/sys-topics.md.
 */
import { PerformanceObserver, monitorEventLoopDelay, constants, type ELDHistogram } from 'node:perf_hooks'
import { getHeapStatistics } from 'node:v8'
import type { Logger } from '../logger.js'
import { publishSys, sysTopicPrefix, type SysPublishTarget } from './sys-publish.js'
import type { NodeService } from './sys-publisher.js'

/** How often the event-loop delay and the heap are checked, ms. */
export const SYSMON_CHECK_MS = 500
/** A warning of one kind is published at most once in this window, ms (EMQ X: 2 s). */
export const SYSMON_SUPPRESS_MS = 2000

/** What sysmon uses from the node. */
export interface SysmonNode {
  readonly name: string
  readonly config: { readonly 'sysmon.long_gc': number, readonly 'sysmon.long_schedule': number, readonly 'sysmon.large_heap': number }
  readonly broker: SysPublishTarget['broker']
  readonly logger: Logger
}

/** Payload of `sysmon/long_gc`. */
export interface LongGcWarning {
  node: string
  /** Length of the pause, ms (fractional). */
  duration_ms: number
  /** `minor`, `major`, `incremental`, `weakcb` or `unknown`. */
  gc_kind: string
  /** Heap in use right after it, bytes. */
  heap_used: number
  /** `sysmon.long_gc`, ms. */
  threshold_ms: number
  /** When it was seen, ms since epoch. */
  ts: number
}

/** Payload of `sysmon/long_schedule`. */
export interface LongScheduleWarning {
  node: string
  /** The longest event-loop delay since the last check, ms. */
  duration_ms: number
  /** `sysmon.long_schedule`, ms. */
  threshold_ms: number
  ts: number
}

/** Payload of `sysmon/large_heap`. */
export interface LargeHeapWarning {
  node: string
  /** JavaScript heap in use, bytes. */
  heap_used: number
  /** Heap reserved by V8, bytes. */
  heap_total: number
  /** The most V8 will reserve (`--max-old-space-size`), bytes. */
  heap_limit: number
  /** `sysmon.large_heap`, bytes. */
  threshold: number
  ts: number
}

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb'
}

/** Creates the sysmon service of a node. Nothing is observed until `start()`. */
export function createSysmon (node: SysmonNode): NodeService {
  const logger = node.logger.child({ component: 'sysmon' })
  const target = { broker: node.broker, logger }
  const prefix = sysTopicPrefix(node.name)
  const lastWarned = new Map<string, number>()
  let gcObserver: PerformanceObserver | null = null
  let loopDelay: ELDHistogram | null = null
  let timer: ReturnType<typeof setInterval> | null = null

  function warn (event: 'long_gc' | 'long_schedule' | 'large_heap', payload: { ts: number }): void {
    const last = lastWarned.get(event)
    if (last !== undefined && payload.ts - last < SYSMON_SUPPRESS_MS) return
    lastWarned.set(event, payload.ts)
    logger.warn(payload, `${event} warning`)
    publishSys(target, `${prefix}sysmon/${event}`, JSON.stringify(payload))
  }

  function check (): void {
    const longSchedule = node.config['sysmon.long_schedule']
    if (loopDelay !== null && longSchedule > 0) {
      const worst = loopDelay.max / 1e6
      loopDelay.reset()
      if (worst > longSchedule) {
        const w: LongScheduleWarning = { node: node.name, duration_ms: round(worst), threshold_ms: longSchedule, ts: Date.now() }
        warn('long_schedule', w)
      }
    }
    const largeHeap = node.config['sysmon.large_heap']
    if (largeHeap > 0) {
      const heap = getHeapStatistics()
      if (heap.used_heap_size > largeHeap) {
        const w: LargeHeapWarning = {
          node: node.name,
          heap_used: heap.used_heap_size,
          heap_total: heap.total_heap_size,
          heap_limit: heap.heap_size_limit,
          threshold: largeHeap,
          ts: Date.now()
        }
        warn('large_heap', w)
      }
    }
  }

  return {
    start () {
      if (timer !== null) return
      const longGc = node.config['sysmon.long_gc']
      if (longGc > 0) {
        gcObserver = new PerformanceObserver((list) => {
          for (const entry of list.getEntries()) {
            if (entry.duration <= longGc) continue
            const kind = (entry as any).detail?.kind ?? (entry as any).kind
            const w: LongGcWarning = {
              node: node.name,
              duration_ms: round(entry.duration),
              gc_kind: GC_KINDS[kind] ?? 'unknown',
              heap_used: getHeapStatistics().used_heap_size,
              threshold_ms: longGc,
              ts: Date.now()
            }
            warn('long_gc', w)
          }
        })
        gcObserver.observe({ entryTypes: ['gc'] })
      }
      if (node.config['sysmon.long_schedule'] > 0) {
        // resolution well under the smallest useful threshold; the sampling timer is native
        loopDelay = monitorEventLoopDelay({ resolution: 10 })
        loopDelay.enable()
      }
      timer = setInterval(check, SYSMON_CHECK_MS)
      timer.unref?.()
    },
    stop () {
      if (timer !== null) clearInterval(timer)
      timer = null
      gcObserver?.disconnect()
      gcObserver = null
      loopDelay?.disable()
      loopDelay = null
    }
  }
}

function round (ms: number): number {
  return Math.round(ms * 1000) / 1000
}
