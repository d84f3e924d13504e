import { ConversionError } from '../../../rules/funcs/index.js'
import { call } from './call.js'


// 2024-02-29T16:00:00.123456789Z, a leap day
const NS = 1709222400123456789n
const MS = 1709222400123

describe('format_date', () => {
  it('formats every directive at an offset', () => {
    expect(call('format_date', 'second', '+08:00', '%Y-%m-%d %H:%M:%S %z %:z %::z', 1709222400)).toBe('2024-03-01 00:00:00 +0800 +08:00 +08:00:00')
    expect(call('format_date', 'millisecond', 'Z', '%H:%M:%S.%3N|%6N|%N', MS)).toBe('16:00:00.123|123000|123000000')
    expect(call('format_date', 'nanosecond', -3600, '%d %H %N', Number(NS))).toMatch(/^29 15 123456\d{3}$/)
    expect(call('format_date', 'second', '-05:30', '%z', 0)).toBe('-0530')
  })

  it('keeps other characters literally and formats now without an epoch', () => {
    expect(call('format_date', 'second', 'Z', 'at %% %Q')).toBe('at %% %Q')
    expect(call('format_date', 'second', 'Z', '%Y')).toBe(String(new Date().getUTCFullYear()))
  })

  it('refuses bad units and offsets', () => {
    expect(() => call('format_date', 'hour', 'Z', '%Y', 0)).toThrow(ConversionError)
    expect(() => call('format_date', 'second', '+25:00', '%Y', 0)).toThrow(ConversionError)
    expect(() => call('format_date', 'second', 'EST', '%Y', 0)).toThrow(ConversionError)
  })
})

describe('date_to_unix_ts', () => {
  it('reads text with its own offset (date_to_unix_ts/3)', () => {
    expect(call('date_to_unix_ts', 'second', '%Y-%m-%d %H:%M:%S%:z', '2024-03-01 00:00:00+08:00')).toBe(1709222400)
    expect(call('date_to_unix_ts', 'millisecond', '%Y-%m-%dT%H:%M:%S.%3N%z', '2024-02-29T16:00:00.123+0000')).toBe(MS)
    expect(call('date_to_unix_ts', 'second', '%Y-%m-%dT%H:%M:%S.%3N%z', '2024-02-29T16:00:00.999+0000')).toBe(1709222400)
  })

  it('applies the offset argument to text without one (date_to_unix_ts/4)', () => {
    expect(call('date_to_unix_ts', 'second', '+08:00', '%Y-%m-%d %H:%M:%S', '2024-03-01 00:00:00')).toBe(1709222400)
    expect(call('date_to_unix_ts', 'second', '+01:00', '%Y-%m-%d %H:%M:%S%z', '2024-03-01 00:00:00+0800')).toBe(1709222400)
  })

  it('round-trips through format_date across a leap day', () => {
    for (const t of [0, 951782400, 1709222400, 1735689599]) {
      const text = call('format_date', 'second', '+07:00', '%m--%d--%Y---%H:%M:%S%z', t)
      expect(call('date_to_unix_ts', 'second', '%m--%d--%Y---%H:%M:%S%z', text)).toBe(t)
    }
  })

  it('fails on text that does not fit the format', () => {
    expect(() => call('date_to_unix_ts', 'second', '%Y-%m-%d', '2024-xx-01')).toThrow(ConversionError)
    expect(() => call('date_to_unix_ts', 'second', '%Y-%m-%d', '2024-1')).toThrow(ConversionError)
    expect(() => call('date_to_unix_ts', 'second', '%Y-%m', '2024-13')).toThrow(ConversionError)
  })
})

describe('timezone_to_second', () => {
  it('reads offsets in every form EMQ X accepts', () => {
    expect(call('timezone_to_second', '+08:00')).toBe(28800)
    expect(call('timezone_to_second', '-0130')).toBe(-5400)
    expect(call('timezone_to_second', '+01:02:03')).toBe(3723)
    expect(call('timezone_to_second', 'Z')).toBe(0)
    expect(call('timezone_to_second', 60)).toBe(60)
    expect(typeof call('timezone_to_second', 'local')).toBe('number')
    expect(() => call('timezone_to_second', '+8')).toThrow(ConversionError)
  })
})
