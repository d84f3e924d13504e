/**
 * The `svc_bridge_mqtt` plugin's keys (`etc/plugins/svc_bridge_mqtt.conf`, docs/bridges.md):
 * `bridge.mqtt.<name>.<key>` as the spec's "Bridges (configuration)" table names them (EMQ X
 * 3.4's `client_id`, `mountpoint`, `max_inflight_batches`, `queue.batch_*_limit`), plus EMQ X
 * 4.4's `start_type`, `bridge_mode`, `receive_mountpoint`, `verify`, `server_name_indication`
 * and `queue.max_total_size`; defaults are EMQ X 4.4's sample file's unless the spec says
 * otherwise. {@link parseBridgeConfigs} turns the loaded keys into one {@link BridgeConfig}
 * per name, with a ConfigError naming the key for what the value types cannot check.
 */
import { isAbsolute, resolve } from 'node:path'
import { ConfigError, type ConfigSchema } from '../../node/config/index.js'
import type { BridgeConfig, BridgeProtoVer } from './types.js'

/** The plugin's name and the file its keys live in. */
export const BRIDGE_PLUGIN = 'svc_bridge_mqtt'
export const BRIDGE_CONF_FILE = `etc/plugins/${BRIDGE_PLUGIN}.conf`

/**
 * `subscription.<n>.topic|qos` slots per bridge. The plugin key loader supports one
 * user-chosen segment (`<name>`), so `<n>` is a number from 1 to this (EMQ X: any number);
 * `bridges add-subscription` adds more at run time.
 */
export const SUBSCRIPTION_SLOTS = 8

const P = 'bridge.mqtt.<name>.'

const subscriptionKeys: Record<string, ConfigSchema[string]> = {}
for (let n = 1; n <= SUBSCRIPTION_SLOTS; n++) {
  subscriptionKeys[`${P}subscription.${n}.topic`] = {
    type: 'string', allowEmpty: true, default: '', live: false,
    doc: `Remote topic filter ${n} subscribed to (MQTT bridge); its messages are published locally. Empty: none.`
  }
  subscriptionKeys[`${P}subscription.${n}.qos`] = {
    type: 'int', min: 0, max: 2, default: '1', live: false, doc: `QoS of subscription ${n}.`
  }
}

/** Keys of `etc/plugins/svc_bridge_mqtt.conf`. */
export const BRIDGE_CONFIG_SCHEMA = {
  [`${P}address`]: {
    type: 'string', live: false,
    doc: '`host:port` of the remote broker (MQTT bridge), or a node name `name@host` (RPC bridge to another Starling cluster).'
  },
  [`${P}proto_ver`]: {
    type: 'enum', values: ['mqttv3', 'mqttv4', 'mqttv5'], default: 'mqttv4', live: false,
    doc: 'MQTT version of the connection: mqttv3 (3.1), mqttv4 (3.1.1) or mqttv5.'
  },
  [`${P}start_type`]: {
    type: 'enum', values: ['auto', 'manual'], default: 'auto', live: false,
    doc: 'auto: the bridge starts when the plugin loads; manual: it waits for `bridges start <name>`.'
  },
  [`${P}bridge_mode`]: {
    type: 'bool', default: 'off', live: false,
    doc: 'mqttv3/mqttv4: connect with the bridge bit (0x80 in the protocol level), so a broker that knows it (Mosquitto, Starling) treats the connection as a bridge (loop prevention).'
  },
  [`${P}client_id`]: {
    type: 'string', allowEmpty: true, default: '', live: false,
    doc: 'Client id on the remote broker. Empty: bridge_<name>.'
  },
  [`${P}clean_start`]: { type: 'bool', default: 'on', live: false, doc: 'Clean start (clean session) on the remote broker.' },
  [`${P}username`]: { type: 'string', allowEmpty: true, default: '', live: false, doc: 'User name on the remote broker. Empty: none.' },
  [`${P}password`]: { type: 'string', allowEmpty: true, default: '', secret: true, live: false, doc: 'Password on the remote broker. Empty: none.' },
  [`${P}keepalive`]: { type: 'duration', min: 0, default: '60s', live: false, doc: 'Keep alive of the connection to the remote broker.' },
  [`${P}forwards`]: {
    type: 'string', allowEmpty: true, default: '', live: false,
    doc: 'Comma-separated local topic filters whose messages are forwarded to the remote broker.'
  },
  [`${P}mountpoint`]: {
    type: 'string', allowEmpty: true, default: '', live: false,
    doc: 'Prefix added to the topic of a forwarded message; ${node} is replaced by the node name. Empty: none.'
  },
  [`${P}receive_mountpoint`]: {
    type: 'string', allowEmpty: true, default: '', live: false,
    doc: 'Prefix added to the topic of a message brought in from a subscription; ${node} is replaced by the node name. Empty: published as it comes.'
  },
  ...subscriptionKeys,
  [`${P}ssl`]: { type: 'bool', default: 'off', live: false, doc: 'TLS to the remote broker.' },
  [`${P}cacertfile`]: { type: 'string', allowEmpty: true, default: '', live: false, doc: 'PEM CA certificates to verify the remote broker with. Empty: the system\'s.' },
  [`${P}certfile`]: { type: 'string', allowEmpty: true, default: '', live: false, doc: 'PEM client certificate. Empty: none.' },
  [`${P}keyfile`]: { type: 'string', allowEmpty: true, default: '', live: false, doc: 'PEM key of the client certificate. Empty: none.' },
  [`${P}ciphers`]: { type: 'string', allowEmpty: true, default: '', live: false, doc: 'OpenSSL cipher list (comma- or colon-separated). Empty: Node.js defaults.' },
  [`${P}psk_ciphers`]: {
    type: 'string', allowEmpty: true, default: '', live: false,
    doc: 'PSK cipher suites (accepted for EMQ X compatibility; a bridge has no PSK identity, so they are not used).'
  },
  [`${P}tls_versions`]: {
    type: 'string', default: 'tlsv1.3,tlsv1.2', live: false,
    doc: 'TLS versions offered: a comma-separated list of tlsv1.3, tlsv1.2, tlsv1.1, tlsv1.'
  },
  [`${P}verify`]: {
    type: 'enum', values: ['verify_peer', 'verify_none'], default: 'verify_peer', live: false,
    doc: 'verify_peer: the remote broker\'s certificate must be valid for its name; verify_none: any certificate.'
  },
  [`${P}server_name_indication`]: {
    type: 'string', allowEmpty: true, default: '', live: false,
    doc: 'Name sent in SNI and checked in the certificate. Empty: the host of address; disable: no SNI.'
  },
  [`${P}reconnect_interval`]: { type: 'duration', min: 1, default: '30s', live: false, doc: 'Wait between connection attempts to the remote broker.' },
  [`${P}retry_interval`]: {
    type: 'duration', min: 1, default: '20s', live: false,
    doc: 'How long a connection attempt may take (CONNECT to CONNACK). Unacknowledged QoS 1/2 messages are sent again after a reconnect, as MQTT 3.1.1 and 5 require.'
  },
  [`${P}max_inflight_batches`]: { type: 'int', min: 1, default: '32', live: false, doc: 'Batches sent to the remote broker and not yet acknowledged.' },
  [`${P}queue.batch_count_limit`]: { type: 'int', min: 1, default: '32', live: false, doc: 'Most messages in one batch.' },
  [`${P}queue.batch_bytes_limit`]: { type: 'size', min: 1, default: '1MB', live: false, doc: 'Most bytes in one batch (a larger message goes alone).' },
  [`${P}queue.replayq_dir`]: {
    type: 'string', allowEmpty: true, default: '', live: false,
    doc: 'Directory of the disk buffer (relative: to the install root). Empty: the buffer is in memory only.'
  },
  [`${P}queue.replayq_seg_bytes`]: { type: 'size', min: 1024, default: '10MB', live: false, doc: 'Largest buffer file; a new one is started past it.' },
  [`${P}queue.max_total_size`]: {
    type: 'size', min: 0, default: '5GB', live: false,
    doc: 'Cap of the buffer (memory or disk): past it QoS 0 messages are refused and the oldest others dropped, with an alarm. 0: no cap.'
  }
} as const satisfies ConfigSchema

/** What {@link parseBridgeConfigs} needs besides the keys. */
export interface ParseBridgeOptions {
  /** The directory a relative `queue.replayq_dir` is resolved against (the install root). */
  root: string
  /** Where the keys came from, for errors (default the plugin's file). */
  source?: string
}

const TLS_VERSIONS = new Set(['tlsv1.3', 'tlsv1.2', 'tlsv1.1', 'tlsv1'])
/** A node name of an RPC bridge: `name@host`. */
const NODE_NAME = /^[A-Za-z0-9_.-]+@[A-Za-z0-9_.:-]+$/

/**
 * The bridges of the loaded keys (`config['bridge.mqtt.<name>.address'].aws`, ...), sorted
 * by name. Throws a ConfigError naming the key for a bad address, an unknown TLS version,
 * a subscription QoS without its topic, or two bridges sharing a buffer directory.
 */
export function parseBridgeConfigs (config: Readonly<Record<string, any>>, opts: ParseBridgeOptions): BridgeConfig[] {
  const source = opts.source ?? BRIDGE_CONF_FILE
  const addresses = (config[`${P}address`] ?? {}) as Record<string, string>
  const names = Object.keys(addresses).sort()
  const bridges = names.map((name) => parseOne(name, (key) => (config[P + key] as Record<string, any>)[name], opts.root, source))
  const dirs = new Map<string, string>()
  for (const b of bridges) {
    const dir = b.queue.replayqDir
    if (dir === undefined) continue
    const other = dirs.get(dir)
    if (other !== undefined) {
      throw new ConfigError(`bridges ${other} and ${b.name} share the buffer directory ${dir}: give each its own queue.replayq_dir`,
        { source, key: `bridge.mqtt.${b.name}.queue.replayq_dir`, value: dir })
    }
    dirs.set(dir, b.name)
  }
  return bridges
}

function parseOne (name: string, get: (key: string) => any, root: string, source: string): BridgeConfig {
  const keyOf = (key: string): string => `bridge.mqtt.${name}.${key}`
  const fail = (key: string, detail: string, value?: string): never => {
    throw new ConfigError(`${keyOf(key)}: ${detail}`, { source, key: keyOf(key), value })
  }
  const address = String(get('address')).trim()
  const kind = parseAddress(address, (detail) => fail('address', detail, address))
  const tlsVersions = splitList(get('tls_versions')).map((v) => v.toLowerCase())
  for (const v of tlsVersions) {
    if (!TLS_VERSIONS.has(v)) fail('tls_versions', `unknown TLS version ${JSON.stringify(v)}: expected tlsv1.3, tlsv1.2, tlsv1.1 or tlsv1`, get('tls_versions'))
  }
  const subscriptions: BridgeConfig['subscriptions'] = []
  for (let n = 1; n <= SUBSCRIPTION_SLOTS; n++) {
    const topic = String(get(`subscription.${n}.topic`)).trim()
    if (topic === '') continue
    if (kind === 'rpc') fail(`subscription.${n}.topic`, 'an RPC bridge is forward-only: it has no subscriptions', topic)
    if (subscriptions.some((s) => s.topic === topic)) continue
    subscriptions.push({ topic, qos: get(`subscription.${n}.qos`) as 0 | 1 | 2 })
  }
  const forwards = [...new Set(splitList(get('forwards')))]
  for (const f of forwards) checkFilter(f, (detail) => fail('forwards', detail, get('forwards')))
  for (const s of subscriptions) checkFilter(s.topic, (detail) => fail('subscription', detail, s.topic))
  const dir = String(get('queue.replayq_dir')).trim()
  const clientId = String(get('client_id')).trim()
  const sni = String(get('server_name_indication')).trim()
  const opt = (key: string): string | undefined => {
    const v = String(get(key)).trim()
    return v === '' ? undefined : v
  }
  return {
    name,
    address,
    kind,
    protoVer: get('proto_ver') as BridgeProtoVer,
    clientId: clientId === '' ? `bridge_${name}` : clientId,
    cleanStart: get('clean_start') as boolean,
    username: opt('username'),
    password: opt('password'),
    keepaliveMs: get('keepalive') as number,
    bridgeMode: get('bridge_mode') as boolean,
    ssl: {
      enabled: get('ssl') as boolean,
      cacertfile: resolveOpt(opt('cacertfile'), root),
      certfile: resolveOpt(opt('certfile'), root),
      keyfile: resolveOpt(opt('keyfile'), root),
      ciphers: opt('ciphers'),
      pskCiphers: opt('psk_ciphers'),
      tlsVersions,
      verify: get('verify') === 'verify_peer',
      serverNameIndication: sni === '' ? undefined : sni
    },
    reconnectIntervalMs: get('reconnect_interval') as number,
    retryIntervalMs: get('retry_interval') as number,
    maxInflightBatches: get('max_inflight_batches') as number,
    mountpoint: String(get('mountpoint')),
    receiveMountpoint: String(get('receive_mountpoint')),
    forwards,
    subscriptions,
    queue: {
      batchCountLimit: get('queue.batch_count_limit') as number,
      batchBytesLimit: get('queue.batch_bytes_limit') as number,
      replayqDir: dir === '' ? undefined : resolve(root, dir),
      replayqSegBytes: get('queue.replayq_seg_bytes') as number,
      maxTotalBytes: get('queue.max_total_size') as number
    },
    startType: get('start_type') as 'auto' | 'manual'
  }
}

/** `mqtt` for `host:port`, `rpc` for `name@host`; `fail` otherwise. */
function parseAddress (address: string, fail: (detail: string) => never): 'mqtt' | 'rpc' {
  if (NODE_NAME.test(address)) return 'rpc'
  const m = /^(\[[0-9a-fA-F:]+\]|[^\s:@/]+):(\d+)$/.exec(address)
  if (m === null) return fail(`expected host:port (MQTT bridge) or a node name name@host (RPC bridge), got ${JSON.stringify(address)}`)
  const port = Number(m[2])
  if (port < 1 || port > 65535) return fail(`port ${port} is out of range 1-65535`)
  return 'mqtt'
}

/** `host` and `port` of an MQTT bridge's address (IPv6 in brackets). */
export function hostPort (address: string): { host: string, port: number } {
  const at = address.lastIndexOf(':')
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, '$1')
  return { host, port: Number(address.slice(at + 1)) }
}

function checkFilter (filter: string, fail: (detail: string) => never): void {
  const levels = filter.split('/')
  levels.forEach((level, i) => {
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1)) fail(`bad topic filter ${JSON.stringify(filter)}: # must be a whole last level`)
    if (level.includes('+') && level !== '+') fail(`bad topic filter ${JSON.stringify(filter)}: + must be a whole level`)
  })
}

/** Topic filter check for run-time changes: the reason a filter is refused, or undefined. */
export function badFilter (filter: string): string | undefined {
  if (filter === '') return 'an empty topic filter'
  try {
    checkFilter(filter, (detail) => { throw new Error(detail) })
    return undefined
  } catch (err) {
    return (err as Error).message
  }
}

function splitList (value: unknown): string[] {
  return String(value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')
}

function resolveOpt (path: string | undefined, root: string): string | undefined {
  if (path === undefined) return undefined
  return isAbsolute(path) ? path : resolve(root, path)
}

/** `${node}` in a mountpoint, replaced by the node name. */
export function expandMountpoint (mountpoint: string | undefined, nodeName: string): string {
  return (mountpoint ?? '').replaceAll('${node}', nodeName)
}
