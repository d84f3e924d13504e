/**
 * What a Kafka resource buffers and publishes: messages for one topic with the action's acks
 * and partition strategy, key and value filled from the selected data when the action ran (so a
 * buffered write needs nothing of the action to be published after a restart).
 */
import { WrongTypeError } from '../../node/errors.js'
import { fillString, hasPlaceholder } from '../../node/template/index.js'

/** EMQ X 4.4's `strategy`: a random partition, or the partition of the key's hash. */
export const STRATEGIES = ['random', 'key_dispatch'] as const
export type Strategy = typeof STRATEGIES[number]

/** EMQ X 4.4's `required_acks`, and Kafka's `acks` for each. */
export const REQUIRED_ACKS: Readonly<Record<string, number>> = { none: 0, leader_only: 1, all_isr: -1 }

/** One message: its key (absent: none), value and timestamp (ms, as text). */
export interface KafkaMessage { k?: string, v: string, ts: string }

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
  key: string
  payload: string
}

/** Kafka's rule for a topic name: 1 to 249 of `a-z A-Z 0-9 . _ -`, not `.` or `..`. */
const TOPIC = /^[A-Za-z0-9._-]{1,249}$/

/** Reads (and checks: 108) the action's params. */
export function compileKafkaAction (params: Record<string, unknown>): KafkaAction {
  const refuse = (key: string, why: string): never => { throw new WrongTypeError(`action data_to_kafka: parameter ${key} ${why}`) }
  const topic = typeof params.topic === 'string' ? params.topic.trim() : ''
  if (hasPlaceholder(topic)) refuse('topic', 'cannot hold a ${key} placeholder: messages of one action go to one topic')
  if (!TOPIC.test(topic) || topic === '.' || topic === '..') refuse('topic', `must name a Kafka topic (1 to 249 letters, digits, . _ -), got ${JSON.stringify(params.topic)}`)
  const strategy = String(params.strategy ?? 'random')
  if (!(STRATEGIES as readonly string[]).includes(strategy)) refuse('strategy', `must be one of ${STRATEGIES.join(', ')}, got ${JSON.stringify(params.strategy)}`)
  const acksName = String(params.required_acks ?? 'all_isr')
  const acks = REQUIRED_ACKS[acksName]
  if (acks === undefined) refuse('required_acks', `must be one of ${Object.keys(REQUIRED_ACKS).join(', ')}, got ${JSON.stringify(params.required_acks)}`)
  const key = String(params.key ?? '')
  if (strategy === 'key_dispatch' && key === '') refuse('key', 'must be given with strategy key_dispatch (the partition is the key\'s hash)')
  return { topic, acks, strategy: strategy as Strategy, key, payload: String(params.payload_tmpl ?? '') }
}

/** The message of one run. */
export function kafkaRow (action: KafkaAction, selected: Record<string, unknown>): KafkaWrite {
  const m: KafkaMessage = {
    v: action.payload === '' ? JSON.stringify(selected) : fillString(action.payload, selected),
    ts: String(Date.now())
  }
  if (action.key !== '') m.k = fillString(action.key, selected)
  return { t: action.topic, a: action.acks, s: action.strategy, m: [m] }
}

/** The kit's merge, split and row count of {@link KafkaWrite}s (of one action). */
export const kafkaWrites = {
  merge: (rows: readonly KafkaWrite[]): KafkaWrite => ({ t: rows[0].t, a: rows[0].a, s: rows[0].s, m: rows.flatMap((w) => w.m) }),
  split: (w: KafkaWrite): KafkaWrite[] => w.m.map((m) => ({ t: w.t, a: w.a, s: w.s, m: [m] })),
  rows: (w: KafkaWrite): number => w.m.length
}
