/**
 * Starling's CONNECT handler for aedes 2.0.0-beta.1 clients with Clean Start set (MQTT 3.1.1
 * clean session 1, MQTT 5 Clean Start 1): the common CONNECT of a device, which issue 22 asks
 * to cost at most 60 µs of broker CPU. A port of aedes' `lib/handlers/connect.js` (its actions
 * are module-internal, so no single step of it can be replaced from outside), the same steps
 * in the same order with the same checks, except where a profile of the `idle` bench showed
 * a cost (docs/performance.md, "CONNECT cost"):
 *
 * - `emptyQueue`: aedes runs a `stream.pipeline` over the session's outgoing queue for every
 *   CONNECT. The pipeline's AbortController aborts when it ends, building a `DOMException`
 *   with its stack trace: about 40 µs for a queue that is empty. Here the pipeline runs only
 *   when the persistence holds something for the client (the same pipeline, then).
 * - `registerClient`: no `$SYS/<id>/new/clients` message (see {@link registerClient}).
 * - `setKeepAlive`: the keep alive goes straight to the shared wheel (keepalive-wheel.ts)
 *   instead of a `setTimeout` that session-limits.ts replaces with a wheel entry a moment later.
 *
 * A CONNECT with Clean Start 0 (a session resumed, its subscriptions restored with aedes'
 * internal subscribe handler) and every CONNECT aedes' `handle()` would not pass to its
 * connect handler (second CONNECT, over Maximum Packet Size, not the first packet) go to aedes
 * unchanged: {@link takeConnects} decides per packet.
 */
import { randomUUID } from 'node:crypto'
import { pipeline, Transform } from 'node:stream'
import mqttPacket from 'mqtt-packet'
import { armKeepalive } from './keepalive-wheel.js'
import { stateOf } from './client-state.js'
import { mountFilter } from './zone.js'
import { compactEvents } from './event-maps.js'

const SESSION_NEVER_EXPIRES = 0xFFFFFFFF
const RECEIVE_MAXIMUM_DEFAULT = 65535
const SUCCESS = 0x00
const UNSPECIFIED_ERROR = 0x80
const PROTOCOL_ERROR = 0x82
const BAD_AUTHENTICATION_METHOD = 0x8C
const USE_ANOTHER_SERVER = 0x9C
const SERVER_MOVED = 0x9D

/** The v3 CONNACK return codes (index) as MQTT 5 reason codes; 6 is aedes' keep alive limit. */
const connackReasonCodes = [SUCCESS, 0x84, 0x85, 0x88, 0x86, 0x87, 0x9F]

const errorMessages = [
  '',
  'unacceptable protocol version',
  'identifier rejected',
  'Server unavailable',
  'bad user name or password',
  'not authorized',
  'keep alive limit exceeded'
]

/** aedes' lib/write.js options, one per wire version. */
const WRITE_OPTS: Record<number, { protocolVersion: number }> = {
  3: Object.freeze({ protocolVersion: 3 }),
  4: Object.freeze({ protocolVersion: 4 }),
  5: Object.freeze({ protocolVersion: 5 })
}

type Done = (err?: any, ...rest: any[]) => void

/** What a CONNECT's steps share (aedes' ClientPacketStatus and the runSeries argument). */
interface ConnectRun {
  client: any
  packet: any
  returnCode: number
  sessionPresent: boolean
  reasonCode?: number
  properties?: Record<string, unknown>
}

/** The persistence method that says whether a session has anything queued (persistence.ts). */
interface QueueProbe { hasQueued?: (clientId: string) => boolean }

/** aedes' own parser 'packet' listener (`enqueue` in lib/client.js), taken from the first client. */
let aedesEnqueue: ((this: any, packet: any) => void) | null = null

/**
 * The parser 'packet' listener to add in place of `listener`: {@link onPacket} for aedes'
 * `enqueue` (the first 'packet' listener seen is taken to be it, as in {@link takeConnects}),
 * else `listener` itself.
 */
export function packetListenerFor (listener: (packet: any) => void): (packet: any) => void {
  if (aedesEnqueue === null) aedesEnqueue = listener
  return listener === aedesEnqueue ? onPacket : listener
}

/**
 * Routes the CONNECT of `client` (just made by `aedes.handle`) through {@link onPacket}:
 * its parser's one 'packet' listener, aedes' `enqueue`, is replaced by one that takes a
 * Clean Start CONNECT and passes every other packet to `enqueue`.
 */
export function takeConnects (client: any): void {
  const parser = client._parser
  if (parser === undefined || parser === null) return
  const listeners = parser.listeners('packet')
  // already ours when client-slim.ts made the parser
  if (listeners.length !== 1 || listeners[0] === onPacket) return
  if (aedesEnqueue === null) aedesEnqueue = listeners[0]
  else if (listeners[0] !== aedesEnqueue) return
  parser.removeListener('packet', aedesEnqueue)
  parser.on('packet', onPacket)
}

/**
 * The parser's 'packet' listener (`this` is the parser). Takes the CONNECT exactly when
 * aedes' `enqueue` and `handle` would call their connect handler with it: the first packet
 * (`_parsingBatch` 0, nothing queued), not connecting or connected, within Maximum Packet Size.
 */
function onPacket (this: any, packet: any): void {
  const client = this.client
  if (packet.cmd === 'connect' && packet.clean === true && client._parsingBatch === 0 && client.connackSent !== true &&
    client.connecting !== true && client.connected !== true && withinMaximum(client, packet)) {
    client._parsingBatch++
    handleConnect(client, packet, client._nextBatch)
    return
  }
  // an UNSUBSCRIBE names the filters as the client knows them: put its mountpoint on (zone.ts)
  if (packet.cmd === 'unsubscribe') mountUnsubscribe(client, packet)
  aedesEnqueue!.call(this, packet)
}

/** The filters of an UNSUBSCRIBE with the client's mountpoint put before them, as its SUBSCRIBE's were. */
function mountUnsubscribe (client: any, packet: any): void {
  const mountpoint = stateOf(client)?.mountpoint
  if (mountpoint === undefined || !Array.isArray(packet.unsubscriptions)) return
  packet.unsubscriptions = packet.unsubscriptions.map((filter: string) => mountFilter(mountpoint, filter))
}

/** aedes' Maximum Packet Size check in `handle()` [MQTT-3.2.2-15]. */
function withinMaximum (client: any, packet: any): boolean {
  const max = client.broker.maximumPacketSize
  if (!(max > 0)) return true
  const remaining = packet.length || 0
  const lengthBytes = remaining >= 2097152 ? 4 : remaining >= 16384 ? 3 : remaining >= 128 ? 2 : 1
  return 1 + lengthBytes + remaining <= max
}

function handleConnect (client: any, packet: any, done: Done): void {
  clearTimeout(client._connectTimer)
  client._connectTimer = null
  client.connecting = true
  client.broker.preConnect(client, packet, function negate (err: any, successful: boolean) {
    if (!err && successful === true) {
      setImmediate(init, client, packet, done)
      return
    }
    // a preConnect error with a serverReference redirects a v5 client (aedes #838)
    if (err && err.serverReference && packet.protocolVersion === 5) {
      rejectConnect(client, err, 0, redirectReasonCode(err), { serverReference: err.serverReference }, 5, function redirected (e: any) {
        client.connecting = false
        done(e)
      })
      return
    }
    client.connecting = false
    done(err)
  })
}

function redirectReasonCode (err: any): number {
  return err.reasonCode === SERVER_MOVED ? SERVER_MOVED : USE_ANOTHER_SERVER
}

function rejectConnect (client: any, error: any, returnCode: number, reasonCode: number | undefined,
  properties: Record<string, unknown> | undefined, version: number, done: Done): void {
  if (reasonCode !== undefined) error.reasonCode = reasonCode
  doConnack({ client, packet: null, returnCode, reasonCode, properties, sessionPresent: false }, version, () => done(error))
}

function init (client: any, packet: any, done: Done): void {
  const broker = client.broker
  const clientId: string = packet.clientId
  const v = packet.protocolVersion
  let returnCode = 0
  if (v < 3 || v > 5) returnCode = 1 // [MQTT-3.1.2-2]
  if (v === 3 && clientId.length > broker.maxClientsIdLength) returnCode = 2
  if (broker.keepaliveLimit && v < 5 && (!packet.keepalive || packet.keepalive > broker.keepaliveLimit)) returnCode = 6
  if (v < 5 && clientId.length === 0 && packet.clean === false) returnCode = 2 // [MQTT-3.1.3-7/8]
  if (returnCode > 0) {
    const error: any = new Error(errorMessages[returnCode])
    error.errorCode = returnCode
    rejectConnect(client, error, returnCode, undefined, undefined, v, done)
    return
  }
  const properties = packet.properties
  if (v === 5 && properties?.receiveMaximum === 0) { // [MQTT-3.1.2-22]
    rejectConnect(client, new Error('Receive Maximum must not be 0'), 0, PROTOCOL_ERROR, undefined, 5, done)
    return
  }
  if (v === 5 && properties?.authenticationData !== undefined && properties?.authenticationMethod === undefined) { // [MQTT-3.1.2-21]
    rejectConnect(client, new Error('authentication data without authentication method'), 0, PROTOCOL_ERROR, undefined, 5, done)
    return
  }
  if (v === 5 && properties?.authenticationMethod !== undefined) { // §4.12: no AUTH flow
    rejectConnect(client, new Error('bad authentication method'), 0, BAD_AUTHENTICATION_METHOD, undefined, 5, done)
    return
  }

  client.id = clientId || 'aedes_' + randomUUID()
  client.version = v
  client._wireVersion = (v === 3 || v === 5) ? v : 4
  client._assignedClientId = clientId ? undefined : client.id
  if (v === 5 && broker.keepaliveLimit && (!packet.keepalive || packet.keepalive > broker.keepaliveLimit)) {
    client._serverKeepAlive = broker.keepaliveLimit
  }
  const requestedSessionExpiry = v === 5 ? (properties?.sessionExpiryInterval ?? 0) : (packet.clean ? 0 : SESSION_NEVER_EXPIRES)
  client._connectSessionExpiryInterval = requestedSessionExpiry
  client.sessionExpiryInterval = broker.clampSessionExpiry(requestedSessionExpiry)
  client._sessionExpiryClamped = v === 5 && client.sessionExpiryInterval !== requestedSessionExpiry
  client.clean = client.sessionExpiryInterval === 0
  client._cleanStart = packet.clean === true // [MQTT-3.1.2-4]
  client.maximumPacketSize = properties?.maximumPacketSize
  client.receiveMaximum = properties?.receiveMaximum ?? RECEIVE_MAXIMUM_DEFAULT
  client._requestProblemInformation = properties?.requestProblemInformation !== false // [MQTT-3.1.2-29]
  client._requestResponseInformation = properties?.requestResponseInformation === true
  client._will = packet.will

  // [MQTT-3.1.4-4], [MQTT-3.2.2-4]
  const run: ConnectRun = { client, packet, returnCode: 0, sessionPresent: false }
  runSteps(run, 0, function connected (err?: any) {
    client.connecting = false
    if (!err) {
      client.connected = true
      broker.emit('clientReady', client)
      client.emit('connected')
      compactEvents(client)
    }
    done(err)
  })
}

type Step = (run: ConnectRun, done: Done) => void

/** aedes' connect actions, in its order; `fetchSubs` and `restoreSubs` as for Clean Start. */
const connectSteps: Step[] = [
  authenticate,
  setKeepAlive,
  cleanSession,
  storeWill,
  registerClient,
  connack,
  emptyQueue
]

function runSteps (run: ConnectRun, i: number, done: Done): void {
  if (i === connectSteps.length) return done()
  connectSteps[i](run, (err?: any) => err ? done(err) : runSteps(run, i + 1, done))
}

function authenticate (run: ConnectRun, done: Done): void {
  const client = run.client
  client.pause()
  client.broker.authenticate(client, run.packet.username, run.packet.password, function negate (err: any, successful: boolean) {
    // client.close() or broker.close() happened meanwhile: not registered, as in aedes
    if (client.closed || client.broker.closed) return
    if (!err && successful) {
      client._authorized = true
      return done()
    }
    if (err) {
      const errCode = err.returnCode
      run.returnCode = errCode && errCode >= 2 && errCode <= 5 ? errCode : 5
      if (!err.message) err.message = errorMessages[run.returnCode]
    } else {
      run.returnCode = 5
      err = new Error(errorMessages[run.returnCode])
    }
    if (client.version === 5 && err.serverReference) { // §4.11 server redirect
      run.reasonCode = redirectReasonCode(err)
      run.properties = { serverReference: err.serverReference }
      err.reasonCode = run.reasonCode
    }
    err.errorCode = run.returnCode
    // [MQTT-3.2.2-5]
    doConnack(run, client.version, () => client.close(() => done(err)))
  })
}

function setKeepAlive (run: ConnectRun, done: Done): void {
  const client = run.client
  const keepalive = client._serverKeepAlive ?? run.packet.keepalive
  if (keepalive > 0) {
    // [MQTT-3.1.2-24]; aedes' timer would be a setTimeout that session-limits.ts replaces
    // with a wheel entry on 'client': the entry at once
    armKeepalive(client, (keepalive * 1500) + 1)
  }
  done()
}

/** aedes' `fetchSubs` and `restoreSubs` for Clean Start: the old session's subscriptions go. */
function cleanSession (run: ConnectRun, done: Done): void {
  run.sessionPresent = false // [MQTT-3.2.2-1]
  run.client.broker.persistence.cleanSubscriptions(run.client).then(() => done(null), done)
}

function storeWill (_run: ConnectRun, done: Done): void {
  const client = _run.client
  client.will = client._will
  const persistence = client.broker.persistence
  // any stored will goes
  persistence.delWill(client).finally(() => {
    if (client.will) persistence.putWill(client, client.will).then(() => done(null), done)
    else done()
  })
}

/**
 * aedes' `registerClient` and `_finishRegisterClient` without the `$SYS/<id>/new/clients`
 * message they publish: it tells other aedes instances sharing one emitter to close their
 * client of that id, and here there are none. The router never forwards `$SYS/<id>/`
 * messages to another node nor shows them to clients (router.ts, internalPrefix), and
 * aedes' own listener does nothing for its own id; the message cost a publish per CONNECT.
 */
function registerClient (run: ConnectRun, done: Done): void {
  const client = run.client
  const broker = client.broker
  const previous = broker.clients[client.id]
  if (previous) {
    // [MQTT-3.1.4-2] the session's current connection is taken over: 0x8E for MQTT 5; the
    // id is marked so that the old client's close neither expires nor wipes the session
    broker._takingOver.add(client.id)
    previous.disconnect({ reasonCode: 0x8E }, function closeClient () { finishRegister(broker, client) })
  } else {
    finishRegister(broker, client)
  }
  done()
}

function finishRegister (broker: any, client: any): void {
  // reconnecting cancels a pending session expiry and delayed will
  broker._takingOver.delete(client.id)
  broker.clearSessionExpiry(client.id)
  broker.clearDelayedWill(client.id)
  broker.connectedClients++
  broker.clients[client.id] = client
  broker.emit('client', client)
}

function connack (run: ConnectRun, done: Done): void {
  doConnack(run, run.client.version, done)
}

function doConnack (run: ConnectRun, version: number, done: Done): void {
  const client = run.client
  if (version === 5 && run.returnCode === 0 && run.reasonCode === undefined && !run.properties) {
    const properties = connackProperties(client.broker)
    const responseInformation = client._requestResponseInformation ? resolveResponseInformation(client) : undefined
    if (client._assignedClientId) properties.assignedClientIdentifier = client._assignedClientId
    if (client._serverKeepAlive) properties.serverKeepAlive = client._serverKeepAlive
    if (client._sessionExpiryClamped) properties.sessionExpiryInterval = client.sessionExpiryInterval
    if (responseInformation !== undefined) properties.responseInformation = responseInformation
    run.properties = properties
  }
  const packet: Record<string, unknown> = { cmd: 'connack', sessionPresent: run.sessionPresent }
  if (version === 5) {
    packet.reasonCode = run.reasonCode ?? connackReasonCodes[run.returnCode] ?? UNSPECIFIED_ERROR // [MQTT-3.2.2-6]
    if (run.properties) packet.properties = run.properties
  } else {
    packet.returnCode = run.returnCode
  }
  write(client, packet, version, function (err: any) {
    if (!err) {
      client.broker.emit('connackSent', packet, client)
      client.connackSent = true
    }
    done(err)
  })
}

/** The MQTT 5 CONNACK properties advertising the broker's limits [MQTT-3.2.2-13]. */
function connackProperties (broker: any): Record<string, unknown> {
  const properties: Record<string, unknown> = { sharedSubscriptionAvailable: false }
  if (broker.topicAliasMaximum > 0) properties.topicAliasMaximum = broker.topicAliasMaximum
  if (broker.maximumPacketSize > 0) properties.maximumPacketSize = broker.maximumPacketSize
  if (broker.receiveMaximum > 0) properties.receiveMaximum = broker.receiveMaximum
  return properties
}

function resolveResponseInformation (client: any): unknown {
  const ri = client.broker.responseInformation
  if (ri == null) return undefined
  try {
    const value = typeof ri === 'function' ? ri(client) : ri
    return value == null ? undefined : value
  } catch (err) {
    client.broker.emit('clientError', client, err)
    return undefined
  }
}

/**
 * aedes' lib/write.js: serialises with the negotiated version; `done` on a later turn. An
 * MQTT 3.1/3.1.1 CONNACK is the four bytes mqtt-packet would write (fixed header 0x20,
 * remaining length 2, the session present flag, the return code [MQTT-3.2.2]), without its
 * generic writer (a cork, a debug call and three writes per CONNACK); like mqtt-packet's
 * CONNACK writer, it does not wait for 'drain'.
 */
function write (client: any, packet: any, protocolVersion: number, done: Done): void {
  let error: Error | null = null
  if (client.connecting || client.connected) {
    try {
      const version = (protocolVersion === 3 || protocolVersion === 5) ? protocolVersion : 4
      if (version !== 5 && packet.cmd === 'connack' && Number.isInteger(packet.returnCode) && packet.returnCode >= 0 && packet.returnCode <= 255) {
        client.conn.write(Buffer.from([0x20, 2, packet.sessionPresent ? 1 : 0, packet.returnCode]))
      } else if (!mqttPacket.writeToStream(packet, client.conn, WRITE_OPTS[version]) && !client.errored) {
        client.waitForDrain(done)
        return
      }
    } catch (e) {
      error = new Error('packet received not valid', { cause: e })
    }
  } else {
    error = new Error('connection closed')
  }
  setImmediate(done, error, client)
}

/**
 * Sends what the session had queued; with Clean Start, aedes' filter drops every queued
 * message [MQTT-3.1.2-4]. Nothing queued (the persistence says so): no pipeline at all.
 */
function emptyQueue (run: ConnectRun, done: Done): void {
  const client = run.client
  const persistence = client.broker.persistence
  if ((persistence as QueueProbe).hasQueued?.(client.id) === false) {
    client.resume()
    done()
    return
  }
  const outgoing = persistence.outgoingStream(client)
  client.resume()
  pipeline(outgoing, new Transform({ objectMode: true, transform: clearQueued(client) }), done)
}

/** aedes' `clearQueue` and `emptyQueueFilter` for one client. */
function clearQueued (client: any) {
  const persistence = client.broker.persistence
  return function clearQueue (data: any, _enc: BufferEncoding, next: (err?: any) => void): void {
    const now = Date.now()
    if (data.messageExpiry !== undefined && data.messageExpiry > now) { // [MQTT-3.3.2-5]
      data.properties = data.properties || {}
      data.properties.messageExpiryInterval = Math.ceil((data.messageExpiry - now) / 1000)
    }
    const packet = qosPacket(data, client)
    const filter = (err: any): void => {
      if (err) {
        client.emit('error', err)
        return next()
      }
      // aedes asks the forward filter even for a message Clean Start drops
      if (packet.cmd === 'publish') client.broker.authorizeForward(client, packet)
      persistence.outgoingClearMessageId(client, packet).then(() => next(null), next)
    }
    persistence.outgoingUpdate(client, packet).then(() => filter(null), filter)
  }
}

/** aedes' QoSPacket (aedes-packet's Packet plus a packet identifier) of a queued message. */
function qosPacket (original: any, client: any): any {
  const broker = client.broker
  const packet: any = {}
  if (Object.hasOwn(original, 'clientId')) packet.clientId = original.clientId
  if (Object.hasOwn(original, 'nl')) packet.nl = original.nl
  if (Object.hasOwn(original, 'properties')) packet.properties = original.properties
  if (Object.hasOwn(original, 'messageExpiry')) packet.messageExpiry = original.messageExpiry
  packet.cmd = original.cmd || 'publish'
  packet.brokerId = original.brokerId || broker.id
  packet.brokerCounter = original.brokerCounter || ++broker.counter
  packet.topic = original.topic
  packet.payload = original.payload || Buffer.alloc(0)
  packet.qos = original.qos || 0
  packet.retain = original.retain || false
  packet.dup = original.dup || false
  if (original.messageId) {
    packet.messageId = original.messageId
  } else {
    packet.messageId = client._nextId
    client._nextId = client._nextId >= 65535 ? 1 : client._nextId + 1
  }
  return packet
}
