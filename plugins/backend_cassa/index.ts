/** svc_backend_cassa: the `backend_cassa` resource type and the `data_to_cassa` action (docs/integrations.md). */
export { svcBackendCassa, BACKEND_CASSA, DATA_TO_CASSA, CASSA_PLUGIN, cassaSettingsOf } from './plugin.js'
export { cassaRow, compileCql, type CassaWrite } from './statement.js'
