import type { Duplex } from 'node:stream'
import type { TLSSocket } from 'node:tls'
import type { Logger } from '../logger.js'
import type { Metrics } from '../metrics.js'
import type { HooksBus } from '../hooks.js'
import type { StorePersistence } from './persistence.js'
import type { PeerCertAsUsername } from './listeners.js'

/** Where a connection came from, for the listener counters and the API. */
export interface ConnectionOrigin {
  /** Listener protocol, e.g. `mqtt:tcp`, `mqtt:ws`. */
  protocol: string
  address: string
  port: number
  /** The TLS socket under the connection (TLS and WSS listeners), for the peer certificate. */
  tlsSocket?: TLSSocket
  /**
   * The TCP or TLS socket the connection's bytes leave through: the one under a WebSocket
   * stream, the connection's own otherwise (a closing connection lingers while it sends).
   */
  transport?: Duplex
  /** The listener's `peer_cert_as_username`: where the MQTT username comes from. */
  peerCertAsUsername?: PeerCertAsUsername
  /** The listener's zone (`listener.<kind>.external.zone`); absent: `external`. */
  zone?: string
  /** The listener's own mountpoint (`%c`/`%u` unexpanded); absent or empty: its zone's. */
  mountpoint?: string
  /** Local address and port the client connected to. */
  localAddress: string
  localPort: number
  /** Called once when the connection has closed, with the reason recorded on its wire. */
  onClose: (reason: string) => void
}

/** An authentication verdict from the auth chain. */
export type AuthVerdict = 'allow' | 'deny' | 'ignore'

/** What an authenticator is told about a connecting client (EMQ X's placeholders draw on it). */
export interface AuthInfo {
  clientId: string
  username?: string
  password?: Buffer
  peerhost: string
  /** `ip:port` of the peer. */
  peer: string
  /** The local port the client connected to (`%p`). */
  sockport?: number
  /** Listener protocol, e.g. `mqtt:tcp`. */
  listener?: string
  /** The TLS client certificate's subject CN and whole subject DN, when it sent one (`%C`, `%d`). */
  certCn?: string
  certDn?: string
}

/** A verdict with what comes with an `allow`: a superuser bypasses the ACL. */
export interface AuthResult {
  verdict: AuthVerdict
  superuser?: boolean
}

/** One provider in the auth chain (the `svc_auth_*` plugins). */
export interface Authenticator {
  /** Plugin name, e.g. `svc_auth_username`. */
  name: string
  /** Higher runs first; equal priorities run in the order they were added (spec: Authentication). */
  priority: number
  authenticate: (info: AuthInfo) => Promise<AuthVerdict | AuthResult> | AuthVerdict | AuthResult
}

/** Who a client is, for ACL and banned checks. */
export interface AccessClient {
  clientId: string
  username: string | undefined
  peerhost: string
  /** Set when the authenticator that let the client in said it is a superuser: every check allows. */
  superuser?: boolean
  /** The local port the client connected to, and its listener protocol (the backends' `%p`). */
  sockport?: number
  listener?: string
  /** The TLS client certificate's CN and DN (`%C`, `%d`). */
  certCn?: string
  certDn?: string
  /** The client's mountpoint, expanded (`%m`), once its CONNECT is accepted. */
  mountpoint?: string
}

/** An ACL decision, at once or after a backend answered. */
export type AccessDecision = 'allow' | 'deny'

/** The ACL (`acl_file` and the ACL sources of the auth backends): decides each publish and subscribe. */
export interface AccessControl {
  check: (client: AccessClient, action: 'publish' | 'subscribe', topic: string) => AccessDecision | Promise<AccessDecision>
}

/** The banned list: the reason a client is refused at CONNECT, or null. */
export interface BannedList {
  check: (client: AccessClient) => string | null
}

/** Components a broker uses. */
export interface BrokerComponents {
  logger: Logger
  metrics: Metrics
  hooks: HooksBus
  /** The store-backed aedes persistence. */
  persistence: StorePersistence
}
