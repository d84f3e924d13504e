/**
 * The acknowledgements aedes writes most (PUBACK, PUBREC, PUBREL, PUBCOMP without properties,
 * PINGRESP), encoded in one Buffer and queued on the connection's wire, in place of
 * mqtt-packet's generic writer (issue 22: CPU per message). aedes writes every packet with
 * `mqttPacket.writeToStream(packet, client.conn, opts)`; for an acknowledgement that writer
 * corks the socket and uncorks it on a `process.nextTick`, makes three or four writes of a
 * byte or two, and calls `debug` on the way: one QoS 1 message in the fan-in profile paid
 * that for its PUBACK.
 *
 * Invariants:
 * - Only a stream a wire interposes on (an MQTT client's connection, wire.ts) is written
 *   here; every other stream (mqtt.js clients of bridges, tests in the same process) and
 *   every other packet go through mqtt-packet's own writer, unchanged.
 * - The bytes are mqtt-packet's, byte for byte, for the same packet and protocol level (an
 *   MQTT 5 acknowledgement carries its reason code and an empty property length unless the
 *   reason code is 0); the return value is the wire's, as the socket's `write` would give it.
 */
import mqttPacket from 'mqtt-packet'
import { wireOfSocket } from './wire.js'

/** First byte of each acknowledgement (PUBREL has its reserved flags 0b0010). */
const ACK_BYTE: Record<string, number | undefined> = { puback: 0x40, pubrec: 0x50, pubrel: 0x62, pubcomp: 0x70 }

let installed = false

/** Routes aedes' writes of the packets above through the wire (once per process). */
export function useFastWrites (): void {
  if (installed) return
  installed = true
  const original = mqttPacket.writeToStream
  const writeToStream = function writeToStream (packet: any, stream: any, opts?: { protocolVersion?: number }): boolean {
    const wire = wireOfSocket(stream)
    if (wire !== undefined) {
      const frame = ackFrame(packet, opts?.protocolVersion ?? 4)
      if (frame !== null) return wire.writeFrame(frame)
    }
    return original(packet, stream, opts as any)
  }
  ;(mqttPacket as any).writeToStream = writeToStream
}

/** The frame mqtt-packet would write for `packet`, or null when it is not one of ours. */
export function ackFrame (packet: any, version: number): Buffer | null {
  const cmd: string = packet.cmd
  if (cmd === 'pingresp') return Buffer.from([0xd0, 0])
  const b0 = ACK_BYTE[cmd]
  const id = packet.messageId
  if (b0 === undefined || typeof id !== 'number' || id < 0 || id > 0xffff || packet.properties !== undefined) return null
  // a PUBREL has no DUP flag (its flags are reserved): mqtt-packet throws on one, and so it stays
  if (cmd === 'pubrel' && packet.dup === true) return null
  const reasonCode = packet.reasonCode
  if (version !== 5 || reasonCode === 0) return Buffer.from([b0, 2, id >> 8, id & 0xff])
  if (reasonCode !== undefined && (typeof reasonCode !== 'number' || reasonCode < 0 || reasonCode > 0xff)) return null
  return Buffer.from([b0, 4, id >> 8, id & 0xff, reasonCode ?? 0, 0])
}
