/**
 * svc_auth_mysql end to end: a real MariaDB (test/helpers/servers), EMQ X 4.4's mqtt_user and
 * mqtt_acl tables, a node loading the plugin with the shipped etc/plugins/svc_auth_mysql.conf
 * (plus the keys a test sets), and real clients: mqtt.js (MQTT 3.1.1 and 5) and mosquitto_pub.
 * The tests are the ones svc_auth_pgsql runs too (./auth-sql-suite.ts); this file gives MariaDB.
 */
import { startMariadb } from '../helpers/servers/index.js'
import { svcAuthMysql } from '../../plugins/auth/mysql/plugin.js'
import { sqlBackendSuite } from './auth-sql-suite.js'

/**
 * EMQ X 4.4's tables, from emqx_auth_mysql's mqtt.sql (apps/emqx_auth_mysql, EMQ X v4.4):
 * mqtt_user(id, username UNIQUE, password, salt, is_superuser, created) and
 * mqtt_acl(id, allow, ipaddr, username, clientid, access, topic), as written there.
 */
const EMQX_MQTT_SQL = `
CREATE TABLE mqtt_acl (
  id int(11) unsigned NOT NULL AUTO_INCREMENT,
  allow int(1) DEFAULT 1 COMMENT '0: deny, 1: allow',
  ipaddr varchar(60) DEFAULT NULL COMMENT 'IpAddress',
  username varchar(100) DEFAULT NULL COMMENT 'Username',
  clientid varchar(100) DEFAULT NULL COMMENT 'ClientId',
  access int(2) NOT NULL COMMENT '1: subscribe, 2: publish, 3: pubsub',
  topic varchar(100) NOT NULL DEFAULT '' COMMENT 'Topic Filter',
  PRIMARY KEY (id),
  INDEX (ipaddr),
  INDEX (username),
  INDEX (clientid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE mqtt_user (
  id int(11) unsigned NOT NULL AUTO_INCREMENT,
  username varchar(100) DEFAULT NULL,
  password varchar(100) DEFAULT NULL,
  salt varchar(35) DEFAULT NULL,
  is_superuser tinyint(1) DEFAULT 0,
  created datetime DEFAULT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY mqtt_username (username)
) ENGINE=MyISAM DEFAULT CHARSET=utf8;`

sqlBackendSuite({
  plugin: 'svc_auth_mysql',
  definition: svcAuthMysql,
  prefix: 'auth.mysql',
  server: 'mariadb',
  product: 'MariaDB',
  start: async () => {
    const db = await startMariadb()
    await db.query(EMQX_MQTT_SQL)
    // a sha512 hex digest is 128 characters, wider than EMQ X's varchar(100)
    await db.query('ALTER TABLE mqtt_user MODIFY password varchar(128)')
    return db
  },
  marks: (n) => Array(n).fill('?').join(', '),
  superuser: [1, 0],
  countUsers: 'SELECT count(*) AS n FROM mqtt_user',
  injections: ["\\' OR 1=1 #"]
})
