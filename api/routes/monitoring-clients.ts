/**
 * `/api/v3/` endpoints about clients: connections (and kicking one out), sessions,
 * subscriptions and routes (spec: Connections, Sessions, Subscriptions, Routes).
 * Cluster-wide lists merge every node's items by node (nodes that fail are in
 * `meta.failed`); `/nodes/:node/...` reads (and a list's `?node=`) run on that node. The
 * connection and subscription lists take EMQ X 4.4's search parameters (node/ops/list-filters.ts). Thin: the work is in node/ops
 * (docs/api.md lists the operations and choices).
 */
import { clusterResult, defineRoutes, type ApiRequest, type ApiResult, type RouteDef } from '../route-table.js'
import { paginate, pageOf } from '../pagination.js'
import { clusterItems, kickClient, nodeItems } from '../../node/ops/monitoring-service.js'
import { cleanNodePersistentSession, cleanPersistentSession } from '../../node/ops/sessions.js'
import { connectionSearchOf, subscriptionSearchOf } from '../../node/ops/list-filters.js'

/** The search a list endpoint reads from its query string (none for sessions and routes). */
type SearchOf = (query: Record<string, string | undefined>) => object

/**
 * A paginated cluster-wide list of operation `op`, narrowed by the search `searchOf` reads
 * from the query; `?node=<node>` asks that node only (as `/nodes/:node/...` does).
 */
async function clusterPage (req: ApiRequest, op: string, searchOf: SearchOf = () => ({})): Promise<ApiResult> {
  pageOf(req.query) // a bad _page/_limit or search is refused before any node is asked
  const args = searchOf(req.query)
  const node = req.query.node
  if (node !== undefined && node !== '') return paginate(await nodeItems<object>(req.node.rpc, node, op, args), req.query)
  const { items, failed } = await clusterItems(req.node.rpc, op, args)
  return { ...paginate(items, req.query), failed }
}

/** A cluster-wide lookup with operation `op` (not paginated). */
async function clusterLookup (req: ApiRequest, op: string, args: object): Promise<ApiResult> {
  return clusterResult(await clusterItems(req.node.rpc, op, args))
}

/** A paginated list of operation `op` on the node in the path, narrowed by the search `searchOf` reads. */
async function nodePage (req: ApiRequest, op: string, searchOf: SearchOf = () => ({})): Promise<ApiResult> {
  pageOf(req.query)
  const args = searchOf(req.query)
  return paginate(await nodeItems(req.node.rpc, req.params.node, op, args), req.query)
}

/** The GET endpoints of one resource: the four forms every client resource has; its lists take the search `searchOf` reads. */
function clientResource (resource: string, op: string, names: [string, string, string, string], what: string, searchOf?: SearchOf): RouteDef[] {
  return defineRoutes([
    { name: names[0], method: 'GET', path: `/${resource}/`, paginated: true, descr: `A list of ${what} in the cluster`, handler: async (req) => await clusterPage(req, op, searchOf) },
    { name: names[1], method: 'GET', path: `/nodes/:node/${resource}/`, paginated: true, descr: `A list of ${what} on a node`, handler: async (req) => await nodePage(req, op, searchOf) },
    { name: names[2], method: 'GET', path: `/${resource}/:clientid`, descr: `Lookup ${what} of a client in the cluster`, handler: async (req) => await clusterLookup(req, op, { clientid: req.params.clientid }) },
    { name: names[3], method: 'GET', path: `/nodes/:node/${resource}/:clientid`, descr: `Lookup ${what} of a client on a node`, handler: async (req) => ({ data: await nodeItems(req.node.rpc, req.params.node, op, { clientid: req.params.clientid }) }) }
  ])
}

/** The connections, sessions, subscriptions and routes endpoints. */
export const CLIENT_ROUTES = defineRoutes([
  ...clientResource('connections', 'connections.list', ['list_connections', 'list_node_connections', 'lookup_connections', 'lookup_node_connections'], 'connections', connectionSearchOf),
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
  ...clientResource('subscriptions', 'subscriptions.list', ['list_subscriptions', 'list_node_subscriptions', 'lookup_client_subscriptions', 'lookup_client_subscriptions_with_node'], 'subscriptions', subscriptionSearchOf),
  { name: 'list_routes', method: 'GET', path: '/routes/', paginated: true, descr: 'List routes of the cluster', handler: async (req) => await clusterPage(req, 'routes.list') },
  {
    name: 'lookup_routes',
    method: 'GET',
    path: '/routes/:topic',
    descr: 'Lookup the routes of a topic filter (URL-encoded: t%2F%23 for t/#)',
    handler: async (req) => await clusterLookup(req, 'routes.list', { topic: req.params.topic })
  }
])
