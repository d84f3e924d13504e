/**
 * The dashboard's sign-in backoff (plugins/dashboard/backoff.ts) on a clock of its own: the
 * delay doubles per failure up to its cap, applies to every key of an attempt (user and
 * address), spaces attempts sent together, and a success clears it.
 */
import { jest } from '@jest/globals'
import { BACKOFF_BASE_MS, BACKOFF_MAX_MS, backoffDelay, createLoginBackoff } from '../../../plugins/dashboard/backoff.js'

describe('the dashboard sign-in backoff', () => {
  it('doubles the delay per failure, from BACKOFF_BASE_MS up to BACKOFF_MAX_MS', () => {
    expect([0, 1, 2, 3].map(backoffDelay)).toEqual([0, BACKOFF_BASE_MS, 2 * BACKOFF_BASE_MS, 4 * BACKOFF_BASE_MS])
    expect(backoffDelay(50)).toBe(BACKOFF_MAX_MS)
  })

  it('admits at once with no failure, and after the delay once a key failed', async () => {
    let now = 1_000_000
    const backoff = createLoginBackoff(() => now)
    const started = Date.now()
    await backoff.admit(['user:a', 'addr:x'])
    expect(Date.now() - started).toBeLessThan(BACKOFF_BASE_MS)
    backoff.failed(['user:a', 'addr:x'])
    // the same address with another user waits too; the real timer runs the remaining wait
    now += BACKOFF_BASE_MS - 40
    const t0 = Date.now()
    await backoff.admit(['user:b', 'addr:x'])
    expect(Date.now() - t0).toBeGreaterThanOrEqual(30)
    // an unrelated user from another address does not
    const t1 = Date.now()
    await backoff.admit(['user:c', 'addr:y'])
    expect(Date.now() - t1).toBeLessThan(30)
  })

  it('spaces attempts sent together, and forgets the keys on success', async () => {
    let now = 5_000_000
    const backoff = createLoginBackoff(() => now)
    backoff.failed(['user:a'])
    now += BACKOFF_BASE_MS // the first is due now
    const t0 = Date.now()
    await backoff.admit(['user:a'])
    expect(Date.now() - t0).toBeLessThan(30)
    // the next one, sent at the same moment, is spaced by the delay
    const t2 = Date.now()
    await backoff.admit(['user:a'])
    expect(Date.now() - t2).toBeGreaterThanOrEqual(BACKOFF_BASE_MS - 20)
    backoff.succeeded(['user:a'])
    const t1 = Date.now()
    await backoff.admit(['user:a'])
    expect(Date.now() - t1).toBeLessThan(30)
  })
})

describe('the backoff past its cap', () => {
  it('refuses at once, with the seconds to wait, an attempt it would hold longer than BACKOFF_MAX_MS', async () => {
    jest.useFakeTimers()
    try {
      const now = 9_000_000
      const backoff = createLoginBackoff(() => now)
      for (let i = 0; i < 10; i++) backoff.failed(['user:a'])
      // the next attempt is BACKOFF_MAX_MS away: held (on the fake timer); the one after is refused at once
      void backoff.admit(['user:a'])
      expect(await backoff.admit(['user:a'])).toBe(Math.ceil(2 * BACKOFF_MAX_MS / 1000))
    } finally {
      jest.useRealTimers()
    }
  })
})
