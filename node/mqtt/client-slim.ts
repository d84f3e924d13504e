/**
 * Cuts what aedes 2.0.0-beta.1 builds per connection that an idle client does not need,
 * right after its Client constructor ran (issue 22: an idle connection's memory). Measured
 * with heap snapshots of 5 000 idle clients (docs/performance.md, "Per-connection memory"):
 *
 * - mqtt-packet's parser keeps its bytes in a `bl` BufferListStream, a whole Duplex stream
 *   (two stream states, their arrays and callbacks) of which it only uses the BufferList
 *   methods: it gets a plain BufferList, the same methods without the stream.
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
import { useFastParse } from './fast-parse.js'

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
export function slimNewClient (client: any, ownClose: boolean): void {
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
