/**
 * The sessions door's packet source: visits of persistent sessions. Client ids come from a
 * small pool, so a visit often resumes a session another one left (queued messages and
 * unacknowledged deliveries waiting), or takes over a connection still open with the same
 * id. A visit: CONNECT with Clean Start 0 / clean session 0 (mostly) and, in MQTT 5, a
 * Session Expiry Interval (0 too: resume, and end with the connection) and sometimes a
 * small Receive Maximum; subscriptions at QoS 1/2 to topics the other visits publish to;
 * publishes of every QoS; acknowledgements of some of what the broker delivers (not all:
 * the rest stays in flight); then a DISCONNECT, an abrupt drop, a protocol error or a blind
 * mutation.
 */
import { Random, frame, str, u16, u32, connectBody, publish, ack, disconnect, propertyBlock, type ConnectFields } from './packets.js'
import { protocolError, blindMutation } from './mutator.js'
import type { Script, ScriptContext } from './driver.js'

/** Client ids a run shares among its visits: few, so that visits meet. */
const POOL = 24
/** Topic groups: visits subscribe to `fuzz/s/<g>/#` and publish to `fuzz/s/<g>/...`. */
const GROUPS = 8

/** SUBSCRIBE `id` to one or two session topics at QoS 1 or 2 (v5 sometimes with No Local or Retain Handling). */
function subscribeSessions (r: Random, version: 4 | 5, id: number): Buffer {
  const parts: Buffer[] = [u16(id)]
  if (version === 5) parts.push(propertyBlock(Buffer.alloc(0)))
  for (let n = 1 + r.int(2); n > 0; n--) {
    const filter = r.chance(0.8) ? `fuzz/s/${r.int(GROUPS)}/#` : 'fuzz/s/+/x'
    const options = (1 + r.int(2)) | (version === 5 ? (r.int(2) << 2) | (r.int(3) << 4) : 0)
    parts.push(str(filter), Buffer.from([options]))
  }
  return frame(0x82, Buffer.concat(parts))
}

/** The answers of a client that acknowledges most deliveries (PUBACK, PUBREC, PUBCOMP) and forgets some. */
function acknowledger (r: Random, version: 4 | 5): (b0: number, body: Buffer) => Buffer | null {
  return (b0, body) => {
    const type = b0 >> 4
    if (type === 3) {
      const qos = (b0 >> 1) & 3
      if (qos === 0 || body.length < 2) return null
      const id = body.readUInt16BE(2 + body.readUInt16BE(0))
      return r.chance(0.75) ? ack(r, version, qos === 1 ? 4 : 5, id) : null
    }
    if (type === 6 && body.length >= 2) return r.chance(0.85) ? ack(r, version, 7, body.readUInt16BE(0)) : null
    return null
  }
}

/** One visit of a persistent session. */
export function sessionScript (r: Random, ctx: ScriptContext): Script {
  const version = r.chance(0.5) ? 5 : 4
  const f: ConnectFields = {
    protocolName: Buffer.from('MQTT'),
    level: version,
    clean: r.chance(0.15),
    keepalive: 60,
    clientId: Buffer.from(`fs-${ctx.seed}-${r.int(POOL)}`)
  }
  if (version === 5) {
    const props: Buffer[] = [Buffer.concat([Buffer.from([0x11]), u32(r.pick([0, 30, 600, 0xffffffff]))])]
    if (r.chance(0.3)) props.push(Buffer.concat([Buffer.from([0x21]), u16(1 + r.int(4))]))
    f.properties = Buffer.concat(props)
  }
  if (r.chance(0.15)) f.will = { qos: r.int(3), retain: false, topic: Buffer.from(`fuzz/s/${r.int(GROUPS)}/will`), payload: Buffer.from('gone') }
  const frames: Buffer[] = [frame(0x10, connectBody(f))]
  let id = 1 + r.int(60000)
  const nextId = (): number => 1 + (id++ % 65535)
  if (r.chance(0.7)) frames.push(subscribeSessions(r, version, nextId()))
  for (let n = r.int(12); n > 0; n--) {
    const qos = r.int(3)
    const pid = nextId()
    const p = publish(r, version, qos, pid, false)
    // the topic of a session group instead of the generic one: rebuild with the same flags
    frames.push(withTopic(p, `fuzz/s/${r.int(GROUPS)}/x`))
    if (qos === 2) frames.push(ack(r, version, 6, pid))
  }
  if (r.chance(0.1)) frames.push(frame(0xa2, Buffer.concat([u16(nextId()), version === 5 ? Buffer.from([0]) : Buffer.alloc(0), str(`fuzz/s/${r.int(GROUPS)}/#`)])))
  const roll = r.next()
  const base = { version, frames, holdMs: r.int(400), react: acknowledger(r, version), clientId: f.clientId.toString() }
  if (roll < 0.35) return { ...base, final: [disconnect(r, version)], expect: { kind: 'survive', name: 'valid' } }
  if (roll < 0.6) return { ...base, final: [], drop: true, expect: { kind: 'survive', name: 'valid' } }
  if (roll < 0.85) {
    const m = protocolError(r, version)
    return { ...base, final: [m.bytes], expect: { kind: 'close', name: m.name } }
  }
  const m = blindMutation(r, r.pick(frames))
  return { ...base, final: [m.bytes], expect: { kind: 'survive', name: m.name } }
}

/** `publishFrame` with its topic replaced by `topic` (same flags, packet id, properties and payload). */
function withTopic (publishFrame: Buffer, topic: string): Buffer {
  let i = 1
  while ((publishFrame[i] & 128) !== 0) i++
  const body = publishFrame.subarray(i + 1)
  const rest = body.subarray(2 + body.readUInt16BE(0))
  return frame(publishFrame[0], Buffer.concat([str(topic), rest]))
}
