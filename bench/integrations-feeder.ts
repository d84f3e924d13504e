/**
 * The publisher that feeds the rules of bench/integrations.ts: one MQTT 3.1.1 connection on a
 * raw socket writing QoS 0 PUBLISH frames it encodes itself (a fixed header, the topic, the
 * payload's bytes: MQTT 3.1.1 §3.3), many per socket write. mqtt.js spends several µs of this
 * process's CPU per publish, on the same cores as the node under test; this costs a fraction of
 * that, so the feeder is not what bounds a run. The payloads are the caller's (the bench's
 * per-message JSON), so the node decodes the same messages either way.
 */
import net from 'node:net'
import { once } from 'node:events'
import { MqttFramer, PacketType } from './mqtt-framer.js'
import { encodeConnect } from './packets.js'
import { writeVarint } from '../node/mqtt/wire-bytes.js'

/** How long the CONNACK may take (ms). */
const CONNECT_TIMEOUT_MS = 10_000

/** One raw-socket publisher, QoS 0 only (nothing comes back but the CONNACK). */
export class RawPublisher {
  private constructor (private readonly socket: net.Socket) {}

  /** Connects as `clientId` (clean session, no keepalive) and waits for an accepting CONNACK. */
  static async connect (port: number, clientId: string): Promise<RawPublisher> {
    const socket = net.connect({ host: '127.0.0.1', port })
    socket.setNoDelay(true)
    await once(socket, 'connect')
    const accepted = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no CONNACK for ${clientId} within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS)
      const framer = new MqttFramer({
        onPacket (type, _flags, buf, start) {
          if (type !== PacketType.CONNACK) return
          clearTimeout(timer)
          // byte 2 of the CONNACK's variable header is the return code (§3.2.2.3)
          if (buf[start + 1] === 0) resolve()
          else reject(new Error(`CONNACK for ${clientId}: return code ${buf[start + 1]}`))
        }
      })
      socket.on('data', (chunk: Buffer) => framer.push(chunk))
      socket.once('error', reject)
      socket.once('close', () => reject(new Error(`${clientId}: the connection closed before its CONNACK`)))
    })
    socket.write(encodeConnect(clientId, 0))
    await accepted
    socket.on('error', () => {})
    return new RawPublisher(socket)
  }

  /**
   * Publishes one QoS 0 message on `topic` per payload (ASCII text), in order, in one socket
   * write. Resolves once the socket takes more (at once unless its buffer is full).
   */
  async publish (topic: string, payloads: readonly string[]): Promise<void> {
    if (payloads.length === 0) return
    const topicBytes = Buffer.from(topic, 'latin1')
    let size = 0
    for (const p of payloads) size += 5 + 2 + topicBytes.length + p.length
    const buf = Buffer.allocUnsafe(size)
    let at = 0
    for (const p of payloads) {
      buf[at++] = 0x30 // PUBLISH, QoS 0, no DUP, no RETAIN
      at = writeVarint(buf, at, 2 + topicBytes.length + p.length) // Remaining Length, §2.2.3
      buf.writeUInt16BE(topicBytes.length, at)
      at += 2
      at += topicBytes.copy(buf, at)
      at += buf.write(p, at, 'latin1')
    }
    if (!this.socket.write(buf.subarray(0, at))) await once(this.socket, 'drain')
  }

  /** Sends a DISCONNECT and closes. */
  async close (): Promise<void> {
    if (this.socket.destroyed) return
    const closed = once(this.socket, 'close')
    this.socket.end(Buffer.from([0xe0, 0x00]))
    await closed
  }
}
