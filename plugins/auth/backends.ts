/**
 * The external auth/ACL backend plugins (issue 14), in load order: each is a
 * `defineAuthBackend` definition (plugins/auth/backend/plugin.ts) in its own folder. The
 * composition root lists them after the built-in credential plugins.
 */
import type { PluginDefinition } from '../../node/plugins/types.js'
// one import per backend:
import { svcAuthMysql } from './mysql/plugin.js'
import { svcAuthPgsql } from './pgsql/plugin.js'
import { svcAuthRedis } from './redis/plugin.js'
import { svcAuthMongo } from './mongo/plugin.js'
import { svcAuthHttp } from './http/plugin.js'
import { svcAuthJwt } from './jwt/plugin.js'
import { svcAuthLdap } from './ldap/plugin.js'
import { svcPskFile } from './psk/plugin.js'

/** Every external backend plugin the node offers. */
export const AUTH_BACKEND_PLUGINS: readonly PluginDefinition[] = [
  svcAuthMysql, svcAuthPgsql,
  svcAuthRedis, svcAuthMongo,
  svcAuthHttp, svcAuthJwt,
  svcAuthLdap, svcPskFile,
]
