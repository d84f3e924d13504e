/**
 * Reading and writing nested values as EMQ X 4's `emqx_rule_maps` and `emqx_rule_runtime`
 * do: paths `a.x.y`, 1-based indexes (`a[1]`, `a[-1]` from the end), ranges (`a[2..4]`),
 * the JSON payload decoded on first use, and `AS` targets that build nested maps and arrays.
 *
 * Invariants: values in the columns and in a decoded payload are shared, never mutated;
 * a nested write copies each map or array on its way (copy on write). Only the output map
 * being built (`Scope.sel`) is written in place.
 */
// the global `Buffer` is a getter in Node's ES modules: imported, it costs nothing per message
import { Buffer } from 'node:buffer'
import { SqlEvalError } from './errors.js'
import { describe, isBinary, isMap } from './values.js'

/**
 * What an expression is evaluated against. `sel` is the output built so far (SELECT fields
 * see the aliases before them), `cols` the event's columns; a name is looked up in `sel`
 * first. `payloads` decodes JSON, shared by every rule run on the same event.
 */
export interface Scope {
  sel: Record<string, unknown>
  cols: Record<string, unknown>
  payloads: PayloadCache
}

/** A new scope over `cols` with an empty output. */
export function newScope (cols: Record<string, unknown>, payloads: PayloadCache): Scope {
  return { sel: {}, cols, payloads }
}

/** What {@link PayloadCache.decode} gives for a text that is not JSON. */
export const NOT_JSON: unique symbol = Symbol('not JSON')

/**
 * The JSON of the last payload decoded on one event. The runtime makes one per event and
 * hands it to every rule it runs on that event, so a payload is parsed once per event, not
 * once per rule, and a payload that is not JSON is known as such ({@link NOT_JSON}) after
 * the first rule tried it. Decoded values are shared, never mutated (aliases that write into
 * them copy). Strings compare by value, so the spec's and EMQ X 4's columns of one event,
 * each with its own copy of the payload text, share the decode too.
 */
export class PayloadCache {
  private raw: unknown = undefined
  private json: unknown = undefined
  private error: SqlEvalError | undefined = undefined

  /** The JSON value of `raw`, or {@link NOT_JSON}. */
  decode (raw: string | Buffer): unknown {
    if (raw === this.raw) return this.json
    const json = parseJson(typeof raw === 'string' ? raw : raw.toString('utf8'))
    this.raw = raw
    this.json = json
    this.error = undefined
    return json
  }

  /** The failure of reading `raw` (not JSON) as JSON: one error per payload, thrown or returned by every rule that reads it. */
  notJsonError (raw: string | Buffer): SqlEvalError {
    if (raw !== this.raw || this.error === undefined) {
      this.decode(raw)
      this.error = SqlEvalError.cheap('decode_json_failed', `the payload is not JSON: ${describe(raw)}`)
    }
    return this.error
  }
}

/** How every JSON text starts (after white space): `{ [ "`, a number, `true`, `false` or `null`. */
const JSON_START = /^\s*(?:[{["\-0-9]|true|false|null)/

/**
 * `text` parsed as JSON, or {@link NOT_JSON}. JSON.parse's SyntaxError records a stack trace,
 * which costs more than the parse: most texts that are not JSON (an empty payload, plain
 * text) are told by how they start without it, and the others fail without a trace.
 */
function parseJson (text: string): unknown {
  if (!JSON_START.test(text)) return NOT_JSON
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return JSON.parse(text)
  } catch {
    return NOT_JSON
  } finally {
    Error.stackTraceLimit = limit
  }
}

const cachesByColumns = new WeakMap<object, PayloadCache>()

/**
 * The payload cache of a columns object, for callers that pass none (the SQL tester, tests):
 * statements run on the same columns object (one event) share their decodes, as the runtime's
 * rules share the cache it passes.
 */
export function payloadCacheOf (cols: Record<string, unknown>): PayloadCache {
  let cache = cachesByColumns.get(cols)
  if (cache === undefined) cachesByColumns.set(cols, cache = new PayloadCache())
  return cache
}

/**
 * The payload decoded for `payload.<path>`: a binary is parsed as JSON (once per event); a
 * payload that is not JSON fails with `decode_json_failed` (the statement does not match).
 */
export function decodePayload (v: unknown, s: Scope): unknown {
  if (!isBinary(v)) return v
  const json = s.payloads.decode(v)
  if (json === NOT_JSON) throw s.payloads.notJsonError(v)
  return json
}

/** A binary met inside a path (`p.a` where `p` is the raw payload): its JSON, or undefined. */
function decodeLoose (v: string | Buffer, s: Scope): unknown {
  const json = s.payloads.decode(v)
  return json === NOT_JSON ? undefined : json
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

/**
 * `emqx_rule_maps:nested_put/3` on any value: a copy of `data` with `value` at `steps` (keys,
 * indexes, head and tail), maps and arrays made on the way; `undefined` puts nothing.
 */
export function putPath (data: unknown, steps: PutStep[], value: unknown, s: Scope): unknown {
  return value === undefined ? data : putIn(data, steps, 0, value, s)
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
