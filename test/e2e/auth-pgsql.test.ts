/**
 * svc_auth_pgsql end to end: a real PostgreSQL (test/helpers/servers), EMQ X 4.4's mqtt_user and
 * mqtt_acl tables, a node loading the plugin with the shipped etc/plugins/svc_auth_pgsql.conf
 * (plus the keys a test sets), and real clients: mqtt.js (MQTT 3.1.1 and 5) and mosquitto_pub.
 * The tests are the ones svc_auth_mysql runs too (./auth-sql-suite.ts); this file gives PostgreSQL.
 */
import { startPostgres } from '../helpers/servers/index.js'
import { svcAuthPgsql } from '../../plugins/auth/pgsql/plugin.js'
import { sqlBackendSuite } from './auth-sql-suite.js'

/**
 * EMQ X 4.4's tables, from emqx_auth_pgsql's pgsql.sql (apps/emqx_auth_pgsql, EMQ X v4.4):
 * mqtt_user(id, is_superuser boolean, username, password, salt) and
 * mqtt_acl(id, allow, ipaddr, username, clientid, access, topic), as written there
 * (password widened to 128 for sha512 hex digests).
 */
const EMQX_PGSQL_SQL = `
CREATE TABLE mqtt_user (
  id SERIAL primary key,
  is_superuser boolean,
  username character varying(100),
  password character varying(128),
  salt character varying(40)
);
CREATE TABLE mqtt_acl (
  id SERIAL primary key,
  allow integer,
  ipaddr character varying(60),
  username character varying(100),
  clientid character varying(100),
  access integer,
  topic character varying(100)
);`

sqlBackendSuite({
  plugin: 'svc_auth_pgsql',
  definition: svcAuthPgsql,
  prefix: 'auth.pgsql',
  server: 'postgres',
  product: 'PostgreSQL',
  start: async () => {
    const db = await startPostgres()
    await db.query(EMQX_PGSQL_SQL)
    return db
  },
  marks: (n) => Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', '),
  superuser: [true, false],
  countUsers: 'SELECT count(*)::int AS n FROM mqtt_user',
  injections: ["$1' OR 1=1 --", "victim'; DROP TABLE mqtt_user; --"]
})
