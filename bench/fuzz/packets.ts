/**
 * Valid MQTT 3.1.1 and 5.0 packets a client may send, built byte by byte from a seeded
 * random source, for the fuzzer to send as they are or mutated (mutator.ts).
 */
import { encodeVarint } from '../../node/mqtt/wire-bytes.js'

/** A seeded pseudo-random source (mulberry32): the same seed gives the same packets. */
export class Random {
  private state: number
  constructor (seed: number) { this.state = seed >>> 0 }
  /** A float in [0, 1). */
  next (): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  /** An integer in [0, n). */
  int (n: number): number { return Math.floor(this.next() * n) }
  /** True with probability `p`. */
  chance (p: number): boolean { return this.next() < p }
  /** One element of `items`. */
  pick<T> (items: readonly T[]): T { return items[this.int(items.length)] }
  /** `n` random bytes. */
  bytes (n: number): Buffer {
    const out = Buffer.allocUnsafe(n)
    for (let i = 0; i < n; i++) out[i] = this.int(256)
    return out
  }
}

/** A frame from its first byte and body. */
export function frame (b0: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([b0]), encodeVarint(body.length), body])
}

/** A string or binary field: two length bytes, then the bytes. */
export function str (s: string | Buffer): Buffer {
  const b = typeof s === 'string' ? Buffer.from(s) : s
  const out = Buffer.allocUnsafe(2 + b.length)
  out.writeUInt16BE(b.length, 0)
  b.copy(out, 2)
  return out
}

/** A two-byte integer. */
export function u16 (n: number): Buffer { const b = Buffer.allocUnsafe(2); b.writeUInt16BE(n, 0); return b }
/** A four-byte integer. */
export function u32 (n: number): Buffer { const b = Buffer.allocUnsafe(4); b.writeUInt32BE(n >>> 0, 0); return b }

/** A v5 property block (length, then properties) from raw property bytes. */
export function propertyBlock (props: Buffer): Buffer {
  return Buffer.concat([encodeVarint(props.length), props])
}

/** A User Property with random printable name and value. */
export function userProperty (r: Random): Buffer {
  return Buffer.concat([Buffer.from([0x26]), str(`k${r.int(100)}`), str(`v${r.int(1000)}`)])
}

/** Valid PUBLISH properties (each at most once, User Properties any number). */
export function publishProperties (r: Random): Buffer {
  const parts: Buffer[] = []
  if (r.chance(0.3)) parts.push(Buffer.from([0x01, r.int(2)]))
  if (r.chance(0.2)) parts.push(Buffer.concat([Buffer.from([0x02]), u32(1 + r.int(3600))]))
  if (r.chance(0.2)) parts.push(Buffer.concat([Buffer.from([0x03]), str('text/plain')]))
  if (r.chance(0.2)) parts.push(Buffer.concat([Buffer.from([0x08]), str(`fuzz/reply/${r.int(10)}`)]))
  if (r.chance(0.2)) parts.push(Buffer.concat([Buffer.from([0x09]), str(r.bytes(r.int(8)))]))
  for (let i = r.int(3); i > 0; i--) parts.push(userProperty(r))
  return Buffer.concat(parts)
}

/** A topic name under `fuzz/` (no wildcards), 1 to 4 levels. */
export function topicName (r: Random): string {
  const levels = ['fuzz']
  for (let i = r.int(4); i > 0; i--) levels.push(r.pick(['a', 'b', 'c', 'dev', 'x1', 'é', '']))
  return levels.join('/')
}

/** A topic filter under `fuzz/`, sometimes with wildcards or shared. */
export function topicFilter (r: Random): string {
  // few filters match every retained message: a SUBSCRIBE to them replays the whole store
  const f = r.chance(0.05) ? 'fuzz/#' : r.pick(['fuzz/+/a', 'fuzz/a', 'fuzz/+', 'fuzz/b/+/c', topicName(r), topicName(r)])
  return r.chance(0.1) ? `$share/g${r.int(3)}/${f}` : f
}

/** CONNECT at `version` (4 or 5): clean, keepalive 60, maybe a will, user name and password, properties. */
export function connect (r: Random, version: 4 | 5, clientId: string): Buffer {
  const will = r.chance(0.2)
  const user = r.chance(0.3)
  const pass = user && r.chance(0.5)
  const willQos = will ? r.int(3) : 0
  const flags = 0x02 | (will ? 0x04 | (willQos << 3) | (r.chance(0.3) ? 0x20 : 0) : 0) | (user ? 0x80 : 0) | (pass ? 0x40 : 0)
  const parts: Buffer[] = [str('MQTT'), Buffer.from([version, flags]), u16(60)]
  if (version === 5) {
    const props: Buffer[] = []
    if (r.chance(0.3)) props.push(Buffer.concat([Buffer.from([0x11]), u32(r.int(60))]))
    if (r.chance(0.3)) props.push(Buffer.concat([Buffer.from([0x21]), u16(1 + r.int(100))]))
    if (r.chance(0.3)) props.push(Buffer.concat([Buffer.from([0x27]), u32(1024 + r.int(1_000_000))]))
    if (r.chance(0.3)) props.push(Buffer.concat([Buffer.from([0x22]), u16(r.int(20))]))
    if (r.chance(0.2)) props.push(userProperty(r))
    parts.push(propertyBlock(Buffer.concat(props)))
  }
  parts.push(str(clientId))
  if (will) {
    if (version === 5) parts.push(propertyBlock(r.chance(0.5) ? Buffer.alloc(0) : Buffer.from([0x18, 0, 0, 0, 1])))
    parts.push(str(`fuzz/will/${r.int(10)}`), str(r.bytes(r.int(16))))
  }
  if (user) parts.push(str(`user${r.int(10)}`))
  if (pass) parts.push(str(r.bytes(r.int(12))))
  return frame(0x10, Buffer.concat(parts))
}

/**
 * Every field of a CONNECT, raw, so that any of them can be wrong. `flags` is computed
 * from the fields present unless given; `properties` and `willProperties` are the v5
 * property bytes (without the block length, which `propertyLength` overrides).
 */
export interface ConnectFields {
  protocolName: Buffer
  level: number
  flags?: number
  clean: boolean
  keepalive: number
  /** v5 only (level 5): the CONNECT properties. */
  properties?: Buffer
  propertyLength?: Buffer
  clientId: Buffer
  will?: { qos: number, retain: boolean, properties?: Buffer, topic: Buffer, payload: Buffer }
  username?: Buffer
  password?: Buffer
  /** Bytes after the payload. */
  tail?: Buffer
}

/** The CONNECT flags byte the fields call for. */
export function connectFlags (f: ConnectFields): number {
  const w = f.will
  return (f.clean ? 0x02 : 0) | (w !== undefined ? 0x04 | (w.qos << 3) | (w.retain ? 0x20 : 0) : 0) |
    (f.username !== undefined ? 0x80 : 0) | (f.password !== undefined ? 0x40 : 0)
}

/** The body of a CONNECT from its fields (the frame: `frame(0x10, connectBody(f))`). */
export function connectBody (f: ConnectFields): Buffer {
  const v5 = (f.level & 0x7f) === 5
  const parts: Buffer[] = [str(f.protocolName), Buffer.from([f.level, f.flags ?? connectFlags(f)]), u16(f.keepalive)]
  if (v5) parts.push(f.propertyLength ?? encodeVarint((f.properties ?? Buffer.alloc(0)).length), f.properties ?? Buffer.alloc(0))
  parts.push(str(f.clientId))
  if (f.will !== undefined) {
    if (v5) parts.push(propertyBlock(f.will.properties ?? Buffer.alloc(0)))
    parts.push(str(f.will.topic), str(f.will.payload))
  }
  if (f.username !== undefined) parts.push(str(f.username))
  if (f.password !== undefined) parts.push(str(f.password))
  if (f.tail !== undefined) parts.push(f.tail)
  return Buffer.concat(parts)
}

/** PUBLISH at `qos` with packet id `id` (QoS > 0), maybe retained, with v5 properties. */
export function publish (r: Random, version: 4 | 5, qos: number, id: number, retain = r.chance(0.02)): Buffer {
  // retained messages go to a few topics: every matching SUBSCRIBE replays them all
  const parts: Buffer[] = [str(retain ? `fuzz/r/${r.int(20)}` : topicName(r))]
  if (qos > 0) parts.push(u16(id))
  if (version === 5) {
    let props = r.chance(0.5) ? publishProperties(r) : Buffer.alloc(0)
    if (r.chance(0.1)) props = Buffer.concat([props, Buffer.from([0x23]), u16(1 + r.int(10))])
    parts.push(propertyBlock(props))
  }
  parts.push(r.chance(0.5) ? Buffer.from(`payload ${r.int(1e6)}`) : r.bytes(r.int(64)))
  const dup = qos > 0 && r.chance(0.1) ? 8 : 0
  return frame(0x30 | dup | (qos << 1) | (retain ? 1 : 0), Buffer.concat(parts))
}

/** PUBACK (4), PUBREC (5), PUBREL (6) or PUBCOMP (7) for `id`, v5 sometimes with a reason code and properties. */
export function ack (r: Random, version: 4 | 5, type: 4 | 5 | 6 | 7, id: number): Buffer {
  const parts = [u16(id)]
  if (version === 5 && r.chance(0.3)) {
    parts.push(Buffer.from([type >= 6 ? r.pick([0x00, 0x92]) : r.pick([0x00, 0x10, 0x80, 0x97])]))
    if (r.chance(0.5)) parts.push(propertyBlock(Buffer.concat([Buffer.from([0x1f]), str('fine')])))
  }
  return frame((type << 4) | (type === 6 ? 2 : 0), Buffer.concat(parts))
}

/** SUBSCRIBE `id` to 1..3 filters (v5: options and maybe a Subscription Identifier). */
export function subscribe (r: Random, version: 4 | 5, id: number): Buffer {
  const parts: Buffer[] = [u16(id)]
  if (version === 5) parts.push(propertyBlock(r.chance(0.3) ? Buffer.concat([Buffer.from([0x0b]), encodeVarint(1 + r.int(1000))]) : Buffer.alloc(0)))
  for (let n = 1 + r.int(3); n > 0; n--) {
    const filter = topicFilter(r)
    const shared = filter.startsWith('$share/')
    const options = r.int(3) | (version === 5 ? ((shared ? 0 : r.int(2)) << 2) | (r.int(2) << 3) | (r.int(3) << 4) : 0)
    parts.push(str(filter), Buffer.from([options]))
  }
  return frame(0x82, Buffer.concat(parts))
}

/** UNSUBSCRIBE `id` from 1..2 filters. */
export function unsubscribe (r: Random, version: 4 | 5, id: number): Buffer {
  const parts: Buffer[] = [u16(id)]
  if (version === 5) parts.push(propertyBlock(Buffer.alloc(0)))
  for (let n = 1 + r.int(2); n > 0; n--) parts.push(str(topicFilter(r)))
  return frame(0xa2, Buffer.concat(parts))
}

export const PINGREQ = Buffer.from([0xc0, 0x00])

/** DISCONNECT (v5 sometimes with reason code 0x04 or properties). */
export function disconnect (r: Random, version: 4 | 5): Buffer {
  if (version === 4 || r.chance(0.5)) return Buffer.from([0xe0, 0x00])
  return frame(0xe0, Buffer.concat([Buffer.from([r.pick([0x00, 0x04])]), propertyBlock(r.chance(0.5) ? userProperty(r) : Buffer.alloc(0))]))
}

/** AUTH (v5 only; the broker offers no enhanced authentication, so it is always refused). */
export function auth (): Buffer {
  return frame(0xf0, Buffer.concat([Buffer.from([0x18]), propertyBlock(Buffer.concat([Buffer.from([0x15]), str('SCRAM')]))]))
}
