/**
 * The bound on JSON input depth (node/json-depth.ts): the API's bodies and starling-ctl's
 * JSON arguments nest at most 100 levels; the check walks with its own stack.
 */
import { ApiError } from '../../node/errors.js'
import { checkJsonDepth, jsonDepthExceeds, MAX_JSON_DEPTH } from '../../node/json-depth.js'

/** `{"a": ...}` nested `n` levels around 1. */
const objects = (n: number): unknown => JSON.parse('{"a":'.repeat(n) + '1' + '}'.repeat(n))
/** `[[...]]` nested `n` levels. */
const arrays = (n: number): unknown => JSON.parse('['.repeat(n) + ']'.repeat(n))

describe('JSON depth', () => {
  it('counts the outermost object or array as level 1; scalars are level 0', () => {
    expect(jsonDepthExceeds(1, 0)).toBe(false)
    expect(jsonDepthExceeds('text', 0)).toBe(false)
    expect(jsonDepthExceeds(null, 0)).toBe(false)
    expect(jsonDepthExceeds({}, 1)).toBe(false)
    expect(jsonDepthExceeds({}, 0)).toBe(true)
    expect(jsonDepthExceeds({ a: [1, { b: 2 }] }, 3)).toBe(false)
    expect(jsonDepthExceeds({ a: [1, { b: 2 }] }, 2)).toBe(true)
  })

  it('accepts objects and arrays nested up to the limit, refuses one level more', () => {
    expect(jsonDepthExceeds(objects(MAX_JSON_DEPTH))).toBe(false)
    expect(jsonDepthExceeds(arrays(MAX_JSON_DEPTH))).toBe(false)
    expect(jsonDepthExceeds(objects(MAX_JSON_DEPTH + 1))).toBe(true)
    expect(jsonDepthExceeds(arrays(MAX_JSON_DEPTH + 1))).toBe(true)
  })

  it('finds a deep branch beside wide shallow ones', () => {
    const wide = Array.from({ length: 10_000 }, (_, i) => ({ i }))
    expect(jsonDepthExceeds({ wide, deep: objects(MAX_JSON_DEPTH) })).toBe(true)
    expect(jsonDepthExceeds({ wide, deep: objects(MAX_JSON_DEPTH - 1) })).toBe(false)
  })

  it('walks a value 100,000 levels deep without a stack overflow', () => {
    expect(jsonDepthExceeds(objects(100_000))).toBe(true)
    expect(jsonDepthExceeds(arrays(100_000))).toBe(true)
  })

  it('refuses with JsonTooDeepError: code 102, HTTP 400, naming what and the limit', () => {
    expect(checkJsonDepth(objects(3), 'actions')).toEqual(objects(3))
    let err: unknown
    try { checkJsonDepth(arrays(1000), 'actions') } catch (e) { err = e }
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ name: 'JsonTooDeepError', code: 102, status: 400, message: 'actions nests objects and arrays more than 100 levels deep; the limit is 100' })
  })
})
