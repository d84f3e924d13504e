/**
 * V8's optimizing compilers (Maglev and TurboFan) start with a node's first work, not with its
 * start (issue 22, "idle node"). Their machine code is part of the `node` binary, and the pages
 * of it a process has run stay in its RSS: a node that starts with them on compiles its start-up
 * code and keeps about 7 MiB more of the binary resident while it sits idle (docs/performance.md
 * "Idle node memory: the optimizing compilers with the first work").
 *
 * So the `starling` program turns both off as its first step, when this module is evaluated
 * (bin/starling.ts imports it before anything else: the code run before it, commander's
 * included, already kept 2 MiB of the compilers resident), and its node (`foreground`,
 * `console`, and the one the daemon `start` runs) runs its start-up in V8's interpreter and baseline
 * compiler, and turns them on again at its first client's CONNECT (bin/foreground.ts), or at
 * the first second in which its event loop is busy for {@link BUSY_SHARE} of the time without
 * one (a bridge, rules, API or cluster work). An idle node never pays for them; one that
 * works runs its first busy second, at most, without optimized code. (The event loop alone
 * cannot tell a first client apart: an idle node's own periodic work, its statistics and a
 * garbage collection, fills up to a fifth of some tenths of a second, 2% of a second.)
 *
 * Flags the user gave Node.js are theirs: with `--no-opt`, `--no-turbofan`, `--no-maglev`,
 * `--jitless` or `--max-opt` among them, nothing here changes anything.
 */
import { setFlagsFromString } from 'node:v8'
import { performance, type EventLoopUtilization } from 'node:perf_hooks'

/** The share of one second the event loop must be busy for the compilers to start. */
export const BUSY_SHARE = 0.1

/** How often the node's busy share is looked at while the compilers are off, ms. */
export const LOOK_EVERY_MS = 1000

const USER_CHOICES = /^--(no-opt|no-turbofan|no-maglev|jitless|max-opt|turbofan|maglev|opt)(=|$)/

/** What {@link deferOptimizers} did. */
export interface DeferredOptimizers {
  deferred: boolean
  /** True once the compilers are on again (or were never turned off). */
  started (): boolean
  /** Turns the compilers on now (idempotent); `why` goes to the watcher's `onStart`. */
  start (why: string): void
  /**
   * Starts watching the event loop; call once the node runs (its start-up is busy by itself).
   * `onStart` hears, once, why the compilers came on.
   */
  watch (onStart?: (why: string) => void): void
}

/**
 * Turns Maglev and TurboFan off unless the user chose their flags (see the module comment).
 * `watch()` then looks at the event loop once a second, on an unref'd timer that never keeps
 * the process alive, until the compilers are on.
 */
export function deferOptimizers (execArgv: readonly string[] = process.execArgv): DeferredOptimizers {
  if (execArgv.some((a) => USER_CHOICES.test(a))) return { deferred: false, started: () => true, start: noop, watch: noop }
  setFlagsFromString('--no-maglev')
  setFlagsFromString('--no-turbofan')
  let on = false
  let timer: NodeJS.Timeout | undefined
  let told: ((why: string) => void) | undefined
  const start = (why: string): void => {
    if (on) return
    on = true
    clearInterval(timer)
    setFlagsFromString('--maglev')
    setFlagsFromString('--turbofan')
    told?.(why)
  }
  const watch = (onStart?: (why: string) => void): void => {
    if (on || timer !== undefined) return
    told = onStart
    let last: EventLoopUtilization = performance.eventLoopUtilization()
    timer = setInterval(() => {
      const now = performance.eventLoopUtilization()
      const busy = performance.eventLoopUtilization(now, last).utilization
      last = now
      if (busy >= BUSY_SHARE) start(`event loop busy ${Math.round(busy * 100)}% of a second`)
    }, LOOK_EVERY_MS)
    timer.unref()
  }
  return { deferred: true, started: () => on, start, watch }
}

function noop (): void {}

/** The `starling` program's compilers: off from the moment this module is evaluated. */
export const optimizers = deferOptimizers()
