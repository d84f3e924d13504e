/**
 * `/api/v3/` endpoints about nodes: brokers, nodes, listeners, metrics, stats and alarms
 * (spec: Cluster and nodes; Listeners, metrics, stats; Alarms). Thin: each handler runs a
 * per-node operation through `node.rpc` on every running node (nodes that fail are in
 * `meta.failed`) or on the node in the path (docs/api.md lists the operations and choices).
 */
import { clusterResult, defineRoutes, type ApiRequest, type ApiResult } from '../route-table.js'
import { listBrokers, listNodes, lookupBroker, lookupNode, mapList, perNode } from '../../node/ops/monitoring-service.js'

/** `[{node, <key>: result}]` for operation `op` on every node (failed nodes in `meta.failed`). */
async function byNode (req: ApiRequest, op: string, key: string): Promise<ApiResult> {
  return clusterResult(mapList(await perNode(req.node.rpc, op), a => ({ node: a.node, [key]: a.result })))
}

/** Operation `op` on the node named in the path. */
async function onNode (req: ApiRequest, op: string): Promise<{ data: unknown }> {
  return { data: await req.node.rpc.call(req.params.node, op) }
}

/** The brokers, nodes, listeners, metrics, stats and alarms endpoints. */
export const NODE_ROUTES = defineRoutes([
  { name: 'list_brokers', method: 'GET', path: '/brokers/', descr: 'A list of brokers in the cluster', handler: async (req) => clusterResult(await listBrokers(req.node.rpc)) },
  { name: 'lookup_broker', method: 'GET', path: '/brokers/:node', descr: 'Lookup info of a broker in the cluster', handler: async (req) => ({ data: await lookupBroker(req.node.rpc, req.params.node) }) },
  { name: 'list_nodes', method: 'GET', path: '/nodes/', descr: 'A list of nodes in the cluster', handler: async (req) => clusterResult(await listNodes(req.node.rpc)) },
  { name: 'lookup_node', method: 'GET', path: '/nodes/:node', descr: 'Lookup a node in the cluster', handler: async (req) => ({ data: await lookupNode(req.node.rpc, req.params.node) }) },

  { name: 'list_listeners', method: 'GET', path: '/listeners/', descr: 'A list of listeners in the cluster', handler: async (req) => await byNode(req, 'listeners.list', 'listeners') },
  { name: 'list_node_listeners', method: 'GET', path: '/nodes/:node/listeners', descr: 'A list of listeners on the node', handler: async (req) => await onNode(req, 'listeners.list') },
  { name: 'list_all_metrics', method: 'GET', path: '/metrics/', descr: 'A list of metrics of all nodes in the cluster', handler: async (req) => await byNode(req, 'metrics.get', 'metrics') },
  { name: 'list_node_metrics', method: 'GET', path: '/nodes/:node/metrics/', descr: 'A list of metrics of a node', handler: async (req) => await onNode(req, 'metrics.get') },
  {
    name: 'list_stats',
    method: 'GET',
    path: '/stats/',
    descr: 'A list of stats of all nodes in the cluster',
    handler: async (req) => clusterResult(mapList(await perNode<object>(req.node.rpc, 'stats.get'), a => ({ node: a.node, ...a.result })))
  },
  { name: 'lookup_node_stats', method: 'GET', path: '/nodes/:node/stats/', descr: 'A list of stats of a node', handler: async (req) => await onNode(req, 'stats.get') },

  // literal paths before `/alarms/:node`, which would match them otherwise
  { name: 'list_present_alarms', method: 'GET', path: '/alarms/present', descr: 'List present alarms of all nodes in the cluster', handler: async (req) => await byNode(req, 'alarms.present', 'alarms') },
  { name: 'list_node_present_alarms', method: 'GET', path: '/alarms/present/:node', descr: 'List present alarms of a node', handler: async (req) => await onNode(req, 'alarms.present') },
  { name: 'list_history_alarms', method: 'GET', path: '/alarms/history', descr: 'List alarm history of all nodes in the cluster', handler: async (req) => await byNode(req, 'alarms.history', 'alarms') },
  { name: 'list_node_history_alarms', method: 'GET', path: '/alarms/history/:node', descr: 'List alarm history of a node', handler: async (req) => await onNode(req, 'alarms.history') },
  { name: 'list_all_alarms', method: 'GET', path: '/alarms/', descr: 'List present alarms of all nodes in the cluster (same as /alarms/present)', handler: async (req) => await byNode(req, 'alarms.present', 'alarms') },
  { name: 'list_node_alarms', method: 'GET', path: '/alarms/:node', descr: 'List present alarms of a node (same as /alarms/present/:node)', handler: async (req) => await onNode(req, 'alarms.present') }
])
