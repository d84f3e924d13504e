/**
 * The monitoring endpoints of `/api/v3/` (issue 4): brokers, nodes, connections, sessions,
 * subscriptions, routes, listeners, metrics, stats and alarms. docs/api.md describes them.
 */
import type { RouteDef } from '../route-table.js'
import { NODE_ROUTES } from './monitoring-nodes.js'
import { CLIENT_ROUTES } from './monitoring-clients.js'

/** Every monitoring endpoint, in the order the index lists them. */
export const MONITORING_ROUTES: RouteDef[] = [...NODE_ROUTES, ...CLIENT_ROUTES]
