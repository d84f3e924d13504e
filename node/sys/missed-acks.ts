/**
 * `packets/puback/missed`, `pubrec/missed`, `pubrel/missed` and `pubcomp/missed`: an
 * acknowledgement whose packet identifier the broker is not waiting for, with EMQ X's
 * meaning (its session answers such a packet with "packet identifier not found"):
 *
 * - PUBACK for no QoS 1 PUBLISH sent on this connection and not yet acknowledged;
 * - PUBREC for no QoS 2 PUBLISH sent and not yet received;
 * - PUBCOMP for no PUBREL sent and not yet completed;
 * - PUBREL for no QoS 2 PUBLISH received and answered with a successful PUBREC.
 *
 * Counted from the frames of each connection (a {@link PacketTap}), because aedes tracks
 * outgoing packet identifiers only for persistent sessions. What a connection waits for is
 * per connection: a PUBREL for a QoS 2 message whose PUBREC went out on an earlier
 * connection of a persistent session counts as missed here (aedes still completes it).
 */
import type { Metrics } from '../metrics.js'
import { PACKET, type PacketTap, type TappedWire } from './packet-tap.js'

/** Packet identifiers one connection waits for, by the packet that would acknowledge them. */
interface Awaiting {
  puback: Set<number> | null
  pubrec: Set<number> | null
  pubcomp: Set<number> | null
  pubrel: Set<number> | null
}

/** Creates the tap that counts missed acknowledgements into `metrics`. */
export function createMissedAcksTap (metrics: Metrics): PacketTap {
  const byWire = new WeakMap<TappedWire, Awaiting>()

  function stateOf (wire: TappedWire): Awaiting {
    let state = byWire.get(wire)
    if (state === undefined) {
      state = { puback: null, pubrec: null, pubcomp: null, pubrel: null }
      byWire.set(wire, state)
    }
    return state
  }

  function add (state: Awaiting, key: keyof Awaiting, id: number): void {
    (state[key] ??= new Set()).add(id)
  }

  /** Removes `id`; false when it was not awaited. */
  function take (wire: TappedWire, key: keyof Awaiting, id: number): boolean {
    return byWire.get(wire)?.[key]?.delete(id) ?? false
  }

  return {
    inbound (wire, buf, start, body, end) {
      const type = buf[start] >> 4
      if (type < PACKET.PUBACK || type > PACKET.PUBCOMP || end - body < 2) return
      const id = buf.readUInt16BE(body)
      switch (type) {
        case PACKET.PUBACK:
          if (!take(wire, 'puback', id)) metrics['packets/puback/missed']++
          break
        case PACKET.PUBREC:
          if (!take(wire, 'pubrec', id)) metrics['packets/pubrec/missed']++
          break
        case PACKET.PUBREL:
          if (!take(wire, 'pubrel', id)) metrics['packets/pubrel/missed']++
          break
        case PACKET.PUBCOMP:
          if (!take(wire, 'pubcomp', id)) metrics['packets/pubcomp/missed']++
          break
      }
    },
    outbound (wire, buf, start, body, end) {
      const b0 = buf[start]
      const type = b0 >> 4
      if (type === PACKET.PUBLISH) {
        const qos = (b0 >> 1) & 3
        if (qos === 0 || end - body < 2) return
        const idAt = body + 2 + buf.readUInt16BE(body)
        if (idAt + 2 > end) return
        add(stateOf(wire), qos === 1 ? 'puback' : 'pubrec', buf.readUInt16BE(idAt))
      } else if (type === PACKET.PUBREL && end - body >= 2) {
        const state = stateOf(wire)
        const id = buf.readUInt16BE(body)
        state.pubrec?.delete(id)
        add(state, 'pubcomp', id)
      } else if (type === PACKET.PUBREC && end - body >= 2) {
        // a v5 PUBREC with an error reason code ends the exchange: no PUBREL is expected
        if (end - body > 2 && buf[body + 2] >= 0x80) return
        add(stateOf(wire), 'pubrel', buf.readUInt16BE(body))
      }
    }
  }
}
