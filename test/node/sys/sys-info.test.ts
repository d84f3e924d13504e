import { formatUptime, formatDatetime } from '../../../node/sys/sys-info.js'

describe('uptime and datetime texts', () => {
  it.each([
    [0, '0 seconds'],
    [59_999, '59 seconds'],
    [62_000, '1 minutes, 2 seconds'],
    [3_723_000, '1 hours, 2 minutes, 3 seconds'],
    [3_600_000, '1 hours, 0 minutes, 0 seconds'],
    [(2 * 86400 + 3 * 3600 + 4 * 60 + 5) * 1000, '2 days,3 hours, 4 minutes, 5 seconds']
  ])('writes %i ms of uptime as EMQ X does: %s', (ms, text) => {
    expect(formatUptime(ms)).toBe(text)
  })

  it('writes the local date and time as YYYY-MM-DD HH:MM:SS', () => {
    expect(formatDatetime(new Date(2026, 0, 2, 3, 4, 5))).toBe('2026-01-02 03:04:05')
  })
})
