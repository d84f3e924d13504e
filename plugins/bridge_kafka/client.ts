/**
 * The client of `bridge_kafka`: kafkajs (pure JavaScript, no native code; loaded by the first
 * resource, not by every node), one producer and one admin connection per resource instance.
 *
 * Invariants:
 * - The kit owns retries: kafkajs retries nothing (`retries: 0`), so an outage is seen at once
 *   and the buffer, not the client, holds what waits.
 * - A write is one `sendBatch` per run of writes with the same acks, in order, the next only
 *   once the previous was acknowledged as its acks say (`-1`: by every in-sync replica; `0`:
 *   not at all, so such a message counts as success once written to the socket).
 * - A partition's messages go in one produce request; several partitions are not all or none,
 *   so a batch sent again after an error may publish some messages twice (at least once).
 * - The partition of each message follows its action's strategy: `key_dispatch` hashes the key
 *   as the Java client does (murmur2, kafkajs's default partitioner), `random` picks one of the
 *   partitions with a leader.
 * - Errors about the messages or the topic (too large, invalid, no such topic) are refusals for
 *   good ({@link WriteRefused}), which the kit splits; anything else is transient.
 */
import type { ConnectionOptions } from 'node:tls'
import type { Admin, Message, PartitionerArgs, Producer } from 'kafkajs'
import { WriteRefused, type DataClient } from '../kit/data/index.js'
import { kafkaWrites, type KafkaWrite, type Strategy } from './message.js'
import type { Compression } from './compressions.js'

/** How long a request may take, in ms. */
const REQUEST_TIMEOUT_MS = 15_000
/** How long a new connection may take, in ms. */
const CONNECT_TIMEOUT_MS = 5000
/** Kafka's errors about the messages or the topic. */
const REFUSALS = new Set(['MESSAGE_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_TOPIC_EXCEPTION', 'UNKNOWN_TOPIC_OR_PARTITION', 'INVALID_REQUIRED_ACKS'])


/** A resource's settings, read from its config. */
export interface KafkaSettings {
  /** `host:port` of each bootstrap broker. */
  brokers: string[]
  compression: Compression
  /** Node's TLS options (files read), with `ssl`. */
  tls: ConnectionOptions | undefined
  /** Names the client to the brokers. */
  clientId: string
}

/** The error's Kafka error type (`MESSAGE_TOO_LARGE`), looking through kafkajs's wrappers. */
function kafkaType (err: unknown): string | undefined {
  for (let e = err as { type?: unknown, cause?: unknown, originalError?: unknown } | undefined; e !== undefined && e !== null; e = (e.originalError ?? e.cause) as typeof e) {
    if (typeof e.type === 'string') return e.type
  }
  return undefined
}

/**
 * kafkajs's compression type for EMQ X's `compression` value; for `snappy`, kafkajs-snappy's
 * codec registered in kafkajs's table first (kafkajs ships none for it). One table per
 * process: what kafkajs compresses with and decompresses with, for every client.
 */
export async function kafkaCompression (compression: Compression): Promise<number> {
  const kafkajs = await import('kafkajs')
  const { CompressionTypes } = kafkajs
  // a CommonJS export Node.js's named-export detection does not find: through the module object
  const { CompressionCodecs } = kafkajs.default
  if (compression === 'gzip') return CompressionTypes.GZIP
  if (compression !== 'snappy') return CompressionTypes.None
  const { default: SnappyCodec } = await import('kafkajs-snappy')
  CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
  return CompressionTypes.Snappy
}

/** A {@link DataClient} publishing to Kafka (see the module's invariants). */
export async function kafkaClient (s: KafkaSettings): Promise<DataClient<KafkaWrite>> {
  const { Kafka, Partitioners, logLevel } = await import('kafkajs')
  const strategies = new WeakMap<Message, Strategy>()
  const byKey = Partitioners.DefaultPartitioner()
  const partitioner = (): ((args: PartitionerArgs) => number) => (args) => {
    if (strategies.get(args.message) !== 'random') return byKey(args)
    const led = args.partitionMetadata.filter((p) => p.leader >= 0)
    const from = led.length > 0 ? led : args.partitionMetadata
    return from[Math.floor(Math.random() * from.length)].partitionId
  }
  const kafka = new Kafka({
    clientId: s.clientId,
    brokers: s.brokers,
    ssl: s.tls ?? false,
    connectionTimeout: CONNECT_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING
  })
  let producer: Producer | undefined
  let admin: Admin | undefined
  const compression = await kafkaCompression(s.compression)
  const address = `kafka ${s.brokers.join(',')}`
  const why = (err: unknown): string => `${address}: ${kafkaType(err) ?? (err as Error)?.name ?? 'Error'}: ${(err as Error)?.message ?? String(err)}`

  const disconnect = async (): Promise<void> => {
    const [p, a] = [producer, admin]
    producer = undefined
    admin = undefined
    await Promise.allSettled([p?.disconnect(), a?.disconnect()])
  }

  return {
    address,
    async connect () {
      await disconnect()
      const p = kafka.producer({ createPartitioner: partitioner, allowAutoTopicCreation: false, retry: { retries: 0 }, maxInFlightRequests: 1 })
      const a = kafka.admin({ retry: { retries: 0 } })
      try {
        await p.connect()
        await a.connect()
        await a.describeCluster()
      } catch (err) {
        await Promise.allSettled([p.disconnect(), a.disconnect()])
        throw new Error(why(err))
      }
      producer = p
      admin = a
    },
    async alive () {
      if (admin === undefined) return false
      return await admin.describeCluster().then(() => true, () => false)
    },
    async write (writes) {
      if (producer === undefined) throw new Error(`${address}: not connected`)
      for (let i = 0; i < writes.length;) {
        const acks = writes[i].a
        const topicMessages: Array<{ topic: string, messages: Message[] }> = []
        for (; i < writes.length && writes[i].a === acks; i++) {
          const w = writes[i]
          const messages = w.m.map((m): Message => {
            const message: Message = { key: m.k ?? null, value: m.v, timestamp: m.ts }
            strategies.set(message, w.s)
            return message
          })
          const last = topicMessages.at(-1)
          if (last?.topic === w.t) last.messages.push(...messages)
          else topicMessages.push({ topic: w.t, messages })
        }
        try {
          await producer.sendBatch({ topicMessages, acks, compression, timeout: REQUEST_TIMEOUT_MS })
        } catch (err) {
          if (REFUSALS.has(kafkaType(err) ?? '')) throw new WriteRefused(why(err), { cause: err })
          throw new Error(why(err), { cause: err })
        }
      }
    },
    ...kafkaWrites,
    close: disconnect
  }
}
