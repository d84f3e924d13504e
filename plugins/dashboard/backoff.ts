/**
 * Slows down repeated wrong passwords on the dashboard (sign-in and HTTP Basic), per user
 * name and per client address: after n failures of a key, its next attempt starts no sooner
 * than `min(BASE * 2^(n-1), MAX)` after its previous one. Attempts in parallel are spaced the
 * same way (each reserves its start), so guessing faster by sending many at once does not
 * help; an attempt that would have to wait longer than {@link BACKOFF_MAX_MS} is refused at
 * once instead of held (no pile of waiting requests). A success clears the user's and the
 * address's counts.
 *
 * Invariants: at most {@link MAX_KEYS} keys are tracked (the oldest failure is forgotten
 * first), and a key with no failure for {@link FORGET_MS} is forgotten; the state belongs to
 * the plugin instance of one node (a node counts what it sees; it does not share counts).
 */

/** Delay after the first failure, doubling per failure. */
export const BACKOFF_BASE_MS = 250
/** The longest delay. */
export const BACKOFF_MAX_MS = 8000
/** Keys tracked at most (user names and addresses together). */
const MAX_KEYS = 10000
/** A key whose last failure is this old is forgotten. */
const FORGET_MS = 15 * 60_000

interface Entry { failures: number, lastStart: number, lastFailure: number }

/** The backoff of one node's dashboard. */
export interface LoginBackoff {
  /**
   * Waits until an attempt for these keys may start (at once when none failed) and resolves
   * with 0; or, when that is more than {@link BACKOFF_MAX_MS} away, resolves at once with the
   * seconds to wait (the attempt must be refused; nothing is reserved for it).
   */
  admit: (keys: readonly string[]) => Promise<number>
  /** Counts a failed attempt for the keys. */
  failed: (keys: readonly string[]) => void
  /** Forgets the keys' failures. */
  succeeded: (keys: readonly string[]) => void
}

/** The delay before the next attempt after `failures` failures. */
export function backoffDelay (failures: number): number {
  return failures <= 0 ? 0 : Math.min(BACKOFF_BASE_MS * 2 ** (failures - 1), BACKOFF_MAX_MS)
}

/** A backoff; `now` is the clock (tests may pass their own). */
export function createLoginBackoff (now: () => number = Date.now): LoginBackoff {
  const entries = new Map<string, Entry>()
  const live = (key: string): Entry | undefined => {
    const e = entries.get(key)
    if (e !== undefined && now() - e.lastFailure > FORGET_MS) {
      entries.delete(key)
      return undefined
    }
    return e
  }
  return {
    async admit (keys) {
      let start = now()
      for (const key of keys) {
        const e = live(key)
        if (e !== undefined) start = Math.max(start, e.lastStart + backoffDelay(e.failures))
      }
      const wait = start - now()
      if (wait > BACKOFF_MAX_MS) return Math.ceil(wait / 1000)
      for (const key of keys) {
        const e = live(key)
        if (e !== undefined) e.lastStart = start
      }
      if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait))
      return 0
    },
    failed (keys) {
      const t = now()
      for (const key of keys) {
        const e = live(key)
        if (e !== undefined) {
          e.failures++
          e.lastFailure = t
          // most recent failure last: Map order is insertion order
          entries.delete(key)
          entries.set(key, e)
        } else {
          entries.set(key, { failures: 1, lastStart: t, lastFailure: t })
        }
      }
      while (entries.size > MAX_KEYS) entries.delete(entries.keys().next().value as string)
    },
    succeeded (keys) {
      for (const key of keys) entries.delete(key)
    }
  }
}
