/**
 * Delayed publish (EMQ X's emqx_delayed_publish): a PUBLISH to `$delayed/<seconds>/<topic>`
 * is held and published to `<topic>` when its time comes, with the original QoS, retain
 * flag, payload, MQTT 5 properties and publisher client id. Held messages live in the
 * node's store (table `delayed`), so they survive a restart; one whose time passed while
 * the node was down is published right after the plugin loads.
 */
import type { MessageEvent } from '../../node/hooks.js'
import type { Logger } from '../../node/logger.js'
import type { StoreTable } from '../../node/store/index.js'

/** Topic prefix of a delayed publish. */
export const DELAYED_PREFIX = '$delayed/'
/** The longest delay, seconds (EMQ X 4's ?MAX_INTERVAL, about 49.7 days). */
export const MAX_DELAY_SECONDS = 4_294_967
/** Store table of the held messages. */
export const DELAYED_TABLE = 'delayed'
/** setTimeout's longest delay; longer waits are done in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1
/** Digits of the time part of a key, so keys sort by publish time. */
const TIME_DIGITS = 15
/** Properties that belong to one hop of the original PUBLISH, not to the message. */
const HOP_PROPERTIES = new Set(['topicAlias', 'subscriptionIdentifier'])

/** A held message, as stored. */
export interface DelayedMessage {
  /** When to publish, ms since the epoch. */
  publishAt: number
  /** The topic it will be published to (without `$delayed/<seconds>/`). */
  topic: string
  payload: Buffer
  qos: 0 | 1 | 2
  retain: boolean
  /** MQTT 5 PUBLISH properties of the original (user properties, content type ...). */
  properties?: Record<string, unknown>
  /** The original publisher; the delayed publish is published as this client id. */
  clientId: string
  /** Message id of the original publish. */
  id: string
}

/** `$delayed/<n>/<topic>` read as EMQ X 4 did, or why it cannot be. */
export type DelayedTopic = { topic: string, publishAt: number } | { error: string }

/**
 * Reads a `$delayed/` topic received at `nowMs`; null when `topic` is not one. `<n>` below
 * {@link MAX_DELAY_SECONDS} is a delay in seconds; a larger `<n>` is an absolute Unix time in
 * seconds (EMQ X 4), refused when it is more than {@link MAX_DELAY_SECONDS} ahead.
 */
export function parseDelayedTopic (topic: string, nowMs: number): DelayedTopic | null {
  if (!topic.startsWith(DELAYED_PREFIX)) return null
  const rest = topic.slice(DELAYED_PREFIX.length)
  const slash = rest.indexOf('/')
  const delay = slash === -1 ? rest : rest.slice(0, slash)
  const target = slash === -1 ? '' : rest.slice(slash + 1)
  if (!/^\d{1,15}$/.test(delay)) return { error: `the delay ${JSON.stringify(delay)} is not a whole number of seconds` }
  if (target === '') return { error: 'no topic after the delay; publish to $delayed/<seconds>/<topic>' }
  if (target.startsWith('$SYS/')) return { error: '$SYS topics are published by the broker only' }
  const n = Number(delay)
  if (n < MAX_DELAY_SECONDS) return { topic: target, publishAt: nowMs + n * 1000 }
  if (n - Math.round(nowMs / 1000) > MAX_DELAY_SECONDS) {
    return { error: `the publish time ${n} is more than ${MAX_DELAY_SECONDS} seconds ahead` }
  }
  return { topic: target, publishAt: n * 1000 }
}

/** What a {@link DelayedPublisher} needs. */
export interface DelayedPublisherInit {
  table: StoreTable<DelayedMessage>
  /** Publishes a due message (the broker's publish); rejects when it could not. */
  publish: (message: DelayedMessage) => Promise<void>
  logger: Logger
  /** Most messages held at once; more are dropped. 0: no limit. */
  maxDelayedMessages: number
}

interface Held { key: string, message: DelayedMessage }

/**
 * Holds delayed messages and publishes them when due. Invariants: `queue` is sorted by key
 * (publish time first) and mirrors the store table between `start()` and `stop()`; one
 * timer runs, for the head of the queue. A message leaves the store only after it was
 * published, so a crash may publish it twice but never loses it.
 */
export class DelayedPublisher {
  private readonly queue: Held[] = []
  private timer: NodeJS.Timeout | null = null
  private running = false

  constructor (private readonly init: DelayedPublisherInit) {}

  /** Loads the stored messages and schedules the first. */
  start (): void {
    if (this.running) return
    this.running = true
    this.queue.length = 0
    for (const [key, message] of this.init.table.entries()) this.queue.push({ key, message })
    this.init.logger.info({ held: this.queue.length }, 'delayed publish started')
    this.schedule()
  }

  /** Stops the timer; the held messages stay stored for the next start. */
  stop (): void {
    this.running = false
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }

  /** Number of messages held. */
  count (): number {
    return this.queue.length
  }

  /** The `message.publish` listener: holds a `$delayed/` publish, ignores the rest. */
  accept (event: MessageEvent): void {
    if (!this.running || !event.topic.startsWith(DELAYED_PREFIX)) return
    const parsed = parseDelayedTopic(event.topic, event.timestamp)
    if (parsed === null) return
    const log = this.init.logger
    if ('error' in parsed) {
      log.warn({ topic: event.topic, clientId: event.client_id }, `delayed publish ignored: ${parsed.error}`)
      return
    }
    const max = this.init.maxDelayedMessages
    if (max > 0 && this.queue.length >= max) {
      log.warn({ topic: event.topic, clientId: event.client_id, max }, 'delayed publish dropped: delayed.max_delayed_messages reached')
      return
    }
    const message: DelayedMessage = {
      publishAt: parsed.publishAt,
      topic: parsed.topic,
      payload: Buffer.from(event.payload), // a copy: the event's buffer may be reused
      qos: event.qos,
      retain: event.flags.retain,
      clientId: event.client_id,
      id: event.id
    }
    const properties = messageProperties(event.pub_props)
    if (properties !== undefined) message.properties = properties
    const key = `${String(message.publishAt).padStart(TIME_DIGITS, '0')}/${event.id}`
    const at = this.insert({ key, message })
    this.init.table.put(key, message).catch((err: Error) => log.error({ err, topic: message.topic }, 'cannot store a delayed message; it is held in memory only'))
    if (at === 0) this.schedule()
  }

  /** Inserts in key order; returns the index. */
  private insert (held: Held): number {
    let lo = 0
    let hi = this.queue.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.queue[mid].key <= held.key) lo = mid + 1
      else hi = mid
    }
    this.queue.splice(lo, 0, held)
    return lo
  }

  private schedule (): void {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    if (!this.running || this.queue.length === 0) return
    const wait = Math.max(0, this.queue[0].message.publishAt - Date.now())
    this.timer = setTimeout(() => this.fire(), Math.min(wait, MAX_TIMER_MS))
    this.timer.unref()
  }

  /** Publishes every due message, then schedules the next. */
  private fire (): void {
    this.timer = null
    const now = Date.now()
    while (this.running && this.queue.length > 0 && this.queue[0].message.publishAt <= now) {
      const { key, message } = this.queue.shift() as Held
      this.init.publish(message).then(
        () => this.init.table.del(key),
        (err: Error) => {
          this.init.logger.error({ err, topic: message.topic }, 'delayed publish failed; it is kept and retried at the next start')
        }
      ).catch((err: Error) => this.init.logger.error({ err }, 'cannot delete a published delayed message from the store'))
    }
    this.schedule()
  }
}

/** The message's own MQTT 5 properties, without the per-hop ones and empty entries. */
function messageProperties (props: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (props === undefined) return undefined
  const out: Record<string, unknown> = {}
  let any = false
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || HOP_PROPERTIES.has(name)) continue
    out[name] = value
    any = true
  }
  return any ? out : undefined
}
