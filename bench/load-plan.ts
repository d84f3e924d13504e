/**
 * What the main thread tells each load worker to do, the messages they exchange, and
 * the layout of the shared counters. Shared by `load-generator.ts` (main thread) and
 * `load-worker.ts` (worker threads).
 */

/** How the publishers of a run behave. */
export interface PublisherSpec {
  /** Topic name; `{i}` is replaced by the publisher's global index. */
  topic: string
  /** QoS of every PUBLISH. */
  qos: 0 | 1
  /** Messages per second per publisher; 0 means unthrottled (write as fast as the socket drains). */
  rate: number
  /** Pacing period for throttled publishers, in ms. */
  tickMs: number
  /** QoS 1 only: most unacknowledged PUBLISHes per publisher before it skips sends. */
  inflightWindow: number
  /** Payload size in bytes (at least 8: the timestamp). */
  payloadSize: number
  /**
   * When set, every payload is the JSON text `{"temp":<jsonTemp>}` padded with spaces to
   * `payloadSize`, and carries no timestamp (latency is not recorded). For the rule-engine bench.
   */
  jsonTemp?: number
}

/** How the subscribers of a run behave. */
export interface SubscriberSpec {
  /** The one topic filter every subscriber subscribes to. */
  filter: string
  /** Requested QoS; a QoS 1 subscriber answers each PUBLISH with PUBACK. */
  qos: 0 | 1
}

/** One worker's share of the load. */
export interface WorkerPlan {
  host: string
  port: number
  workerIndex: number
  /** Prefix of every client identifier, unique per run. */
  clientIdPrefix: string
  /** CONNECT keepalive in seconds. */
  keepalive: number
  /** Connections a worker opens at once before waiting for their CONNACKs. */
  connectBatch: number
  /** Global indices of this worker's publishers. */
  publishers: number[]
  publisher: PublisherSpec
  /** Global indices of this worker's subscribers. */
  subscribers: number[]
  subscriber: SubscriberSpec
  /** Number of idle connections (CONNECT only) this worker holds. */
  idle: number
  /** Float64 counters, {@link COUNTER_SLOTS} per worker (see {@link Counter}). */
  counters: SharedArrayBuffer
  /** Int32 control flags (see {@link Control}). */
  control: SharedArrayBuffer
}

/** Slots of one worker's block in the shared Float64Array. Each slot has one writer: its worker. */
export const Counter = {
  /** PUBLISH packets written by publishers. */
  SENT: 0,
  /** PUBLISH packets received by subscribers. */
  RECEIVED: 1,
  /** PUBACKs received by QoS 1 publishers. */
  ACKED: 2,
  /** Sends a throttled publisher skipped (socket backed up or QoS 1 window full). */
  SKIPPED: 3,
  /** Connections closed by the broker or by an error, not by us. */
  DROPPED: 4,
  /** Connections that got a CONNACK. */
  CONNECTED: 5
} as const

/** Number of Float64 slots per worker. */
export const COUNTER_SLOTS = 8

/** Slots of the shared Int32Array written by the main thread. */
export const Control = {
  /** 1 while latencies should be recorded (the measured window). */
  RECORDING: 0
} as const

/** Commands from the main thread; every one is answered with a {@link WorkerReply} of the same id. */
export type WorkerCommand =
  | { id: number, cmd: 'setup' }
  | { id: number, cmd: 'start' }
  | { id: number, cmd: 'stop' }
  | { id: number, cmd: 'histogram' }
  | { id: number, cmd: 'close', which: 'publishers' | 'all', abrupt: boolean }

/** Answers from a worker. */
export interface WorkerReply {
  id: number
  /** Set when the command failed; the message says why. */
  error?: string
  /** For 'histogram': bucket counts and the largest sample (µs). */
  histogram?: { counts: Float64Array, max: number }
}
