/**
 * What Starling keeps per MQTT client, beside aedes' own client object: values from CONNECT
 * that shape delivery, and the facts events and the API report (spec: Connection fields).
 */
import type { AccessClient } from './broker-types.js'

export interface ClientState {
  /** Topic Alias Maximum the client accepts from the broker (0 = none). */
  topicAliasMaximum: number
  /** Maximum Packet Size the client accepts (0 = no limit). */
  maximumPacketSize: number
  /** Outbound topic aliases assigned so far (topic -> alias). */
  aliases: Map<string, number> | null
  /** User name from CONNECT, if any. */
  username: string | undefined
  /** `ip:port` and `ip` of the peer. */
  readonly peername: string
  peerhost: string
  /** `ip:port` the client connected to. */
  readonly sockname: string
  /** Listener protocol, e.g. `mqtt:tcp`. */
  listener: string
  /** The zone of its listener (`external` by default). */
  zone: string
  /** Its mountpoint, expanded (`%c`, `%u`) once the CONNECT is accepted; undefined: none. */
  mountpoint: string | undefined
  protoVer: number
  protoName: string
  /** The keep alive the connection is held to, seconds (the client's, or the Server Keep Alive it was told; see keepalive.ts). */
  keepalive: number
  /** Why `mqtt.max_keepalive` refuses this (v3) CONNECT; undefined when it does not. */
  keepaliveRefused?: string
  cleanStart: boolean
  /** Session Expiry Interval asked for, seconds (v5), or 0 / infinity-like for v3. */
  expiryInterval: number
  isBridge: boolean
  connProps: Record<string, unknown>
  /** ms since epoch, set when CONNACK 0 went out. */
  connectedAt: number
  /** Who the client is for the ACL and the banned list (one object per connection; `superuser` set by the auth chain). */
  access: AccessClient
}

/** Where a connection's peer and local addresses are (the listener's origin). */
export interface StateEndpoints {
  address: string
  port: number
  localAddress: string
  localPort: number
}

/** A {@link ClientState} without the fields {@link ConnectionState} makes on reading. */
export type ClientStateFields = Omit<ClientState, 'peername' | 'sockname'>

/**
 * The {@link ClientState} of a connection: `peername` and `sockname` are made from its
 * origin when read (events, the API) instead of kept as two strings per connection, which
 * an idle connection would hold for nothing (issue 22).
 */
export class ConnectionState implements ClientState {
  topicAliasMaximum!: number
  maximumPacketSize!: number
  aliases!: Map<string, number> | null
  username!: string | undefined
  peerhost!: string
  listener!: string
  zone!: string
  mountpoint!: string | undefined
  protoVer!: number
  protoName!: string
  keepalive!: number
  keepaliveRefused?: string
  cleanStart!: boolean
  expiryInterval!: number
  isBridge!: boolean
  connProps!: Record<string, unknown>
  connectedAt!: number
  access!: AccessClient

  constructor (private readonly endpoints: StateEndpoints | undefined, fields: ClientStateFields) {
    Object.assign(this, fields)
  }

  get peername (): string { return this.endpoints === undefined ? '' : `${this.endpoints.address}:${this.endpoints.port}` }
  get sockname (): string { return this.endpoints === undefined ? '' : `${this.endpoints.localAddress}:${this.endpoints.localPort}` }
}

/** Where a client's {@link ClientState} lives on the aedes client object. */
export const clientState = Symbol('starling.clientState')

/** The state of an aedes client, or undefined before CONNECT was seen. */
export function stateOf (client: any): ClientState | undefined {
  return client?.[clientState]
}
