/**
 * Subscriptions and routes of one node (the spec's Subscription and Route). Node operations
 * `subscriptions.list` (`{clientid?}` and the search of list-filters.ts: connected clients' subscriptions, then the stored
 * ones of away persistent sessions) and `routes.list` (`{topic?}`: the filters this node
 * has local subscribers for; the cluster's route table is every node's list merged).
 */
import type { StarlingNode } from '../node.js'
import { displayFilter } from '../mqtt/topic.js'
import { clientById, connectedClients } from './connections.js'
import { isEmptySearch, subscriptionMatches, type SubscriptionSearch } from './list-filters.js'

/** The spec's Subscription. Shared subscriptions show as `$share/<group>/<filter>`. */
export interface Subscription {
  client_id: string
  node: string
  qos: number
  topic: string
}

/** The spec's Route: a topic filter and a node with subscribers to it. */
export interface Route {
  node: string
  topic: string
}

/** What the subscription and route operations use of the node: its MQTT core and its name. */
export type SubscriptionsComponents = Pick<StarlingNode, 'broker' | 'name'>

/** The subscriptions on `node`, optionally of one client, or those a search (list-filters.ts) finds. */
export async function subscriptionsOf (node: SubscriptionsComponents, filter: SubscriptionSearch = {}): Promise<Subscription[]> {
  const out: Subscription[] = []
  const add = (clientId: string, filterText: string, qos: number): void => {
    out.push({ client_id: clientId, node: node.name, qos, topic: displayFilter(filterText) })
  }
  const core = node.broker.core
  const clients = filter.clientid === undefined
    ? connectedClients(node.broker)
    : [clientById(node.broker, filter.clientid)].filter(c => c !== undefined)
  for (const client of clients) {
    const subs = client.subscriptions
    for (const topic in subs) add(client.id, topic, subs[topic].qos)
  }
  for (const session of core.sessions.persistentSessions()) {
    const id = session.clientId
    if (session.subscriptions === 0 || core.client(id) !== undefined) continue
    if (filter.clientid !== undefined && filter.clientid !== id) continue
    const subs = await core.sessions.subscriptionsByClient({ id })
    for (const sub of subs) add(id, sub.topic, sub.qos)
  }
  const { clientid: _c, ...search } = filter
  return isEmptySearch(search) ? out : out.filter(s => subscriptionMatches(s, search))
}

/** The routes of `node`, optionally only the one for the filter `topic` (exact). */
export function routesOf (node: SubscriptionsComponents, filter: { topic?: string } = {}): Route[] {
  const out: Route[] = []
  for (const topic of node.broker.router.routes()) {
    if (filter.topic === undefined || filter.topic === topic) out.push({ node: node.name, topic })
  }
  return out
}

/** Registers `subscriptions.list` and `routes.list` on `node.rpc`. */
export function registerSubscriptionOperations (node: StarlingNode): void {
  node.rpc.register('subscriptions.list', async (args: SubscriptionSearch | undefined) => await subscriptionsOf(node, args ?? {}))
  node.rpc.register('routes.list', (args: { topic?: string } | undefined) => routesOf(node, args ?? {}))
}
