/** svc_backend_dynamo: the `backend_dynamo` resource type and the `data_to_dynamo` action (docs/integrations.md). */
export { svcBackendDynamo, BACKEND_DYNAMO, DATA_TO_DYNAMO, DYNAMO_PLUGIN, dynamoSettingsOf } from './plugin.js'
export { attributeOf, compileDynamoAction, dynamoRow, requestsOf, type DynamoWrite } from './item.js'
