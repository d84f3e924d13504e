/**
 * Every endpoint a test node serves with its plugins attached: the core's (`API_ROUTES`) and
 * the plugins' (the credential tables', the bridges'), for the tests that go through all of them.
 */
import type { RouteDef } from '../../api/route-table.js'
import { API_ROUTES } from '../../api/routes/index.js'
import { AUTH_ROUTES } from '../../plugins/auth/routes.js'
import { BRIDGE_ROUTES } from '../../plugins/bridge_mqtt/routes.js'

export const EVERY_API_ROUTE: readonly RouteDef[] = [...API_ROUTES, ...AUTH_ROUTES, ...BRIDGE_ROUTES]
