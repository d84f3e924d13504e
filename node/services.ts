import { resolve } from 'node:path'
import type { StarlingNode } from './node.js'
import type { PluginDefinition } from './plugins/types.js'
import { createAclService, type AclService } from './acl/index.js'
import { createBannedService, registerBannedControl, type BannedService } from './banned/index.js'
import { ListenError } from './listen-error.js'
import { createPluginManager, registerPluginControl, type PluginManager } from './plugins/index.js'
import { createStats, type Stats } from './stats.js'
import { createAlarms, createOsMonitor, type Alarms } from './alarms/index.js'
import { createSysService, createSysmon, createMissedAcksTap } from './sys/index.js'
import { createTraceService, createLogService, type TraceService } from './trace/index.js'
import { createApps, type AppsService } from './apps/apps.js'
import { registerAppsControl } from './apps/ctl.js'
import { createFlappingDetector } from './flapping/index.js'
import { createBackupSections, type BackupSections } from './ops/backup/sections.js'
import { aclTableSection, appsSection, bannedSection } from './ops/backup/core-sections.js'

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
  /**
   * The sections of a data export and import (docs/backup.md): the core adds its applications
   * and banned list; the rule engine and the plugins add the tables they keep.
   */
  backup: BackupSections
  /**
   * The default application's secret when this start generated it (the node's first start
   * with `management.default_application.secret` empty), else null: the program shows it
   * once, after the listeners are open (bin/starling.ts). Never logged.
   */
  generatedApiSecret: string | null
}

/** Where plugin configuration comes from. */
export interface ServicesInit {
  /** Working directory; plugin configs default to `<cwd>/etc/plugins/`. */
  cwd: string
  etcDir?: string
  env?: Record<string, string | undefined>
  /** Every plugin the node offers, in load order (see NodeParts); default none. */
  plugins?: readonly PluginDefinition[]
  /** What the plugins are given as `parts` (NodeParts.pluginParts). */
  pluginParts?: unknown
}

/**
 * What the services use of the node: its core, built before them. (The plugins get the
 * whole node, once it is complete: {@link startPlugins}.)
 */
export type ServicesComponents = Pick<StarlingNode, 'config' | 'logger' | 'store' | 'shared' | 'broker' | 'metrics' | 'hooks' | 'control' | 'name' | 'rpc' | 'startedAt'>

/** Anything with a start and a stop, sync or async. */
interface Startable { start: () => unknown, stop: () => unknown }

/**
 * Starts the node's services in dependency order, before any listener accepts a client
 * (so the ACL, banned list and packet taps apply to the first connection), and creates
 * the plugin manager (its plugins load in {@link startPlugins}, once the node is
 * complete). Each started service's stop is handed to `onStop`; the node runs them in
 * reverse order.
 */
export async function startServices (node: ServicesComponents, init: ServicesInit, onStop: (stop: () => Promise<void>) => void): Promise<NodeServices> {
  const started = async (service: Startable): Promise<void> => {
    await service.start()
    onStop(async () => { await service.stop() })
  }
  const unregister = (off: () => void): void => onStop(async () => off())

  const acl = createAclService(node)
  await started(acl)
  const banned = createBannedService(node)
  await started(banned)
  unregister(registerBannedControl(node, banned))

  const stats = createStats(node)
  await started(stats)
  const alarms = createAlarms(node)
  onStop(() => alarms.flushed()) // pending history writes, before the store closes
  await started(createOsMonitor(node, alarms))
  await started(createFlappingDetector(node, banned, alarms))
  await started(createSysService(node, { stats: stats.snapshot, runningNodes: () => node.rpc.nodes() }))
  await started(createSysmon(node))
  const traces = createTraceService(node)
  await started(traces)
  await started(createLogService(node))
  unregister(node.broker.addPacketTap(createMissedAcksTap(node.metrics)))
  unregister(node.broker.addPacketTap(traces.packetTap))

  const apps = createApps(node.shared, node.logger, () => node.config['management.default_application.id'])
  await apps.migrate()
  const generated = await apps.bootstrap(node.config['management.default_application.id'], node.config['management.default_application.secret'])
  if (generated !== null) {
    // the secret itself is shown once by the program, on stderr (a log file keeps no credential)
    node.logger.warn({ app_id: node.config['management.default_application.id'] },
      'management API: created the default application with a generated secret; it is printed once on standard error')
  }
  unregister(registerAppsControl(node, apps))

  const backup = createBackupSections()
  backup.add(bannedSection(banned))
  backup.add(appsSection(apps, () => node.config['management.default_application.id']))
  backup.add(aclTableSection())

  const plugins = createPluginManager({
    components: node,
    definitions: [...(init.plugins ?? [])],
    parts: init.pluginParts,
    etcDir: init.etcDir ?? resolve(init.cwd, 'etc'),
    env: init.env
  })
  return { acl, banned, stats, alarms, traces, apps, plugins, backup, generatedApiSecret: generated }
}

/**
 * Loads the node's plugins (`data/loaded_plugins`) into the complete node and serves the
 * `plugins` commands. A plugin's listener that cannot bind (the management API) stops the
 * start, as the MQTT and cluster listeners do; other failures are logged.
 */
export async function startPlugins (node: StarlingNode, onStop: (stop: () => Promise<void>) => void): Promise<void> {
  const plugins = node.services.plugins
  const failed = await plugins.start(node)
  onStop(() => plugins.stop())
  // a node must not say it runs without the listeners it was given
  const unbound = failed.find(err => err.cause instanceof ListenError)
  if (unbound !== undefined) throw unbound.cause as ListenError
  for (const err of failed) node.logger.error({ err, plugin: err.plugin }, 'a plugin could not be loaded')
  const off = registerPluginControl(node, plugins)
  onStop(async () => off())
}
