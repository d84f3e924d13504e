import { gunzipSync, gzipSync } from 'node:zlib'
import { ConversionError } from '../../../rules/funcs/index.js'
import { call } from './call.js'


describe('hashes', () => {
  it('give lower-case hex digests of the UTF-8 bytes', () => {
    expect(call('md5', 'abc')).toBe('900150983cd24fb0d6963f7d28e17f72')
    expect(call('sha', 'abc')).toBe('a9993e364706816aba3e25717850c26c9cd0d89d')
    expect(call('sha256', Buffer.from('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    expect(() => call('md5', 1)).toThrow(ConversionError)
  })
})

describe('base64', () => {
  it('encodes bytes and decodes to text or, for non-UTF-8 bytes, a Buffer', () => {
    expect(call('base64_encode', Buffer.from([0xff, 0x00]))).toBe('/wA=')
    expect(call('base64_decode', '/wA=')).toEqual(Buffer.from([0xff, 0x00]))
    expect(call('base64_decode', '5L2g5aW9')).toBe('你好')
  })

  it('refuses text that is not base64', () => {
    expect(() => call('base64_decode', 'a$b=')).toThrow(ConversionError)
    expect(() => call('base64_decode', 'abcde')).toThrow(ConversionError)
    expect(() => call('base64_encode', {})).toThrow(ConversionError)
  })
})

describe('json_encode and json_decode', () => {
  it('round-trip maps, arrays and scalars', () => {
    const v = { a: [1, 'x', true, null], b: { c: 1.5 } }
    expect(call('json_decode', call('json_encode', v))).toEqual(v)
    expect(call('json_encode', 'x')).toBe('"x"')
    expect(call('json_decode', Buffer.from('[1]'))).toEqual([1])
    expect(call('json_decode', '3')).toBe(3)
  })

  it('write undefined as the string "undefined", as jiffy writes atoms', () => {
    expect(call('json_encode', { a: undefined })).toBe('{"a":"undefined"}')
  })

  it('fail on invalid JSON and on values JSON cannot hold', () => {
    expect(() => call('json_decode', '{a:1}')).toThrow(ConversionError)
    expect(() => call('json_decode', { a: 1 })).toThrow(ConversionError)
    expect(() => call('json_encode', Buffer.from([0xff]))).toThrow(ConversionError)
  })
})

describe('compression', () => {
  it('gzip and gunzip interoperate with zlib', () => {
    const packed = call('gzip', 'hello') as Buffer
    expect(gunzipSync(packed).toString()).toBe('hello')
    expect(call('gunzip', gzipSync('world'))).toBe('world')
  })

  it('zip/unzip (raw deflate) and zip_compress/zip_uncompress (zlib) round-trip', () => {
    expect(call('unzip', call('zip', 'abc'))).toBe('abc')
    expect(call('zip_uncompress', call('zip_compress', 'abc'))).toBe('abc')
  })

  it('fail on corrupt input', () => {
    expect(() => call('gunzip', 'not gzip')).toThrow(/data_error/)
    expect(() => call('unzip', Buffer.from([0xff, 0xff]))).toThrow(ConversionError)
  })
})

describe('random values', () => {
  it('make v4 UUIDs with and without hyphens, and floats in [0, 1)', () => {
    expect(call('uuid_v4')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(call('uuid_v4_no_hyphen')).toMatch(/^[0-9a-f]{32}$/)
    expect(call('uuid_v4')).not.toBe(call('uuid_v4'))
    const r = call('random') as number
    expect(r >= 0 && r < 1).toBe(true)
  })
})
