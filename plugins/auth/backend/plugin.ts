/**
 * How an external auth/ACL backend becomes a plugin (`svc_auth_mysql`, `_pgsql`, `_redis`,
 * `_mongo`, `_http`, `_ldap`, `_jwt`): one definition per backend says how to open its
 * client from the plugin's config and how to ask it; this module does the rest, the same
 * for every backend, as docs/auth.md describes:
 *
 * - **Chain**: loading the plugin adds an authenticator to the broker's auth chain and an
 *   ACL source to the ACL service, both at `auth.<backend>.priority` (default 0: before the
 *   ACL file at -1, and beside the built-in credential plugins in load order); unloading
 *   removes both and closes the client.
 * - **Verdicts**: a backend answers `allow` (with `superuser`), `deny` or `ignore`; a
 *   superuser bypasses the ACL. Usernames starting with `$` skip the backend's ACL where
 *   EMQ X's did (`skipDollarUsernames`).
 * - **Down backend**: a query that fails or takes longer than `auth.<backend>.timeout`
 *   answers `ignore` (the chain goes on; at its end `allow_anonymous` and `acl_nomatch`
 *   decide), so a CONNECT never waits past the timeout. The alarm
 *   `<plugin>_unreachable` is raised at the first failure and cleared only by a request sent
 *   after it was raised and answered by the backend's server ({@link BackendRequest.answered}):
 *   a request the backend decides without asking (no username, a placeholder without a
 *   value, a key set or claims it already holds) says nothing about the server and leaves
 *   the alarm as it is.
 * - **Counts**: per plugin (`counts()`, logged at unload) beside the node's
 *   `client.auth.*` / `client.acl.*` metrics, which the broker and ACL service count.
 *
 * Invariant: every request to a backend is bounded by the timeout; a late answer after
 * the timeout is dropped, never applied.
 */
import type { AccessClient, AuthInfo, AuthResult } from '../../../node/mqtt/broker-types.js'
import type { AclAction } from '../../../node/acl/acl-matcher.js'
import type { AclVerdict } from '../../../node/acl/acl-service.js'
import type { ConfigSchema } from '../../../node/config/index.js'
import { resolve } from 'node:path'
import { ConfigError, configRoot } from '../../../node/config/index.js'
import type { Logger } from '../../../node/logger.js'
import type { HooksBus } from '../../../node/hooks.js'
import type { PluginContext, PluginDefinition, PluginInstance } from '../../../node/plugins/types.js'
import { VERSION } from '../../../node/version.js'
import type { AuthContext } from './placeholders.js'
import { skipsBackendAcl, type BackendVerdict } from './verdict.js'

/** A backend's answer to a CONNECT. */
export interface BackendAuthResult {
  verdict: BackendVerdict
  /** With `allow`: whether the client is a superuser (the backend's `super_query` or equivalent). */
  superuser?: boolean
}

/**
 * One request of the framework to a backend: a CONNECT's authentication or one ACL check.
 *
 * Invariant: the backend calls {@link BackendRequest.answered} when, and only when, its
 * server answered a query made for this request (a reply, rows, a document, an entry list,
 * an HTTP status, a fetched key set), whatever the answer says. A request it decides from
 * what it already knows (no username, a placeholder without a value, a cached key set, the
 * token's own claims) never calls it. Only an answered request clears the plugin's
 * `<plugin>_unreachable` alarm, so the alarm stays up for the whole outage.
 */
export interface BackendRequest {
  /** Marks that the server answered a query of this request. */
  answered: () => void
}

/** An open backend: the queries a plugin makes. Each may throw; the framework bounds and catches them. */
export interface BackendClient {
  /** Authenticates a CONNECT; absent when the backend does no authentication (e.g. ACL only). */
  authenticate?: (ctx: AuthContext, request: BackendRequest) => Promise<BackendAuthResult>
  /** Decides a publish (`ctx.access` 2) or subscribe (1) on `ctx.topic`; absent when the backend has no ACL query. */
  checkAcl?: (ctx: AuthContext, action: AclAction, request: BackendRequest) => Promise<BackendVerdict>
  /** Closes the pool or connections; pending queries may fail. */
  close: () => Promise<void>
}

/** What a backend definition is given to open its client. */
export interface BackendOpenContext {
  /** The plugin's config (`etc/plugins/<name>.conf` with the schema's defaults). */
  config: Record<string, any>
  logger: Logger
  /** Resolves a path key against the install root (certificate files ...). */
  resolvePath: (path: string) => string
  /** The node's hooks bus (`client.disconnected` ...), for a backend that keeps per-connection state. */
  hooks: HooksBus
}

/** One backend, as the code defines it. */
export interface BackendDefinition {
  /** `svc_auth_<backend>`. */
  name: string
  description: string
  /** The key prefix, e.g. `auth.mysql`: `<prefix>.priority` and `<prefix>.timeout` are added to the schema unless it has them. */
  prefix: string
  /** The backend's own keys (EMQ X 4.4's names). */
  configSchema: ConfigSchema
  /**
   * Whether usernames starting with `$` skip this backend's ACL (default true: EMQ X's HTTP,
   * SQL, Redis and LDAP ACLs did; its JWT and MongoDB ones did not).
   */
  skipDollarUsernames?: boolean
  /** Opens the client; a bad config throws a ConfigError (the plugin does not load). Must not wait for the server. */
  open: (ctx: BackendOpenContext) => BackendClient | Promise<BackendClient>
}

/** The keys every backend plugin has, beside its own. */
export function commonBackendKeys (prefix: string): ConfigSchema {
  return {
    [`${prefix}.priority`]: {
      type: 'int', default: '0', live: false,
      doc: 'Place in the auth chain and the ACL chain: higher runs first; equal priorities run in load order (the ACL file is at -1).'
    },
    [`${prefix}.timeout`]: {
      type: 'duration', default: '5s', min: 1, live: false,
      doc: 'Longest wait for one query; past it (or when the server cannot be reached) the plugin answers ignore, and the next in the chain decides.'
    }
  }
}

/** Counts of one loaded backend plugin. */
export interface BackendCounts {
  'auth.allow': number
  'auth.deny': number
  'auth.ignore': number
  'acl.allow': number
  'acl.deny': number
  'acl.ignore': number
  /** Queries that failed or timed out (answered ignore). */
  errors: number
}

/** A loaded backend plugin. */
export interface BackendInstance extends PluginInstance {
  counts: () => BackendCounts
}

/** Raised when a query takes longer than the timeout. */
class BackendTimeoutError extends Error {
  readonly code = 'STARLING_AUTH_BACKEND_TIMEOUT'
  constructor (plugin: string, ms: number) {
    super(`${plugin}: no answer within ${ms} ms`)
    this.name = 'BackendTimeoutError'
  }
}

/** The placeholder context of a CONNECT. */
export function authContextOf (info: AuthInfo): AuthContext {
  return {
    clientId: info.clientId,
    username: info.username,
    password: info.password,
    peerhost: info.peerhost,
    protocol: 'mqtt',
    sockport: info.sockport,
    certCn: info.certCn,
    certDn: info.certDn
  }
}

/** The placeholder context of an ACL check. */
export function aclContextOf (client: AccessClient, action: AclAction, topic: string): AuthContext {
  return {
    clientId: client.clientId,
    username: client.username,
    peerhost: client.peerhost,
    protocol: 'mqtt',
    sockport: client.sockport,
    certCn: client.certCn,
    certDn: client.certDn,
    access: action === 'subscribe' ? 1 : 2,
    topic,
    // the client's mountpoint (zone.<name>.mountpoint, listener.<kind>.<name>.mountpoint), expanded
    mountpoint: client.mountpoint
  }
}

/** Turns a backend definition into its plugin. */
export function defineAuthBackend (def: BackendDefinition): PluginDefinition {
  const schema: ConfigSchema = { ...commonBackendKeys(def.prefix), ...def.configSchema }
  return {
    name: def.name,
    version: VERSION,
    description: def.description,
    type: 'auth',
    configSchema: schema,
    loadedByDefault: false,
    load: async (ctx) => await loadBackend(def, ctx)
  }
}

async function loadBackend (def: BackendDefinition, ctx: PluginContext): Promise<BackendInstance> {
  const { node, logger, config } = ctx
  const priority = config[`${def.prefix}.priority`] ?? 0
  if (!Number.isInteger(priority)) throw ConfigError.badValue(`${def.prefix}.priority`, String(priority), 'an integer', 'plugin config')
  const timeoutMs: number = config[`${def.prefix}.timeout`] ?? 5000
  const root = configRoot(node.config)
  const client = await def.open({ config, logger, resolvePath: (path) => resolve(root, path), hooks: node.hooks })
  const counts: BackendCounts = { 'auth.allow': 0, 'auth.deny': 0, 'auth.ignore': 0, 'acl.allow': 0, 'acl.deny': 0, 'acl.ignore': 0, errors: 0 }
  const alarmId = `${def.name}_unreachable`
  let alarmed = false
  /** Raises of the alarm so far: a request sent before the latest one proves nothing about now. */
  let raises = 0

  /**
   * Runs one request bounded by the timeout; a failure raises the alarm and answers
   * `fallback`. The alarm is cleared only when the request completed in time and the
   * server answered it (a late answer is dropped: it clears nothing either), and only by a
   * request sent after the alarm was raised (an answer already on its way when the server
   * went down is no sign that it is back).
   */
  async function bounded<T> (what: string, run: (request: BackendRequest) => Promise<T>, fallback: T, clientId: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    let answered = false
    const sentAfter = raises
    const request: BackendRequest = { answered: () => { answered = true } }
    try {
      const answer = await Promise.race([
        run(request),
        new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new BackendTimeoutError(def.name, timeoutMs)), timeoutMs) })
      ])
      if (alarmed && answered && sentAfter === raises) {
        alarmed = false
        node.services.alarms.deactivate(alarmId)
        logger.info(`${def.name}: the backend answers again`)
      }
      return answer
    } catch (err) {
      counts.errors++
      if (!alarmed) {
        alarmed = true
        raises++
        node.services.alarms.activate(alarmId, `${def.name}: the backend cannot be reached; its clients are decided by the rest of the chain`, { plugin: def.name, error: (err as Error).message })
      }
      logger.warn({ err, clientId }, `${def.name}: ${what} failed; answering ignore`)
      return fallback
    } finally {
      clearTimeout(timer)
    }
  }

  const offs: Array<() => void> = []
  if (client.authenticate !== undefined) {
    const authenticate = client.authenticate
    node.broker.addAuthenticator({
      name: def.name,
      priority,
      authenticate: async (info): Promise<AuthResult> => {
        const result = await bounded('authentication', async (request) => await authenticate(authContextOf(info), request), { verdict: 'ignore' } as BackendAuthResult, info.clientId)
        counts[`auth.${result.verdict}`]++
        if (result.verdict !== 'ignore') logger.debug({ clientId: info.clientId, username: info.username, verdict: result.verdict, superuser: result.superuser === true }, 'auth decision')
        return { verdict: result.verdict, superuser: result.verdict === 'allow' && result.superuser === true }
      }
    })
    offs.push(() => { node.broker.removeAuthenticator(def.name) })
  }
  if (client.checkAcl !== undefined) {
    const checkAcl = client.checkAcl
    const skipDollar = def.skipDollarUsernames ?? true
    offs.push(node.services.acl.addSource({
      name: def.name,
      priority,
      check: async (who, action, topic): Promise<AclVerdict> => {
        if (skipDollar && skipsBackendAcl(who.username)) return 'ignore'
        const verdict = await bounded('ACL query', async (request) => await checkAcl(aclContextOf(who, action, topic), action, request), 'ignore' as BackendVerdict, who.clientId)
        counts[`acl.${verdict}`]++
        return verdict
      }
    }))
  }
  logger.info({ priority, timeoutMs }, `${def.name} loaded`)
  let loaded = true
  return {
    counts: () => ({ ...counts }),
    async unload () {
      if (!loaded) return
      loaded = false
      for (const off of offs.splice(0)) off()
      if (alarmed) node.services.alarms.deactivate(alarmId)
      await client.close().catch((err: Error) => logger.warn({ err }, `${def.name}: closing the backend failed`))
      logger.info({ counts }, `${def.name} unloaded`)
    }
  }
}
