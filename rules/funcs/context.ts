/**
 * Functions that read the triggering event (EMQ X 4.4 "IoT Funcs": `msgid()`, `qos()`,
 * `topic()`, `topic(N)`, `flags()`, `flag(Name)`, `clientid()`, `clientip()`, `peerhost()`,
 * `username()`, `payload()`, `payload(Path)`), `null()`, the subscribe-event helpers
 * `contains_topic`/`contains_topic_match` (spec Rule SQL point 4) and the node-local key-value
 * store `kv_store_get/put/del`.
 *
 * Columns come in both dialects: EMQ X 4's (`clientid`, `peerhost`) and the spec's
 * (`client_id`, `peername` as `host:port`); the readers accept either.
 */
import { topicMatches } from '../../node/mqtt/topic.js'
import { badArg, ConversionError } from './errors.js'
import { intArg, isBinary, isMap, textOf } from './value-model.js'
import { nestedGet } from './map-array.js'
import type { Columns, RuleFunction } from './types.js'

/** A function of the columns only: SQL arity 0, the compiler passes the columns. */
const reader = (name: string, read: (c: Columns) => unknown): RuleFunction =>
  ({ name, minArgs: 0, maxArgs: 0, contextual: true, fn: (c: unknown) => read(c as Columns) })

function peerhost (c: Columns): unknown {
  if (c.peerhost !== undefined) return c.peerhost
  const peer = c.peername
  if (typeof peer !== 'string') return undefined
  // "host:port", "[v6]:port" or a bare v6 address with its port after the last colon
  const colon = peer.lastIndexOf(':')
  const host = colon === -1 ? peer : peer.slice(0, colon)
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
}

/** One entry of `topic_filters`: `{topic, qos}`, `[topic, {qos}]`, `[topic, qos]` or a bare topic. */
function entry (e: unknown): { topic: unknown, qos: unknown } | undefined {
  if (isMap(e)) return { topic: e.topic, qos: isMap(e.qos) ? e.qos.qos : e.qos }
  if (Array.isArray(e) && e.length === 2) return { topic: e[0], qos: isMap(e[1]) ? e[1].qos : e[1] }
  if (isBinary(e)) return { topic: textOf('contains_topic', e), qos: undefined }
  return undefined
}

/**
 * Finds the first entry of `filters` whose topic relates to `topic` (equal, or matching it as
 * a filter); with a QoS argument that entry must also have that QoS (EMQ X checks only the
 * first related entry).
 */
function containsTopic (name: string, match: boolean, args: unknown[]): boolean {
  const [filters, topicArg] = args
  if (!Array.isArray(filters)) {
    if (filters === undefined || filters === null) return false
    throw badArg(name, filters, 'an array of {topic, qos}')
  }
  const topic = textOf(name, topicArg)
  for (const e of filters) {
    const f = entry(e)
    if (f === undefined || !isBinary(f.topic)) continue
    const t = textOf(name, f.topic)
    if (match ? topicMatches(topic, t) : t === topic) return args.length < 3 || f.qos === args[2]
  }
  return false
}

const kvStore = new Map<string, unknown>()

function kvKey (fn: string, k: unknown): string {
  if (isBinary(k)) return 's:' + textOf(fn, k)
  if (typeof k === 'number' || typeof k === 'boolean') return `${typeof k}:${String(k)}`
  throw badArg(fn, k, 'a string, number or boolean key')
}

/** The event readers, contains_topic/2,3, contains_topic_match/2,3, null/0 and kv_store_*. */
export const contextFunctions: RuleFunction[] = [
  reader('msgid', (c) => c.id),
  reader('qos', (c) => c.qos),
  reader('flags', (c) => c.flags ?? {}),
  reader('clientid', (c) => c.clientid ?? c.client_id ?? c.from),
  reader('username', (c) => c.username),
  reader('clientip', peerhost),
  reader('peerhost', peerhost),
  {
    name: 'topic',
    minArgs: 0,
    maxArgs: 1,
    contextual: true,
    // topic() | topic(N): the N-th level (1-based) of the event's topic.
    fn: (...args: unknown[]) => {
      const c = args[args.length - 1] as Columns
      if (args.length === 1) return c.topic
      if (typeof c.topic !== 'string') return undefined
      const n = intArg('topic', args[0])
      const levels = c.topic.split('/')
      if (n < 1 || n > levels.length) throw new ConversionError('topic', 'function_clause', `the topic has ${levels.length} levels, not ${n}`)
      return levels[n - 1]
    }
  },
  {
    name: 'flag',
    minArgs: 1,
    maxArgs: 1,
    contextual: true,
    fn: (name: unknown, c: unknown) => {
      const flags = (c as Columns).flags
      return isMap(flags) ? flags[textOf('flag', name)] : undefined
    }
  },
  {
    name: 'payload',
    minArgs: 0,
    maxArgs: 1,
    contextual: true,
    // payload() | payload(Path): Path reads a decoded (map) payload only, as in EMQ X.
    fn: (...args: unknown[]) => {
      const c = args[args.length - 1] as Columns
      if (args.length === 1) return c.payload
      return isMap(c.payload) ? nestedGet(textOf('payload', args[0]).split('.'), c.payload, undefined) : undefined
    }
  },
  { name: 'null', minArgs: 0, maxArgs: 0, fn: () => undefined },
  { name: 'contains_topic', minArgs: 2, maxArgs: 3, fn: (...args: unknown[]) => containsTopic('contains_topic', false, args) },
  { name: 'contains_topic_match', minArgs: 2, maxArgs: 3, fn: (...args: unknown[]) => containsTopic('contains_topic_match', true, args) },
  { name: 'kv_store_put', minArgs: 2, maxArgs: 2, fn: (k: unknown, v: unknown) => { kvStore.set(kvKey('kv_store_put', k), v); return true } },
  { name: 'kv_store_get', minArgs: 1, maxArgs: 2, fn: (...args: unknown[]) => { const v = kvStore.get(kvKey('kv_store_get', args[0])); return v === undefined ? args[1] : v } },
  { name: 'kv_store_del', minArgs: 1, maxArgs: 1, fn: (k: unknown) => { kvStore.delete(kvKey('kv_store_del', k)); return true } }
]
