/**
 * svc_backend_pgsql against a real PostgreSQL (test/helpers/servers/): `backend_pgsql` and
 * `data_to_pgsql` through the HTTP API and a real MQTT client, the shared suite of the SQL
 * backends (data-sql-suite.ts).
 */
import { describeWithServer, startPostgres, type PostgresServer } from '../helpers/servers/index.js'
import { dataSqlSuite } from './data-sql-suite.js'

let pg: PostgresServer

describeWithServer('postgres', 'svc_backend_pgsql: data_to_pgsql', () => {
  dataSqlSuite({
    plugin: 'svc_backend_pgsql',
    type: 'backend_pgsql',
    action: 'data_to_pgsql',
    start: async () => (pg = await startPostgres()),
    query: async (sql) => await pg.query(sql),
    createTable: (name) => `CREATE TABLE ${name} (id serial PRIMARY KEY, clientid text, topic text, seq int, temp double precision)`
  })
})
