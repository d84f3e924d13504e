/**
 * How a connection that broke the protocol is answered and closed, in every state it can
 * be in (MQTT 5 section 4.13.1): an error in the CONNECT gets a CONNACK with the reason
 * code (MQTT 5) or nothing (3.1.1), except an unsupported protocol level, which gets
 * CONNACK 0x01 in 3.1.1 form [MQTT-3.1.2-2]; an error in a later packet gets a DISCONNECT
 * with the reason code (MQTT 5), never before the CONNACK [MQTT-3.2.0-1] [MQTT-3.14.0-1];
 * 3.1.1 connections are closed without a word.
 *
 * Everything the client sent before the offending packet is processed first, as if the
 * connection had gone on (a client may pipeline packets behind its CONNECT, 3.1.4): the
 * CONNECT is authenticated and answered, the packets aedes queued behind it are handled,
 * and the answers they are owed (PUBACK, SUBACK ...) go out before the close. A CONNECT that
 * is refused ends the connection there, and nothing behind it is processed [MQTT-3.1.4-6].
 */
import type { Wire } from './wire.js'
import { UNSUPPORTED_PROTOCOL_VERSION } from './packet-check.js'

const CONNECT = 1
/** CONNACK "unacceptable protocol version" in 3.1.1 form, for any level we do not speak (as Mosquitto answers). */
const CONNACK_UNACCEPTABLE_VERSION = Buffer.from([0x20, 0x02, 0x00, 0x01])
/** Longest wait for a refused connection's earlier packets to be processed (authentication may be slow). */
const SETTLE_WAIT_MS = 10_000

/**
 * Answers violations for one aedes instance. Invariant: `awaiting` holds exactly the
 * clients whose CONNECT is being processed while a later packet of theirs was refused;
 * each leaves it when aedes has accepted the CONNECT (and dequeued the packets behind it),
 * when its connection closes (a refused CONNECT), or when the wait gives up.
 */
export class ViolationCloser {
  private readonly awaiting = new Map<any, { wire: Wire, frame: Buffer | null }>()

  constructor (aedes: any) {
    // 'clientReady' comes when the CONNECT is accepted, just before aedes handles the packets
    // it queued behind it (synchronously, on the client's 'connected'): wait for their answers
    // from the next microtask on. A refused CONNECT never gets here: aedes closes it.
    aedes.on('clientReady', (client: any) => {
      const pending = this.awaiting.get(client)
      if (pending === undefined) return
      this.awaiting.delete(client)
      queueMicrotask(() => this.closeWhenAnswered(pending.wire, pending.frame))
    })
  }

  /** Answers and closes `wire`, whose client sent a packet refused with `reasonCode`. */
  close (wire: Wire, reasonCode: number): void {
    const client = (wire.socket as any).client
    if (wire.violationType === CONNECT) {
      if (reasonCode === UNSUPPORTED_PROTOCOL_VERSION) {
        // [MQTT-3.1.2-2] a level we do not speak: 3.1.1 form, which every client reads; a wrong
        // protocol name [MQTT-3.1.2-1]: 0x84 to a 5.0 client, and 3.1.1 "MAY disconnect"
        const level = wire.protocolVersion
        return wire.closeWith(level === 5 ? connackFrame(reasonCode) : (level === 3 || level === 4) ? null : CONNACK_UNACCEPTABLE_VERSION)
      }
      // [MQTT-4.13.1-1] a CONNACK with the reason code, then close
      return wire.closeWith(wire.protocolVersion === 5 ? connackFrame(reasonCode) : null)
    }
    // a packet before any CONNECT [MQTT-3.1.0-1], or a connection already gone: just close
    if (client == null || client.closed === true || (client.connecting !== true && client.connected !== true)) return wire.closeWith(null)
    // MQTT 5: a DISCONNECT with the code (a second CONNECT too: a CONNACK went out already [MQTT-3.2.0-2])
    const frame = wire.protocolVersion === 5 ? disconnectFrame(reasonCode) : null
    if (client.connected === true) return this.closeWhenAnswered(wire, frame)
    // the CONNECT is still being processed: wait for aedes to accept it (or to refuse and close)
    this.awaiting.set(client, { wire, frame })
    wire.socket.once('close', () => this.awaiting.delete(client))
    setTimeout(() => {
      if (this.awaiting.get(client)?.wire === wire) {
        this.awaiting.delete(client)
        wire.closeWith(null)
      }
    }, SETTLE_WAIT_MS).unref()
  }

  /**
   * Closes `wire` with `frame` once the packets before the violation are answered, at the
   * latest after {@link SETTLE_WAIT_MS}, or at once when the peer ends its side: aedes then
   * closes the connection, and the DISCONNECT goes out before that (the answers still owed
   * would be lost either way).
   */
  private closeWhenAnswered (wire: Wire, frame: Buffer | null): void {
    const socket: any = wire.socket
    if (socket.readableEnded === true) return wire.closeWith(frame)
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.off('end', finish)
      wire.closeWith(frame)
    }
    const timer = setTimeout(finish, SETTLE_WAIT_MS)
    timer.unref()
    // before aedes' own 'end' listener, which destroys the socket
    socket.prependOnceListener('end', finish)
    wire.whenAnswered(finish)
  }
}

/** An MQTT 5 DISCONNECT with `reasonCode` and no properties. */
function disconnectFrame (reasonCode: number): Buffer {
  return Buffer.from([0xe0, 0x01, reasonCode])
}

/** An MQTT 5 CONNACK refusing the connection with `reasonCode`, no properties. */
function connackFrame (reasonCode: number): Buffer {
  return Buffer.from([0x20, 0x03, 0x00, reasonCode, 0x00])
}
