/**
 * The node side of the monitoring commands (monitoring-ctl.ts). Every handler goes through
 * `node.rpc`, so the lists cover the whole cluster and `clients kick` finds the client on
 * whatever node it is connected to. `broker`, `broker stats` and `broker metrics` are about
 * the node the tool talks to, as in EMQ X.
 */
import type { ControlHandlers } from '../control/index.js'
import type { StarlingNode } from '../node.js'
import { ClientOfflineError, notFound } from '../errors.js'
import { clusterItems, kickClient, type ClusterList } from './monitoring-service.js'
import type { CtlList } from './monitoring-ctl.js'

/** What the monitoring commands use of the node: its RPC and name, and its control server to serve them on. */
export type MonitoringControlComponents = Pick<StarlingNode, 'rpc' | 'name' | 'control'>

/**
 * What a list command answers: the items, or `{data, failed}` when some node failed its
 * part (the command prints a line for each; `--json` shows both).
 */
function ctlList<T> (list: ClusterList<T>): CtlList<T> {
  return list.failed.length === 0 ? list.items : { data: list.items, failed: list.failed }
}

/**
 * Fails with `error` when `list` has no items, so `show` of an unknown id exits 1; the
 * nodes that did not answer are named in the message (the id may be on one of them).
 */
function found<T> (list: ClusterList<T>, error: () => Error): CtlList<T> {
  if (list.items.length === 0) {
    const e = error()
    if (list.failed.length > 0) e.message += ` (nodes that did not answer: ${list.failed.map(f => f.node).join(', ')})`
    throw e
  }
  return ctlList(list)
}

/** The monitoring command handlers of `node`, by command name. */
export function monitoringHandlers (node: Pick<MonitoringControlComponents, 'rpc' | 'name'>): ControlHandlers {
  const rpc = node.rpc
  return {
    broker: async () => await rpc.call(node.name, 'brokers.info'),
    'broker stats': async () => await rpc.call(node.name, 'stats.get'),
    'broker metrics': async () => await rpc.call(node.name, 'metrics.get'),
    'clients list': async () => ctlList(await clusterItems(rpc, 'connections.list')),
    'clients show': async ({ args }) => found(await clusterItems(rpc, 'connections.list', { clientid: args[0] }),
      () => new ClientOfflineError(`client ${args[0]} is not online`)),
    'clients kick': async ({ args }) => { await kickClient(rpc, args[0]); return 'ok' },
    'sessions list': async () => ctlList(await clusterItems(rpc, 'sessions.list')),
    'sessions show': async ({ args }) => found(await clusterItems(rpc, 'sessions.list', { clientid: args[0] }), () => notFound(`session of client ${args[0]}`)),
    'subscriptions list': async () => ctlList(await clusterItems(rpc, 'subscriptions.list')),
    'subscriptions show': async ({ args }) => ctlList(await clusterItems(rpc, 'subscriptions.list', { clientid: args[0] })),
    'routes list': async () => ctlList(await clusterItems(rpc, 'routes.list')),
    'routes show': async ({ args }) => ctlList(await clusterItems(rpc, 'routes.list', { topic: args[0] }))
  }
}

/** Registers the monitoring command handlers on the node's control server. */
export function registerMonitoringControl (node: MonitoringControlComponents): void {
  for (const [name, handler] of Object.entries(monitoringHandlers(node))) node.control.register(name, handler)
}
