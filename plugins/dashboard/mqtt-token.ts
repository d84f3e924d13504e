/**
 * Short-lived MQTT tokens for the signed-in dashboard user: what the WebSocket client page and
 * the topic explorer connect with, so they work with `allow_anonymous = false` and without
 * asking for an MQTT password.
 *
 * `POST /api/v3/mqtt_token` (the dashboard listener only, signed in) issues a random token for
 * the caller, valid {@link MQTT_TOKEN_TTL_MS} and once: a CONNECT whose username is
 * `dashboard:<user>` ({@link DASHBOARD_MQTT_PREFIX}) and whose password is the token is let
 * in by this plugin's authenticator, first in the broker's auth chain, when it arrives on one
 * of this node's WebSocket listeners (`mqtt:ws`, `mqtt:wss`); the connection then lives on
 * like any other. The client is not a superuser: the ACL sees the username `dashboard:<user>`.
 *
 * The `dashboard:` user names belong to this authenticator: any CONNECT with one that does
 * not carry a live token of that user on a WebSocket listener is refused, whatever the other
 * providers or `allow_anonymous` would say, so ACL rules written for dashboard users cannot
 * be claimed by a client that names itself so. Every other CONNECT is `ignore`d (the rest of
 * the chain decides). Tokens live in this node's memory only: another node refuses them.
 */
import { randomBytes } from 'node:crypto'
import type { Authenticator, AuthInfo, AuthVerdict } from '../../node/mqtt/broker-types.js'
import type { StarlingNode } from '../../node/node.js'
import type { Logger } from '../../node/logger.js'
import { defineRoutes, type RouteDef } from '../../api/route-table.js'

/** How long a token may be used to connect. */
export const MQTT_TOKEN_TTL_MS = 60_000
/** The MQTT username of dashboard user `u` is this prefix and `u`. */
export const DASHBOARD_MQTT_PREFIX = 'dashboard:'
/** The authenticator's name in the auth chain. */
export const MQTT_TOKEN_AUTHENTICATOR = 'svc_dashboard_mqtt_token'
/** Tokens waiting to be used at most; issuing one more forgets the oldest. */
const MAX_LIVE_TOKENS = 1024
/** The listeners a token is accepted on. */
const WEBSOCKET_LISTENERS: ReadonlySet<string> = new Set(['mqtt:ws', 'mqtt:wss'])

/** Where one of the node's WebSocket listeners is: its bound port and URL path. */
export interface WebSocketEndpoint {
  port: number
  path: string
}

/** The answer of `POST /api/v3/mqtt_token`. */
export interface IssuedMqttToken {
  /** The MQTT password (once, before `expires_at`). */
  token: string
  /** The MQTT username: `dashboard:<user>`. */
  username: string
  /** Unix time in seconds after which the token no longer connects. */
  expires_at: number
  /** This node's MQTT/WebSocket listener (`listener.ws.external`), null when disabled. */
  ws: WebSocketEndpoint | null
  /** This node's MQTT/secure WebSocket listener (`listener.wss.external`), null when disabled. */
  wss: WebSocketEndpoint | null
}

/** The tokens of one node's plugin while it is loaded. */
export interface MqttTokens {
  /** A new token for dashboard user `user`. */
  issue: (user: string) => { token: string, username: string, expiresAt: number }
  /** The auth chain's provider (see the module comment). */
  authenticator: Authenticator
  /** Tokens issued and not yet used or expired. */
  size: () => number
}

/** The token service; `now` is the clock (tests). */
export function createMqttTokens (logger: Logger, now: () => number = Date.now): MqttTokens {
  const live = new Map<string, { username: string, expiresAt: number }>()
  const sweep = (): void => {
    const t = now()
    for (const [token, entry] of live) if (entry.expiresAt <= t) live.delete(token)
  }
  const decide = (info: AuthInfo): AuthVerdict => {
    const username = info.username
    if (username === undefined || !username.startsWith(DASHBOARD_MQTT_PREFIX)) return 'ignore'
    const refuse = (why: string): AuthVerdict => {
      logger.info({ clientId: info.clientId, username, listener: info.listener, peer: info.peer }, `dashboard MQTT token refused: ${why}`)
      return 'deny'
    }
    const password = info.password?.toString('utf8') ?? ''
    if (!WEBSOCKET_LISTENERS.has(info.listener ?? '')) return refuse(`a dashboard user connects over this node's WebSocket listener only, not ${info.listener ?? 'this one'}`)
    const entry = live.get(password)
    if (entry === undefined) return refuse('no such token on this node (used already, or never issued here)')
    if (entry.username !== username) return refuse('the token was issued to another dashboard user')
    // once: a token seen in a log or a proxy cannot connect again
    live.delete(password)
    if (entry.expiresAt <= now()) return refuse('the token has expired')
    return 'allow'
  }
  return {
    issue (user) {
      sweep()
      while (live.size >= MAX_LIVE_TOKENS) live.delete(live.keys().next().value as string)
      const token = randomBytes(24).toString('base64url')
      const username = DASHBOARD_MQTT_PREFIX + user
      const expiresAt = now() + MQTT_TOKEN_TTL_MS
      live.set(token, { username, expiresAt })
      return { token, username, expiresAt }
    },
    authenticator: {
      name: MQTT_TOKEN_AUTHENTICATOR,
      // before every provider: the dashboard: names are decided here and nowhere else
      priority: Number.POSITIVE_INFINITY,
      authenticate: decide
    },
    size: () => { sweep(); return live.size }
  }
}

/** The bound port and path of `node`'s listener of `protocol`, or null when it has none. */
function endpointOf (node: Pick<StarlingNode, 'listeners'>, protocol: 'mqtt:ws' | 'mqtt:wss'): WebSocketEndpoint | null {
  const listener = node.listeners.find(l => l.spec.protocol === protocol)
  if (listener === undefined || listener.port === 0) return null
  return { port: listener.port, path: listener.spec.path ?? '/mqtt' }
}

/** `POST /api/v3/mqtt_token` over `tokens` (the dashboard's own route table: the caller is the signed-in user). */
export function mqttTokenRoutes (node: Pick<StarlingNode, 'listeners'>, tokens: MqttTokens): RouteDef[] {
  return defineRoutes([
    {
      name: 'create_mqtt_token',
      method: 'POST',
      path: '/mqtt_token',
      descr: 'A one-time MQTT password for the signed-in user, valid 60 s on this node\'s WebSocket listener: {token, username, expires_at, ws, wss}',
      handler: (req) => {
        const issued = tokens.issue(req.appId)
        const data: IssuedMqttToken = {
          token: issued.token,
          username: issued.username,
          expires_at: Math.floor(issued.expiresAt / 1000),
          ws: endpointOf(node, 'mqtt:ws'),
          wss: endpointOf(node, 'mqtt:wss')
        }
        return { data }
      }
    }
  ])
}

/** Puts the authenticator of `tokens` into `node`'s auth chain; returns the function that takes it out. */
export function registerMqttTokens (node: Pick<StarlingNode, 'broker'>, tokens: MqttTokens): () => void {
  node.broker.addAuthenticator(tokens.authenticator)
  return () => { node.broker.removeAuthenticator(tokens.authenticator.name) }
}
