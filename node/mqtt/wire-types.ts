import type { SubscribePolicy } from './wire-subscribe.js'
import type { Wire } from './wire.js'
import type { RateLimits } from './read-gate.js'

/** Limits and policies the wire layer enforces before aedes sees a packet. */
export interface WireLimits extends SubscribePolicy {
  /** Receive Maximum the broker advertises (`mqtt.max_inflight`): QoS 1/2 publishes a v5 client may have unacknowledged. */
  receiveMaximum: number
  /** `mqtt.max_qos_allowed`. */
  maxQos: number
  /** `mqtt.retain_available`. */
  retainAvailable: boolean
  /** `mqtt.max_packet_size`: a frame above it (header included) closes the connection (0x95) before its body is read. */
  maxPacketSize: number
  /** `mqtt.strict_mode`: the validator's checks beyond the standard (control characters, payload format). */
  strictMode: boolean
  /** Bytes buffered for one socket before `write` asks the writer to wait for 'drain'. */
  highWaterMark: number
  /** Unsent bytes for one socket above which QoS 0 deliveries to it are dropped. */
  dropThreshold: number
  /** `zone.external.rate_limit.*`: reading pauses while a connection is above them (read-gate.ts); null when both are off. */
  rateLimits: RateLimits | null
  /** `zone.external.force_shutdown_policy`: checked at each flush (Wire.overQuota); null when off. */
  forceShutdown: ForceShutdown | null
}

/**
 * `zone.external.force_shutdown_policy` (`10000|64MB`): EMQ X 4.4 shuts a connection process
 * down when its message queue or heap passes these. A Node connection has neither of its own:
 * here they are the messages waiting to be sent to the client (QoS 1/2 held by its Receive
 * Maximum, QoS 0 deliveries waiting for the socket to drain) and the bytes not yet sent to it
 * (queued, held, and in the socket's buffer).
 */
export interface ForceShutdown { maxQueue: number, maxBytes: number }

/** Per-connection traffic counters (the Connection fields `recv_*` / `send_*`). */
export interface WireCounters {
  recvCnt: number, recvOct: number, recvPkt: number, recvMsg: number
  sendCnt: number, sendOct: number, sendPkt: number, sendMsg: number
}

/** A QoS 1/2 message the wire sent, remembered until the client acknowledges it. */
export interface SentMessage { topic: string, payload: Buffer, qos: number, id: number, retain: boolean }

/** Lets a wire report acknowledged deliveries (`message.acked`) while someone listens. */
export interface AckWatch {
  enabled: () => boolean
  acked: (wire: Wire, message: SentMessage) => void
}

/** A protocol violation found on the wire: the broker disconnects with this reason code. */
export type ViolationHandler = (wire: Wire, reasonCode: number, message: string) => void
