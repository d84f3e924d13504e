/** svc_backend_clickhouse: the `backend_clickhouse` resource type and the `data_to_clickhouse` action (docs/integrations.md). */
export { svcBackendClickhouse, BACKEND_CLICKHOUSE, DATA_TO_CLICKHOUSE, CLICKHOUSE_PLUGIN } from './plugin.js'
