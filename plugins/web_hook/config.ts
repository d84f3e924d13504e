/**
 * The keys of `etc/plugins/svc_web_hook.conf` (EMQ X 4.4's emqx_web_hook: `web.hook.*`) and
 * what they are read into when the plugin loads: the rules (`web.hook.rule.<event>.<n>`)
 * and the web_hook resource config the pool is opened with (rules/actions/web-hook-pool.ts).
 */
import { resolve } from 'node:path'
import { ConfigError, type ConfigSchema } from '../../node/config/index.js'
import type { BusEventName } from '../../node/hooks.js'

/**
 * The events a rule may name, as EMQ X 4.4 lists them (`web.hook.rule.<event>.<n>`), with the
 * hooks-bus event each listens to. `message.dropped` is Starling's: EMQ X 4.4's plugin has none.
 */
export const WEB_HOOK_EVENTS = {
  'client.connect': 'client.connect',
  'client.connack': 'client.connack',
  'client.connected': 'client.connected',
  'client.disconnected': 'client.disconnected',
  'client.subscribe': 'client.subscribe',
  'client.unsubscribe': 'client.unsubscribe',
  'session.subscribed': 'session.subscribed',
  'session.unsubscribed': 'session.unsubscribed',
  'session.terminated': 'session.terminated',
  'message.publish': 'message.publish',
  'message.delivered': 'message.deliver',
  'message.acked': 'message.acked',
  'message.dropped': 'message.dropped'
} as const satisfies Record<string, BusEventName>

/** An event a rule may name. */
export type WebHookEvent = keyof typeof WEB_HOOK_EVENTS

/** The events whose rules take a `topic` filter: the message's topic, or the subscription's filter. */
const FILTERED = new Set<WebHookEvent>([
  'client.subscribe', 'client.unsubscribe', 'session.subscribed', 'session.unsubscribed',
  'message.publish', 'message.delivered', 'message.acked', 'message.dropped'
])

/** The rule key of `event`, with `<name>` for the rule's number. */
const ruleKey = (event: string): string => `web.hook.rule.${event}.<name>`

/** The `action` a rule of `event` must name (EMQ X's hook callback): `on_client_connect`. */
export const actionOf = (event: WebHookEvent): string => 'on_' + event.replace('.', '_')

function ruleKeys (): ConfigSchema {
  const keys: Record<string, ConfigSchema[string]> = {}
  for (const event of Object.keys(WEB_HOOK_EVENTS) as WebHookEvent[]) {
    keys[ruleKey(event)] = {
      type: 'string', live: false,
      doc: `Forwards ${event} events: {"action": "${actionOf(event)}"${FILTERED.has(event) ? ', "topic": "<filter>"' : ''}}; <name> numbers the rules of the event (1, 2 ...).` +
        (FILTERED.has(event) ? ' With a topic, only events whose topic (a subscription\'s filter, for subscription events) matches the filter are sent.' : '')
    }
  }
  return keys
}

/** Keys of `etc/plugins/svc_web_hook.conf`, EMQ X 4.4's names and defaults. */
export const WEB_HOOK_CONFIG_SCHEMA: ConfigSchema = {
  'web.hook.url': {
    type: 'string', default: 'http://127.0.0.1:80', live: false, secretParts: 'url',
    doc: 'URL every event is POSTed to (http:// or https://).'
  },
  'web.hook.headers.<name>': {
    type: 'string', live: false, secretParts: 'header',
    doc: 'A header of every request: <name> is the header name. content-type defaults to application/json.'
  },
  'web.hook.body.encoding_of_payload_field': {
    type: 'enum', values: ['plain', 'base64', 'base62'], default: 'plain', live: false,
    doc: 'How the payload field of message events is written: plain (the text; bytes that are not UTF-8 are replaced), base64, or base62 (EMQ X\'s emqx_base62).'
  },
  'web.hook.ssl.cacertfile': {
    type: 'string', default: '', allowEmpty: true, live: false,
    doc: 'PEM CA certificates an https URL\'s server is checked against (with ssl.verify); empty: the system\'s CAs. Relative paths are relative to the installation root.'
  },
  'web.hook.ssl.certfile': {
    type: 'string', default: '', allowEmpty: true, live: false,
    doc: 'PEM client certificate sent to an https server that asks for one; empty: none.'
  },
  'web.hook.ssl.keyfile': {
    type: 'string', default: '', allowEmpty: true, live: false,
    doc: 'PEM private key of ssl.certfile.'
  },
  'web.hook.ssl.verify': {
    type: 'bool', default: 'false', live: false,
    doc: 'Check the https server\'s certificate and host name (EMQ X 4.4 default: false).'
  },
  'web.hook.ssl.server_name_indication': {
    type: 'string', default: '', allowEmpty: true, live: false,
    doc: 'TLS SNI host name, also checked against the certificate; empty: the URL\'s host; disable: send none.'
  },
  'web.hook.pool_size': {
    type: 'int', default: '32', min: 1, max: 1024, live: false,
    doc: 'Most connections to the URL\'s server.'
  },
  'web.hook.enable_pipelining': {
    type: 'bool', default: 'true', live: false,
    doc: 'Send several requests on one connection without waiting for the answers (HTTP/1.1 pipelining).'
  },
  'web.hook.connect_timeout': {
    type: 'duration', default: '5s', min: 1, live: false,
    doc: 'Longest wait for a connection (TCP and TLS) to the server.'
  },
  'web.hook.request_timeout': {
    type: 'duration', default: '5s', min: 1, live: false,
    doc: 'Longest wait for an answer, time queued for a connection included; past it the request counts as failed.'
  },
  ...ruleKeys()
}

/** One `web.hook.rule.<event>.<n>`: the event and its topic filter. */
export interface WebHookRule {
  event: WebHookEvent
  /** The rule's number as written (`1`). */
  name: string
  /** Only events whose topic matches; undefined: every event. */
  topic: string | undefined
}

/**
 * The rules of a loaded config, in the file's event order and by number. A rule that is not
 * JSON, names another action than its event's, or has a topic where the event takes none is
 * a ConfigError naming the key.
 */
export function readRules (config: Record<string, any>): WebHookRule[] {
  const rules: WebHookRule[] = []
  for (const event of Object.keys(WEB_HOOK_EVENTS) as WebHookEvent[]) {
    const byName = (config[ruleKey(event)] ?? {}) as Record<string, string>
    for (const name of Object.keys(byName).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))) {
      const key = `web.hook.rule.${event}.${name}`
      const text = byName[name]
      let spec: unknown
      try {
        spec = JSON.parse(text)
      } catch {
        throw ConfigError.badValue(key, text, `a JSON object such as {"action": "${actionOf(event)}"}`, 'plugin config')
      }
      if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw ConfigError.badValue(key, text, `a JSON object such as {"action": "${actionOf(event)}"}`, 'plugin config')
      const { action, topic } = spec as { action?: unknown, topic?: unknown }
      if (action !== actionOf(event)) throw ConfigError.badValue(key, text, `"action": "${actionOf(event)}" (the action of ${event})`, 'plugin config')
      if (topic !== undefined && (typeof topic !== 'string' || topic === '')) throw ConfigError.badValue(key, text, 'a "topic" that is a topic filter such as a/# (or no topic)', 'plugin config')
      if (topic !== undefined && !FILTERED.has(event)) throw ConfigError.badValue(key, text, `no "topic": ${event} has none to filter on`, 'plugin config')
      rules.push({ event, name, topic: topic as string | undefined })
    }
  }
  return rules
}

/**
 * The web_hook resource config (rules/actions/web-hook-pool.ts, `webHookSettings`) of the
 * plugin's keys, TLS file paths resolved against `root`; content-type defaults to JSON.
 */
export function resourceConfigOf (config: Record<string, any>, root: string): Record<string, unknown> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  for (const [name, value] of Object.entries((config['web.hook.headers.<name>'] ?? {}) as Record<string, string>)) {
    headers[name.toLowerCase()] = value
  }
  const file = (key: string): string => {
    const path = String(config[`web.hook.ssl.${key}`] ?? '')
    return path === '' ? '' : resolve(root, path)
  }
  return {
    url: config['web.hook.url'],
    headers,
    method: 'POST',
    pool_size: config['web.hook.pool_size'],
    enable_pipelining: config['web.hook.enable_pipelining'],
    connect_timeout: config['web.hook.connect_timeout'],
    request_timeout: config['web.hook.request_timeout'],
    cacertfile: file('cacertfile'),
    certfile: file('certfile'),
    keyfile: file('keyfile'),
    verify: config['web.hook.ssl.verify'],
    server_name_indication: config['web.hook.ssl.server_name_indication']
  }
}
