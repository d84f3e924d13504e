import { BitString, ConversionError } from '../../../rules/funcs/index.js'
import { call } from './call.js'


const hex = (h: string): Buffer => Buffer.from(h, 'hex')

describe('bitsize', () => {
  it('counts the bits of a binary or bitstring', () => {
    expect(call('bitsize', '你')).toBe(24)
    expect(call('bitsize', new BitString(hex('f0'), 4))).toBe(4)
    expect(() => call('bitsize', 1)).toThrow(ConversionError)
  })
})

describe('subbits', () => {
  it('reads unaligned unsigned big-endian integers from a 1-based bit offset', () => {
    expect(call('subbits', hex('0ff0'), 5, 8)).toBe(0xff)
    expect(call('subbits', hex('a5'), 2, 3)).toBe(0b010)
  })

  it('takes what remains when the length runs past the end, undefined past the start', () => {
    expect(call('subbits', hex('ff'), 5, 100)).toBe(15)
    expect(call('subbits', hex('ff'), 9, 1)).toBeUndefined()
    expect(call('subbits', hex('ff'), 0, 1)).toBeUndefined()
  })

  it('reads signed and little-endian integers', () => {
    expect(call('subbits', hex('ff'), 1, 8, 'integer', 'signed', 'big')).toBe(-1)
    expect(call('subbits', hex('0100'), 1, 16, 'integer', 'unsigned', 'little')).toBe(1)
    expect(call('subbits', hex('fffe'), 1, 16, 'integer', 'signed', 'little')).toBe(-257)
    // Erlang's <<257:12/little>> is <<1, 1:4>>: the trailing 4 bits hold the high part
    expect(call('subbits', hex('0110'), 1, 12, 'integer', 'unsigned', 'little')).toBe(257)
  })

  it('reads IEEE floats of 16, 32 and 64 bits', () => {
    const b = Buffer.alloc(8)
    b.writeDoubleBE(1.5)
    expect(call('subbits', b, 1, 64, 'float', 'unsigned', 'big')).toBe(1.5)
    b.writeFloatLE(-2.5)
    expect(call('subbits', b.subarray(0, 4), 1, 32, 'float', 'signed', 'little')).toBe(-2.5)
    expect(call('subbits', hex('3c00'), 1, 16, 'float', 'unsigned', 'big')).toBe(1)
    expect(() => call('subbits', hex('ff'), 1, 8, 'float', 'unsigned', 'big')).toThrow(ConversionError)
  })

  it("returns raw bits with the 'bits' type", () => {
    expect(call('subbits', hex('abcd'), 5, 8, 'bits', 'unsigned', 'big')).toEqual(hex('bc'))
    const bits = call('subbits', hex('ff'), 1, 4, 'bits', 'unsigned', 'big') as BitString
    expect(bits).toBeInstanceOf(BitString)
    expect(bits.bitLength).toBe(4)
    expect(bits.bytes).toEqual(hex('f0'))
  })

  it('has the defaults-filled 4- and 5-argument forms and refuses unknown options', () => {
    expect(call('subbits', hex('ff'), 1, 8, 'integer', 'signed')).toBe(-1)
    expect(call('subbits', hex('ff'), 1, 8, 'integer')).toBe(255)
    expect(() => call('subbits', hex('ff'), 1, 8, 'int')).toThrow(ConversionError)
    expect(() => call('subbits', 'ab', 1.5, 8)).toThrow(ConversionError)
  })
})
