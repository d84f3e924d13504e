/**
 * How a connection that broke the protocol is answered and closed, in every state it can
 * be in (MQTT 5 section 4.13.1): an error in the CONNECT gets a CONNACK with the reason
 * code (MQTT 5) or nothing (3.1.1), except an unsupported protocol level, which gets
 * CONNACK 0x01 in 3.1.1 form [MQTT-3.1.2-2]; an error in a later packet gets a DISCONNECT
 * with the reason code (MQTT 5), after the CONNACK if that has not gone out yet
 * [MQTT-3.2.0-1]; 3.1.1 connections are closed without a word.
 */
import type { Wire } from './wire.js'
import { UNSUPPORTED_PROTOCOL_VERSION } from './packet-check.js'

const CONNECT = 1
/** CONNACK "unacceptable protocol version" in 3.1.1 form, for any level we do not speak (as Mosquitto answers). */
const CONNACK_UNACCEPTABLE_VERSION = Buffer.from([0x20, 0x02, 0x00, 0x01])
/** Longest wait for the CONNACK of a connection whose later packet was refused (authentication may be slow). */
const CONNACK_WAIT_MS = 10_000

/**
 * Answers violations for one aedes instance. Invariant: `awaiting` holds exactly the
 * clients whose CONNECT is being processed while a later packet of theirs was refused;
 * each leaves it when its CONNACK goes out, or when the wait gives up.
 */
export class ViolationCloser {
  private readonly awaiting = new Map<any, { wire: Wire, reasonCode: number }>()

  constructor (aedes: any) {
    aedes.on('connackSent', (connack: any, client: any) => {
      const pending = this.awaiting.get(client)
      if (pending === undefined) return
      this.awaiting.delete(client)
      // a refused CONNECT is closed by aedes; an accepted one is told why it ends now
      if ((connack.reasonCode ?? connack.returnCode ?? 0) === 0) pending.wire.closeWith(disconnectFrame(pending.reasonCode))
    })
  }

  /** Answers and closes `wire`, whose client sent a packet refused with `reasonCode`. */
  close (wire: Wire, reasonCode: number): void {
    const client = (wire.socket as any).client
    if (wire.violationType === CONNECT) {
      if (reasonCode === UNSUPPORTED_PROTOCOL_VERSION) return wire.closeWith(CONNACK_UNACCEPTABLE_VERSION)
      // [MQTT-4.13.1-1] a CONNACK with the reason code, then close
      return wire.closeWith(wire.protocolVersion === 5 ? Buffer.from([0x20, 0x03, 0x00, reasonCode, 0x00]) : null)
    }
    if (wire.protocolVersion !== 5 || client == null || client.closed) return wire.closeWith(null)
    if (client.connackSent === true) return wire.closeWith(disconnectFrame(reasonCode))
    if (client.connecting === true) {
      this.awaiting.set(client, { wire, reasonCode })
      setTimeout(() => {
        if (this.awaiting.get(client)?.wire === wire) {
          this.awaiting.delete(client)
          wire.closeWith(null)
        }
      }, CONNACK_WAIT_MS).unref()
      wire.socket.once('close', () => this.awaiting.delete(client))
      return
    }
    wire.closeWith(null)
  }
}

/** An MQTT 5 DISCONNECT with `reasonCode` and no properties. */
function disconnectFrame (reasonCode: number): Buffer {
  return Buffer.from([0xe0, 0x01, reasonCode])
}
