/**
 * A tap on the MQTT frames of every connection, for what needs packets rather than hooks
 * events: the `packets/*\/missed` counters and packet lines in client traces.
 *
 * The wire layer (node/mqtt/wire.ts) calls the broker's tap, if one is set, once per
 * complete frame it scans: inbound before aedes parses it, outbound as it goes to the
 * socket. Frames are passed as offsets into the wire's buffer (no copy, no allocation):
 * a tap must not keep `buf` beyond the call.
 */

/** The part of a wire a tap may read. */
export interface TappedWire {
  /** The connection's socket (the MQTT core's own: read in node/mqtt/ only). */
  readonly socket: unknown
  /** The client id, once the MQTT core has taken the CONNECT; undefined before. */
  readonly clientId: string | undefined
  /** MQTT protocol level from CONNECT (3, 4 or 5); 0 before CONNECT. */
  readonly protocolVersion: number
  readonly peer: { address: string, port: number }
}

/** Receives every complete frame of every connection. */
export interface PacketTap {
  /**
   * A frame from the client: `buf[start]` is its first byte, the body (after the remaining
   * length) runs from `body` to `end` (exclusive).
   */
  inbound (wire: TappedWire, buf: Buffer, start: number, body: number, end: number): void
  /** A frame to the client, same offsets. */
  outbound (wire: TappedWire, buf: Buffer, start: number, body: number, end: number): void
}

/** MQTT control packet types (first byte >> 4). */
export const PACKET = {
  CONNECT: 1, CONNACK: 2, PUBLISH: 3, PUBACK: 4, PUBREC: 5, PUBREL: 6, PUBCOMP: 7,
  SUBSCRIBE: 8, SUBACK: 9, UNSUBSCRIBE: 10, UNSUBACK: 11, PINGREQ: 12, PINGRESP: 13,
  DISCONNECT: 14, AUTH: 15
} as const

/** One tap that calls each of `taps` in order (null entries are skipped). */
export function combineTaps (...taps: Array<PacketTap | null | undefined>): PacketTap {
  const list = taps.filter((t): t is PacketTap => t !== null && t !== undefined)
  if (list.length === 1) return list[0]
  return {
    inbound (wire, buf, start, body, end) {
      for (let i = 0; i < list.length; i++) list[i].inbound(wire, buf, start, body, end)
    },
    outbound (wire, buf, start, body, end) {
      for (let i = 0; i < list.length; i++) list[i].outbound(wire, buf, start, body, end)
    }
  }
}

/** The client id of a tapped connection, or undefined before CONNECT was handled. */
export function tappedClientId (wire: TappedWire): string | undefined {
  return wire.clientId
}
