/** MQTT frames for packet-tap tests, with the offsets a wire passes to a tap. */
import mqttPacket from 'mqtt-packet'

/** A frame and its body offset (after the remaining-length bytes). */
export interface Frame { buf: Buffer, start: number, body: number, end: number }

/** Encodes `packet` (mqtt-packet's shape) for `protocolVersion` and locates its body. */
export function frame (packet: Record<string, unknown>, protocolVersion = 4): Frame {
  const buf = mqttPacket.generate(packet as any, { protocolVersion } as any)
  let body = 1
  while ((buf[body] & 0x80) !== 0) body++
  return { buf, start: 0, body: body + 1, end: buf.length }
}

/** A stand-in for a wire: the fields a tap reads. */
export function fakeWire (clientId: string | undefined, protocolVersion = 4, port = 50000): { socket: object, clientId: string | undefined, protocolVersion: number, peer: { address: string, port: number } } {
  return { socket: {}, clientId, protocolVersion, peer: { address: '127.0.0.1', port } }
}
