/**
 * svc_backend_mysql against a real MariaDB (test/helpers/servers/): `backend_mysql` and
 * `data_to_mysql` through the HTTP API and a real MQTT client, the shared suite of the SQL
 * backends (data-sql-suite.ts).
 */
import { describeWithServer, startMariadb, type MariadbServer } from '../helpers/servers/index.js'
import { dataSqlSuite } from './data-sql-suite.js'

let db: MariadbServer

describeWithServer('mariadb', 'svc_backend_mysql: data_to_mysql', () => {
  dataSqlSuite({
    plugin: 'svc_backend_mysql',
    type: 'backend_mysql',
    action: 'data_to_mysql',
    start: async () => (db = await startMariadb()),
    query: async (sql) => await db.query(sql),
    createTable: (name) => `CREATE TABLE ${name} (id int AUTO_INCREMENT PRIMARY KEY, clientid varchar(64), topic varchar(128), seq int, temp double)`
  })
})
