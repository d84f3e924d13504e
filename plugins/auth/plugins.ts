/**
 * The built-in authentication plugins `svc_auth_clientid` and `svc_auth_username` (EMQ X's
 * emqx_auth_clientid / emqx_auth_username). Loading one puts an authenticator into the
 * broker's auth chain at its configured priority and registers its ctl commands;
 * unloading removes both. The credentials stay in the store either way.
 *
 * Decision per CONNECT (docs/auth.md): no entry for the client's id -> `ignore` (the next
 * provider, then `allow_anonymous`, decides); entry and matching password -> `allow`;
 * entry and a wrong or missing password -> `deny`.
 */
import { ConfigError, type ConfigSchema } from '../../node/config/index.js'
import type { AuthInfo } from '../../node/mqtt/broker.js'
import type { PluginContext, PluginInstance } from '../../node/plugins/types.js'
import type { CtlCommand } from '../../node/control/index.js'
import type { RouteDef } from '../../api/route-table.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { VERSION } from '../../node/version.js'
import {
  createAuthClientids, createAuthUsers, type CredentialService, type CredentialServiceOptions, type CredentialTables
} from './credentials.js'
import { attachCredentialPlaceholders, registerCredentialControl, CLIENTID_CTL_COMMANDS, USERS_CTL_COMMANDS, type CredentialCommandGroup } from './ctl.js'
import { registerAuthOperations, type CredentialTable } from './ops.js'
import { AUTH_CLIENTID_ROUTES, AUTH_USERNAME_ROUTES } from './routes.js'
import { credentialSection } from './backup-section.js'
import { DEFAULT_PASSWORD_HASH, PASSWORD_HASHES, parsePasswordHashName } from './password-hash.js'

/** Priority both plugins get by default: EMQ X hooked them at 0, so equal ones run in load order. */
export const DEFAULT_AUTH_PRIORITY = 0

/** A loaded credential plugin; `service` is the table it authenticates against. */
export interface CredentialPluginInstance extends PluginInstance {
  readonly service: CredentialService
}

/** Keys of `etc/plugins/svc_auth_clientid.conf`. */
export const AUTH_CLIENTID_CONFIG_SCHEMA = {
  'auth.client.password_hash': {
    type: 'enum', values: PASSWORD_HASHES, default: DEFAULT_PASSWORD_HASH, live: false,
    doc: 'Hash for client id passwords added or updated from now on (sha = SHA-1); existing entries keep theirs.'
  },
  'auth.client.priority': {
    type: 'int', default: String(DEFAULT_AUTH_PRIORITY), live: false,
    doc: 'Place in the auth chain: higher runs first; equal priorities run in load order.'
  },
  'auth.client.<name>.clientid': {
    type: 'string', live: false,
    doc: 'A client id added when the plugin loads, unless it already exists (EMQ X auth.client.$N.clientid).'
  },
  'auth.client.<name>.password': { type: 'string', live: false, secret: true, doc: 'Its password.' }
} as const satisfies ConfigSchema

/** Keys of `etc/plugins/svc_auth_username.conf`. */
export const AUTH_USERNAME_CONFIG_SCHEMA = {
  'auth.user.password_hash': {
    type: 'enum', values: PASSWORD_HASHES, default: DEFAULT_PASSWORD_HASH, live: false,
    doc: 'Hash for user passwords added or updated from now on (sha = SHA-1); existing entries keep theirs.'
  },
  'auth.user.priority': {
    type: 'int', default: String(DEFAULT_AUTH_PRIORITY), live: false,
    doc: 'Place in the auth chain: higher runs first; equal priorities run in load order.'
  },
  'auth.user.<name>.username': {
    type: 'string', live: false,
    doc: 'A username added when the plugin loads, unless it already exists (EMQ X auth.user.$N.username).'
  },
  'auth.user.<name>.password': { type: 'string', live: false, secret: true, doc: 'Its password.' }
} as const satisfies ConfigSchema

/** What differs between the two plugins. */
interface CredentialPluginSpec {
  name: string
  description: string
  /** `auth.client` or `auth.user`. */
  prefix: string
  /** Key suffix of the preset ids: `clientid` or `username`. */
  idKey: string
  group: CredentialCommandGroup
  /** Its table's name in the API (`/api/v3/auth_clientid`) and its operations. */
  table: CredentialTable
  routes: RouteDef[]
  ctl: ReadonlyArray<CtlCommand<any>>
  schema: ConfigSchema
  create: (tables: CredentialTables, opts: CredentialServiceOptions) => CredentialService
  /** The id a connecting client is looked up by. */
  pick: (info: AuthInfo) => string | undefined
}

function defineCredentialPlugin (spec: CredentialPluginSpec): StarlingPlugin {
  return {
    name: spec.name,
    version: VERSION,
    description: spec.description,
    configSchema: spec.schema,
    ctl: spec.ctl,
    loadedByDefault: false,
    // the table is stored data: its operations and API endpoints serve it whether or not the
    // plugin is loaded; while unloaded, its ctl commands answer "load the plugin first" (EMQ X's hint)
    async attach (node, parts) {
      const detachControl = attachCredentialPlaceholders(node.control, spec.group)
      const unregister = registerAuthOperations(node, spec.table)
      const removeRoutes = parts.api.add(spec.routes)
      // the table goes into data exports and comes from imports whether or not the plugin is loaded
      const removeSection = node.services.backup.add(credentialSection(spec.create(node.shared, {}), spec.idKey === 'clientid' ? 'clientid' : 'username'))
      return async () => { removeSection(); removeRoutes(); unregister(); detachControl() }
    },
    async load (ctx: PluginContext): Promise<CredentialPluginInstance> {
      const { node, logger } = ctx
      const hashKey = `${spec.prefix}.password_hash`
      const priorityKey = `${spec.prefix}.priority`
      const passwordHash = parsePasswordHashName(ctx.config[hashKey] ?? DEFAULT_PASSWORD_HASH, hashKey)
      const priority = ctx.config[priorityKey] ?? DEFAULT_AUTH_PRIORITY
      if (!Number.isInteger(priority)) throw ConfigError.badValue(priorityKey, String(priority), 'an integer', 'plugin config')
      // the cluster-wide table: a user added on any node logs in here (no cache to follow)
      const service = spec.create(node.shared, { passwordHash })
      await addPresets(spec, ctx, service)

      node.broker.addAuthenticator({
        name: spec.name,
        priority,
        authenticate: async (info) => {
          const verdict = await service.authenticate(spec.pick(info), info.password)
          if (verdict !== 'ignore') logger.debug({ clientId: info.clientId, username: info.username, verdict }, 'auth decision')
          return verdict
        }
      })
      let unregister: () => void
      try {
        unregister = registerCredentialControl(node.control, spec.group, service)
      } catch (err) {
        node.broker.removeAuthenticator(spec.name)
        throw err
      }
      logger.info({ priority, passwordHash }, `${spec.name} loaded`)
      let loaded = true
      return {
        service,
        async unload () {
          if (!loaded) return
          loaded = false
          node.broker.removeAuthenticator(spec.name)
          unregister()
          logger.info(`${spec.name} unloaded`)
        }
      }
    }
  }
}

/** Adds the `<prefix>.<name>.<idKey>` entries of the config that are not in the table yet. */
async function addPresets (spec: CredentialPluginSpec, ctx: PluginContext, service: CredentialService): Promise<void> {
  const ids: Record<string, string> = ctx.config[`${spec.prefix}.<name>.${spec.idKey}`] ?? {}
  const passwords: Record<string, string> = ctx.config[`${spec.prefix}.<name>.password`] ?? {}
  for (const [name, id] of Object.entries(ids)) {
    if (service.lookup(id) !== undefined) continue
    try {
      await service.add(id, passwords[name])
    } catch (err) {
      ctx.logger.warn({ err, key: `${spec.prefix}.${name}.${spec.idKey}` }, `cannot add preset ${service.kind} ${id}`)
    }
  }
}

/** `svc_auth_clientid`: authenticates by client id and password (table `auth_clientid`). */
export const svcAuthClientid: StarlingPlugin = defineCredentialPlugin({
  name: 'svc_auth_clientid',
  description: 'Authentication with client id and password',
  prefix: 'auth.client',
  idKey: 'clientid',
  group: 'clientid',
  table: 'auth_clientid',
  routes: AUTH_CLIENTID_ROUTES,
  ctl: CLIENTID_CTL_COMMANDS,
  schema: AUTH_CLIENTID_CONFIG_SCHEMA,
  create: createAuthClientids,
  pick: (info) => info.clientId
})

/** `svc_auth_username`: authenticates by username and password (table `auth_username`). */
export const svcAuthUsername: StarlingPlugin = defineCredentialPlugin({
  name: 'svc_auth_username',
  description: 'Authentication with username and password',
  prefix: 'auth.user',
  idKey: 'username',
  group: 'users',
  table: 'auth_username',
  routes: AUTH_USERNAME_ROUTES,
  ctl: USERS_CTL_COMMANDS,
  schema: AUTH_USERNAME_CONFIG_SCHEMA,
  create: createAuthUsers,
  pick: (info) => info.username
})
