import { resolve } from 'node:path'
import type { StarlingNode } from './node.js'
import type { PluginDefinition } from './plugins/types.js'
import { createAclService, type AclService } from './acl/index.js'
import { createBannedService, registerBannedControl, type BannedService } from './banned/index.js'
import { ListenError } from './listen-error.js'
import { createPluginManager, registerPluginControl, CORE_PLUGINS, type PluginManager } from './plugins/index.js'
import { svcAuthClientid, svcAuthUsername } from './auth/index.js'
import { createStats, type Stats } from './stats.js'
import { createAlarms, createOsMonitor, type Alarms } from './alarms/index.js'
import { createSysService, createSysmon, createMissedAcksTap, combineTaps } from './sys/index.js'
import { createTraceService, createLogService, type TraceService } from './trace/index.js'
import { createApps, type AppsService } from './apps/apps.js'
import { registerAppsControl } from './apps/ctl.js'
import { registerOperations } from './ops/index.js'

/** The services a node runs on top of its MQTT core (what the API and the CLI read). */
export interface NodeServices {
  acl: AclService
  banned: BannedService
  plugins: PluginManager
  stats: Stats
  alarms: Alarms
  traces: TraceService
  /** API applications (Basic auth credentials of the management API). */
  apps: AppsService
}

/** Where plugin configuration comes from. */
export interface ServicesInit {
  /** Working directory; plugin configs default to `<cwd>/etc/plugins/`. */
  cwd: string
  etcDir?: string
  env?: Record<string, string | undefined>
  /** Every plugin the node offers, in load order (see NodeParts); default the core's own. */
  plugins?: readonly PluginDefinition[]
  /** Operations of the parts above the core, registered after the core's. */
  operations?: ReadonlyArray<(node: StarlingNode) => void>
}

/** The core's own plugins, in load order: what a node without parts offers. */
export const CORE_PLUGIN_LIST: readonly PluginDefinition[] = [...CORE_PLUGINS, svcAuthClientid, svcAuthUsername]

/** Anything with a start and a stop, sync or async. */
interface Startable { start: () => unknown, stop: () => unknown }

/**
 * Starts the node's services in dependency order, before any listener accepts a client
 * (so the ACL, banned list and packet tap apply to the first connection). Each started
 * service's stop is handed to `onStop`; the node runs them in reverse order.
 */
export async function startServices (node: StarlingNode, init: ServicesInit, onStop: (stop: () => Promise<void>) => void): Promise<NodeServices> {
  const services = node.services as NodeServices
  const started = async (service: Startable): Promise<void> => {
    await service.start()
    onStop(async () => { await service.stop() })
  }
  const unregister = (off: () => void): void => onStop(async () => off())

  registerOperations(node)
  for (const register of init.operations ?? []) register(node)
  services.acl = createAclService(node)
  await started(services.acl)
  services.banned = createBannedService(node)
  await started(services.banned)
  unregister(registerBannedControl(node, services.banned))

  services.stats = createStats(node)
  await started(services.stats)
  services.alarms = createAlarms(node)
  onStop(() => services.alarms.flushed()) // pending history writes, before the store closes
  await started(createOsMonitor(node, services.alarms))
  await started(createSysService(node, { stats: services.stats.snapshot, runningNodes: () => node.rpc.nodes() }))
  await started(createSysmon(node))
  services.traces = createTraceService(node)
  await started(services.traces)
  await started(createLogService(node))
  node.broker.packetTap = combineTaps(createMissedAcksTap(node.metrics), services.traces.packetTap)

  services.apps = createApps(node.shared, node.logger, () => node.config['management.default_application.id'])
  await services.apps.migrate()
  const generated = await services.apps.bootstrap(node.config['management.default_application.id'], node.config['management.default_application.secret'])
  if (generated !== null) {
    // shown once: the operator copies it (or sets management.default_application.secret)
    node.logger.warn({ app_id: node.config['management.default_application.id'], secret: generated },
      'management API: created the default application with a generated secret; keep it, it is not shown again')
  }
  unregister(registerAppsControl(node, services.apps))

  services.plugins = createPluginManager({
    node,
    definitions: [...(init.plugins ?? CORE_PLUGIN_LIST)],
    etcDir: init.etcDir ?? resolve(init.cwd, 'etc'),
    env: init.env
  })
  const failed = await services.plugins.start()
  onStop(() => services.plugins.stop())
  // a plugin's listener that cannot bind (the management API) stops the start, as the MQTT
  // and cluster listeners do: a node must not say it runs without the listeners it was given
  const unbound = failed.find(err => err.cause instanceof ListenError)
  if (unbound !== undefined) throw unbound.cause as ListenError
  for (const err of failed) node.logger.error({ err, plugin: err.plugin }, 'a plugin could not be loaded')
  unregister(registerPluginControl(node, services.plugins))
  return services
}
