/**
 * `svc_dashboard` (EMQ X's emqx_dashboard), the server side of the web console: loaded, it
 * listens on `dashboard.listener.http` (and `dashboard.listener.https` when set), reports
 * itself as `http:dashboard` on the listener board (`/api/v3/listeners`), and serves there
 * sign-in, the dashboard users, the monitor's history of the node's counters (monitor.ts,
 * monitor-routes.ts) and the whole `/api/v3/` to signed-in users (app.ts), and lets a
 * signed-in user's pages connect over MQTT/WebSocket with a token (mqtt-token.ts); unloaded,
 * it stops listening and sampling.
 *
 * Attached (loaded or not, once per node start): the users table and this node's signing key
 * in the shared data (cluster-wide, so they replicate from the first join), the default user
 * created at first start (its generated password shown once in a warn line), and the
 * `admins` commands. docs/dashboard.md is the user's view.
 *
 * Invariant: everything a node's plugin holds (users service, sessions, backoff, listener)
 * belongs to the instance {@link createDashboardPlugin} made for that node.
 */
import { createRouteTable } from '../../api/route-table.js'
import { lazyRequestListener, startHttpListeners, type HttpListeners } from '../../node/http-listener.js'
import { VERSION } from '../../node/version.js'
import type { StarlingNode } from '../../node/node.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dashboardAuthenticator, type DashboardAuthComponents } from './auth.js'
import { createLoginBackoff } from './backoff.js'
import { ADMINS_CTL_COMMANDS, registerAdminsControl } from './ctl.js'
import { createMonitor } from './monitor.js'
import { DASHBOARD_OPENAPI } from './openapi.js'
import { monitorRoutes, registerMonitorOperations } from './monitor-routes.js'
import { dashboardRoutes } from './routes.js'
import { createDashboardSessions } from './sessions.js'
import { createMqttTokens, mqttTokenRoutes, registerMqttTokens } from './mqtt-token.js'
import { createDashboardUsers } from './users.js'
import { dashboardUsersSection } from './backup-section.js'

/** The plugin's name. */
export const DASHBOARD_PLUGIN = 'svc_dashboard'

/** Acceptors reported for the dashboard listener: Node accepts on one event loop. */
const DASHBOARD_ACCEPTORS = 1
/** Most connections open at once over HTTP and HTTPS together (as the management listener's default); more are closed unanswered. */
const DASHBOARD_MAX_CONNS = 512

/** Creates the users, the signing key and the default user of `node`; the auth components. */
async function attachUsers (node: StarlingNode): Promise<DashboardAuthComponents> {
  const users = createDashboardUsers(node.shared, () => node.config['dashboard.default_user.login'])
  const sessions = createDashboardSessions(node.shared, node.name, users)
  await sessions.ensureKey()
  const login = node.config['dashboard.default_user.login']
  const generated = await users.bootstrap(login, node.config['dashboard.default_user.password'])
  if (generated !== null) {
    // shown once: the operator signs in with it and is asked to change it (or sets dashboard.default_user.password)
    node.logger.warn({ username: login, password: generated },
      'dashboard: created the default user with a generated password; keep it, it is not shown again, and change it at first sign-in')
  }
  return { users, sessions, backoff: createLoginBackoff() }
}

/** Starts the dashboard listeners of `node` serving `app`. */
async function listen (node: StarlingNode, app: Parameters<typeof startHttpListeners>[0]): Promise<HttpListeners> {
  const cfg = node.config
  const tls = cfg['dashboard.listener.https']
  const verifyPeer = cfg['dashboard.listener.https.verify'] === 'verify_peer'
  return await startHttpListeners(app, {
    http: cfg['dashboard.listener.http'] === null ? undefined : { address: cfg['dashboard.listener.http'], key: 'dashboard.listener.http' },
    https: tls === null
      ? undefined
      : {
          address: tls,
          key: 'dashboard.listener.https',
          keyfile: cfg['dashboard.listener.https.keyfile'],
          certfile: cfg['dashboard.listener.https.certfile'],
          // the CAs are read only when browsers are asked for certificates, as on the MQTT listeners
          ...verifyPeer
            ? { cacertfile: cfg['dashboard.listener.https.cacertfile'], verify: 'verify_peer' as const, failIfNoPeerCert: cfg['dashboard.listener.https.fail_if_no_peer_cert'] }
            : {}
        },
    maxConns: () => DASHBOARD_MAX_CONNS
  })
}

/** svc_dashboard for one node. */
export function createDashboardPlugin (): StarlingPlugin {
  let auth: DashboardAuthComponents | undefined
  return {
    name: DASHBOARD_PLUGIN,
    version: VERSION,
    description: 'Starling Dashboard',
    configSchema: {},
    loadedByDefault: true,
    ctl: ADMINS_CTL_COMMANDS,
    async attach (node) {
      const attached = await attachUsers(node)
      auth = attached
      const unregister = registerAdminsControl(node.control, attached.users)
      const removeSection = node.services.backup.add(dashboardUsersSection(attached.users))
      return async () => {
        removeSection()
        unregister()
        if (auth === attached) auth = undefined
      }
    },
    async load ({ node, parts, logger }) {
      if (node.config['dashboard.listener.http'] === null && node.config['dashboard.listener.https'] === null) {
        // loaded (its users stay managed by starling-ctl admins), serving nothing
        logger.info('dashboard: dashboard.listener.http and .https are off; nothing listens')
        return { unload: async () => {} }
      }
      const components = auth ?? await attachUsers(node)
      const authenticate = dashboardAuthenticator(components)
      const tokens = createMqttTokens(logger)
      const own = createRouteTable([...dashboardRoutes(components.users), ...monitorRoutes(), ...mqttTokenRoutes(node, tokens)])
      // Express, the pages and the API's routers load with the first request (an idle node has none)
      const app = lazyRequestListener(async () => {
        const { createDashboardApp } = await import('./app.js')
        return createDashboardApp({ auth: components, authenticate, api: await parts.api.app(node, authenticate, own, DASHBOARD_OPENAPI), logger })
      })
      const stats = (): Record<string, number> => node.services.stats.snapshot()
      const monitor = createMonitor({
        metrics: node.metrics,
        gauges: () => { const s = stats(); return { connections: s['connections/count'], subscriptions: s['subscriptions/count'] } }
      })
      const unregisterMonitor = registerMonitorOperations({ rpc: node.rpc, monitor, stats })
      let listeners: HttpListeners
      try {
        listeners = await listen(node, app)
      } catch (err) {
        unregisterMonitor()
        throw err
      }
      monitor.start()
      const unregisterTokens = registerMqttTokens(node, tokens)
      // the HTTP listener, or the HTTPS one when HTTP is off
      const address = node.config['dashboard.listener.http'] ?? node.config['dashboard.listener.https']!
      const port = listeners.port ?? listeners.httpsPort!
      const protocol = listeners.port === undefined ? 'https:dashboard' : 'http:dashboard'
      logger.info({ protocol, host: address.host, port }, 'listener started')
      if (listeners.port !== undefined && listeners.httpsPort !== undefined) logger.info({ protocol: 'https:dashboard', port: listeners.httpsPort }, 'dashboard (HTTPS) started')
      const unreport = node.listenerBoard.add(() => ({
        protocol,
        listen_on: `${address.host}:${port}`,
        acceptors: DASHBOARD_ACCEPTORS,
        max_conns: DASHBOARD_MAX_CONNS,
        current_conns: listeners.connections(),
        shutdown_count: []
      }))
      return {
        unload: async () => {
          unregisterTokens()
          unreport()
          monitor.stop()
          unregisterMonitor()
          await listeners.stop()
        }
      }
    }
  }
}
