/**
 * The link of an MQTT bridge: one mqtt.js client connection to the remote broker, made anew
 * at each `connect` (mqtt.js' own reconnect is off: the bridge decides when to reconnect and
 * sends again what the remote had not acknowledged, from its replay queue).
 *
 * - `proto_ver`: mqttv3 is MQTT 3.1 (`MQIsdp`, level 3), mqttv4 3.1.1, mqttv5 5.0;
 *   `bridge_mode` sets the bridge bit (level | 0x80) on mqttv3/mqttv4, as Mosquitto's
 *   `try_private` and EMQ X's `bridge_mode` do (ignored on mqttv5, which has No Local).
 * - Subscriptions are made at each connect; on mqttv5 with No Local (the remote never sends
 *   back what this bridge published there) and Retain As Published.
 * - `send(batch)` publishes each message with its QoS and retain flag (MQTT 5 properties
 *   kept on mqttv5, except those that belong to one hop: topic alias, subscription ids) and
 *   resolves once every QoS 1/2 message is acknowledged (PUBACK / PUBCOMP) and the QoS 0 ones
 *   are written. When the connection drops, every unfinished send rejects at once.
 * - A message from a subscription is handed to the bridge; a QoS 1/2 one is acknowledged to
 *   the remote only once the bridge has published it locally.
 */
import { isIP } from 'node:net'
import type { IClientOptions, IClientPublishOptions, IPublishPacket, MqttClient } from 'mqtt'
import type { Logger } from '../../node/logger.js'
import { buildTlsOptions } from '../../node/tls-options.js'
import type { PublishMessage } from '../../node/mqtt/core.js'
import { hostPort } from './config.js'
import type { BridgeConfig, BridgeLink, BridgeLinkHooks } from './types.js'

/** MQTT 5 PUBLISH properties that travel to the next broker (the others belong to one hop). */
const KEPT_PROPERTIES = ['payloadFormatIndicator', 'messageExpiryInterval', 'contentType', 'responseTopic', 'correlationData', 'userProperties'] as const

/** The properties of `props` that a forwarded or imported message keeps, or undefined. */
export function keptProperties (props: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (props === undefined || props === null) return undefined
  let out: Record<string, unknown> | undefined
  for (const key of KEPT_PROPERTIES) {
    if (props[key] === undefined) continue
    out ??= {}
    out[key] = props[key]
  }
  return out
}

/** mqtt.js options for a bridge's connection (exported for tests). */
export function mqttClientOptions (config: BridgeConfig): IClientOptions {
  const { host, port } = hostPort(config.address)
  const level = config.protoVer === 'mqttv3' ? 3 : config.protoVer === 'mqttv4' ? 4 : 5
  const opts: IClientOptions = {
    host,
    port,
    protocol: config.ssl.enabled ? 'mqtts' : 'mqtt',
    protocolId: level === 3 ? 'MQIsdp' : 'MQTT',
    protocolVersion: level as IClientOptions['protocolVersion'],
    clientId: config.clientId,
    clean: config.cleanStart,
    keepalive: Math.round(config.keepaliveMs / 1000),
    reconnectPeriod: 0,
    connectTimeout: config.retryIntervalMs,
    resubscribe: false,
    queueQoSZero: false
  }
  if (config.username !== undefined) opts.username = config.username
  if (config.password !== undefined) opts.password = config.password
  if (level === 5 && !config.cleanStart) opts.properties = { sessionExpiryInterval: 0xFFFFFFFF }
  if (config.ssl.enabled) {
    const ssl = config.ssl
    // the one TLS builder (node/tls-options.ts); without server_name_indication the host is
    // sent as SNI (not an IP address: RFC 6066) and Node checks the certificate against it
    Object.assign(opts, buildTlsOptions({
      cacertfile: ssl.cacertfile,
      certfile: ssl.certfile,
      keyfile: ssl.keyfile,
      verify: ssl.verify !== false,
      serverName: ssl.serverNameIndication ?? (isIP(host) === 0 ? host : undefined),
      versions: ssl.tlsVersions
    }, { rule: 'sni' }))
    if (ssl.ciphers !== undefined) (opts as Record<string, unknown>).ciphers = ssl.ciphers.split(/[,:]/).map((c) => c.trim()).filter((c) => c !== '').join(':')
  }
  return opts
}

/**
 * Makes `client`'s CONNECT carry the bridge bit (protocol level | 0x80). mqtt-packet writes it
 * for a CONNECT packet with `bridgeMode: true`, but mqtt.js builds its CONNECT from a fixed
 * list of options that leaves it out: the packet gets the flag on its way to the writer.
 */
function withBridgeBit (client: MqttClient): void {
  const target = client as unknown as { _writePacket: (packet: Record<string, unknown>, cb?: unknown) => void }
  const write = target._writePacket.bind(client)
  target._writePacket = (packet, cb) => {
    write(packet.cmd === 'connect' ? { ...packet, bridgeMode: true } : packet, cb)
  }
}

/** Options of {@link createMqttLink}. */
export interface MqttLinkOptions {
  logger: Logger
}

/** A {@link BridgeLink} to the remote MQTT broker of `config`. */
export function createMqttLink (config: BridgeConfig, hooks: BridgeLinkHooks, opts: MqttLinkOptions): BridgeLink {
  const v5 = config.protoVer === 'mqttv5'
  const downListeners: Array<(err: Error) => void> = []
  /** The current client, null while closed. */
  let client: MqttClient | null = null
  /** Rejecters of the unfinished sends of the current client. */
  const pending = new Set<(err: Error) => void>()

  const failPending = (err: Error): void => {
    const rejecters = [...pending]
    pending.clear()
    for (const reject of rejecters) reject(err)
  }

  const subscriptionOptions = (qos: 0 | 1 | 2): { qos: 0 | 1 | 2, nl?: boolean, rap?: boolean } =>
    v5 ? { qos, nl: true, rap: true } : { qos }

  const subscribeWith = async (c: MqttClient, subs: ReadonlyArray<{ topic: string, qos: 0 | 1 | 2 }>): Promise<void> => {
    if (subs.length === 0) return
    const map: Record<string, { qos: 0 | 1 | 2, nl?: boolean, rap?: boolean }> = {}
    for (const s of subs) map[s.topic] = subscriptionOptions(s.qos)
    const granted = await c.subscribeAsync(map)
    const refused = granted.filter((g) => g.qos === 128 || g.qos > 2)
    if (refused.length > 0) opts.logger.warn({ bridge: config.name, refused: refused.map((g) => g.topic) }, 'the remote broker refused subscriptions')
  }

  const closeClient = async (c: MqttClient): Promise<void> => {
    await new Promise<void>((resolve) => {
      c.end(true, {}, () => resolve())
    })
  }

  return {
    async connect () {
      if (client !== null) {
        const old = client
        client = null
        failPending(new Error('the link reconnects'))
        await closeClient(old)
      }
      // mqtt.js is loaded by a node's first bridge connection, not by every node
      const { default: mqtt } = await import('mqtt')
      const c = mqtt.connect({ ...mqttClientOptions(config), manualConnect: true })
      if (config.bridgeMode && !v5) withBridgeBit(c)
      c.connect()
      // a QoS 1/2 message from a subscription is acknowledged once published locally
      c.handleMessage = (packet: IPublishPacket, callback: (err?: Error) => void) => {
        const message: PublishMessage = {
          cmd: 'publish',
          topic: packet.topic,
          payload: Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload),
          qos: packet.qos,
          retain: packet.retain,
          dup: false
        }
        const props = v5 ? keptProperties(packet.properties as Record<string, unknown> | undefined) : undefined
        if (props !== undefined) message.properties = props
        hooks.receive(message).then(() => callback(), (err: Error) => {
          opts.logger.warn({ bridge: config.name, topic: packet.topic, err }, 'a message from the remote broker could not be published locally')
          callback()
        })
      }
      try {
        await new Promise<void>((resolve, reject) => {
          const onError = (err: Error): void => { cleanup(); reject(err) }
          const onClose = (): void => { cleanup(); reject(new Error(`connection to ${config.address} closed before CONNACK`)) }
          const onConnect = (): void => { cleanup(); resolve() }
          const cleanup = (): void => {
            c.off('error', onError)
            c.off('close', onClose)
            c.off('connect', onConnect)
          }
          c.on('error', onError)
          c.on('close', onClose)
          c.on('connect', onConnect)
        })
        await subscribeWith(c, hooks.subscriptions())
      } catch (err) {
        await closeClient(c)
        throw err
      }
      c.on('error', (err) => { opts.logger.debug({ bridge: config.name, err }, 'bridge connection error') })
      c.on('close', () => {
        if (client !== c) return
        client = null
        const err = new Error(`connection to ${config.address} lost`)
        failPending(err)
        for (const listener of downListeners) listener(err)
      })
      client = c
    },

    async send (batch) {
      const c = client
      if (c === null || !c.connected) throw new Error(`not connected to ${config.address}`)
      await new Promise<void>((resolve, reject) => {
        let left = batch.length
        let failed = false
        const fail = (err: Error): void => {
          if (failed) return
          failed = true
          pending.delete(fail)
          reject(err)
        }
        pending.add(fail)
        if (left === 0) { pending.delete(fail); resolve(); return }
        for (const m of batch) {
          const options: IClientPublishOptions = { qos: (m.qos > 2 ? 2 : m.qos) as 0 | 1 | 2, retain: m.retain }
          if (v5) {
            const props = keptProperties(m.properties)
            if (props !== undefined) options.properties = props
          }
          c.publish(m.topic, m.payload, options, (err) => {
            if (failed) return
            if (err != null) { fail(err); return }
            if (--left === 0) {
              pending.delete(fail)
              resolve()
            }
          })
        }
      })
    },

    onDown (listener) { downListeners.push(listener) },

    async subscribe (subs) {
      const c = client
      if (c === null || !c.connected) return // made at the next connect
      await subscribeWith(c, subs)
    },

    async unsubscribe (topics) {
      const c = client
      if (c === null || !c.connected || topics.length === 0) return
      await c.unsubscribeAsync([...topics])
    },

    async close () {
      const c = client
      client = null
      failPending(new Error('the link is closed'))
      if (c !== null) await closeClient(c)
    }
  }
}
