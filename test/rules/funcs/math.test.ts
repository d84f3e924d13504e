import { ConversionError, lookupOperator } from '../../../rules/funcs/index.js'
import { call } from './call.js'


const op = (name: string, x: unknown, y: unknown): unknown => lookupOperator(name)?.fn(x, y)

describe('math functions', () => {
  it('compute as Erlang math does', () => {
    expect(call('sqrt', 16)).toBe(4)
    expect(call('power', 2, 10)).toBe(1024)
    expect(call('log', Math.E)).toBe(1)
    expect(call('log2', 8)).toBe(3)
    expect(call('exp', 0)).toBe(1)
    expect(call('fmod', -7, 3)).toBe(-1)
    expect(call('cos', 0)).toBe(1)
    expect(call('atan', 1)).toBeCloseTo(Math.PI / 4)
  })

  it('return integers from ceil, floor and round, rounding halves away from zero', () => {
    expect(call('ceil', 1.2)).toBe(2)
    expect(call('floor', -1.2)).toBe(-2)
    expect(call('round', 2.5)).toBe(3)
    expect(call('round', -2.5)).toBe(-3)
    expect(Object.is(call('ceil', -0.5), 0)).toBe(true)
  })

  it('take the absolute value of integers and floats', () => {
    expect(call('abs', -3)).toBe(3)
    expect(call('abs', -1.5)).toBe(1.5)
  })

  it('fail with badarith where Erlang raises (domain errors, overflow)', () => {
    for (const [name, ...args] of [['sqrt', -1], ['log', 0], ['acos', 2], ['atanh', 1], ['exp', 1000], ['fmod', 1, 0], ['power', 0, -1]] as const) {
      expect(() => call(name, ...args)).toThrow(ConversionError)
    }
    try {
      call('sqrt', -1)
    } catch (err) {
      expect((err as ConversionError).reason).toBe('badarith')
    }
  })

  it('fail on arguments that are not numbers', () => {
    expect(() => call('sqrt', '4')).toThrow(ConversionError)
    expect(() => call('abs', undefined)).toThrow(ConversionError)
    expect(() => call('power', 2, true)).toThrow(ConversionError)
  })
})

describe('arithmetic operators', () => {
  it('add numbers and concatenate strings, refusing a mix', () => {
    expect(op('+', 1, 2)).toBe(3)
    expect(op('+', 'a', Buffer.from('b'))).toBe('ab')
    expect(() => op('+', 1, 'a')).toThrow(/unsupported_type_implicit_conversion/)
    expect(() => op('+', 1, undefined)).toThrow(ConversionError)
  })

  it('divide into floats, integer-divide toward zero and take the remainder with the dividend sign', () => {
    expect(op('/', 7, 2)).toBe(3.5)
    expect(op('div', -7, 2)).toBe(-3)
    expect(op('mod', 7, -2)).toBe(1)
    expect(op('-', 1, 3)).toBe(-2)
  })

  it('fail on division by zero and on floats given to div and mod', () => {
    expect(() => op('/', 1, 0)).toThrow(/badarith/)
    expect(() => op('div', 1, 0)).toThrow(/badarith/)
    expect(() => op('mod', 7.5, 2)).toThrow(ConversionError)
  })
})

describe('bitwise functions', () => {
  it('work on integers wider than 32 bits', () => {
    expect(call('bitsl', 1, 40)).toBe(2 ** 40)
    expect(call('bitsr', 2 ** 40, 39)).toBe(2)
    expect(call('bitand', 2 ** 40 + 5, 2 ** 40 + 3)).toBe(2 ** 40 + 1)
    expect(call('bitor', 2 ** 33, 1)).toBe(2 ** 33 + 1)
    expect(call('bitxor', 5, 1)).toBe(4)
    expect(call('bitnot', 0)).toBe(-1)
    expect(call('bitsr', -8, 1)).toBe(-4)
  })

  it('fail on floats', () => {
    expect(() => call('bitand', 1.5, 1)).toThrow(ConversionError)
  })
})
