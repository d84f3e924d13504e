import { ConversionError } from '../../../rules/funcs/index.js'
import { call } from './call.js'


/**
 * The host's wall time and offset at `ms`, written the way Erlang's
 * calendar:system_time_to_rfc3339 writes local time (jest gives each test file its own copy of
 * process.env, so the test cannot switch the time zone; it follows the host's instead).
 */
function local (ms: number): { wall: string, zone: string } {
  const d = new Date(ms)
  const p = (n: number): string => String(n).padStart(2, '0')
  const off = -d.getTimezoneOffset()
  const zone = (off < 0 ? '-' : '+') + p(Math.floor(Math.abs(off) / 60)) + ':' + p(Math.abs(off) % 60)
  return { wall: `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`, zone }
}

describe('now_timestamp', () => {
  it('gives the current time in the unit asked, seconds by default', () => {
    const ms = Date.now()
    expect(Math.abs((call('now_timestamp') as number) - ms / 1000)).toBeLessThan(2)
    expect(Math.abs((call('now_timestamp', 'millisecond') as number) - ms)).toBeLessThan(1000)
    expect(Math.abs((call('now_timestamp', 'microsecond') as number) / 1000 - ms)).toBeLessThan(1000)
    expect(Number.isInteger(call('now_timestamp', 'nanosecond'))).toBe(true)
    expect(() => call('now_timestamp', 'minute')).toThrow(ConversionError)
  })
})

describe('unix_ts_to_rfc3339', () => {
  it('writes local time with a numeric offset (never Z)', () => {
    for (const t of [0, 1700000000, 1719000000]) {
      const { wall, zone } = local(t * 1000)
      expect(call('unix_ts_to_rfc3339', t)).toBe(wall + zone)
    }
  })

  it('writes 3, 6 or 9 fraction digits below a second, zeros included', () => {
    const { wall, zone } = local(1700000000000)
    expect(call('unix_ts_to_rfc3339', 1700000000123, 'millisecond')).toBe(`${wall}.123${zone}`)
    expect(call('unix_ts_to_rfc3339', 1700000000000, 'millisecond')).toBe(`${wall}.000${zone}`)
    expect(call('unix_ts_to_rfc3339', 1700000000000001, 'microsecond')).toBe(`${wall}.000001${zone}`)
    expect(call('unix_ts_to_rfc3339', 1700000000000000000, 'nanosecond')).toBe(`${wall}.000000000${zone}`)
  })

  it('refuses a timestamp that is not an integer', () => {
    expect(() => call('unix_ts_to_rfc3339', 1.5)).toThrow(ConversionError)
    expect(() => call('unix_ts_to_rfc3339', '1')).toThrow(ConversionError)
  })

  it('now_rfc3339 writes the current time', () => {
    expect(call('now_rfc3339')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/)
    expect(call('now_rfc3339', 'millisecond')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/)
    const back = call('rfc3339_to_unix_ts', call('now_rfc3339', 'millisecond'), 'millisecond') as number
    expect(Math.abs(back - Date.now())).toBeLessThan(1000)
  })
})

describe('rfc3339_to_unix_ts', () => {
  it('reads Z and numeric offsets, and fractions in the unit asked', () => {
    expect(call('rfc3339_to_unix_ts', '2023-11-14T22:13:20Z')).toBe(1700000000)
    expect(call('rfc3339_to_unix_ts', '2023-11-15T06:13:20+08:00')).toBe(1700000000)
    expect(call('rfc3339_to_unix_ts', '2023-11-14T22:13:20.5Z', 'millisecond')).toBe(1700000000500)
    expect(call('rfc3339_to_unix_ts', '2023-11-14T22:13:20.5Z')).toBe(1700000000)
    // a nanosecond count this large is exact only in steps of 256 as a JavaScript number
    expect(call('rfc3339_to_unix_ts', '2023-11-14 22:13:20.123456768Z', 'nanosecond')).toBe(1700000000123456768)
  })

  it('round-trips negative times as Erlang does (the fraction takes the sign of the seconds)', () => {
    const text = call('unix_ts_to_rfc3339', -1500, 'millisecond') as string
    expect(text).toMatch(/\.500[+-]/)
    expect(call('rfc3339_to_unix_ts', text, 'millisecond')).toBe(-1500)
    expect(call('rfc3339_to_unix_ts', '1969-12-31T23:59:59.500Z', 'millisecond')).toBe(-1500)
  })

  it('refuses text that is not an RFC 3339 date-time', () => {
    for (const bad of ['2023-11-14', '2023-02-30T00:00:00Z', '2023-11-14T25:00:00Z', '2023-11-14T22:13:20']) {
      expect(() => call('rfc3339_to_unix_ts', bad)).toThrow(ConversionError)
    }
    expect(() => call('rfc3339_to_unix_ts', 1)).toThrow(ConversionError)
  })
})
