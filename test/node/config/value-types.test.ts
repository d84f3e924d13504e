import {
  formatDuration, formatSize, parseAddress, parseBool, parseDuration, parseFloatValue, parseInteger, parseSize
} from '../../../node/config/index.js'

describe('durations', () => {
  it.each([
    ['1m', 60_000],
    ['30s', 30_000],
    ['500ms', 500],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1w', 604_800_000],
    ['1h30m', 5_400_000],
    ['1m30s500ms', 90_500],
    ['1.5m', 90_000],
    ['.5s', 500],
    ['300s', 300_000],
    ['30S', 30_000],
    ['1H30M', 5_400_000],
    ['30', 30_000],
    ['0', 0],
    ['0s', 0],
    ['2.5', 2_500],
    [' 15s ', 15_000]
  ])('reads %p as %p milliseconds', (text, ms) => {
    expect(parseDuration(text)).toBe(ms)
  })

  it.each(['', 'abc', '1q', '1 m', '-1s', '1m-30s', 'ms', '1.2.3s', '1e3s', 's30', '1h 30m'])('refuses %p', (text) => {
    expect(parseDuration(text)).toBeUndefined()
  })

  it.each([
    [0, '0s'], [500, '500ms'], [1_500, '1s500ms'], [60_000, '1m'], [90_000, '1m30s'],
    [5_400_000, '1h30m'], [7_200_000, '2h'], [694_861_001, '1w1d1h1m1s1ms']
  ])('writes %p milliseconds as %p, which reads back the same', (ms, text) => {
    expect(formatDuration(ms)).toBe(text)
    expect(parseDuration(text)).toBe(ms)
  })
})

describe('sizes', () => {
  it.each([
    ['64KB', 65_536],
    ['1MB', 1_048_576],
    ['2GB', 2_147_483_648],
    ['1kb', 1024],
    ['10mb', 10_485_760],
    ['1048576', 1_048_576],
    ['0', 0],
    ['1.5KB', 1536],
    [' 1MB ', 1_048_576]
  ])('reads %p as %p bytes', (text, bytes) => {
    expect(parseSize(text)).toBe(bytes)
  })

  it.each(['', 'abc', '1TB', '1B', '1 MB', '-1KB', '10MB10KB', 'MB', '1M'])('refuses %p', (text) => {
    expect(parseSize(text)).toBeUndefined()
  })

  it.each([[0, '0'], [1000, '1000'], [65_536, '64KB'], [1_048_576, '1MB'], [1_073_741_824, '1GB'], [1_049_600, '1025KB']])(
    'writes %p bytes as %p', (bytes, text) => {
      expect(formatSize(bytes)).toBe(text)
      expect(parseSize(text)).toBe(bytes)
    })
})

describe('booleans and numbers', () => {
  it.each([['on', true], ['off', false], ['true', true], ['false', false], ['ON', true], ['False', false]])(
    'reads %p as %p', (text, value) => {
      expect(parseBool(text)).toBe(value)
    })

  it.each(['yes', 'no', '1', '0', ''])('refuses %p as a boolean', (text) => {
    expect(parseBool(text)).toBeUndefined()
  })

  it('reads integers and refuses decimals, units and overflow', () => {
    expect(parseInteger('1024000')).toBe(1_024_000)
    expect(parseInteger('-3')).toBe(-3)
    expect(parseInteger('1.5')).toBeUndefined()
    expect(parseInteger('10k')).toBeUndefined()
    expect(parseInteger('99999999999999999999')).toBeUndefined()
  })

  it('reads decimal numbers such as 0.75', () => {
    expect(parseFloatValue('0.75')).toBe(0.75)
    expect(parseFloatValue('.5')).toBe(0.5)
    expect(parseFloatValue('2')).toBe(2)
    expect(parseFloatValue('1e3')).toBeUndefined()
    expect(parseFloatValue('abc')).toBeUndefined()
  })
})

describe('addresses', () => {
  it.each([
    ['0.0.0.0:1883', '0.0.0.0', 1883, '0.0.0.0:1883'],
    ['127.0.0.1:11883', '127.0.0.1', 11883, '127.0.0.1:11883'],
    ['1883', '0.0.0.0', 1883, '0.0.0.0:1883'],
    ['[::]:1883', '::', 1883, '[::]:1883'],
    ['[::1]:8083', '::1', 8083, '[::1]:8083'],
    ['localhost:8080', 'localhost', 8080, 'localhost:8080'],
    ['127.0.0.1:0', '127.0.0.1', 0, '127.0.0.1:0'],
    ['0', '0.0.0.0', 0, '0.0.0.0:0']
  ])('reads %p as host %p port %p', (text, host, port, canonical) => {
    expect(parseAddress(text)).toEqual({ host, port, text: canonical })
  })

  it.each(['', ':1883', '1.2.3:80', '256.0.0.1:80', '::1:1883', '[zz]:80', '127.0.0.1:65536', '127.0.0.1', 'host:port', 'a b:1'])(
    'refuses %p', (text) => {
      expect(parseAddress(text)).toBeUndefined()
    })
})
