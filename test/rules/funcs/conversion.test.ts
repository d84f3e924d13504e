import { ConversionError } from '../../../rules/funcs/index.js'
import { call } from './call.js'


describe('str', () => {
  it('writes numbers, atoms, maps and arrays as EMQ X does', () => {
    expect(call('str', 12)).toBe('12')
    expect(call('str', 1.5)).toBe('1.5')
    expect(call('str', 0.1 + 0.2)).toBe('0.3') // 10 decimals, compact
    expect(call('str', 1 / 3)).toBe('0.3333333333')
    expect(call('str', 2 ** 60)).toBe('1152921504606846976')
    expect(call('str', true)).toBe('true')
    expect(call('str', undefined)).toBe('undefined')
    expect(call('str', { a: 1, b: 'x' })).toBe('{"a":1,"b":"x"}')
    expect(call('str', [1, 2, 3])).toBe('[1,2,3]')
    expect(call('str', [104, 105])).toBe('hi') // a printable list is an Erlang string
    expect(call('str', Buffer.from('abc'))).toBe('abc')
  })

  it('str_utf8 keeps UTF-8 text and refuses invalid bytes', () => {
    expect(call('str_utf8', Buffer.from('你好'))).toBe('你好')
    expect(call('str_utf8', 3)).toBe('3')
    expect(() => call('str_utf8', Buffer.from([0xff, 0xfe]))).toThrow(ConversionError)
  })
})

describe('int and float', () => {
  it('convert numeric text in Erlang syntax', () => {
    expect(call('int', '-12')).toBe(-12)
    expect(call('int', '+7')).toBe(7)
    expect(call('int', '3.99')).toBe(3)
    expect(call('int', '1.5e3')).toBe(1500)
    expect(call('int', true)).toBe(1)
    expect(call('int', false)).toBe(0)
    expect(call('float', '2')).toBe(2)
    expect(call('float', '2.5')).toBe(2.5)
    expect(call('float', Buffer.from('0.25'))).toBe(0.25)
  })

  it('fail on text that is not a number, with the statement not matching', () => {
    for (const bad of ['', ' 1', '1a', '0x10', '1e3', '.5', '1.', 'abc']) {
      expect(() => call('int', bad)).toThrow(ConversionError)
    }
    expect(() => call('int', undefined)).toThrow(/invalid_number/)
    expect(() => call('int', { a: 1 })).toThrow(ConversionError)
    expect(() => call('float', 'x')).toThrow(ConversionError)
    expect(() => call('float', true)).toThrow(ConversionError)
  })
})

describe('bool', () => {
  it("converts only true/false, 'true'/'false' and 1/0", () => {
    expect(call('bool', Buffer.from('true'))).toBe(true)
    expect(call('bool', false)).toBe(false)
    for (const bad of ['TRUE', 'yes', 2, '1', undefined, null]) {
      expect(() => call('bool', bad)).toThrow(ConversionError)
    }
  })
})

describe('map', () => {
  it('decodes JSON objects and pairs, refusing other JSON', () => {
    expect(call('map', { a: 1 })).toEqual({ a: 1 })
    expect(call('map', [['a', 1], ['b', 2]])).toEqual({ a: 1, b: 2 })
    expect(() => call('map', '[1]')).toThrow(ConversionError)
    expect(() => call('map', 'not json')).toThrow(ConversionError)
    expect(() => call('map', 1)).toThrow(/invalid_map/)
  })
})

describe('float2str, bin2hexstr, hexstr2bin', () => {
  it('formats floats with the given decimals, compacted', () => {
    expect(call('float2str', 2, 3)).toBe('2.0')
    expect(call('float2str', 3.14159, 2)).toBe('3.14')
    expect(call('float2str', 1.26, 1)).toBe('1.3')
    expect(call('float2str', 7, 0)).toBe('7')
    expect(() => call('float2str', 'x', 2)).toThrow(ConversionError)
    expect(() => call('float2str', 1.5, -1)).toThrow(ConversionError)
  })

  it('writes upper-case hex and reads hex of either case', () => {
    expect(call('bin2hexstr', Buffer.from([0xab, 0x01]))).toBe('AB01')
    expect(call('bin2hexstr', 'A')).toBe('41')
    expect(call('hexstr2bin', '414243')).toBe('ABC')
    expect(call('hexstr2bin', 'ff')).toEqual(Buffer.from([0xff]))
    // bytes Erlang would not print as text stay a Buffer even when they are valid UTF-8
    expect(call('hexstr2bin', '0102')).toEqual(Buffer.from([1, 2]))
    expect(call('hexstr2bin', '6869')).toBe('hi')
    expect(() => call('hexstr2bin', 'zz')).toThrow(ConversionError)
    expect(() => call('bin2hexstr', 12)).toThrow(ConversionError)
  })
})

describe('type tests', () => {
  it('classify values', () => {
    expect(call('is_null', undefined)).toBe(true)
    expect(call('is_null', null)).toBe(true)
    expect(call('is_null', 0)).toBe(false)
    expect(call('is_not_null', '')).toBe(true)
    expect(call('is_str', Buffer.from('x'))).toBe(true)
    expect(call('is_bool', 'true')).toBe(false)
    expect(call('is_int', 2 ** 40)).toBe(true)
    expect(call('is_float', 1.5)).toBe(true)
    expect(call('is_num', '1')).toBe(false)
    expect(call('is_map', [])).toBe(false)
    expect(call('is_map', Buffer.from('{}'))).toBe(false)
    expect(call('is_array', {})).toBe(false)
  })
})
