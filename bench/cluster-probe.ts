/**
 * A raw-TCP MQTT 3.1.1 client for the cluster bench's timing probes: it subscribes to
 * thousands of filters in SUBSCRIBE packets of many filters each, publishes single QoS 0
 * messages, and reports when a message on a given topic arrives. Packets are encoded with
 * mqtt-packet and framed with {@link MqttFramer}, like the load generator's, so the probe
 * itself adds almost nothing to what is timed.
 */
import net from 'node:net'
import mqttPacket from 'mqtt-packet'
import { MqttFramer, PacketType, type FrameSink } from './mqtt-framer.js'
import { encodeConnect } from './packets.js'

/** DISCONNECT (§3.14). */
const DISCONNECT = Buffer.from([0xe0, 0x00])

/** When a batch of SUBSCRIBEs went out and when its last SUBACK came back (performance.now(), ms). */
export interface SubscribeTiming { firstSentAt: number, lastSubackAt: number }

export class ProbeClient implements FrameSink {
  private readonly framer = new MqttFramer(this)
  private onConnack: ((code: number) => void) | null = null
  private subacksLeft = 0
  private subackError: string | null = null
  private onSubacks: ((err: Error | null) => void) | null = null
  /** Called on every SUBACK of a windowed {@link subscribe}: sends the next packet. */
  private onSuback: (() => void) | null = null
  private readonly waiting = new Map<string, (at: number) => void>()
  private nextPacketId = 1
  private closing = false

  private constructor (private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.framer.push(chunk))
    socket.on('error', () => { /* reported through 'close' */ })
    socket.on('close', () => {
      this.onConnack?.(-1)
      if (!this.closing) this.onSubacks?.(new Error('connection closed by the broker'))
    })
  }

  /** Connects `clientId` (clean session) to 127.0.0.1:`port` and resolves after an accepting CONNACK. */
  static async open (port: number, clientId: string, timeoutMs = 10_000): Promise<ProbeClient> {
    const client = new ProbeClient(net.connect({ host: '127.0.0.1', port, noDelay: true }))
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${clientId}: no CONNACK within ${timeoutMs} ms`)), timeoutMs)
      client.onConnack = (code) => {
        clearTimeout(timer)
        client.onConnack = null
        if (code === 0) resolve()
        else reject(new Error(`${clientId}: ${code < 0 ? 'closed before CONNACK' : `CONNACK return code ${code}`}`))
      }
      client.socket.write(encodeConnect(clientId, 600))
    })
    return client
  }

  /**
   * Subscribes (QoS 0) to every filter, `perPacket` filters per SUBSCRIBE, with at most
   * `window` SUBSCRIBEs awaiting their SUBACK (Infinity: every packet in one write, as a
   * client that pipelines does); resolves once every SUBACK has granted every filter.
   */
  async subscribe (filters: string[], perPacket: number, window = Infinity, timeoutMs = 120_000): Promise<SubscribeTiming> {
    const packets: Buffer[] = []
    for (let i = 0; i < filters.length; i += perPacket) {
      const subscriptions = filters.slice(i, i + perPacket).map((topic) => ({ topic, qos: 0 as const }))
      packets.push(mqttPacket.generate({ cmd: 'subscribe', messageId: this.packetId(), subscriptions }))
    }
    this.subacksLeft = packets.length
    this.subackError = null
    let next = Math.min(packets.length, window)
    this.onSuback = () => { if (next < packets.length) this.socket.write(packets[next++]) }
    const done = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.subacksLeft} of ${packets.length} SUBACKs missing after ${timeoutMs} ms`)), timeoutMs)
      this.onSubacks = (err) => {
        clearTimeout(timer)
        this.onSubacks = null
        this.onSuback = null
        if (err !== null) reject(err)
        else resolve(performance.now())
      }
    })
    const firstSentAt = performance.now()
    this.socket.write(next === packets.length ? Buffer.concat(packets) : Buffer.concat(packets.slice(0, next)))
    return { firstSentAt, lastSubackAt: await done }
  }

  /** Publishes one QoS 0 message. */
  publish (topic: string, payload: Buffer): void {
    this.socket.write(mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 0, retain: false, dup: false }))
  }

  /** Resolves with the arrival time (performance.now(), ms) of the next message on `topic`. */
  nextMessage (topic: string): Promise<number> {
    return new Promise((resolve) => { this.waiting.set(topic, resolve) })
  }

  /** Sends DISCONNECT and waits for the socket to close. */
  async close (): Promise<void> {
    this.closing = true
    this.onSubacks?.(new Error('closed before every SUBACK arrived'))
    if (this.socket.destroyed) return
    await new Promise<void>((resolve) => {
      this.socket.once('close', () => resolve())
      this.socket.end(DISCONNECT)
      setTimeout(() => this.socket.destroy(), 2000).unref()
    })
  }

  /** @internal FrameSink. */
  onPacket (type: number, _flags: number, buf: Buffer, bodyStart: number, bodyEnd: number): void {
    switch (type) {
      case PacketType.CONNACK:
        this.onConnack?.(buf[bodyStart + 1])
        break
      case PacketType.SUBACK: {
        // return codes follow the 2-byte packet identifier (§3.9.3); 0x80 is a refusal
        for (let i = bodyStart + 2; i < bodyEnd; i++) if (buf[i] === 0x80) this.subackError = 'a filter was refused (SUBACK 0x80)'
        this.onSuback?.()
        if (--this.subacksLeft === 0) this.onSubacks?.(this.subackError === null ? null : new Error(this.subackError))
        break
      }
      case PacketType.PUBLISH: {
        const length = buf.readUInt16BE(bodyStart)
        const topic = buf.toString('utf8', bodyStart + 2, bodyStart + 2 + length)
        const waiter = this.waiting.get(topic)
        if (waiter !== undefined) {
          this.waiting.delete(topic)
          waiter(performance.now())
        }
        break
      }
      default:
        break
    }
  }

  private packetId (): number {
    const id = this.nextPacketId
    this.nextPacketId = id === 0xffff ? 1 : id + 1
    return id
  }
}

/**
 * Publishes to `topic` through `publisher` every `everyMs` until `receiver` gets a message
 * on it; resolves with the arrival time (performance.now(), ms). Rejects after `timeoutMs`.
 */
export async function publishUntilReceived (
  publisher: ProbeClient, receiver: ProbeClient, topic: string, everyMs: number, timeoutMs: number
): Promise<number> {
  const arrived = receiver.nextMessage(topic)
  const payload = Buffer.from('probe')
  publisher.publish(topic, payload)
  const timer = setInterval(() => publisher.publish(topic, payload), everyMs)
  let timeout: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      arrived,
      new Promise<never>((_resolve, reject) => {
        timeout = setTimeout(() => reject(new Error(`no message on ${topic} within ${timeoutMs} ms`)), timeoutMs)
      })
    ])
  } finally {
    clearInterval(timer)
    clearTimeout(timeout)
  }
}
