/**
 * The connections of one node (the spec's Connection resource) and kicking one out. Node
 * operations: `connections.list` (`{clientid?, username?}` and the search of list-filters.ts) and `connections.kick`
 * (`{clientid}`, answers whether the client was here). Field choices where EMQ X's Erlang
 * terms have no Node.js counterpart (conn_mod, heap_size, reductions, mailbox_len) are in
 * docs/api.md (Connections).
 */
import { TLSSocket } from 'node:tls'
import type { StarlingNode } from '../node.js'
import type { Broker } from '../mqtt/broker.js'
import type { ClientView } from '../mqtt/core.js'
import type { Wire } from '../mqtt/wire.js'
import { formatDatetime } from '../sys/sys-info.js'
import { connectionMatches, isEmptySearch, type ConnectionSearch } from './list-filters.js'

/** The spec's Connection. */
export interface Connection {
  clean_start: boolean
  client_id: string
  /** `starling_connection` (TCP, TLS) or `starling_ws_connection` (WebSocket), after EMQ X's module names. */
  conn_mod: string
  /** `YYYY-MM-DD HH:MM:SS`, local time. */
  connected_at: string
  /** Bytes held in this connection's buffers (unsent output, unread input). */
  heap_size: number
  ipaddress: string
  is_bridge: boolean
  keepalive: number
  /** Always 0: a connection has no mailbox in Node.js (unsent output is `send_pend`). */
  mailbox_len: number
  node: string
  /** `nossl` without TLS; with TLS the client certificate's subject, or `undefined` without one. */
  peercert: string
  port: number
  proto_name: string
  proto_ver: number
  recv_cnt: number
  recv_msg: number
  recv_oct: number
  recv_pkt: number
  /** Work done for the connection: MQTT packets received plus sent. */
  reductions: number
  send_cnt: number
  send_msg: number
  send_oct: number
  /** Bytes written and not yet handed to the network. */
  send_pend: number
  send_pkt: number
  /** The user name, or the text `undefined` when the client gave none. */
  username: string
  /** The zone of the client's listener (`listener.<kind>.external.zone`; `external` by default). */
  zone: string
}

/** What the connection operations use of the node: its MQTT core and its name. */
export type ConnectionsComponents = Pick<StarlingNode, 'broker' | 'name'>

/** Which connections `connections.list` returns: by client id or user name, and a search (list-filters.ts). */
export interface ConnectionFilter extends ConnectionSearch {
  clientid?: string
  username?: string
}

/** Reason code of the DISCONNECT a kicked MQTT 5 client gets: Administrative action. */
export const KICK_REASON_CODE = 0x98

/** Text of Connection.peercert for a connection without TLS (EMQ X's marker). */
export const NO_SSL = 'nossl'

const NO_COUNTERS = { recvCnt: 0, recvOct: 0, recvPkt: 0, recvMsg: 0, sendCnt: 0, sendOct: 0, sendPkt: 0, sendMsg: 0 }

/** Unsent output of a connection, bytes: ours (wire) and the socket's. */
export function pendingBytes (wire: Wire | undefined): number {
  if (wire === undefined) return 0
  return wire.pending + (wire.socket.writableLength ?? 0)
}

/** Bytes a connection holds in buffers (unsent output and unread input): Connection.heap_size. */
export function bufferedBytes (wire: Wire | undefined): number {
  if (wire === undefined) return 0
  return pendingBytes(wire) + (wire.socket.readableLength ?? 0)
}

/** `C=.., O=.., CN=..` from a certificate subject as Node parses it. */
function subjectText (subject: Record<string, string | string[]>): string {
  return Object.entries(subject)
    .flatMap(([key, value]) => (Array.isArray(value) ? value : [value]).map(v => `${key}=${v}`))
    .join(', ')
}

/** Connection.peercert: see {@link Connection.peercert}. */
function peercertOf (wire: Wire | undefined, listener: string): string {
  // the TLS socket is the connection's own (ssl) or under its WebSocket stream (wss)
  const tlsSocket = wire?.origin?.tlsSocket ?? (wire?.socket instanceof TLSSocket ? wire.socket : undefined)
  if (tlsSocket !== undefined) {
    const cert = tlsSocket.getPeerCertificate()
    if (cert === null || cert.subject === undefined) return 'undefined'
    return subjectText(cert.subject as unknown as Record<string, string | string[]>)
  }
  return listener === 'mqtt:wss' ? 'undefined' : NO_SSL
}

/** The Connection of one client of the node named `node`. */
export function connectionOf (node: string, client: ClientView): Connection {
  const state = client.state
  const wire = client.wire
  const c = wire?.counters ?? NO_COUNTERS
  const listener = state?.listener ?? ''
  return {
    clean_start: state?.cleanStart ?? client.clean !== false,
    client_id: client.id,
    conn_mod: listener === 'mqtt:ws' || listener === 'mqtt:wss' ? 'starling_ws_connection' : 'starling_connection',
    connected_at: formatDatetime(new Date(state !== undefined && state.connectedAt > 0 ? state.connectedAt : Date.now())),
    heap_size: bufferedBytes(wire),
    ipaddress: state?.peerhost ?? wire?.peer.address ?? '',
    is_bridge: state?.isBridge ?? false,
    keepalive: state?.keepalive ?? 0,
    mailbox_len: 0,
    node,
    peercert: peercertOf(wire, listener),
    port: wire?.peer.port ?? 0,
    proto_name: state?.protoName ?? 'MQTT',
    proto_ver: state?.protoVer ?? client.version ?? 4,
    recv_cnt: c.recvCnt,
    recv_msg: c.recvMsg,
    recv_oct: c.recvOct,
    recv_pkt: c.recvPkt,
    reductions: c.recvPkt + c.sendPkt,
    send_cnt: c.sendCnt,
    send_msg: c.sendMsg,
    send_oct: c.sendOct,
    send_pend: pendingBytes(wire),
    send_pkt: c.sendPkt,
    username: state?.username ?? 'undefined',
    zone: state?.zone ?? 'external'
  }
}

/**
 * The connected client with id `clientid` on `broker`, or undefined. Own ids only (the core's
 * lookup): a client id such as `__proto__` or `constructor` must not find the prototype.
 */
export function clientById (broker: Broker, clientid: string): ClientView | undefined {
  const client = broker.core.client(clientid)
  return client === undefined || client.state === undefined || client.closed ? undefined : client
}

/** The MQTT clients connected to `broker` (CONNECT accepted), in connection order. */
export function connectedClients (broker: Broker): ClientView[] {
  const out: ClientView[] = []
  for (const client of broker.core.clients()) {
    if (client.state !== undefined && !client.closed) out.push(client)
  }
  return out
}

/** The connections of `node` that match `filter`. */
export function connectionsOf (node: ConnectionsComponents, filter: ConnectionFilter = {}): Connection[] {
  if (filter.clientid !== undefined) {
    const client = clientById(node.broker, filter.clientid)
    return client === undefined ? [] : [connectionOf(node.name, client)]
  }
  let clients = connectedClients(node.broker)
  if (filter.username !== undefined) clients = clients.filter(c => c.state?.username === filter.username)
  const { clientid: _c, username: _u, ...search } = filter
  const all = clients.map(c => connectionOf(node.name, c))
  return isEmptySearch(search) ? all : all.filter(c => connectionMatches(c, search))
}

/**
 * Kicks `clientid` out of `broker` if it is connected here; resolves whether it was. The
 * connection's close reason is `kicked` (listener `shutdown_count.kicked`, the
 * `client.disconnected` reason); an MQTT 5 client first gets DISCONNECT 0x98
 * (Administrative action), an MQTT 3.1.1 client is closed.
 */
export async function kickClient (broker: Broker, clientid: string): Promise<boolean> {
  const client = clientById(broker, clientid)
  if (client === undefined) return false
  const wire = client.wire
  if (wire !== undefined) wire.closeReason = 'kicked'
  await client.disconnect(KICK_REASON_CODE)
  return true
}

/** Registers `connections.list` and `connections.kick` on `node.rpc`. */
export function registerConnectionOperations (node: StarlingNode): void {
  node.rpc.register('connections.list', (args: ConnectionFilter | undefined): Connection[] => connectionsOf(node, args ?? {}))
  node.rpc.register('connections.kick', async (args: { clientid: string }): Promise<boolean> => await kickClient(node.broker, args.clientid))
}
