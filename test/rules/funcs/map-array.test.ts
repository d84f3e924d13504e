import { ConversionError } from '../../../rules/funcs/index.js'
import { call } from './call.js'


describe('map_get', () => {
  const data = { a: { b: { c: 3 }, n: null }, s: '{"x":{"y":1}}' }

  it('reads nested keys and gives the default for an absent one', () => {
    expect(call('map_get', 'a.b.c', data)).toBe(3)
    expect(call('map_get', 'a.b', data)).toEqual({ c: 3 })
    expect(call('map_get', 'a.x.c', data, -1)).toBe(-1)
    expect(call('map_get', 'a.b.c.d', data, 'none')).toBe('none')
    expect(call('map_get', 'a.n', data, 'none')).toBeNull() // JSON null is a value
  })

  it('reads into JSON text on the way, as EMQ X does for a raw payload', () => {
    expect(call('map_get', 's.x.y', data)).toBe(1)
    expect(call('map_get', 'k', '{"k":"v"}')).toBe('v')
    expect(call('map_get', 'k', 'not json', 0)).toBe(0)
  })

  it('does not read inherited properties', () => {
    expect(call('map_get', 'toString', {})).toBeUndefined()
    expect(call('map_get', '__proto__', {}, 'd')).toBe('d')
  })

  it('has the flat mget form', () => {
    expect(call('mget', 'a.b', { 'a.b': 1 })).toBe(1)
    expect(call('mget', 'z', {}, 0)).toBe(0)
    expect(() => call('mget', 'a', 'x')).toThrow(ConversionError)
  })
})

describe('map_put', () => {
  it('puts at a nested key, creating maps on the way, without touching its input', () => {
    const input = { a: { b: 1 }, keep: [1] }
    const out = call('map_put', 'a.c.d', 2, input) as Record<string, any>
    expect(out).toEqual({ a: { b: 1, c: { d: 2 } }, keep: [1] })
    expect(input).toEqual({ a: { b: 1 }, keep: [1] })
    expect(out.keep).toBe(input.keep)
  })

  it('replaces a value that is not a map and starts from a new map when given none', () => {
    expect(call('map_put', 'a.b', 1, { a: 5 })).toEqual({ a: { b: 1 } })
    expect(call('map_put', 'a', 1, undefined)).toEqual({ a: 1 })
    expect(call('map_put', 'a.b', 1, '{"a":{"c":2}}')).toEqual({ a: { c: 2, b: 1 } })
  })

  it('map_new and mput make and extend maps', () => {
    expect(call('map_new')).toEqual({})
    expect(call('mput', 'k', 1, { j: 0 })).toEqual({ j: 0, k: 1 })
  })
})

describe('array functions', () => {
  const list = [10, 20, 30]

  it('index from 1 and fail past either end', () => {
    expect(call('nth', 1, list)).toBe(10)
    expect(() => call('nth', 0, list)).toThrow(ConversionError)
    expect(() => call('nth', 4, list)).toThrow(ConversionError)
    expect(() => call('nth', 1, 'abc')).toThrow(ConversionError)
  })

  it('take sublists by length or by start and length', () => {
    expect(call('sublist', 5, list)).toEqual(list)
    expect(call('sublist', 0, list)).toEqual([])
    expect(call('sublist', 2, 5, list)).toEqual([20, 30])
    expect(call('sublist', 4, 1, list)).toEqual([])
    expect(() => call('sublist', 5, 1, list)).toThrow(ConversionError)
    expect(() => call('sublist', -1, list)).toThrow(ConversionError)
  })

  it('give the first and last element, failing on an empty array', () => {
    expect(call('first', list)).toBe(10)
    expect(call('last', list)).toBe(30)
    expect(call('length', list)).toBe(3)
    expect(() => call('first', [])).toThrow(ConversionError)
    expect(() => call('last', [])).toThrow(ConversionError)
  })

  it('find elements by exact, deep equality', () => {
    expect(call('contains', { a: [1, 2] }, [1, { a: [1, 2] }])).toBe(true)
    expect(call('contains', 'ab', [Buffer.from('ab')])).toBe(true)
    expect(call('contains', '1', [1])).toBe(false)
    expect(() => call('contains', 1, undefined)).toThrow(ConversionError)
  })
})
