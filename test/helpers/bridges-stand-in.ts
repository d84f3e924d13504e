/**
 * A stand-in for svc_bridge_mqtt's node operations over plain objects (no remote): what the
 * plugin registers while loaded, for the tests of the bridges' control surfaces (the CLI,
 * the API, `$SYS`) without a Mosquitto.
 */
import { BRIDGE_OPS } from '../../plugins/bridge_mqtt/ops-client.js'
import type { BridgeInfo } from '../../plugins/bridge_mqtt/types.js'
import { NotFoundError } from '../../node/errors.js'
import type { NodeRpc } from '../../node/rpc.js'

/** A bridge as `bridges.list` reports it: stopped, no forwards, nothing counted, unless `over` says. */
export function bridgeInfo (name: string, over: Partial<BridgeInfo> = {}): BridgeInfo {
  return { name, status: 'stopped', address: '127.0.0.1:1883', kind: 'mqtt', forwards: [], subscriptions: [], sent: 0, received: 0, buffered: 0, dropped: 0, ...over }
}

/**
 * Registers the `bridges.*` operations on `rpc` over `bridges` (changed in place), replacing
 * any registered under those names (the plugin's refusals). `started` is the status a start
 * gives.
 */
export function registerBridgesStandIn (rpc: NodeRpc, bridges: BridgeInfo[], started: BridgeInfo['status'] = 'connected'): void {
  const get = (name: string): BridgeInfo => {
    const b = bridges.find(x => x.name === name)
    if (b === undefined) throw new NotFoundError(`bridge ${name}`, 'bridges list shows the known ones')
    return b
  }
  for (const op of Object.values(BRIDGE_OPS)) rpc.unregister(op)
  rpc.register(BRIDGE_OPS.list, () => bridges.map(b => ({ ...b })))
  rpc.register(BRIDGE_OPS.start, ({ name }) => { const b = get(name); if (b.status !== 'stopped') return false; b.status = started; return true })
  rpc.register(BRIDGE_OPS.stop, ({ name }) => { const b = get(name); if (b.status === 'stopped') return false; b.status = 'stopped'; return true })
  rpc.register(BRIDGE_OPS.forwards, ({ name }) => get(name).forwards)
  rpc.register(BRIDGE_OPS.addForward, ({ name, topic }) => { const b = get(name); if (!b.forwards.includes(topic)) b.forwards.push(topic) })
  rpc.register(BRIDGE_OPS.delForward, ({ name, topic }) => { const b = get(name); b.forwards = b.forwards.filter(t => t !== topic) })
  rpc.register(BRIDGE_OPS.subscriptions, ({ name }) => get(name).subscriptions)
  rpc.register(BRIDGE_OPS.addSubscription, ({ name, topic, qos }) => { get(name).subscriptions.push({ topic, qos }) })
  rpc.register(BRIDGE_OPS.delSubscription, ({ name, topic }) => { const b = get(name); b.subscriptions = b.subscriptions.filter(s => s.topic !== topic) })
}
