/**
 * The bridges' shared types (issue 15, docs/bridges.md): what a bridge is configured with,
 * what it reports, the manager the `bridges` commands, the API and `$SYS` read, and the link
 * a bridge sends through (an MQTT connection to a remote broker, or the cluster transport to
 * another Starling cluster's node for an RPC bridge).
 *
 * A bridge forwards the messages of its `forwards` topics to the remote, through its replay
 * queue (plugins/kit/replayq/replayq.ts: memory-only, or segment files under `queue.replayq_dir`), and
 * (MQTT bridge) publishes the messages of its remote `subscriptions` locally under its
 * mountpoint. Invariant: a message taken from the queue is acknowledged to the queue only once
 * the remote acknowledged it (QoS 1/2) or it was written to the link (QoS 0), so a link that
 * drops loses nothing acknowledged to a publisher.
 */
import type { PublishMessage } from '../../node/mqtt/core.js'

export type { BridgeLink, RpcBridgeTransport } from '../../node/bridge-transport.js'

/** `proto_ver` of an MQTT bridge. */
export type BridgeProtoVer = 'mqttv3' | 'mqttv4' | 'mqttv5'

/** A bridge's settings: the spec's `bridge.mqtt.<name>.*` keys, parsed. */
export interface BridgeConfig {
  name: string
  /** `host:port` (MQTT bridge) or a node name `name@host` (RPC bridge). */
  address: string
  kind: 'mqtt' | 'rpc'
  protoVer: BridgeProtoVer
  clientId: string
  cleanStart: boolean
  username?: string
  password?: string
  keepaliveMs: number
  /** EMQ X 4.4's `bridge_mode`: v3/v4 CONNECT with the bridge bit (loop prevention on brokers that know it). */
  bridgeMode: boolean
  ssl: {
    enabled: boolean
    cacertfile?: string
    certfile?: string
    keyfile?: string
    ciphers?: string
    pskCiphers?: string
    tlsVersions?: string[]
    verify?: boolean
    serverNameIndication?: string
  }
  reconnectIntervalMs: number
  retryIntervalMs: number
  /** In-flight batches to the remote (`max_inflight_batches`). */
  maxInflightBatches: number
  /** Prefix of forwarded topics, `${node}` replaced by the node name. */
  mountpoint: string
  /**
   * Prefix of the topics brought in from `subscriptions` (EMQ X 4.4's `receive_mountpoint`,
   * `${node}` replaced); absent or empty: published locally as they come. Optional (added).
   */
  receiveMountpoint?: string
  /** Local topic filters whose messages are forwarded (`forwards`). */
  forwards: string[]
  /** Remote filters subscribed to (`subscription.<n>.topic/qos`, MQTT bridge). */
  subscriptions: Array<{ topic: string, qos: 0 | 1 | 2 }>
  queue: {
    batchCountLimit: number
    batchBytesLimit: number
    /** Absent: memory-only buffer. */
    replayqDir?: string
    replayqSegBytes: number
    /** Cap of the buffer in bytes (0: none). */
    maxTotalBytes: number
  }
  /** EMQ X 4.4's `start_type`: `auto` starts with the plugin, `manual` waits for `bridges start`. */
  startType: 'auto' | 'manual'
}

/** A bridge's state, as `bridges list` and the API show it. */
export type BridgeStatus = 'connected' | 'connecting' | 'stopped'

/** What `bridges list`, `GET /api/v3/nodes/:node/bridges` and `$SYS` report of one bridge. */
export interface BridgeInfo {
  name: string
  status: BridgeStatus
  address: string
  kind: 'mqtt' | 'rpc'
  forwards: string[]
  subscriptions: Array<{ topic: string, qos: number }>
  /** Messages sent to and acknowledged by the remote. */
  sent: number
  /** Messages received from the remote's subscriptions and published locally. */
  received: number
  /** Messages in the buffer (queued or in flight). */
  buffered: number
  /** Messages dropped (memory buffer full for QoS 0, the size cap, a full disk). */
  dropped: number
}

/** One bridge at run time. Changes of forwards and subscriptions are kept across restarts. */
export interface Bridge {
  readonly name: string
  info: () => BridgeInfo
  /** Connects (and keeps reconnecting every `reconnect_interval`); `false` when it already runs. */
  start: () => Promise<boolean>
  /** Disconnects; the buffer keeps what it holds. `false` when it was not running. */
  stop: () => Promise<boolean>
  addForward: (topic: string) => Promise<void>
  delForward: (topic: string) => Promise<void>
  addSubscription: (topic: string, qos: 0 | 1 | 2) => Promise<void>
  delSubscription: (topic: string) => Promise<void>
  /**
   * Queues one message for the remote as a forward's message would be (the mountpoint is
   * prefixed, the QoS kept); resolves once it is in the buffer (durable with a disk buffer),
   * rejects when the buffer refused it. The rule engine's `data_to_mqtt_broker` action sends
   * through this (plugins/bridge_mqtt/actions.ts), on a bridge created with no forwards. Optional
   * only so that the contract stays compatible; the bridge runtime implements it.
   */
  forward?: (message: PublishMessage) => Promise<void>
  /** Stops and closes the buffer (plugin unload, node stop). */
  close: () => Promise<void>
}

/** The bridges of a node, by name (the `bridges` commands, the API). */
export interface BridgeManager {
  list: () => BridgeInfo[]
  /** Throws a NotFoundError-kind error naming the known bridges. */
  get: (name: string) => Bridge
}

/**
 * What a bridge gives the link it creates (createBridge's link factory): where messages of
 * the remote subscriptions go, and the subscriptions to make at each connect.
 */
export interface BridgeLinkHooks {
  /** Publishes a message from the remote locally; resolves once routed (then the link acknowledges it). */
  receive: (message: PublishMessage) => Promise<void>
  /** The bridge's subscriptions now. */
  subscriptions: () => Array<{ topic: string, qos: 0 | 1 | 2 }>
}
