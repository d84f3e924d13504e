/**
 * The retainer: the policy between aedes and its persistence for retained messages
 * (EMQ X's emqx_retainer). aedes stores every PUBLISH with RETAIN=1 through
 * `persistence.storeRetained` and reads them back on SUBSCRIBE through
 * `createRetainedStreamCombi`; the retainer replaces those methods on the persistence
 * instance (and `retainedCount`, for `retained/count`) and restores them when detached.
 * `node/mqtt/persistence.ts` stays unaware of it.
 */
import { Readable } from 'node:stream'
import { topicMatches } from '../../node/mqtt/topic.js'
import type { RetainedStore } from '../../node/mqtt/core.js'
import type { Logger } from '../../node/logger.js'
import type { StoreTable } from '../../node/store/index.js'

/** `retainer.storage_type`. `disc_only` is accepted for EMQ X files and works as `disc`. */
export type RetainerStorage = 'ram' | 'disc' | 'disc_only'

/** What the retainer enforces while svc_retainer is loaded. */
export interface RetainerPolicy {
  /** `ram`: memory only (lost on restart); `disc`/`disc_only`: memory and the node's store. */
  storage: RetainerStorage
  /** Most retained topics; a new topic over it is not stored, an existing one is replaced. 0: no limit. */
  maxRetainedMessages: number
  /** Largest payload stored, bytes; 0: no limit. */
  maxPayloadSize: number
  /** Lifetime of a retained message without its own MQTT 5 Message Expiry Interval, ms; 0: never. */
  expiryIntervalMs: number
}

/** The persistence methods the retainer decides for: the MQTT core's {@link RetainedStore}. */
export type RetainedPersistence = RetainedStore

/** What a {@link Retainer} needs. */
export interface RetainerInit {
  persistence: RetainedPersistence
  /** The store table the persistence keeps retained messages in (cleared for `ram`). */
  discTable: StoreTable<unknown>
  logger: Logger
}

const WRAPPED = ['storeRetained', 'createRetainedStream', 'createRetainedStreamCombi', 'retainedCount'] as const
/** Topics of `$delayed/<s>/<topic>` publishes: commands to svc_delayed_publish, never retained. */
const DELAYED_PREFIX = '$delayed/'
/** Fewest ms between two warnings of the same kind (a client can publish thousands per second). */
const WARN_EVERY_MS = 10_000
/** setInterval's longest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Retained-message policy of one node. Invariants: between `attach()` and `detach()` the
 * persistence's four methods are ours; `topics` holds exactly the topics in the
 * persistence's memory, so `retainedCount()` is `topics.size`. While no policy is active
 * (svc_retainer unloaded) nothing is stored or deleted and subscribers get no retained
 * messages, but what is stored stays and comes back when a policy is activated again.
 */
export class Retainer {
  private readonly persistence: RetainedPersistence
  private readonly discTable: StoreTable<unknown>
  private readonly log: Logger
  private readonly topics = new Set<string>()
  private original: Pick<RetainedPersistence, 'storeRetained' | 'createRetainedStream' | 'createRetainedStreamCombi'> | null = null
  private saved: Array<[string, PropertyDescriptor | undefined]> = []
  private policy: RetainerPolicy | null = null
  /** The storage of the last policy, to notice a switch from `ram` to `disc`. */
  private lastStorage: RetainerStorage | null = null
  private sweeper: NodeJS.Timeout | null = null
  private sweeping = false
  private readonly warnedAt = new Map<string, number>()

  constructor (init: RetainerInit) {
    this.persistence = init.persistence
    this.discTable = init.discTable
    this.log = init.logger
  }

  /** Replaces the persistence's methods and counts what it holds. No policy is active yet. */
  async attach (): Promise<void> {
    if (this.original !== null) return
    const p = this.persistence as unknown as Record<string, unknown>
    this.original = {
      storeRetained: this.persistence.storeRetained.bind(this.persistence),
      createRetainedStream: this.persistence.createRetainedStream.bind(this.persistence),
      createRetainedStreamCombi: this.persistence.createRetainedStreamCombi.bind(this.persistence)
    }
    for await (const packet of this.original.createRetainedStream('#')) this.track(packet.topic)
    this.saved = WRAPPED.map((name) => [name, Object.getOwnPropertyDescriptor(p, name)])
    p.storeRetained = (packet: any) => this.store(packet)
    p.createRetainedStream = (pattern: string) => this.stream([pattern])
    p.createRetainedStreamCombi = (patterns: string[]) => this.stream(patterns)
    p.retainedCount = () => this.topics.size
  }

  /** Deactivates and gives the persistence its own methods back. */
  detach (): void {
    this.deactivate()
    const p = this.persistence as unknown as Record<string, unknown>
    for (const [name, descriptor] of this.saved) {
      if (descriptor === undefined) delete p[name]
      else Object.defineProperty(p, name, descriptor)
    }
    this.saved = []
    this.original = null
  }

  /** Applies `policy` from now on (svc_retainer loaded). */
  async activate (policy: RetainerPolicy): Promise<void> {
    if (this.original === null) throw new Error('the retainer is not attached to a persistence')
    this.deactivate()
    if (policy.storage === 'ram') {
      // ram: nothing survives a restart, copies written by an earlier `disc` run included
      await this.discTable.clear()
    } else if (this.lastStorage === 'ram') {
      // back to disc: write what ram kept, so the store holds every retained message again
      for await (const packet of this.original.createRetainedStream('#')) await this.original.storeRetained(packet)
    }
    this.policy = policy
    this.lastStorage = policy.storage
    if (policy.expiryIntervalMs > 0) {
      // EMQ X sweeps expired messages every expiry_interval, so retained/count goes down too
      this.sweeper = setInterval(() => { void this.sweep() }, Math.min(policy.expiryIntervalMs, MAX_TIMER_MS))
      this.sweeper.unref()
    }
  }

  /** Stops applying a policy (svc_retainer unloaded): retain flags are ignored, stored messages kept. */
  deactivate (): void {
    this.policy = null
    if (this.sweeper !== null) clearInterval(this.sweeper)
    this.sweeper = null
  }

  /** Number of retained messages held. */
  count (): number {
    return this.topics.size
  }

  /** Deletes every retained message whose expiry time has passed; resolves with how many. */
  async sweep (now = Date.now()): Promise<number> {
    const policy = this.policy
    if (policy === null || this.original === null || this.sweeping) return 0
    this.sweeping = true
    try {
      const expired: string[] = []
      for await (const packet of this.original.createRetainedStream('#')) {
        if (packet.messageExpiry !== undefined && packet.messageExpiry <= now) expired.push(packet.topic)
      }
      for (const topic of expired) await this.remove(topic, policy)
      return expired.length
    } catch (err) {
      this.log.warn({ err }, 'sweeping expired retained messages failed')
      return 0
    } finally {
      this.sweeping = false
    }
  }

  /** Of `topics`, how many are the broker's own `$SYS/...` topics. */
  private sysTopics = 0

  private track (topic: string): void {
    if (this.topics.has(topic)) return
    this.topics.add(topic)
    if (isSysTopic(topic)) this.sysTopics++
  }

  /** `storeRetained` under the policy (EMQ X: emqx_retainer:store_retained). */
  private async store (packet: any): Promise<void> {
    const policy = this.policy
    if (policy === null) return
    const topic: string = packet.topic
    if (topic.startsWith(DELAYED_PREFIX)) return
    const size = typeof packet.payload === 'string' ? Buffer.byteLength(packet.payload) : packet.payload.length
    if (size === 0) return this.remove(topic, policy)
    if (policy.maxPayloadSize > 0 && size > policy.maxPayloadSize) {
      this.warn('payload', { topic, size, max: policy.maxPayloadSize },
        `retained message on ${topic} not stored: its payload (${size} bytes) is over retainer.max_payload_size`)
      return
    }
    // the broker's own $SYS topics do not use up the operators' retained-message quota
    if (!this.topics.has(topic) && !isSysTopic(topic) && policy.maxRetainedMessages > 0 && this.topics.size - this.sysTopics >= policy.maxRetainedMessages) {
      this.warn('full', { topic, max: policy.maxRetainedMessages },
        `retained message on ${topic} not stored: retainer.max_retained_messages (${policy.maxRetainedMessages}) reached`)
      return
    }
    // counted before the write completes, so concurrent new topics cannot overshoot the limit
    this.track(topic)
    let stored = packet
    if (policy.expiryIntervalMs > 0 && packet.messageExpiry === undefined) {
      // a copy: aedes delivers the same packet object right after storing it
      stored = { ...packet, messageExpiry: Date.now() + policy.expiryIntervalMs }
    }
    await this.write(stored, policy)
  }

  private async remove (topic: string, policy: RetainerPolicy): Promise<void> {
    if (this.topics.delete(topic) && isSysTopic(topic)) this.sysTopics--
    await this.write({ topic, payload: Buffer.alloc(0) }, policy)
  }

  /** Writes to memory, and to the store unless the storage is `ram`. */
  private write (packet: any, policy: RetainerPolicy): Promise<void> {
    const original = this.original
    if (original === null) return Promise.resolve()
    if (policy.storage === 'ram' && this.persistence.storeRetainedInMemory !== undefined) {
      return this.persistence.storeRetainedInMemory(packet)
    }
    return original.storeRetained(packet)
  }

  /** The retained messages matching `patterns`, without the ones whose retainer expiry passed. */
  private stream (patterns: string[]): Readable {
    const policy = this.policy
    if (policy === null || this.original === null) return Readable.from([])
    const source = patterns.length === 1
      ? this.original.createRetainedStream(patterns[0])
      : this.original.createRetainedStreamCombi(patterns)
    return Readable.from(this.unexpired(this.visible(source, patterns), policy))
  }

  /**
   * [MQTT-4.7.2-1] A filter starting with a wildcard does not match topics starting with `$`;
   * aedes-persistence's matcher does not know that rule, so `#` would get `$SYS/...` retained
   * messages. A `$` topic is handed on only when a pattern that can match it names `$` itself.
   */
  private async * visible (source: Readable, patterns: string[]): AsyncGenerator<any> {
    const dollarPatterns = patterns.filter(p => !p.startsWith('+') && !p.startsWith('#'))
    for await (const packet of source) {
      if (!packet.topic.startsWith('$') || dollarPatterns.some(p => topicMatches(p, packet.topic))) yield packet
    }
  }

  /**
   * Packets whose expiry the retainer set (no MQTT 5 Message Expiry Interval of their own)
   * are checked here and handed on without it, so subscribers get no expiry property the
   * publisher did not send. aedes handles the packets with their own expiry.
   */
  private async * unexpired (source: AsyncIterable<any>, policy: RetainerPolicy): AsyncGenerator<any> {
    const now = Date.now()
    for await (const packet of source) {
      if (packet.messageExpiry === undefined || packet.properties?.messageExpiryInterval > 0) {
        yield packet
      } else if (packet.messageExpiry <= now) {
        await this.remove(packet.topic, policy)
      } else {
        const copy = { ...packet }
        delete copy.messageExpiry
        yield copy
      }
    }
  }

  private warn (kind: string, fields: Record<string, unknown>, message: string): void {
    const now = Date.now()
    if (now - (this.warnedAt.get(kind) ?? -Infinity) < WARN_EVERY_MS) return
    this.warnedAt.set(kind, now)
    this.log.warn(fields, message)
  }
}

/** The broker's own system topics (published retained by the $SYS service). */
function isSysTopic (topic: string): boolean {
  return topic.startsWith('$SYS/')
}
