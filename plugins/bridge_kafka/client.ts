/**
 * The client of `bridge_kafka`: kafkajs (pure JavaScript, no native code; loaded by the first
 * resource, not by every node), one producer and one admin connection per resource instance,
 * authenticating with the resource's SASL mechanism when it has one (kafkajs's `sasl`), on
 * sockets of our factory (kafkajs's, with `tcp_keepalive`).
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
 *   partitions with a leader, `roundrobin` takes them in turn (a counter per topic).
 * - One produce request carries at most `max_batch_bytes` of message keys and values (a message
 *   larger than that goes alone): a longer run of writes is sent as several, in order.
 * - Errors about the messages or the topic (too large, invalid, no such topic) are refusals for
 *   good ({@link WriteRefused}), which the kit splits; anything else is transient.
 */
import { connect as netConnect, isIP } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls'
import type { Admin, ISocketFactory, KafkaConfig as KafkaClientConfig, Message, PartitionerArgs, Producer, SASLOptions } from 'kafkajs'
import { WriteRefused, type DataClient } from '../kit/data/index.js'
import { kafkaWrites, type KafkaWrite, type Strategy } from './message.js'
import type { KafkaConfig } from './config.js'
import type { Compression } from './compressions.js'

/** How long a request may take, in ms. */
const REQUEST_TIMEOUT_MS = 15_000
/** How long a new connection may take, in ms. */
const CONNECT_TIMEOUT_MS = 5000
/** Kafka's errors about the messages or the topic. */
const REFUSALS = new Set(['MESSAGE_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_TOPIC_EXCEPTION', 'UNKNOWN_TOPIC_OR_PARTITION', 'INVALID_REQUIRED_ACKS'])


/** A resource's settings, read from its config. */
export interface KafkaSettings extends Omit<KafkaConfig, 'syncTimeoutMs'> {
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

/**
 * kafkajs's socket factory with `tcp_keepalive` (kafkajs's own turns keepalive on at 60 s,
 * always): a TLS connection names the host as SNI unless the TLS options say otherwise.
 */
export function keepaliveSocketFactory (keepaliveMs: number): ISocketFactory {
  return ({ host, port, ssl, onConnect }) => {
    // kafkajs hands over its `ssl` option: false, or TLS options (true as {})
    const tls = ssl as ConnectionOptions | boolean | null | undefined
    const socket = tls !== null && tls !== undefined && tls !== false
      ? tlsConnect({ host, port, ...(isIP(host) === 0 ? { servername: host } : {}), ...(typeof tls === 'object' ? tls : {}) }, onConnect)
      : netConnect({ host, port }, onConnect)
    socket.setKeepAlive(keepaliveMs > 0, keepaliveMs)
    return socket
  }
}

/** The bytes a message counts against `max_batch_bytes`: its key and value. */
function messageBytes (m: { k?: string, v: string }): number {
  return Buffer.byteLength(m.v) + (m.k === undefined ? 0 : Buffer.byteLength(m.k))
}

/** One produce request: its acks and its messages by topic. */
export interface ProduceRequest { acks: number, topicMessages: Array<{ topic: string, messages: Message[] }> }

/**
 * The produce requests of `writes`, in order: one per run of writes with the same acks, cut
 * where the next message would take its keys and values past `maxBatchBytes` (a larger
 * message alone). `tag` learns each message's partition strategy.
 */
export function produceRequests (writes: readonly KafkaWrite[], maxBatchBytes: number, tag: (message: Message, strategy: Strategy) => void): ProduceRequest[] {
  const requests: ProduceRequest[] = []
  let request: ProduceRequest | undefined
  let bytes = 0
  for (const w of writes) {
    for (const m of w.m) {
      const size = messageBytes(m)
      if (request === undefined || request.acks !== w.a || (bytes > 0 && bytes + size > maxBatchBytes)) {
        request = { acks: w.a, topicMessages: [] }
        requests.push(request)
        bytes = 0
      }
      bytes += size
      const message: Message = { key: m.k ?? null, value: m.v, timestamp: m.ts, ...(m.h !== undefined ? { headers: m.h } : {}) }
      tag(message, w.s)
      const last = request.topicMessages.at(-1)
      if (last?.topic === w.t) last.messages.push(message)
      else request.topicMessages.push({ topic: w.t, messages: [message] })
    }
  }
  return requests
}

/** A kafkajs partitioner. */
type Partition = (args: PartitionerArgs) => number

/**
 * The partitioner of messages whose strategy `strategyOf` tells: `key_dispatch` (or none
 * known) is `byKey`, `random` a random partition with a leader, `roundrobin` the partitions
 * with a leader in turn, a counter per topic.
 */
export function strategyPartitioner (strategyOf: (message: Message) => Strategy | undefined, byKey: Partition): Partition {
  const turns = new Map<string, number>()
  return (args) => {
    const strategy = strategyOf(args.message)
    if (strategy === 'key_dispatch' || strategy === undefined) return byKey(args)
    const led = args.partitionMetadata.filter((p) => p.leader >= 0)
    const from = led.length > 0 ? led : args.partitionMetadata
    if (strategy === 'random') return from[Math.floor(Math.random() * from.length)].partitionId
    const turn = (turns.get(args.topic) ?? 0) % from.length
    turns.set(args.topic, turn + 1)
    return [...from].sort((a, b) => a.partitionId - b.partitionId)[turn].partitionId
  }
}

/** kafkajs's client options of a resource's settings (its log level aside: none). */
export function kafkaOptions (s: KafkaSettings): KafkaClientConfig {
  return {
    clientId: s.clientId,
    brokers: s.brokers,
    ssl: s.tls ?? false,
    // one object per mechanism in kafkajs's types; the same three fields for each
    ...(s.sasl !== undefined ? { sasl: s.sasl as SASLOptions } : {}),
    socketFactory: keepaliveSocketFactory(s.tcpKeepaliveMs),
    connectionTimeout: CONNECT_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    retry: { retries: 0 }
  }
}

/** A {@link DataClient} publishing to Kafka (see the module's invariants). */
export async function kafkaClient (s: KafkaSettings): Promise<DataClient<KafkaWrite>> {
  const { Kafka, Partitioners, logLevel } = await import('kafkajs')
  const strategies = new WeakMap<Message, Strategy>()
  const partitioner = (): Partition => strategyPartitioner((m) => strategies.get(m), Partitioners.DefaultPartitioner())
  const kafka = new Kafka({ ...kafkaOptions(s), logLevel: logLevel.NOTHING })
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
      for (const { acks, topicMessages } of produceRequests(writes, s.maxBatchBytes, (message, strategy) => strategies.set(message, strategy))) {
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
