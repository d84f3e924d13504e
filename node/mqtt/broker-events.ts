import type { HooksBus, MessageEvent, ClientEvent } from '../hooks.js'
import { stateOf, type ClientState } from './client-state.js'
import { displayFilter } from './topic.js'

/** Boot time in hex: message ids stay unique across restarts of a node. */
const BOOT = Date.now().toString(16)

/**
 * The id of a message on this node: the same for every copy of one publish (aedes copies the
 * packet per subscriber but keeps `brokerCounter`).
 */
export function messageId (packet: any): string {
  return BOOT + (packet.brokerCounter ?? 0).toString(16).padStart(10, '0')
}

/** Builds a message event payload; `client` is the publisher, or null for the broker/API. */
export function messageEvent (name: string, node: string, packet: any, client: any): MessageEvent {
  const state = stateOf(client)
  const now = Date.now()
  return {
    event: name,
    id: messageId(packet),
    client_id: client?.id ?? packet.clientId ?? '',
    username: state?.username,
    topic: packet.topic,
    payload: typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload,
    qos: packet.qos,
    peername: state?.peername ?? '',
    peerhost: state?.peerhost ?? '',
    flags: { retain: packet.retain === true, dup: packet.dup === true },
    pub_props: packet.properties ?? {},
    publish_received_at: now,
    timestamp: now,
    node
  }
}

/** Fields of every client event, from the client's state. */
export function clientEvent (name: string, node: string, client: any, state: ClientState): ClientEvent {
  return {
    event: name,
    client_id: client.id,
    username: state.username,
    peername: state.peername,
    peerhost: state.peerhost,
    sockname: state.sockname,
    mountpoint: state.mountpoint,
    auth_result: 'success',
    proto_ver: state.protoVer,
    proto_name: state.protoName,
    timestamp: Date.now(),
    node
  }
}

/** Maps a wire close reason to the reason a disconnected event reports. */
function disconnectReason (client: any, closeReason: string): string {
  // a client that sent DISCONNECT left normally
  if (client._disconnected === true) return 'normal'
  return closeReason
}

/**
 * Turns aedes' client lifecycle events into the hooks bus events `client.connected`,
 * `client.disconnected`, `client.subscribe` and `client.unsubscribe`.
 */
export function attachClientEvents (aedes: any, hooks: HooksBus, node: string, closeReasonOf: (client: any) => string): void {
  aedes.on('clientReady', (client: any) => {
    const state = stateOf(client)
    if (state === undefined) return
    state.connectedAt = Date.now()
    if (!hooks.has('client.connected')) return
    hooks.emit('client.connected', {
      ...clientEvent('client.connected', node, client, state),
      clean_start: state.cleanStart,
      connack: 0,
      connected_at: state.connectedAt,
      is_bridge: state.isBridge,
      keepalive: state.keepalive,
      expiry_interval: state.expiryInterval,
      conn_props: state.connProps
    })
  })
  aedes.on('clientDisconnect', (client: any) => {
    const state = stateOf(client)
    if (state === undefined || !hooks.has('client.disconnected')) return
    const reason = disconnectReason(client, closeReasonOf(client))
    hooks.emit('client.disconnected', {
      ...clientEvent('client.disconnected', node, client, state),
      reason_code: reason,
      reason,
      disconnected_at: Date.now(),
      connected_at: state.connectedAt
    })
  })
  const subscription = (name: 'client.subscribe' | 'client.unsubscribe') => (subs: any[], client: any) => {
    const state = stateOf(client)
    if (state === undefined || !hooks.has(name) || subs.length === 0) return
    const filters = subs.map((s: any) => typeof s === 'string'
      ? { topic: displayFilter(s), qos: 0 }
      : { topic: displayFilter(s.topic), qos: s.qos })
    hooks.emit(name, { ...clientEvent(name, node, client, state), topic_filters: filters, topic: filters[0].topic, qos: filters[0].qos })
  }
  aedes.on('subscribe', subscription('client.subscribe'))
  aedes.on('unsubscribe', subscription('client.unsubscribe'))
}
