/** svc_backend_mysql: the `backend_mysql` resource type and the `data_to_mysql` action (docs/integrations.md). */
export { svcBackendMysql, BACKEND_MYSQL, DATA_TO_MYSQL, MYSQL_PLUGIN, mysqlTransient } from './plugin.js'
