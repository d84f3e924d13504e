/** svc_backend_opentsdb: the `backend_opentsdb` resource type and the `data_to_opentsdb` action (docs/integrations.md). */
export { svcBackendOpentsdb, BACKEND_OPENTSDB, DATA_TO_OPENTSDB, OPENTSDB_PLUGIN, opentsdbOriginOf } from './plugin.js'
export { compileOpentsdbAction, opentsdbRow, pointOf, type OpentsdbWrite } from './point.js'
