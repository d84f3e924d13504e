/**
 * The packet source of the tcp, tls, ws and wss doors: a CONNECT (3.1.1 or 5.0), up to 40
 * valid packets of every kind, then a protocol error the broker must close the connection
 * for, a blind mutation of one of the frames, or nothing (sometimes a DISCONNECT).
 */
import { Random, connect, publish, ack, subscribe, unsubscribe, disconnect, PINGREQ } from './packets.js'
import { protocolError, blindMutation, type Mutation } from './mutator.js'
import type { Script, ScriptContext } from './driver.js'

/** A few valid packets: a PUBLISH (QoS 2 followed by its PUBREL), SUBSCRIBE, UNSUBSCRIBE, an acknowledgement or PINGREQ. */
export function validPackets (r: Random, version: 4 | 5, id: number): Buffer[] {
  const pid = 1 + (id % 65535)
  switch (r.int(8)) {
    case 0: case 1: case 2: return [publish(r, version, 0, 0)]
    case 3: return [publish(r, version, 1, pid)]
    case 4: return [publish(r, version, 2, pid), ack(r, version, 6, pid)]
    case 5: return [subscribe(r, version, pid)]
    case 6: return [r.chance(0.5) ? unsubscribe(r, version, pid) : ack(r, version, r.pick([4, 5, 7] as const), pid)]
    default: return [Buffer.from(PINGREQ)]
  }
}

/** One connection's script: CONNECT, valid packets, then the mutation (or none). */
export function packetScript (r: Random, ctx: ScriptContext): Script {
  const version = r.chance(0.5) ? 5 : 4
  const frames: Buffer[] = [connect(r, version, `fz-${ctx.seed}-${ctx.n}`)]
  let id = 1 + r.int(60000)
  for (let n = 1 + r.int(40); n > 0; n--) frames.push(...validPackets(r, version, id++))
  let mutation: Mutation | null = null
  const roll = r.next()
  if (roll < 0.6) mutation = protocolError(r, version)
  else if (roll < 0.95) mutation = blindMutation(r, r.pick(frames.slice(1).concat(frames[0])))
  const final: Buffer[] = mutation === null ? [] : [mutation.bytes]
  if (mutation?.definite !== true && r.chance(0.5)) final.push(disconnect(r, version))
  return {
    version,
    frames,
    final,
    expect: mutation === null
      ? { kind: 'survive', name: 'valid' }
      : mutation.definite ? { kind: 'close', name: mutation.name } : { kind: 'survive', name: mutation.name }
  }
}
