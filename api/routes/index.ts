import type { RouteDef } from '../route-table.js'
import { MONITORING_ROUTES } from './monitoring.js'
import { MQTT_ROUTES } from './mqtt.js'
import { PLUGIN_ROUTES } from './plugins.js'
import { BANNED_ROUTES } from './banned.js'
import { APP_ROUTES } from './apps.js'
import { CONFIG_ROUTES } from './configs.js'
import { RULE_ROUTES } from './rules.js'
import { SCHEMA_ROUTES } from './schemas.js'
import { CLUSTER_ROUTES } from './cluster.js'
import { DATA_ROUTES } from './data.js'

/**
 * The core's endpoints of `/api/v3/`, in the order the index lists them; the plugins add
 * theirs after these (the credential tables', the bridges': ApiRouteTable, api/route-table.ts).
 */
export const API_ROUTES: RouteDef[] = [
  ...MONITORING_ROUTES,
  ...CLUSTER_ROUTES,
  ...MQTT_ROUTES,
  ...PLUGIN_ROUTES,
  ...BANNED_ROUTES,
  ...APP_ROUTES,
  ...CONFIG_ROUTES,
  ...RULE_ROUTES,
  ...SCHEMA_ROUTES,
  ...DATA_ROUTES,
]
