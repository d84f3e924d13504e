/**
 * `/api/v3/cluster/...`: the cluster's membership over HTTP, which EMQ X 4's REST API did
 * not have (its dashboard had no cluster page) and Starling's dashboard needs: the members
 * with the state of each link, join another node's cluster, leave, force a member out. Each
 * is what `starling-ctl cluster status|join|leave|force-leave` does, run on the node that
 * answers the request, through the cluster's node operations (cluster/operations.ts);
 * docs/api.md ("Cluster membership") describes them.
 */
import { defineRoutes, type ApiRequest } from '../route-table.js'

/** Operation `op` of the cluster part on the node that answers the request. */
async function onThisNode (req: ApiRequest, op: string, args: object = {}): Promise<{ data: unknown }> {
  return { data: await req.node.rpc.call(req.node.name, op, args) }
}

const NODE_BODY = {
  type: 'object',
  required: ['node'],
  properties: { node: { type: 'string', minLength: 1, description: 'a node name, <name>@<host> or <name>@<host>:<cluster port>' } }
}

/** The cluster membership endpoints. */
export const CLUSTER_ROUTES = defineRoutes([
  { name: 'cluster_members', method: 'GET', path: '/cluster/', descr: 'The members of the cluster as this node sees them, with the state of its link to each', handler: async (req) => await onThisNode(req, 'cluster.members') },
  { name: 'cluster_join', method: 'POST', path: '/cluster/join', body: NODE_BODY, descr: 'This node joins the cluster of another node (as starling-ctl cluster join)', handler: async (req) => await onThisNode(req, 'cluster.join', { node: req.body.node }) },
  { name: 'cluster_leave', method: 'POST', path: '/cluster/leave', descr: 'This node leaves its cluster (as starling-ctl cluster leave)', handler: async (req) => await onThisNode(req, 'cluster.leave') },
  { name: 'cluster_force_leave', method: 'DELETE', path: '/cluster/:node/force_leave', descr: 'Remove a member from the cluster (as starling-ctl cluster force-leave)', handler: async (req) => await onThisNode(req, 'cluster.force_leave', { node: req.params.node }) }
])
