/**
 * The data-integration plumbing every backend shares (docs/integrations.md, "Adding a
 * backend"): a backend plugin gives a {@link DataClient} and a row function, and gets a
 * resource type and an action with the shared params, the buffer (memory or disk), batching,
 * retries with back-off, the health check and the metrics' outcome.
 */
export { WriteRefused, WriteSkipped, pingHealth, type DataClient } from './client.js'
export { dataAction, dataResourceType, type DataActionDefinition, type DataActionSpec, type DataResourceTypeDefinition, type DataResourceTypeSpec } from './definitions.js'
export { DataResource, bufferDirOf, type BufferEntry } from './data-resource.js'
export { DATA_BATCH_PARAMS, DATA_RESOURCE_PARAMS, dataBatchSettings, dataResourceSettings, type DataBatchSettings, type DataResourceSettings, type InsertMode } from './params.js'
export { checkSqlServer, sqlActionParts, sqlDataClient, sqlPoolOptionsOf, sqlResourceParams, sqlValue, type SqlClientSpec, type SqlValue, type SqlWrite } from './sql.js'
export { multiRowForm, multiRowText, type MultiRowForm } from './multi-row.js'
export { dataTlsOptions, type DataTlsContext } from './tls.js'
export { dataPlugin, type DataPluginSpec } from './plugin.js'
