/**
 * `svc_auth_mysql`: authentication, superusers and ACL from a MySQL/MariaDB database, with
 * EMQ X 4.4's `emqx_auth_mysql` keys, queries and tables (docs/auth/svc_auth_mysql.md).
 * The queries and their semantics are shared with `svc_auth_pgsql` (plugins/auth/sql/).
 */
import { defineAuthBackend } from '../backend/index.js'
import { ConfigError } from '../../../node/config/index.js'
import { openSqlBackend, sqlBackendSchema, sqlPoolOptionsOf } from '../sql/sql-backend.js'
import type { PluginDefinition } from '../../../node/plugins/types.js'

const PREFIX = 'auth.mysql'

/** The plugin definition of `svc_auth_mysql`. */
export const svcAuthMysql: PluginDefinition = defineAuthBackend({
  name: 'svc_auth_mysql',
  description: 'Authentication and ACL with MySQL',
  prefix: PREFIX,
  configSchema: sqlBackendSchema({ prefix: PREFIX, product: 'MySQL', server: '127.0.0.1:3306', username: '', superuserDoc: 'is_superuser = 1' }),
  open: async (ctx) => {
    const sni: string = ctx.config[`${PREFIX}.ssl.server_name_indication`]
    // mysql2 checks the name of the address it connects to, or none: it takes no other name
    if (sni !== '' && sni !== 'disable') throw ConfigError.badValue(`${PREFIX}.ssl.server_name_indication`, sni, 'empty (check the host of auth.mysql.server) or disable', 'plugin config')
    const opts = sqlPoolOptionsOf(ctx, PREFIX, 3306)
    // the driver is loaded by the first load of the plugin, not by every node (kit/pools/index.ts)
    const { createMysqlPool } = await import('../../kit/pools/mysql.js')
    return openSqlBackend(ctx, PREFIX, 'mysql', createMysqlPool(opts))
  }
})
