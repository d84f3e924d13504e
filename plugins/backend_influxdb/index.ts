/** svc_backend_influxdb: the `backend_influxdb_http`, `_http_v2` and `_udp` resource types and the `data_to_influxdb` action (docs/integrations.md). */
export { svcBackendInfluxdb, BACKEND_INFLUXDB_HTTP, BACKEND_INFLUXDB_HTTP_V2, BACKEND_INFLUXDB_UDP, DATA_TO_INFLUXDB, INFLUXDB_PLUGIN } from './plugin.js'
