/**
 * Cuts what aedes 2.0.0-beta.1 builds per connection that an idle client does not need,
 * while and right after its Client constructor runs (issue 22: an idle connection's memory
 * and a CONNECT's CPU). Measured with heap snapshots of 5 000 idle clients
 * (docs/performance.md, "Per-connection memory"):
 *
 * - mqtt-packet's parser keeps its bytes in a `bl` BufferListStream, a whole Duplex stream
 *   (two stream states, their arrays and callbacks) of which it only uses the BufferList
 *   methods: {@link newClient} has aedes' constructor make its parser with a plain
 *   BufferList from the start, the same methods without the stream (mqtt-packet itself
 *   makes a `bl` again only after a malformed packet, which closes the connection).
 * - the parser's list of state names is one array per parser: one shared array.
 * - the parser keeps the CONNECT packet as its `settings` (it reads `protocolVersion` and
 *   `bridgeMode` from it): a shared object with those two, so the CONNECT (client id,
 *   credentials, properties) is not held for the connection's lifetime.
 * - aedes' inbound Topic Alias map exists only for MQTT 5 clients (aedes reads it for a v5
 *   PUBLISH with a Topic Alias only).
 * - `stream.finished` on a TCP or TLS socket (seven listeners and their closures) is replaced
 *   by the 'close' listener the broker has on every socket anyway: a net.Socket always emits
 *   'close' once destroyed, and aedes' own 'end' and 'error' listeners stay.
 *
 * - the frames a busy connection sends most are decoded without mqtt-packet's state machine
 *   (fast-parse.ts).
 *
 * Behaviour is unchanged: every cut keeps what aedes reads.
 */
import mqttPacket from 'mqtt-packet'
import { useFastParse } from './fast-parse.js'
import { packetListenerFor } from './connect.js'
import { compactEvents } from './event-maps.js'

/** What mqtt-packet's parser factory makes, read once from a parser it made itself. */
interface ParserParts {
  Parser: new () => any
  Packet: new () => any
  BufferList: new () => any
  states: unknown[]
}

let parserParts: ParserParts | null | undefined

function readParserParts (factory: () => any): ParserParts | null {
  const probe = factory()
  const BufferList = probe._list?.constructor?.BufferList
  const Packet = probe.packet?.constructor
  if (typeof BufferList !== 'function' || typeof Packet !== 'function' || !Array.isArray(probe._states) || typeof probe.constructor !== 'function') return null
  return { Parser: slimParserClass(probe.constructor), Packet, BufferList, states: probe._states }
}

/**
 * mqtt-packet's Parser, with the listeners aedes' constructor adds taken as Starling wants
 * them, so that nothing is removed afterwards (an EventEmitter's event map that loses a key
 * goes to dictionary mode, about 120 B more per parser): the 'packet' listener is
 * connect.ts's (which passes to aedes' own every packet it does not take), and the 'error'
 * listener, aedes' `client.emit.bind(client, 'error')`, one function for every parser.
 */
function slimParserClass (Parser: new () => any): new () => any {
  return class SlimParser extends Parser {
    on (event: string, listener: (...args: any[]) => void): any {
      if (event === 'packet') return super.on(event, packetListenerFor(listener))
      if (event === 'error' && listener.name === 'bound emit') return super.on(event, errorToClient)
      return super.on(event, listener)
    }
  }
}

/**
 * An error of a parser or a socket, emitted on its aedes client (`this` is the parser or the
 * socket: both have `client`), as aedes' bound `emit` did.
 */
function errorToClient (this: any, err: Error): void {
  this.client.emit('error', err)
}

/** The socket's end closes its aedes client (`this` is the socket), as aedes' bound `close`. */
function closeClientOnEnd (this: any): void {
  this.client.close()
}

/**
 * Copies each array of listeners of `emitter` to one of its length: an array that held more
 * listeners (`stream.finished`'s, removed above) keeps the capacity it grew to (176 B for
 * the socket's two 'close' listeners).
 */
function trimListenerArrays (emitter: any): void {
  const events = emitter._events
  if (events === undefined || events === null) return
  for (const key of Reflect.ownKeys(events)) {
    const listeners = events[key]
    if (Array.isArray(listeners)) events[key] = listeners.slice()
  }
}

/**
 * Replaces aedes' bound `listener` of `event` on `socket` (one bound function per client)
 * by `shared`, in the same place among the socket's listeners of that event.
 */
function shareSocketListener (socket: any, event: string, name: string, shared: (this: any, ...args: any[]) => void): void {
  const listeners: Array<(...args: any[]) => void> = socket.listeners(event)
  const i = listeners.findIndex(l => l.name === name)
  // only when it is the last one: re-adding puts it at the end
  if (i === -1 || i !== listeners.length - 1) return
  socket.removeListener(event, listeners[i])
  socket.on(event, shared)
}

/**
 * mqtt-packet's `parser()` (a Parser, then its `_resetState`) with a plain BufferList and the
 * shared state names; `settings` is replaced once the CONNECT is seen (slimConnectingClient).
 */
function slimParser (): any {
  const parts = parserParts!
  const parser = new parts.Parser()
  parser.settings = {}
  parser._states = parts.states
  parser.packet = new parts.Packet()
  parser.error = null
  parser._list = new parts.BufferList()
  parser._stateCounter = 0
  return parser
}

/**
 * `aedes.handle(socket)`: aedes' Client for `socket`, its parser made by {@link slimParser}
 * (aedes' constructor calls mqtt-packet's `parser()`; the factory is swapped for that call
 * only, synchronously, and put back), then slimmed by {@link slimNewClient}.
 */
export function newClient (aedes: { handle: (socket: unknown) => any }, socket: unknown, ownClose: boolean): any {
  const factory = mqttPacket.parser
  parserParts ??= readParserParts(factory)
  let client: any
  if (parserParts === null) {
    client = aedes.handle(socket)
  } else {
    (mqttPacket as any).parser = slimParser
    try {
      client = aedes.handle(socket)
    } finally {
      (mqttPacket as any).parser = factory
    }
  }
  slimNewClient(client, ownClose)
  compactEvents(client._parser)
  return client
}

/** The parser states mqtt-packet creates per parser, shared by all (it only reads them). */
let sharedStates: unknown[] | null = null

/** A parser's `settings` after CONNECT, one per (protocol level, bridge flag). */
const parserSettings = new Map<number, { protocolVersion: number, bridgeMode: boolean }>()

function noop (): void {}

/**
 * Slims a client aedes just created for `socket`; `ownClose` says the caller closes the
 * client on the socket's 'close' (see {@link closeOnSocketClose}), so aedes' own
 * `stream.finished` is dropped.
 */
function slimNewClient (client: any, ownClose: boolean): void {
  const parser = client._parser
  if (parser !== undefined && parser !== null) {
    const BufferList = parser._list?.constructor?.BufferList
    if (typeof BufferList === 'function' && parser._list.length === 0) parser._list = new BufferList()
    sharedStates ??= parser._states
    if (Array.isArray(parser._states) && parser._states.length === sharedStates!.length) parser._states = sharedStates
    useFastParse(parser)
  }
  // restored for MQTT 5 clients once their CONNECT is seen (slimConnectedClient)
  client._topicAliases = null

  if (ownClose && typeof client._eos === 'function') {
    client._eos()
    client._eos = noop
  }
  const socket = client.conn
  if (socket !== undefined && socket !== null && socket.client === client) {
    shareSocketListener(socket, 'error', 'bound emit', errorToClient)
    shareSocketListener(socket, 'end', 'bound close', closeClientOnEnd)
    trimListenerArrays(socket)
  }
}

/** After CONNECT: the parser's settings and aedes' alias map as this client needs them. */
export function slimConnectingClient (client: any, packet: { protocolVersion: number, bridgeMode?: boolean }): void {
  const parser = client._parser
  if (parser !== undefined && parser !== null && parser.settings === packet) {
    const bridgeMode = packet.bridgeMode === true
    const key = packet.protocolVersion * 2 + (bridgeMode ? 1 : 0)
    let settings = parserSettings.get(key)
    if (settings === undefined) parserSettings.set(key, settings = { protocolVersion: packet.protocolVersion, bridgeMode })
    parser.settings = settings
  }
  if (packet.protocolVersion === 5 && client._topicAliases === null) client._topicAliases = new Map()
}

/** Closes the aedes client of a socket that closed (in place of aedes' `stream.finished`). */
export function closeOnSocketClose (client: any): void {
  if (client !== undefined && client !== null && client.closed !== true) client.close()
}
