/**
 * What a Kafka resource buffers and publishes: messages for one topic with the action's acks
 * and partition strategy, key and value filled from the selected data when the action ran (so a
 * buffered write needs nothing of the action to be published after a restart).
 */
import { WrongTypeError } from '../../node/errors.js'
import { fillString, hasPlaceholder, lookup } from '../../node/template/index.js'

/** EMQ X 4.4's `strategy`: a random partition, the partitions in turn, or the partition of the key's hash. */
export const STRATEGIES = ['random', 'roundrobin', 'key_dispatch'] as const
export type Strategy = typeof STRATEGIES[number]

/** EMQ X 4.2's name of `key_dispatch`, which EMQ X 4.4's import renames so: taken as it. */
export const OLD_KEY_DISPATCH = 'first_key_dispatch'

/**
 * EMQ X 4.4's `key` was a choice of these words (its 5.x converter turns them into the
 * templates here); anything else is a `${key}` template of Starling's.
 */
export const KEY_WORDS: Readonly<Record<string, string>> = { none: '', clientid: '${clientid}', username: '${username}', topic: '${topic}' }

/** EMQ X 4.4's `type`: the kit's insert mode. */
export const PRODUCE_TYPES = ['sync', 'async'] as const

/** EMQ X 4.4's `kafka_header_value_encode_mode`: how a header value that is not text is sent. */
export const HEADER_ENCODINGS = ['NONE', 'JSON'] as const

/** EMQ X 4.4's `required_acks`, and Kafka's `acks` for each. */
export const REQUIRED_ACKS: Readonly<Record<string, number>> = { none: 0, leader_only: 1, all_isr: -1 }

/** One message: its key (absent: none), value, timestamp (ms, as text) and headers (absent: none). */
export interface KafkaMessage { k?: string, v: string, ts: string, h?: Record<string, string> }

/** One buffered write (JSON-encodable). */
export interface KafkaWrite {
  /** The topic. */
  t: string
  /** Kafka's acks: 0, 1 or -1. */
  a: number
  s: Strategy
  m: KafkaMessage[]
}

/** A compiled `data_to_kafka` action. */
export interface KafkaAction {
  topic: string
  acks: number
  strategy: Strategy
  /** The key's template; empty: no key. */
  key: string
  payload: string
  /** `kafka_headers`' path into the selected data (`pub_props`); undefined: none. */
  headersFrom?: string
  /** `kafka_ext_headers`: each header's name and value templates. */
  extHeaders: Array<{ key: string, value: string }>
  /** A header value that is not text: JSON: as its JSON text; NONE: left out. */
  headerEncoding: typeof HEADER_ENCODINGS[number]
}

/** Kafka's rule for a topic name: 1 to 249 of `a-z A-Z 0-9 . _ -`, not `.` or `..`. */
const TOPIC = /^[A-Za-z0-9._-]{1,249}$/

/** Reads (and checks: 108) the action's params. */
export function compileKafkaAction (params: Record<string, unknown>): KafkaAction {
  const refuse = (key: string, why: string): never => { throw new WrongTypeError(`action data_to_kafka: parameter ${key} ${why}`) }
  const topic = typeof params.topic === 'string' ? params.topic.trim() : ''
  if (hasPlaceholder(topic)) refuse('topic', 'cannot hold a ${key} placeholder: messages of one action go to one topic')
  if (!TOPIC.test(topic) || topic === '.' || topic === '..') refuse('topic', `must name a Kafka topic (1 to 249 letters, digits, . _ -), got ${JSON.stringify(params.topic)}`)
  const given = params.strategy === OLD_KEY_DISPATCH ? 'key_dispatch' : params.strategy
  const strategy = String(given ?? 'random')
  if (!(STRATEGIES as readonly string[]).includes(strategy)) refuse('strategy', `must be one of ${STRATEGIES.join(', ')}, got ${JSON.stringify(params.strategy)}`)
  const acksName = String(params.required_acks ?? 'all_isr')
  const acks = REQUIRED_ACKS[acksName]
  if (acks === undefined) refuse('required_acks', `must be one of ${Object.keys(REQUIRED_ACKS).join(', ')}, got ${JSON.stringify(params.required_acks)}`)
  const keyText = String(params.key ?? '')
  const key = Object.hasOwn(KEY_WORDS, keyText) ? KEY_WORDS[keyText] : keyText
  if (strategy === 'key_dispatch' && key === '') refuse('key', 'must be given with strategy key_dispatch (the partition is the key\'s hash)')
  const type = String(params.type ?? 'async')
  if (!(PRODUCE_TYPES as readonly string[]).includes(type)) refuse('type', `must be sync or async, got ${JSON.stringify(params.type)}`)
  const encoding = String(params.kafka_header_value_encode_mode ?? 'NONE')
  if (!(HEADER_ENCODINGS as readonly string[]).includes(encoding)) refuse('kafka_header_value_encode_mode', `must be NONE or JSON, got ${JSON.stringify(params.kafka_header_value_encode_mode)}`)
  const from = String(params.kafka_headers ?? '').trim()
  const path = /^\$\{([^{}]+)\}$/.exec(from)?.[1].trim()
  if (from !== '' && path === undefined) refuse('kafka_headers', `must be one placeholder naming an object of the selected data, such as \${pub_props}, got ${JSON.stringify(params.kafka_headers)}`)
  const ext = params.kafka_ext_headers ?? []
  if (!Array.isArray(ext)) refuse('kafka_ext_headers', 'must be a list of {"key": ..., "value": ...}')
  const extHeaders = (ext as unknown[]).map((h, i) => {
    const { key: name, value } = (typeof h === 'object' && h !== null ? h : {}) as Record<string, unknown>
    if (typeof name !== 'string' || name === '' || typeof value !== 'string') refuse('kafka_ext_headers', `[${i}] must be {"key": <text>, "value": <text>}, \${key} placeholders allowed, got ${JSON.stringify(h)}`)
    return { key: name as string, value: value as string }
  })
  return {
    topic,
    acks,
    strategy: strategy as Strategy,
    key,
    payload: String(params.payload_tmpl ?? ''),
    ...(path !== undefined ? { headersFrom: path } : {}),
    extHeaders,
    headerEncoding: encoding as KafkaAction['headerEncoding']
  }
}

/** The headers of one run: `kafka_headers`' object, then `kafka_ext_headers` (a later name wins); undefined: none. */
function headersOf (action: KafkaAction, selected: Record<string, unknown>): Record<string, string> | undefined {
  if (action.headersFrom === undefined && action.extHeaders.length === 0) return undefined
  const headers: Record<string, string> = {}
  const from = action.headersFrom === undefined ? undefined : lookup(selected, action.headersFrom)
  if (typeof from === 'object' && from !== null && !Array.isArray(from)) {
    for (const [name, value] of Object.entries(from)) {
      if (typeof value === 'string') headers[name] = value
      else if (action.headerEncoding === 'JSON' && value !== undefined) headers[name] = JSON.stringify(value)
    }
  }
  for (const h of action.extHeaders) headers[fillString(h.key, selected)] = fillString(h.value, selected)
  return Object.keys(headers).length > 0 ? headers : undefined
}

/** The message of one run. */
export function kafkaRow (action: KafkaAction, selected: Record<string, unknown>): KafkaWrite {
  const m: KafkaMessage = {
    v: action.payload === '' ? JSON.stringify(selected) : fillString(action.payload, selected),
    ts: String(Date.now())
  }
  if (action.key !== '') m.k = fillString(action.key, selected)
  const h = headersOf(action, selected)
  if (h !== undefined) m.h = h
  return { t: action.topic, a: action.acks, s: action.strategy, m: [m] }
}

/** The kit's merge, split and row count of {@link KafkaWrite}s (of one action). */
export const kafkaWrites = {
  merge: (rows: readonly KafkaWrite[]): KafkaWrite => ({ t: rows[0].t, a: rows[0].a, s: rows[0].s, m: rows.flatMap((w) => w.m) }),
  split: (w: KafkaWrite): KafkaWrite[] => w.m.map((m) => ({ t: w.t, a: w.a, s: w.s, m: [m] })),
  rows: (w: KafkaWrite): number => w.m.length
}
