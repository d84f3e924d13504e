import mqttPacket from 'mqtt-packet'
import { wireOfSocket } from './wire.js'

/**
 * The server's DISCONNECT, in place of aedes' `client.disconnect` (takeover 0x8E, shutdown
 * 0x8B, a kick, packet too large, an ACL denial ...). aedes sends the DISCONNECT only to a
 * client it counts as `connected`, which a v5 client resuming a session is not until its
 * queued messages have gone out: taken over then, it was closed without the 0x8E it is owed
 * [MQTT-3.1.4-3]. And aedes closes the connection a turn after writing the DISCONNECT, so
 * packets of work in flight could follow it [MQTT-3.14.4-1], and the destroy could cut off a
 * DISCONNECT still queued behind a backlog. Here the wire writes it (to every v5 client whose
 * CONNACK accepted it), writes nothing after it, and closes the connection once it is out
 * ({@link Wire.disconnect}); aedes then closes the client as before.
 *
 * Installed per client in preConnect, as a shared function (no closure per connection).
 */
export function installServerDisconnect (client: any): void {
  client.disconnect = disconnectThroughWire
}

function disconnectThroughWire (this: any, opts?: any, done?: () => void): void {
  if (typeof opts === 'function') { done = opts; opts = {} }
  const wire = wireOfSocket(this.conn)
  if (wire === undefined || this.closed === true) return Object.getPrototypeOf(this).disconnect.call(this, opts, done)
  const reasonCode: number = opts?.reasonCode ?? 0
  const v5 = this.version === 5
  // aedes' own record of it, for its 'clientDisconnect' event
  if (v5) this.disconnectReasonCode = reasonCode
  wire.disconnect(v5 && this.errored !== true ? disconnectFrame(reasonCode, opts?.properties) : null)
  // as aedes does: the client is closed a turn later, its socket ended by the wire already
  setImmediate(closeClient, this, done)
}

function closeClient (client: any, done?: () => void): void {
  client.close(done)
}

/** An MQTT 5 DISCONNECT with `reasonCode` (and `properties`, when there are any). */
function disconnectFrame (reasonCode: number, properties?: Record<string, unknown>): Buffer {
  if (properties === undefined) return Buffer.from([0xe0, 0x01, reasonCode])
  return mqttPacket.generate({ cmd: 'disconnect', reasonCode, properties } as any, { protocolVersion: 5 })
}
