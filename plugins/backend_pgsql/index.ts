/** svc_backend_pgsql: the `backend_pgsql` resource type and the `data_to_pgsql` action (docs/integrations.md). */
export { svcBackendPgsql, BACKEND_PGSQL, DATA_TO_PGSQL, PGSQL_PLUGIN, pgsqlTransient } from './plugin.js'
