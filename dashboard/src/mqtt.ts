/**
 * MQTT over WebSocket from the dashboard (the WebSocket client and the topic explorer): the
 * one-time token of the signed-in user (`POST /api/v3/mqtt_token`, accepted once within a
 * minute on this node's WebSocket listener as `dashboard:<user>`), the listener's address, a
 * connection that resolves at CONNACK, and payloads as text.
 *
 * mqtt.js is imported here only, and this module only by those two pages: it stays in their
 * lazily loaded chunk, not in the first bundle.
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { post } from './api'

export type { MqttClient } from 'mqtt'

/** One of the node's WebSocket listeners: its port and URL path. */
export interface WsEndpoint {
  port: number
  path: string
}

/** A token as `POST /api/v3/mqtt_token` answers it. */
export interface MqttToken {
  token: string
  username: string
  /** Unix seconds. */
  expires_at: number
  ws: WsEndpoint | null
  wss: WsEndpoint | null
}

/** A new one-time token for the signed-in user. */
export async function issueToken (): Promise<MqttToken> {
  return await post<MqttToken>('/mqtt_token')
}

/** Where to connect: `ws`/`wss`, this page's host, and the listener's port and path. */
export interface Endpoint {
  scheme: 'ws' | 'wss'
  host: string
  port: number
  path: string
}

/**
 * The listener a page served over `pageProtocol` can use: WSS from an HTTPS page (a browser
 * refuses ws: there), otherwise WS, or WSS when the node has no WS listener; null when none.
 */
export function endpointFor (token: MqttToken, pageProtocol = location.protocol, host = location.hostname): Endpoint | null {
  const secure = pageProtocol === 'https:'
  if (secure && token.wss !== null) return { scheme: 'wss', host, ...token.wss }
  if (!secure && token.ws !== null) return { scheme: 'ws', host, ...token.ws }
  if (token.wss !== null) return { scheme: 'wss', host, ...token.wss }
  return null
}

/** The URL of `e`, an IPv6 host in brackets. */
export function endpointUrl (e: Endpoint): string {
  const host = e.host.includes(':') && !e.host.startsWith('[') ? `[${e.host}]` : e.host
  const path = e.path.startsWith('/') ? e.path : `/${e.path}`
  return `${e.scheme}://${host}:${e.port}${path}`
}

/** A client id `<prefix><8 hex digits>`. */
export function randomClientId (prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(4))
  return prefix + Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('')
}

/**
 * Connects to `url` and resolves once the broker accepted (CONNACK 0), or rejects with the
 * broker's refusal or the network error. No automatic reconnect: a token connects once, so a
 * page that reconnects asks for a new one.
 */
export async function connectMqtt (url: string, options: IClientOptions): Promise<MqttClient> {
  // native timers: mqtt.js's default in a browser runs them in a Worker made from a blob: URL,
  // which the dashboard's Content-Security-Policy (script-src 'self') refuses
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 10_000, timerVariant: 'native', ...options })
  // an 'error' nobody listens to would be thrown: the pages listen to 'close' and show why
  client.on('error', () => {})
  return await new Promise<MqttClient>((resolve, reject) => {
    const fail = (err: Error): void => {
      client.removeAllListeners('connect')
      client.end(true)
      reject(err)
    }
    client.once('connect', () => {
      client.removeListener('error', onError)
      client.removeListener('close', onClose)
      resolve(client)
    })
    const onError = (err: Error): void => { fail(err) }
    const onClose = (): void => { fail(new Error(`the connection to ${url} closed before the broker answered`)) }
    client.once('error', onError)
    client.once('close', onClose)
  })
}

/** SUBACK codes at or above this are refusals (0x80 and up, MQTT 3.1.1 and 5). */
export const SUBACK_FAILURE = 0x80

/** A payload as a page shows it: text (pretty JSON when it is JSON), or hex when it is not UTF-8. */
export interface ShownPayload {
  text: string
  /** Indented JSON when the payload is a JSON object or array. */
  pretty?: string
  binary: boolean
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** How `payload` is shown (at most `max` bytes of it as hex when binary). */
export function showPayload (payload: Uint8Array, max = 256): ShownPayload {
  let text: string
  try {
    text = utf8.decode(payload)
  } catch {
    const hex = Array.from(payload.subarray(0, max), b => b.toString(16).padStart(2, '0')).join(' ')
    return { text: `${payload.length} bytes: ${hex}${payload.length > max ? ' …' : ''}`, binary: true }
  }
  const first = text.trimStart()[0]
  if (first === '{' || first === '[') {
    try {
      return { text, pretty: JSON.stringify(JSON.parse(text), null, 2), binary: false }
    } catch {
      // not JSON after all: shown as text
    }
  }
  return { text, binary: false }
}

/** Local time of day with milliseconds, for message lists. */
export function clock (t: number): string {
  const d = new Date(t)
  return d.toLocaleTimeString(undefined, { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0')
}
