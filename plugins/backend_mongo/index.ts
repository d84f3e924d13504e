/** svc_backend_mongo: the `backend_mongo_single|_rs|_sharded` resource types and the `data_to_mongo` action (docs/integrations.md). */
export { svcBackendMongo, BACKEND_MONGO_RS, BACKEND_MONGO_SHARDED, BACKEND_MONGO_SINGLE, DATA_TO_MONGO, MONGO_PLUGIN, mongoSettingsOf } from './plugin.js'
export { compileMongoAction, mongoRow, objectIdHex, type MongoWrite } from './document.js'
