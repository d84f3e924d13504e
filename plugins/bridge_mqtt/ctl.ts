/**
 * `starling-ctl bridges list|start|stop|forwards|add-forward|del-forward|subscriptions|
 * add-subscription|del-subscription`: the command table entries, printed as EMQ X 4.4's
 * `emqx_bridge_mqtt_cli` printed them, and the node-side handlers, which call the bridge
 * operations svc_bridge_mqtt registers (plugins/bridge_mqtt/ops-client.ts) on this node.
 *
 * The handlers are registered whether or not the plugin is loaded ({@link attachBridgeControl},
 * the plugin definition's `attach`), so without it every command answers
 * `plugin svc_bridge_mqtt is not loaded ...` instead of an unknown command. (EMQ X registered
 * `bridges` only while emqx_bridge_mqtt ran.)
 */
import { ControlError } from '../../node/control/errors.js'
import { defineCommand, type CtlCommand } from '../../node/control/commands.js'
import type { ControlHandlers, ControlServer } from '../../node/control/index.js'
import { errorCode } from '../../node/errors.js'
import type { StarlingNode } from '../../node/node.js'
import {
  addBridgeForward, addBridgeSubscription, bridgeForwards, bridgeSubscriptions, delBridgeForward,
  delBridgeSubscription, nodeBridges, BRIDGE_PLUGIN, startBridge, stopBridge, type BridgeOpsNode, type BridgeSubscription
} from './ops-client.js'
import { createBridgesSys, type BridgesSysNode } from './sys.js'
import type { BridgeInfo, BridgeStatus } from './types.js'

const NAME = { name: 'Name', description: 'bridge name (bridge.mqtt.<name>.* in etc/plugins/svc_bridge_mqtt.conf)' }
const TOPIC = { name: 'Topic', description: 'topic filter' }

/**
 * `bridges list`'s status word: EMQ X's `Running` (connected) and `Stopped`; a started bridge
 * that is not connected yet (or lost its link and retries) is `Connecting`, where EMQ X
 * printed `Stopped` for anything not connected.
 */
export function statusWord (status: BridgeStatus): string {
  return status === 'connected' ? 'Running' : status === 'connecting' ? 'Connecting' : 'Stopped'
}

/** `name: aws     status: Running`, one line per bridge (EMQ X's `name: ~s     status: ~s~n`). */
export function renderBridgeList (bridges: readonly BridgeInfo[]): string {
  return bridges.map(b => `name: ${b.name}     status: ${statusWord(b.status)}\n`).join('')
}

/** `topic:   <T>`, one line per forward. */
export function renderForwards (topics: readonly string[]): string {
  return topics.map(t => `topic:   ${t}\n`).join('')
}

/** `topic: <T>, qos: <Q>`, one line per remote subscription. */
export function renderSubscriptions (subs: readonly BridgeSubscription[]): string {
  return subs.map(s => `topic: ${s.topic}, qos: ${s.qos}\n`).join('')
}

export const bridgesListCommand = defineCommand<BridgeInfo[]>({
  words: ['bridges', 'list'],
  description: 'List the bridges of the node with their status (Running, Connecting, Stopped)',
  render: renderBridgeList
})

export const bridgesStartCommand = defineCommand<boolean>({
  words: ['bridges', 'start'],
  description: 'Start a bridge (it connects and keeps reconnecting)',
  args: [NAME],
  render: (started) => started ? 'Start bridge successfully.\n' : 'Bridge already started.\n'
})

export const bridgesStopCommand = defineCommand<boolean>({
  words: ['bridges', 'stop'],
  description: 'Stop a bridge (its buffer keeps what it holds)',
  args: [NAME],
  // EMQ X answered this for a bridge that was not running too; --json shows false then
  render: () => 'Stop bridge successfully.\n'
})

export const bridgesForwardsCommand = defineCommand<string[]>({
  words: ['bridges', 'forwards'],
  description: 'Show the local topics a bridge forwards to its remote',
  args: [NAME],
  render: renderForwards
})

export const bridgesAddForwardCommand = defineCommand<null>({
  words: ['bridges', 'add-forward'],
  description: 'Forward a local topic filter to the remote (kept across restarts)',
  args: [NAME, TOPIC],
  render: () => 'Add-forward topic successfully.\n'
})

export const bridgesDelForwardCommand = defineCommand<null>({
  words: ['bridges', 'del-forward'],
  description: 'Stop forwarding a local topic filter',
  args: [NAME, TOPIC],
  render: () => 'Del-forward topic successfully.\n'
})

export const bridgesSubscriptionsCommand = defineCommand<BridgeSubscription[]>({
  words: ['bridges', 'subscriptions'],
  description: 'Show the remote topics a bridge subscribes to',
  args: [NAME],
  render: renderSubscriptions
})

export const bridgesAddSubscriptionCommand = defineCommand<null>({
  words: ['bridges', 'add-subscription'],
  description: 'Subscribe a bridge to a remote topic filter (kept across restarts)',
  args: [NAME, TOPIC, { name: 'Qos', description: '0, 1 or 2' }],
  render: () => 'Add-subscription topic successfully.\n'
})

export const bridgesDelSubscriptionCommand = defineCommand<null>({
  words: ['bridges', 'del-subscription'],
  description: 'Unsubscribe a bridge from a remote topic filter',
  args: [NAME, TOPIC],
  render: () => 'Del-subscription topic successfully.\n'
})

/** Every `bridges` command, for the ctl command table. */
export const BRIDGE_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  bridgesListCommand, bridgesStartCommand, bridgesStopCommand,
  bridgesForwardsCommand, bridgesAddForwardCommand, bridgesDelForwardCommand,
  bridgesSubscriptionsCommand, bridgesAddSubscriptionCommand, bridgesDelSubscriptionCommand
]

/**
 * Runs `op`; a failure is answered with EMQ X's failure text before its reason, its code
 * kept: `Start bridge failed. bridge x not found; ...`, `Add-subscription failed reason: <R>.`
 * The plugin's absence is answered as it is.
 */
async function failAs<T> (text: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op()
  } catch (err) {
    if (!(err instanceof Error) || err.message.startsWith(`plugin ${BRIDGE_PLUGIN} is not loaded`)) throw err
    const reason = text.endsWith(':') ? `${err.message.replace(/\.+$/, '')}.` : err.message
    throw new ControlError(`${text} ${reason}`, errorCode(err))
  }
}

/** The node-side handlers: each calls the bridge operation on this node. */
export function bridgeHandlers (node: BridgeOpsNode & { readonly name: string }): ControlHandlers {
  const here = node.name
  const { rpc } = node
  return {
    'bridges list': async () => await nodeBridges(rpc, here),
    'bridges start': async ({ args }) => await failAs('Start bridge failed.', async () => await startBridge(rpc, here, args[0])),
    'bridges stop': async ({ args }) => await failAs('Stop bridge failed.', async () => await stopBridge(rpc, here, args[0])),
    'bridges forwards': async ({ args }) => await bridgeForwards(rpc, here, args[0]),
    'bridges add-forward': async ({ args }) => await failAs('Add-forward failed reason:', async () => { await addBridgeForward(node, here, args[0], args[1]); return null }),
    'bridges del-forward': async ({ args }) => await failAs('Del-forward failed reason:', async () => { await delBridgeForward(node, here, args[0], args[1]); return null }),
    'bridges subscriptions': async ({ args }) => await bridgeSubscriptions(rpc, here, args[0]),
    'bridges add-subscription': async ({ args }) => await failAs('Add-subscription failed reason:', async () => { await addBridgeSubscription(node, here, args[0], args[1], args[2]); return null }),
    'bridges del-subscription': async ({ args }) => await failAs('Del-subscription failed reason:', async () => { await delBridgeSubscription(node, here, args[0], args[1]); return null })
  }
}

/** Registers the `bridges` handlers on the node's control server; returns the function that removes them. */
export function registerBridgeControl (node: BridgeOpsNode & { readonly name: string, readonly control: ControlServer }): () => void {
  const handlers = bridgeHandlers(node)
  for (const [name, handler] of Object.entries(handlers)) node.control.register(name, handler)
  return () => { for (const name of Object.keys(handlers)) node.control.unregister(name) }
}

/**
 * What must hold whether or not svc_bridge_mqtt is loaded: the `bridges` commands and the
 * bridges' `$SYS` topics and metrics (plugins/bridge_mqtt/sys.ts). svc_bridge_mqtt's definition uses
 * it as its `attach` (the plugin manager calls it once at start and the returned function at
 * stop).
 */
export async function attachBridgeControl (node: StarlingNode): Promise<() => Promise<void>> {
  const off = registerBridgeControl(node)
  const sys = createBridgesSys(node as BridgesSysNode)
  sys.start()
  return async () => {
    sys.stop()
    off()
  }
}
