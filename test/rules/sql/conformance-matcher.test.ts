import { decodeMarkers, isErrorMarker, matchExpectation, matchValue } from '../conformance.js'

describe('the conformance marker matcher', () => {
  it('subset accepts extra keys; exact does not', () => {
    expect(matchValue({ a: 1, b: 2 }, { a: 1 }, { mode: 'subset' })).toEqual([])
    expect(matchValue({ a: 1, b: 2 }, { a: 1 }, { mode: 'exact' })).toEqual(['$.b: not expected'])
    expect(matchValue({ a: { x: 1, y: 2 } }, { a: { x: 1 } }, { mode: 'subset' })).toEqual([])
  })

  it('arrays must have the same length, elements match in the same mode', () => {
    expect(matchValue([{ a: 1, b: 2 }], [{ a: 1 }], { mode: 'subset' })).toEqual([])
    expect(matchValue([1, 2], [1], { mode: 'subset' })).toEqual(['$: expected 1 elements, got 2: [1,2]'])
  })

  it('reports what differs and where', () => {
    expect(matchValue({ a: { b: [1, 3] } }, { a: { b: [1, 2] } })).toEqual(['$.a.b[1]: expected 2, got 3'])
    expect(matchValue({}, { a: 1 }, { mode: 'subset' })).toEqual(['$.a: missing'])
  })

  it('null matches null and undefined', () => {
    expect(matchValue({ a: undefined }, { a: null }, { mode: 'subset' })).toEqual([])
    expect(matchValue({}, { a: null }, { mode: 'subset' })).toEqual([])
    expect(matchValue({ a: 0 }, { a: null }, { mode: 'subset' })).toEqual(['$.a: expected null, got 0'])
  })

  it.each([
    [1, { $type: 'integer' }, true], [1.5, { $type: 'integer' }, false], ['s', { $type: 'string' }, true],
    [{}, { $type: 'map' }, true], [[], { $type: 'map' }, false], [[], { $type: 'list' }, true],
    [undefined, { $type: 'any' }, false], [0, { $type: 'any' }, true], [true, { $type: 'boolean' }, true],
    [5, { $one_of: [5, 15] }, true], [6, { $one_of: [5, 15] }, false],
    [{ k: 'v', j: 'w' }, { $any_value: 'w' }, true], [{ k: 'v' }, { $any_value: 'w' }, false],
    [Buffer.from([1, 2]), { $bytes_hex: '0102' }, true], ['0102', { $bytes_hex: '0102' }, false],
    [{ bytes: Buffer.from([0xf0]), bitLength: 4 }, { $bits: '1111' }, true], ['101', { $bits: '101' }, true],
    [{ bytes: Buffer.from([0xf0]), bitLength: 3 }, { $bits: '1111' }, false]
  ])('%j against %j is %j', (actual, expected, ok) => {
    expect(matchValue(actual, expected).length === 0).toBe(ok)
  })

  it('$var binds on first sight and must then be equal', () => {
    const vars: Record<string, unknown> = {}
    expect(matchValue(42, { $var: 'T' }, { vars })).toEqual([])
    expect(matchValue(42, { $var: 'T' }, { vars })).toEqual([])
    expect(matchValue(43, { $var: 'T' }, { vars })).toEqual(['$: expected 42, got 43'])
  })

  it('$error is a call that throws', () => {
    expect(isErrorMarker({ $error: true })).toBe(true)
    expect(isErrorMarker({ error: true })).toBe(false)
    expect(matchValue(1, { $error: true })).toEqual(['$: expected the call to throw, got 1'])
  })

  it('decodes input markers', () => {
    expect(decodeMarkers([{ $bytes_hex: 'ff' }, { a: { $bytes_hex: '00' } }, 'x'])).toEqual([Buffer.from([0xff]), { a: Buffer.from([0]) }, 'x'])
  })

  it('checks same_values and absent_keys', () => {
    const expect1 = { output: {}, match: 'subset' as const, same_values: [['a', 'b.c']], absent_keys: ['z'] }
    expect(matchExpectation({ a: 1, b: { c: 1 } }, expect1)).toEqual([])
    expect(matchExpectation({ a: 1, b: { c: 2 }, z: 0 }, expect1)).toEqual([
      '$: expected a, b.c to hold the same value, got [1,2]',
      '$.z: expected absent, got 0'
    ])
  })
})
