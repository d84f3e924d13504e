/**
 * `svc_auth_pgsql`: authentication, superusers and ACL from a PostgreSQL database, with
 * EMQ X 4.4's `emqx_auth_pgsql` keys, queries and tables (docs/auth/svc_auth_pgsql.md).
 * The queries and their semantics are shared with `svc_auth_mysql` (plugins/auth/sql/).
 */
import { defineAuthBackend } from '../backend/index.js'
import { openSqlBackend, sqlBackendSchema, sqlPoolOptionsOf } from '../sql/sql-backend.js'
import type { PluginDefinition } from '../../../node/plugins/types.js'

const PREFIX = 'auth.pgsql'

/** The plugin definition of `svc_auth_pgsql`. */
export const svcAuthPgsql: PluginDefinition = defineAuthBackend({
  name: 'svc_auth_pgsql',
  description: 'Authentication and ACL with PostgreSQL',
  prefix: PREFIX,
  configSchema: {
    ...sqlBackendSchema({ prefix: PREFIX, product: 'PostgreSQL', server: '127.0.0.1:5432', username: 'root', superuserDoc: 'is_superuser = true' }),
    [`${PREFIX}.encoding`]: { type: 'string', default: 'utf8', live: false, doc: 'Client encoding of the connection.' },
    [`${PREFIX}.ssl.tls_versions`]: { type: 'string', default: '', allowEmpty: true, live: false, doc: 'TLS versions allowed, comma-separated (tlsv1.3,tlsv1.2); empty: Node\'s defaults (TLS 1.2 and 1.3).' }
  },
  open: async (ctx) => {
    const opts = sqlPoolOptionsOf(ctx, PREFIX, 5432)
    // the driver is loaded by the first load of the plugin, not by every node (kit/pools/index.ts)
    const { createPgsqlPool } = await import('../../kit/pools/pgsql.js')
    return openSqlBackend(ctx, PREFIX, 'postgresql', createPgsqlPool(opts))
  }
})
