/**
 * `/api/v3/bridges` and `/api/v3/nodes/:node/bridges/...` (issue 15, docs/api.md "Bridges"):
 * the bridges of the cluster or of one node with their status and counts, start and stop,
 * and their forwards and remote subscriptions changed at run time. Thin: the work is the
 * bridge operations svc_bridge_mqtt registers, called through plugins/bridge_mqtt/ops-client.ts
 * (the same functions the `bridges` commands call). EMQ X 4.4 had no bridge endpoints.
 */
import { defineRoutes, type ApiRequest, type ApiResult, type JsonSchema, type RouteDef } from '../../api/route-table.js'
import { paginate, pageOf } from '../../api/pagination.js'
import {
  addBridgeForward, addBridgeSubscription, bridgeForwards, bridgeSubscriptions, clusterBridges,
  delBridgeForward, delBridgeSubscription, nodeBridge, nodeBridges, startBridge, stopBridge
} from './ops-client.js'

const TOPIC: JsonSchema = { type: 'string', description: 'topic filter; 115 when it is not one' }
const QOS: JsonSchema = { type: 'integer', enum: [0, 1, 2], description: '0, 1 or 2 (116 otherwise); default 0' }

const FORWARD_BODY: JsonSchema = {
  type: 'object',
  properties: { topic: TOPIC },
  required: ['topic']
}

const SUBSCRIPTION_BODY: JsonSchema = {
  type: 'object',
  properties: { topic: TOPIC, qos: QOS },
  required: ['topic']
}

const FIELD_CODES = { '/topic': 115, '/qos': 116 }

const BRIDGE = '/nodes/:node/bridges/:name'

/** `GET /bridges`: every node's bridges, paginated, with the nodes that failed. */
async function clusterPage (req: ApiRequest): Promise<ApiResult> {
  pageOf(req.query) // a bad _page/_limit is refused before any node is asked
  const { items, failed } = await clusterBridges(req.node.rpc)
  return { ...paginate(items, req.query), failed }
}

/** `GET /nodes/:node/bridges`: that node's bridges, paginated. */
async function nodePage (req: ApiRequest): Promise<ApiResult> {
  pageOf(req.query)
  return paginate(await nodeBridges(req.node.rpc, req.params.node), req.query)
}

/** The bridge endpoints. */
export const BRIDGE_ROUTES: RouteDef[] = defineRoutes([
  {
    name: 'list_bridges',
    method: 'GET',
    path: '/bridges/',
    paginated: true,
    descr: 'List the bridges of every node of the cluster',
    handler: clusterPage
  },
  {
    name: 'list_node_bridges',
    method: 'GET',
    path: '/nodes/:node/bridges/',
    paginated: true,
    descr: 'List the bridges of a node with their status and counts',
    handler: nodePage
  },
  {
    name: 'lookup_node_bridge',
    method: 'GET',
    path: BRIDGE,
    descr: 'Show one bridge of a node',
    handler: async (req) => ({ data: await nodeBridge(req.node.rpc, req.params.node, req.params.name) })
  },
  {
    name: 'start_bridge',
    method: 'PUT',
    path: `${BRIDGE}/start`,
    descr: 'Start a bridge (data: false when it was already started)',
    handler: async (req) => ({ data: await startBridge(req.node.rpc, req.params.node, req.params.name) })
  },
  {
    name: 'stop_bridge',
    method: 'PUT',
    path: `${BRIDGE}/stop`,
    descr: 'Stop a bridge (data: false when it was not running)',
    handler: async (req) => ({ data: await stopBridge(req.node.rpc, req.params.node, req.params.name) })
  },
  {
    name: 'list_bridge_forwards',
    method: 'GET',
    path: `${BRIDGE}/forwards`,
    descr: 'List the local topics a bridge forwards',
    handler: async (req) => ({ data: await bridgeForwards(req.node.rpc, req.params.node, req.params.name) })
  },
  {
    name: 'add_bridge_forward',
    method: 'POST',
    path: `${BRIDGE}/forwards`,
    descr: 'Forward a local topic filter through a bridge',
    body: FORWARD_BODY,
    fieldCodes: FIELD_CODES,
    handler: async (req) => { await addBridgeForward(req.node, req.params.node, req.params.name, req.body.topic); return undefined }
  },
  {
    name: 'del_bridge_forward',
    method: 'DELETE',
    path: `${BRIDGE}/forwards/:topic`,
    descr: 'Stop forwarding a topic filter (URL-encoded: a%2F%23 for a/#)',
    handler: async (req) => { await delBridgeForward(req.node, req.params.node, req.params.name, req.params.topic); return undefined }
  },
  {
    name: 'list_bridge_subscriptions',
    method: 'GET',
    path: `${BRIDGE}/subscriptions`,
    descr: 'List the remote topics a bridge subscribes to',
    handler: async (req) => ({ data: await bridgeSubscriptions(req.node.rpc, req.params.node, req.params.name) })
  },
  {
    name: 'add_bridge_subscription',
    method: 'POST',
    path: `${BRIDGE}/subscriptions`,
    descr: 'Subscribe a bridge to a remote topic filter',
    body: SUBSCRIPTION_BODY,
    fieldCodes: FIELD_CODES,
    handler: async (req) => {
      await addBridgeSubscription(req.node, req.params.node, req.params.name, req.body.topic, req.body.qos ?? 0)
      return undefined
    }
  },
  {
    name: 'del_bridge_subscription',
    method: 'DELETE',
    path: `${BRIDGE}/subscriptions/:topic`,
    descr: 'Unsubscribe a bridge from a remote topic filter (URL-encoded)',
    handler: async (req) => { await delBridgeSubscription(req.node, req.params.node, req.params.name, req.params.topic); return undefined }
  }
])
