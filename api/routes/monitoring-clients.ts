/**
 * `/api/v3/` endpoints about clients: connections (and kicking one out), sessions,
 * subscriptions and routes (spec: Connections, Sessions, Subscriptions, Routes).
 * Cluster-wide lists merge every node's items by node (nodes that fail are in
 * `meta.failed`); `/nodes/:node/...` reads run on that node. Thin: the work is in node/ops
 * (docs/api.md lists the operations and choices).
 */
import { clusterResult, defineRoutes, type ApiRequest, type ApiResult, type RouteDef } from '../route-table.js'
import { paginate, pageOf } from '../pagination.js'
import { clusterItems, kickClient, nodeItems } from '../../node/ops/monitoring-service.js'
import { cleanNodePersistentSession, cleanPersistentSession } from '../../node/ops/sessions.js'

/** A paginated cluster-wide list of operation `op`. */
async function clusterPage (req: ApiRequest, op: string, args: object = {}): Promise<ApiResult> {
  pageOf(req.query) // a bad _page/_limit is refused before any node is asked
  const { items, failed } = await clusterItems(req.node.rpc, op, args)
  return { ...paginate(items, req.query), failed }
}

/** A cluster-wide lookup with operation `op` (not paginated). */
async function clusterLookup (req: ApiRequest, op: string, args: object): Promise<ApiResult> {
  return clusterResult(await clusterItems(req.node.rpc, op, args))
}

/** A paginated list of operation `op` on the node in the path. */
async function nodePage (req: ApiRequest, op: string, args: object = {}): Promise<ApiResult> {
  pageOf(req.query)
  return paginate(await nodeItems(req.node.rpc, req.params.node, op, args), req.query)
}

/** The GET endpoints of one resource: the four forms every client resource has. */
function clientResource (resource: string, op: string, names: [string, string, string, string], what: string): RouteDef[] {
  return defineRoutes([
    { name: names[0], method: 'GET', path: `/${resource}/`, paginated: true, descr: `A list of ${what} in the cluster`, handler: async (req) => await clusterPage(req, op) },
    { name: names[1], method: 'GET', path: `/nodes/:node/${resource}/`, paginated: true, descr: `A list of ${what} on a node`, handler: async (req) => await nodePage(req, op) },
    { name: names[2], method: 'GET', path: `/${resource}/:clientid`, descr: `Lookup ${what} of a client in the cluster`, handler: async (req) => await clusterLookup(req, op, { clientid: req.params.clientid }) },
    { name: names[3], method: 'GET', path: `/nodes/:node/${resource}/:clientid`, descr: `Lookup ${what} of a client on a node`, handler: async (req) => ({ data: await nodeItems(req.node.rpc, req.params.node, op, { clientid: req.params.clientid }) }) }
  ])
}

/** The connections, sessions, subscriptions and routes endpoints. */
export const CLIENT_ROUTES = defineRoutes([
  ...clientResource('connections', 'connections.list', ['list_connections', 'list_node_connections', 'lookup_connections', 'lookup_node_connections'], 'connections'),
  {
    name: 'kickout_connection',
    method: 'DELETE',
    path: '/connections/:clientid',
    descr: 'Kick out a client connection, wherever it is connected',
    handler: async (req) => { await kickClient(req.node.rpc, req.params.clientid); return undefined }
  },
  {
    name: 'lookup_connection_via_username',
    method: 'GET',
    path: '/connection/username/:username',
    descr: 'Lookup the connections of a username in the cluster',
    handler: async (req) => await clusterLookup(req, 'connections.list', { username: req.params.username })
  },
  {
    name: 'lookup_node_connection_via_username',
    method: 'GET',
    path: '/nodes/:node/connection/username/:username',
    descr: 'Lookup the connections of a username on a node',
    handler: async (req) => ({ data: await nodeItems(req.node.rpc, req.params.node, 'connections.list', { username: req.params.username }) })
  },
  ...clientResource('sessions', 'sessions.list', ['list_sessions', 'list_node_sessions', 'lookup_session', 'lookup_node_session'], 'sessions'),
  {
    // EMQ X 3.4's names, spelling included (`presisent`), as scripts and the index know them
    name: 'clean_presisent_session',
    method: 'DELETE',
    path: '/sessions/persistent/:clientid',
    descr: 'Clean a persistent session of an away client in the cluster',
    handler: async (req) => { await cleanPersistentSession(req.node.rpc, req.params.clientid); return undefined }
  },
  {
    name: 'clean_node_presisent_session',
    method: 'DELETE',
    path: '/nodes/:node/sessions/persistent/:clientid',
    descr: 'Clean a persistent session of an away client on a node',
    handler: async (req) => { await cleanNodePersistentSession(req.node.rpc, req.params.node, req.params.clientid); return undefined }
  },
  ...clientResource('subscriptions', 'subscriptions.list', ['list_subscriptions', 'list_node_subscriptions', 'lookup_client_subscriptions', 'lookup_client_subscriptions_with_node'], 'subscriptions'),
  { name: 'list_routes', method: 'GET', path: '/routes/', paginated: true, descr: 'List routes of the cluster', handler: async (req) => await clusterPage(req, 'routes.list') },
  {
    name: 'lookup_routes',
    method: 'GET',
    path: '/routes/:topic',
    descr: 'Lookup the routes of a topic filter (URL-encoded: t%2F%23 for t/#)',
    handler: async (req) => await clusterLookup(req, 'routes.list', { topic: req.params.topic })
  }
])
