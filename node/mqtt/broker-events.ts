import type { HooksBus, MessageEvent, ClientEvent, ConnectEvent, SubscriptionOpts } from '../hooks.js'
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

/**
 * The `client.connect` event of a CONNECT whose state was just made (preConnect, before
 * authentication); `clientId` is the packet's (empty when the client sent none).
 */
export function connectEvent (node: string, clientId: string, state: ClientState): ConnectEvent {
  return {
    ...clientEvent('client.connect', node, { id: clientId }, state),
    keepalive: state.keepalive,
    clean_start: state.cleanStart
  }
}

/** EMQ X 4's names of MQTT 5 CONNACK reason codes (`emqx_reason_codes:name/1`). */
const CONNACK_NAMES: Readonly<Record<number, string>> = {
  0x00: 'success',
  0x80: 'unspecified_error',
  0x81: 'malformed_packet',
  0x82: 'protocol_error',
  0x83: 'implementation_specific_error',
  0x84: 'unsupported_protocol_version',
  0x85: 'client_identifier_not_valid',
  0x86: 'bad_username_or_password',
  0x87: 'not_authorized',
  0x88: 'server_unavailable',
  0x89: 'server_busy',
  0x8a: 'banned',
  0x8c: 'bad_authentication_method',
  0x95: 'packet_too_large',
  0x97: 'quota_exceeded',
  0x9c: 'use_another_server',
  0x9d: 'server_moved',
  0x9f: 'connection_rate_exceeded'
}

/** MQTT 3.1.1 CONNACK return codes as the MQTT 5 codes EMQ X names them by. */
const V3_AS_V5 = [0x00, 0x84, 0x85, 0x88, 0x86, 0x87]

/** The reason name of a CONNACK packet as aedes sent it (`reasonCode` for v5, `returnCode` before). */
export function connackName (packet: { reasonCode?: number, returnCode?: number }): string {
  const code = packet.reasonCode ?? V3_AS_V5[packet.returnCode ?? 0x80] ?? 0x80
  return CONNACK_NAMES[code] ?? `unknown_${code}`
}

/** The subscription options EMQ X 4 reports (`#{qos, rh, rap, nl}`, flags as 0/1). */
function subscriptionOpts (s: any): SubscriptionOpts {
  if (typeof s === 'string') return { qos: 0, rh: 0, rap: 0, nl: 0 }
  return { qos: s.qos ?? 0, rh: s.rh ?? 0, rap: s.rap === true ? 1 : 0, nl: s.nl === true ? 1 : 0 }
}

/** Maps a wire close reason to the reason a disconnected event reports. */
function disconnectReason (client: any, closeReason: string): string {
  // a client that sent DISCONNECT left normally
  if (client._disconnected === true) return 'normal'
  return closeReason
}

/**
 * Turns aedes' client lifecycle events into the hooks bus events `client.connack`,
 * `client.connected`, `client.disconnected`, `client.subscribe`, `client.unsubscribe`,
 * `session.subscribed`, `session.unsubscribed` and `session.terminated` (of a session ending
 * with its connection). Each handler checks `hooks.has` before it builds anything.
 */
export function attachClientEvents (aedes: any, hooks: HooksBus, node: string, closeReasonOf: (client: any) => string): void {
  aedes.on('connackSent', (packet: any, client: any) => {
    if (!hooks.has('client.connack')) return
    const state = stateOf(client)
    if (state === undefined) return
    const name = connackName(packet)
    hooks.emit('client.connack', {
      ...clientEvent('client.connack', node, client, state),
      keepalive: state.keepalive,
      clean_start: state.cleanStart,
      conn_ack: name,
      connected_at: name === 'success' ? Date.now() : undefined
    })
  })
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
    if (state === undefined) return
    const disconnected = hooks.has('client.disconnected')
    // a session that does not outlive its connection ends with it
    const terminated = client.clean !== false && hooks.has('session.terminated')
    if (!disconnected && !terminated) return
    const reason = disconnectReason(client, closeReasonOf(client))
    if (disconnected) {
      hooks.emit('client.disconnected', {
        ...clientEvent('client.disconnected', node, client, state),
        reason_code: reason,
        reason,
        disconnected_at: Date.now(),
        connected_at: state.connectedAt
      })
    }
    if (terminated) {
      hooks.emit('session.terminated', { event: 'session.terminated', client_id: client.id, username: state.username, reason, timestamp: Date.now(), node })
    }
  })
  const subscription = (name: 'client.subscribe' | 'client.unsubscribe') => (subs: any[], client: any) => {
    const state = stateOf(client)
    if (state === undefined || !hooks.has(name) || subs.length === 0) return
    const filters = subs.map((s: any) => typeof s === 'string'
      ? { topic: displayFilter(s), qos: 0 }
      : { topic: displayFilter(s.topic), qos: s.qos })
    const event = { ...clientEvent(name, node, client, state), topic_filters: filters, topic: filters[0].topic, qos: filters[0].qos }
    hooks.emit(name, name === 'client.subscribe' ? { ...event, sub_opts: subs.map(subscriptionOpts) } : event)
  }
  aedes.on('subscribe', subscription('client.subscribe'))
  aedes.on('unsubscribe', subscription('client.unsubscribe'))
  // after client.subscribe: the session holds the subscriptions now (EMQ X runs it per filter)
  const sessionSubscription = (name: 'session.subscribed' | 'session.unsubscribed') => (subs: any[], client: any) => {
    const state = stateOf(client)
    if (state === undefined || !hooks.has(name)) return
    for (const s of subs) {
      const topic = displayFilter(typeof s === 'string' ? s : s.topic)
      hooks.emit(name, { ...clientEvent(name, node, client, state), topic, opts: name === 'session.subscribed' ? subscriptionOpts(s) : undefined })
    }
  }
  aedes.on('subscribe', sessionSubscription('session.subscribed'))
  aedes.on('unsubscribe', sessionSubscription('session.unsubscribed'))
}
