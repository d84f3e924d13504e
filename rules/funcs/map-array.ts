/**
 * Map and array functions (EMQ X 4.4 `emqx_rule_funcs` "Map Funcs" and "Array Funcs", nested
 * access as `emqx_rule_maps`). Maps are never mutated: `map_put` copies the path it changes,
 * since the map may be a column other expressions still read.
 */
import { ConversionError, badArg } from './errors.js'
import { arrayArg, intArg, isBinary, isMap, jsonDecode, termEquals, textOf } from './value-model.js'
import type { RuleFunction } from './types.js'

/**
 * One step of a nested read: a map's own key; a string holding JSON is decoded first (EMQ X
 * reads `payload.x` from a raw payload this way); anything else has no keys.
 */
function getKey (data: unknown, key: string): unknown {
  if (isBinary(data)) {
    try {
      data = jsonDecode('map_get', data)
    } catch {
      return undefined
    }
  }
  return isMap(data) && Object.hasOwn(data, key) ? data[key] : undefined
}

/**
 * `emqx_rule_maps:nested_get/3`: follows `path`; an absent key (or an `undefined` value) on
 * the way gives `dflt`.
 */
export function nestedGet (path: readonly string[], data: unknown, dflt: unknown): unknown {
  let cur = data
  for (const key of path) {
    cur = getKey(cur, key)
    if (cur === undefined) return dflt
  }
  return cur
}

/** A container to put into: a map as it is, JSON text of a map decoded, anything else a new map. */
function asContainer (data: unknown): Record<string, unknown> {
  if (isMap(data)) return data
  if (isBinary(data)) {
    try {
      const decoded = jsonDecode('map_put', data)
      if (isMap(decoded)) return decoded
    } catch { /* not JSON: replaced by a new map, as EMQ X does */ }
  }
  return {}
}

/** `emqx_rule_maps:nested_put/3`: a copy of `data` with `val` at `path`, maps created on the way. */
export function nestedPut (path: readonly string[], val: unknown, data: unknown, i = 0): unknown {
  if (i === path.length) return val
  const map = asContainer(data)
  const key = path[i]
  return { ...map, [key]: nestedPut(path, val, Object.hasOwn(map, key) ? map[key] : undefined, i + 1) }
}

/** `map_path/1`: a key `a.b.c` is the path `['a', 'b', 'c']`. */
function mapPath (fn: string, key: unknown): string[] {
  return textOf(fn, key).split('.')
}

function mapArg (fn: string, v: unknown): Record<string, unknown> {
  if (isMap(v)) return v
  throw badArg(fn, v, 'a map')
}

function positive (fn: string, v: unknown, min: number): number {
  const n = intArg(fn, v)
  if (n < min) throw badArg(fn, v, `an integer >= ${min}`)
  return n
}

/** map_new, map_get/2,3, map_put/3, and the older flat mget/2,3, mput/3. */
export const mapFunctions: RuleFunction[] = [
  { name: 'map_new', minArgs: 0, maxArgs: 0, fn: () => ({}) },
  {
    name: 'map_get',
    minArgs: 2,
    maxArgs: 3,
    fn: (...args: unknown[]) => nestedGet(mapPath('map_get', args[0]), args[1], args[2])
  },
  { name: 'map_put', minArgs: 3, maxArgs: 3, fn: (key: unknown, val: unknown, map: unknown) => nestedPut(mapPath('map_put', key), val, map) },
  {
    name: 'mget',
    minArgs: 2,
    maxArgs: 3,
    fn: (...args: unknown[]) => {
      const key = textOf('mget', args[0])
      const map = mapArg('mget', args[1])
      return Object.hasOwn(map, key) ? map[key] : args[2]
    }
  },
  {
    name: 'mput',
    minArgs: 3,
    maxArgs: 3,
    fn: (key: unknown, val: unknown, map: unknown) => ({ ...mapArg('mput', map), [textOf('mput', key)]: val })
  }
]

/** nth (1-based), length, sublist/2,3, first, last, contains. */
export const arrayFunctions: RuleFunction[] = [
  {
    name: 'nth',
    minArgs: 2,
    maxArgs: 2,
    fn: (n: unknown, list: unknown) => {
      const i = positive('nth', n, 1)
      const l = arrayArg('nth', list)
      if (i > l.length) throw new ConversionError('nth', 'function_clause', `index ${i} is past the end of an array of ${l.length}`)
      return l[i - 1]
    }
  },
  { name: 'length', minArgs: 1, maxArgs: 1, fn: (list: unknown) => arrayArg('length', list).length },
  {
    name: 'sublist',
    minArgs: 2,
    maxArgs: 3,
    // sublist(Len, List) | sublist(Start, Len, List), Start 1-based (lists:sublist/2,3).
    fn: (...args: unknown[]) => {
      const l = arrayArg('sublist', args[args.length - 1])
      if (args.length === 2) return l.slice(0, positive('sublist', args[0], 0))
      const start = positive('sublist', args[0], 1)
      if (start > l.length + 1) throw new ConversionError('sublist', 'function_clause', `start ${start} is past the end of an array of ${l.length}`)
      return l.slice(start - 1, start - 1 + positive('sublist', args[1], 0))
    }
  },
  {
    name: 'first',
    minArgs: 1,
    maxArgs: 1,
    fn: (list: unknown) => {
      const l = arrayArg('first', list)
      if (l.length === 0) throw new ConversionError('first', 'badarg', 'empty array')
      return l[0]
    }
  },
  {
    name: 'last',
    minArgs: 1,
    maxArgs: 1,
    fn: (list: unknown) => {
      const l = arrayArg('last', list)
      if (l.length === 0) throw new ConversionError('last', 'function_clause', 'empty array')
      return l[l.length - 1]
    }
  },
  {
    name: 'contains',
    minArgs: 2,
    maxArgs: 2,
    fn: (elem: unknown, list: unknown) => arrayArg('contains', list).some((x) => termEquals(x, elem))
  }
]
