/**
 * Reading and writing nested values as EMQ X 4's `emqx_rule_maps` and `emqx_rule_runtime`
 * do: paths `a.x.y`, 1-based indexes (`a[1]`, `a[-1]` from the end), ranges (`a[2..4]`),
 * the JSON payload decoded on first use, and `AS` targets that build nested maps and arrays.
 *
 * Invariants: values in the columns and in a decoded payload are shared, never mutated;
 * a nested write copies each map or array on its way (copy on write). Only the output map
 * being built (`Scope.sel`) is written in place.
 */
import { SqlEvalError } from './errors.js'
import { describe, isBinary, isMap } from './values.js'

/**
 * What an expression is evaluated against. `sel` is the output built so far (SELECT fields
 * see the aliases before them), `cols` the event's columns; a name is looked up in `sel`
 * first. `rawJson`/`json` cache the last decoded payload for this run.
 */
export interface Scope {
  sel: Record<string, unknown>
  cols: Record<string, unknown>
  rawJson: unknown
  json: unknown
}

/** A new scope over `cols` with an empty output. */
export function newScope (cols: Record<string, unknown>): Scope {
  return { sel: {}, cols, rawJson: undefined, json: undefined }
}

const NOT_JSON = Symbol('not JSON')

/**
 * Decoded payloads per columns object: the runtime builds one columns object per event and
 * runs every rule of that event on it, so a payload is parsed once per event, not per rule.
 * (Decoded values are never mutated: aliases that write into them copy.)
 */
const decodedByColumns = new WeakMap<object, { raw: unknown, json: unknown, error?: SqlEvalError }>()

function parseJson (raw: string | Buffer, cols: Record<string, unknown>): unknown {
  const shared = decodedByColumns.get(cols)
  if (shared !== undefined && shared.raw === raw) return shared.json
  let json: unknown
  try {
    json = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'))
  } catch {
    json = NOT_JSON
  }
  decodedByColumns.set(cols, { raw, json })
  return json
}

/**
 * The payload decoded for `payload.<path>`: a binary is parsed as JSON (cached per run); a
 * payload that is not JSON fails with `decode_json_failed` (the statement does not match).
 */
export function decodePayload (v: unknown, s: Scope): unknown {
  if (!isBinary(v)) return v
  if (v === s.rawJson) return s.json
  const json = parseJson(v, s.cols)
  if (json === NOT_JSON) {
    // one error per event, thrown for every rule that reads this payload
    const shared = decodedByColumns.get(s.cols)!
    throw (shared.error ??= SqlEvalError.cheap('decode_json_failed', `the payload is not JSON: ${describe(v)}`))
  }
  s.json = json
  s.rawJson = v
  return s.json
}

/** A binary met inside a path (`p.a` where `p` is the raw payload): its JSON, or undefined. */
function decodeLoose (v: string | Buffer, s: Scope): unknown {
  if (v === s.rawJson) return s.json
  const json = parseJson(v, s.cols)
  if (json === NOT_JSON) return undefined
  s.rawJson = v
  s.json = json
  return json
}

/** `v.key`: a map's own key; a binary is read as JSON first; anything else gives undefined. */
export function getKey (v: unknown, key: string, s: Scope): unknown {
  if (typeof v === 'string' || Buffer.isBuffer(v)) v = decodeLoose(v, s)
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined
  return Object.hasOwn(v, key) ? (v as Record<string, unknown>)[key] : undefined
}

/** Element `i` (1-based; negative from the end; 0 or out of range is undefined). */
export function nth (list: unknown[], i: number): unknown {
  if (!Number.isInteger(i) || i === 0) return undefined
  return i > 0 ? list[i - 1] : list[list.length + i]
}

/** `v[i]`: as {@link nth}; a binary is read as JSON first; a non-array gives undefined. */
export function getIndex (v: unknown, i: unknown, s: Scope): unknown {
  if (typeof v === 'string' || Buffer.isBuffer(v)) v = decodeLoose(v, s)
  if (!Array.isArray(v) || typeof i !== 'number') return undefined
  return nth(v, i)
}

/** `v[from..to]` (1-based, inclusive, negative from the end); fails for a non-array. */
export function getRange (v: unknown, from: number, to: number): unknown[] {
  if (!Array.isArray(v)) throw new SqlEvalError('range_get_non_list', `${describe(v)}[${from}..${to}]: not an array`)
  const len = v.length
  const b = from > 0 ? from : len + from + 1
  const e = to > 0 ? to : len + to + 1
  if (b < 1 || b > len + 1 || e - b + 1 < 0) {
    throw new SqlEvalError('badarg', `[${from}..${to}] is outside an array of ${len}`)
  }
  return v.slice(b - 1, e)
}

/** Items of FOREACH: the array itself; anything else is no items. */
export function ensureList (v: unknown): unknown[] {
  return Array.isArray(v) ? v : []
}

/** Sets an own key, also when the key is `__proto__`. */
export function setOwn (target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

/** Copies the own keys of `src` onto `target` (EMQ X `maps:merge(Target, Src)`). */
export function mergeInto (target: Record<string, unknown>, src: Record<string, unknown>): Record<string, unknown> {
  if (Object.hasOwn(src, '__proto__')) {
    for (const k of Object.keys(src)) setOwn(target, k, src[k])
    return target
  }
  return Object.assign(target, src)
}

/** One compiled step of an `AS` target. */
export type PutStep =
  | { key: string }
  | { index: number | 'head' | 'tail' }
  | { dyn: (s: Scope) => unknown }

/**
 * `AS a.b[2].c`: writes `value` at the path in `target`, creating maps and arrays on the
 * way; `undefined` writes nothing (EMQ X drops undefined values). When the path starts at
 * `payload` and the output's payload is still the raw JSON text, it is decoded first.
 */
export function nestedPut (target: Record<string, unknown>, steps: PutStep[], value: unknown, s: Scope): void {
  if (value === undefined) return
  const first = (steps[0] as { key: string }).key
  if (steps.length === 1) { setOwn(target, first, value); return }
  let cur = Object.hasOwn(target, first) ? target[first] : undefined
  if (first === 'payload' && isBinary(cur)) cur = decodePayload(cur, s)
  setOwn(target, first, putIn(cur, steps, 1, value, s))
}

function putIn (cur: unknown, steps: PutStep[], i: number, value: unknown, s: Scope): unknown {
  if (i === steps.length) return value
  const step = steps[i]
  if ('key' in step) {
    const sub = getKey(cur, step.key, s)
    const copy: Record<string, unknown> = isMap(cur) ? { ...cur } : {}
    setOwn(copy, step.key, putIn(sub, steps, i + 1, value, s))
    return copy
  }
  const index = 'dyn' in step ? step.dyn(s) : step.index
  const sub = typeof index === 'number' ? getIndex(cur, index, s) : undefined
  return setNth(cur, index, putIn(sub, steps, i + 1, value, s))
}

/** EMQ X `setnth`: a non-array becomes `[value]`; out-of-range indexes leave the array as it is. */
function setNth (cur: unknown, index: unknown, value: unknown): unknown[] {
  if (!Array.isArray(cur)) return [value]
  if (index === 'head') return [value, ...cur]
  if (index === 'tail') return [...cur, value]
  if (typeof index !== 'number' || !Number.isInteger(index) || index === 0) return cur
  const at = index > 0 ? index - 1 : cur.length + index
  if (at < 0 || at >= cur.length) return cur
  const copy = cur.slice()
  copy[at] = value
  return copy
}
