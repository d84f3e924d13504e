/**
 * The link a bridge sends through, and the transport the cluster part offers RPC bridges:
 * interfaces of the core, because the cluster part implements one (cluster/bridge-transport.ts)
 * and the svc_bridge_mqtt plugin (plugins/bridge_mqtt/) uses both, and neither may import the
 * other. The cluster part offers its transport as `node.cluster.bridgeTransport` (`ClusterPart`).
 */
import type { PublishMessage } from './mqtt/core.js'

/** A connection to the remote that a bridge sends through. */
export interface BridgeLink {
  /** Connects; rejects when the remote cannot be reached (the bridge retries). */
  connect: () => Promise<void>
  /**
   * Sends a batch; resolves once the remote acknowledged every QoS 1/2 message of it (and the
   * QoS 0 ones are written); rejects when the link drops first (the batch goes back to the buffer).
   */
  send: (batch: readonly PublishMessage[]) => Promise<void>
  /** Called when the link drops after a successful connect. */
  onDown: (listener: (err: Error) => void) => void
  close: () => Promise<void>
  /**
   * MQTT links only (optional): changes the remote subscriptions while connected (a link
   * subscribes to the bridge's current list by itself at each connect).
   */
  subscribe?: (subscriptions: ReadonlyArray<{ topic: string, qos: 0 | 1 | 2 }>) => Promise<void>
  unsubscribe?: (topics: readonly string[]) => Promise<void>
}

/**
 * How an RPC bridge reaches another Starling cluster's node (`address = name@host`): the
 * cluster part implements it over its transport, authenticated by `node.cookie`; the
 * composition root gives it to the bridges. Absent on a node without the cluster part.
 */
export interface RpcBridgeTransport {
  /** A link to node `address` that delivers batches there as local publishes. */
  link: (address: string) => BridgeLink
}
