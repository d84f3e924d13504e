/**
 * `svc_bridge_mqtt` (EMQ X's emqx_bridge_mqtt): the bridges of `etc/plugins/svc_bridge_mqtt.conf`.
 * Loading parses the keys, opens each bridge's buffer and starts the `start_type = auto` ones;
 * unloading stops them and closes their buffers (what a disk buffer holds is sent after the
 * next load).
 *
 * The `bridges` commands and the API reach the bridges through node operations, registered
 * whether or not the plugin is loaded (at attach): while it is unloaded each answers
 * RefusedError "plugin svc_bridge_mqtt is not loaded on <node>; load it first ..." (ops-client.ts). {@link BRIDGE_OPERATIONS} lists them.
 */
import { attachBridgeControl, BRIDGE_CTL_COMMANDS } from './ctl.js'
import { bridgePluginNotLoaded } from './ops-client.js'
import { configRoot } from '../../node/config/index.js'
import { NotFoundError, RefusedError, WrongTypeError } from '../../node/errors.js'
import type { StarlingNode } from '../../node/node.js'
import type { NodeRpc } from '../../node/rpc.js'
import { VERSION } from '../../node/version.js'
import { BRIDGES_TABLE, createBridge, type BridgeChanges, type BridgeLinkSource } from './bridge.js'
import { BRIDGE_CONFIG_SCHEMA, BRIDGE_PLUGIN, parseBridgeConfigs } from './config.js'
import { createMqttLink } from './mqtt-link.js'
import { BRIDGE_ACTIONS, BRIDGE_RESOURCE_TYPES } from './actions.js'
import { BRIDGE_ROUTES } from './routes.js'
import type { StarlingPlugin } from '../kit/parts.js'
import type { Bridge, BridgeConfig, BridgeInfo, BridgeManager, RpcBridgeTransport } from './types.js'

/**
 * The node operations of the bridges (arguments → result):
 * - `bridges.list` {} → BridgeInfo[]
 * - `bridges.start` / `bridges.stop` {name} → boolean (false: already started / stopped)
 * - `bridges.forwards` {name} → string[]
 * - `bridges.forwards.add` / `bridges.forwards.del` {name, topic} → true
 * - `bridges.subscriptions` {name} → Array<{topic, qos}>
 * - `bridges.subscriptions.add` {name, topic, qos} → true; `bridges.subscriptions.del` {name, topic} → true
 * An unknown bridge is NotFoundError naming the known ones; a bad topic or QoS RefusedError.
 */
export const BRIDGE_OPERATIONS = [
  'bridges.list', 'bridges.start', 'bridges.stop',
  'bridges.forwards', 'bridges.forwards.add', 'bridges.forwards.del',
  'bridges.subscriptions', 'bridges.subscriptions.add', 'bridges.subscriptions.del'
] as const

/** The bridges of a loaded plugin, by name. */
export class Bridges implements BridgeManager {
  private readonly byName = new Map<string, Bridge>()

  constructor (bridges: Iterable<Bridge>) {
    for (const b of bridges) this.byName.set(b.name, b)
  }

  list (): BridgeInfo[] {
    return [...this.byName.values()].map((b) => b.info())
  }

  get (name: string): Bridge {
    const bridge = this.byName.get(name)
    if (bridge === undefined) {
      const known = [...this.byName.keys()]
      throw new NotFoundError(`bridge ${name}`, known.length === 0 ? `no bridge is configured in etc/plugins/${BRIDGE_PLUGIN}.conf` : `known: ${known.join(', ')}`)
    }
    return bridge
  }

  all (): Bridge[] {
    return [...this.byName.values()]
  }
}

function nameArg (args: any): string {
  const name = args?.name
  if (typeof name !== 'string' || name === '') throw new WrongTypeError('name must be a bridge name')
  return name
}

function topicArg (args: any): string {
  const topic = args?.topic
  if (typeof topic !== 'string' || topic === '') throw new WrongTypeError('topic must be a topic filter')
  return topic
}

function qosArg (args: any): 0 | 1 | 2 {
  const qos = typeof args?.qos === 'string' ? Number(args.qos) : args?.qos
  if (qos !== 0 && qos !== 1 && qos !== 2) throw new RefusedError(`bad QoS ${JSON.stringify(args?.qos)}: expected 0, 1 or 2`)
  return qos
}

/** Registers the operations over `manager` (replacing whatever is registered under their names). */
export function registerBridgeOperations (rpc: NodeRpc, manager: BridgeManager): void {
  unregisterBridgeOperations(rpc)
  rpc.register('bridges.list', () => manager.list())
  rpc.register('bridges.start', async (args) => await manager.get(nameArg(args)).start())
  rpc.register('bridges.stop', async (args) => await manager.get(nameArg(args)).stop())
  rpc.register('bridges.forwards', (args) => manager.get(nameArg(args)).info().forwards)
  rpc.register('bridges.forwards.add', async (args) => { await manager.get(nameArg(args)).addForward(topicArg(args)); return true })
  rpc.register('bridges.forwards.del', async (args) => { await manager.get(nameArg(args)).delForward(topicArg(args)); return true })
  rpc.register('bridges.subscriptions', (args) => manager.get(nameArg(args)).info().subscriptions)
  rpc.register('bridges.subscriptions.add', async (args) => {
    await manager.get(nameArg(args)).addSubscription(topicArg(args), qosArg(args))
    return true
  })
  rpc.register('bridges.subscriptions.del', async (args) => { await manager.get(nameArg(args)).delSubscription(topicArg(args)); return true })
}

/** Registers the operations as refusals: the plugin is not loaded. */
function registerRefusals (rpc: NodeRpc): void {
  unregisterBridgeOperations(rpc)
  for (const name of BRIDGE_OPERATIONS) {
    rpc.register(name, () => { throw bridgePluginNotLoaded(rpc.name) })
  }
}

function unregisterBridgeOperations (rpc: NodeRpc): void {
  for (const name of BRIDGE_OPERATIONS) rpc.unregister(name)
}

/** The transport of RPC bridges, when the node has a cluster part that offers one. */
function rpcTransport (node: StarlingNode): RpcBridgeTransport | undefined {
  return node.cluster?.bridgeTransport
}

/** The `svc_bridge_mqtt` plugin. */
export const svcBridgeMqtt: StarlingPlugin = {
  name: BRIDGE_PLUGIN,
  version: VERSION,
  description: 'Starling Bridge MQTT',
  type: 'bridge',
  configSchema: BRIDGE_CONFIG_SCHEMA,
  ctl: BRIDGE_CTL_COMMANDS,
  loadedByDefault: false,

  // the `bridges` commands and endpoints and the bridges' $SYS topics exist whether or not the
  // plugin is loaded (they say "load it first" while it is not), as the operations do
  async attach (node, parts) {
    registerRefusals(node.rpc)
    const detachControl = await attachBridgeControl(node)
    const removeRoutes = parts.api.add(BRIDGE_ROUTES)
    return async () => { removeRoutes(); await detachControl(); unregisterBridgeOperations(node.rpc) }
  },

  async load ({ node, config, logger, parts }) {
    const configs = parseBridgeConfigs(config, { root: configRoot(node.config) })
    const linkOf = (c: BridgeConfig): BridgeLinkSource => {
      if (c.kind === 'mqtt') return (hooks) => createMqttLink(c, hooks, { logger })
      const transport = rpcTransport(node)
      if (transport === undefined) {
        throw new RefusedError(`bridge ${c.name}: an RPC bridge (address ${c.address}) needs the cluster part, which this node does not run`)
      }
      return transport.link(c.address)
    }
    const links = configs.map((c) => linkOf(c)) // refuses before any buffer is opened
    const table = node.store.table<BridgeChanges>(BRIDGES_TABLE)
    const bridges: Bridge[] = []
    try {
      for (let i = 0; i < configs.length; i++) {
        bridges.push(await createBridge(configs[i], {
          core: node.broker.core, nodeName: node.name, logger, alarms: node.services.alarms, table
        }, links[i]))
      }
    } catch (err) {
      for (const b of bridges) await b.close()
      throw err
    }
    const manager = new Bridges(bridges)
    for (let i = 0; i < configs.length; i++) {
      if (configs[i].startType === 'auto') await bridges[i].start()
    }
    registerBridgeOperations(node.rpc, manager)
    // the rule engine's bridge_mqtt and bridge_rpc resource types and their actions, while loaded
    const withdraw = parts.rules.provide(BRIDGE_RESOURCE_TYPES, BRIDGE_ACTIONS)
    logger.info({ bridges: configs.map((c) => c.name) }, 'bridges loaded')
    return {
      unload: async () => {
        withdraw()
        registerRefusals(node.rpc)
        for (const b of manager.all()) await b.close()
      }
    }
  }
}
