import { createHash } from 'node:crypto'

/**
 * A packet as the persistence keeps it, in memory and in the store: the fields aedes reads
 * back from a queued, retained, incoming or will packet, and nothing else (no callbacks,
 * no per-connection state). `payload` stays a Buffer through the store.
 */
export interface StoredPacket {
  /** Absent on a will; aedes reads a missing `cmd` as `publish`. */
  cmd?: string
  topic?: string
  payload?: Buffer | string
  qos?: number
  retain?: boolean
  dup?: boolean
  /** Packet identifier, once aedes assigned one for this client. */
  messageId?: number
  /** Broker that created the packet, and its counter there: aedes' dedupe key. */
  brokerId?: string
  brokerCounter?: number
  /** MQTT 5 properties (userProperties, correlationData, messageExpiryInterval ...). */
  properties?: Record<string, unknown>
  /** Absolute expiry in ms since the epoch, from the Message Expiry Interval. */
  messageExpiry?: number
  /** Owner of a will; publisher of a publish when aedes set it. */
  clientId?: string
  /** PUBREL reason code (MQTT 5). */
  reasonCode?: number
}

/** A subscription of a persistent session, as aedes hands it to `addSubscriptions`. */
export interface StoredSubscription {
  qos: number
  /** Retain handling (MQTT 5). */
  rh?: number
  /** Retain as published (MQTT 5). */
  rap?: boolean
  /** No local (MQTT 5). */
  nl?: boolean
  /** Subscription identifier (MQTT 5), only when the SUBSCRIBE carried one. */
  subscriptionIdentifier?: number
}

const PACKET_FIELDS = [
  'cmd', 'topic', 'payload', 'qos', 'retain', 'dup', 'messageId', 'brokerId', 'brokerCounter',
  'messageExpiry', 'clientId', 'reasonCode'
] as const

/**
 * Copies the persistable fields of an aedes packet into a fresh {@link StoredPacket}.
 * `properties` is copied one level deep (so a later mutation by aedes, e.g. of
 * `messageExpiryInterval` on delivery, does not reach other copies) without its
 * `undefined` entries (aedes blanks `topicAlias` that way).
 */
export function toStoredPacket (packet: Record<string, any>): StoredPacket {
  const stored: Record<string, unknown> = {}
  for (const field of PACKET_FIELDS) {
    const value = packet[field]
    if (value !== undefined && value !== null) stored[field] = value
  }
  if (packet.properties !== undefined && packet.properties !== null) {
    const properties: Record<string, unknown> = {}
    for (const name of Object.keys(packet.properties)) {
      const value = packet.properties[name]
      if (value !== undefined) properties[name] = value
    }
    stored.properties = properties
  }
  return stored as unknown as StoredPacket
}

/**
 * `toStoredPacket` with aedes-packet's defaults for a queued publish: `cmd`, `qos`,
 * `retain`, `dup`, `payload` always present, and `messageId` an own key left unset.
 */
export function toQueuedPacket (packet: Record<string, any>): StoredPacket {
  const queued = toStoredPacket(packet)
  queued.cmd ??= 'publish'
  queued.payload ??= Buffer.alloc(0)
  queued.qos ??= 0
  queued.retain ??= false
  queued.dup ??= false
  queued.messageId = undefined
  return queued
}

/** A copy of `packet` that shares nothing mutable with it but the payload. */
export function copyStoredPacket (packet: StoredPacket): StoredPacket {
  const copy = { ...packet }
  if (packet.properties !== undefined) copy.properties = { ...packet.properties }
  return copy
}

/** The subscription fields aedes persists, without `undefined` entries. */
export function toStoredSubscription (sub: Record<string, any>): StoredSubscription {
  const stored: StoredSubscription = { qos: sub.qos }
  if (sub.rh !== undefined) stored.rh = sub.rh
  if (sub.rap !== undefined) stored.rap = sub.rap
  if (sub.nl !== undefined) stored.nl = sub.nl
  if (sub.subscriptionIdentifier !== undefined) stored.subscriptionIdentifier = sub.subscriptionIdentifier
  return stored
}

/** Whether two subscription records are the same. */
export function sameSubscription (a: StoredSubscription | undefined, b: StoredSubscription): boolean {
  return a !== undefined && a.qos === b.qos && a.rh === b.rh && a.rap === b.rap && a.nl === b.nl &&
    a.subscriptionIdentifier === b.subscriptionIdentifier
}

/** Longest client id or topic used verbatim in a store key; longer ones are hashed. */
const MAX_VERBATIM_BYTES = 512

/**
 * The store key for a client id or a topic: the name itself when short, otherwise `#`
 * and its SHA-256 (base64url). Names starting with `#` are always hashed, so the two forms
 * never collide (`#` is also invalid in a PUBLISH topic). Stored values carry the full
 * name, so the key never needs decoding.
 */
export function nameKey (name: string): string {
  if (name.charCodeAt(0) !== 35 && Buffer.byteLength(name) <= MAX_VERBATIM_BYTES) return name
  return '#' + createHash('sha256').update(name).digest('base64url')
}

/** Digits of the fixed-width sequence number at the end of an `outgoing` key. */
const SEQ_DIGITS = 16

/**
 * Key of a queued packet: `<client key>/<sequence, 16 digits>`. The fixed width makes the
 * keys of one client sort in sequence order and keeps the key unambiguous even when the
 * client id itself contains `/`.
 */
export function outgoingKey (clientId: string, seq: number): string {
  return `${nameKey(clientId)}/${String(seq).padStart(SEQ_DIGITS, '0')}`
}

/** Key of an incoming QoS 2 packet: `<client key>/<packet identifier, 5 digits>`. */
export function incomingKey (clientId: string, messageId: number): string {
  return `${nameKey(clientId)}/${String(messageId).padStart(5, '0')}`
}
