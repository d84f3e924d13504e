import type { RouteDef } from '../route-table.js'
import { MONITORING_ROUTES } from './monitoring.js'

/** Every endpoint of `/api/v3/`, in the order the index lists them. */
export const API_ROUTES: RouteDef[] = [
  ...MONITORING_ROUTES,
]
