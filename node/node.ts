import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Logger } from './logger.js'
import { type StarlingConfig, resolvePath, resolveConfigPath, configRoot, configWarnings, ensureDevCertificates, listenerNames } from './config/index.js'
import { CONFIG_SCHEMA } from './config/schema.js'
import { createStore, type Store } from './store/index.js'
import { SharedData } from './store/shared.js'
import { createStorePersistence } from './mqtt/persistence.js'
import { Broker } from './mqtt/broker.js'
import { brokerSettingsFrom } from './mqtt/settings.js'
import { MqttListener, type ListenerSpec, type ListenerInfo } from './mqtt/listeners.js'
import { createMetrics, type Metrics } from './metrics.js'
import { createControlServer, controlSocketPath, type ControlServer, type CtlCommand } from './control/index.js'
import { NODE_CTL_COMMANDS } from './ctl-commands.js'
import { VERSION } from './version.js'
import { ListenError } from './listen-error.js'
import { HooksBus } from './hooks.js'
import { startServices, startPlugins, type NodeServices } from './services.js'
import { registerOperations } from './ops/index.js'
import { NodeRpc } from './rpc.js'
import { ListenerBoard } from './listener-board.js'
import type { PluginDefinition } from './plugins/types.js'
import type { RpcBridgeTransport } from './bridge-transport.js'

export type { NodeServices }

/** A running Starling node: the MQTT core, its listeners, store and control socket. */
export interface StarlingNode {
  readonly config: StarlingConfig
  readonly logger: Logger
  readonly store: Store
  /** Cluster-wide data (rules, resources, schemas, banned, auth users, apps): replicated store tables. */
  readonly shared: SharedData
  readonly broker: Broker
  readonly metrics: Metrics
  /** The hooks bus (spec event names); rules, $SYS, trace and the cluster listen here. */
  readonly hooks: HooksBus
  readonly listeners: readonly MqttListener[]
  readonly control: ControlServer
  /** `node.name`. */
  readonly name: string
  /** When the node finished starting (ms since epoch). */
  readonly startedAt: number
  /** Operations by name, on this node or (with the cluster) on any node: the API and CLI call these. */
  readonly rpc: NodeRpc
  /** The node's services (ACL, banned list, plugins, $SYS ...), started after the MQTT core. */
  readonly services: NodeServices
  /** The node's part in the cluster, when it was assembled with one; started after the services. */
  readonly cluster: ClusterPart | undefined
  /** Listeners of the parts above the core (the management API ...), for the listeners API. */
  readonly listenerBoard: ListenerBoard
  /** The bound port of a listener by protocol (`mqtt:tcp` ...), for tests and logs. */
  port: (protocol: ListenerSpec['protocol']) => number
  /** Stops accepting, disconnects clients (v5: 0x8B), flushes and closes the store. */
  stop: () => Promise<void>
}


/**
 * What the core needs of the cluster part: built with the node (before it starts), started
 * once the plugins run, stopped before the services. Its members reach the node's RPC
 * through {@link NodeRpc.attachRemote}.
 */
export interface ClusterPart {
  /** Every member this node knows, itself first, and whether it runs. */
  status: () => Array<{ name: string, status: 'running' | 'stopped' }>
  /** Starts the mesh; rejects when `cluster.listen` cannot be bound. */
  start: () => Promise<void>
  stop: () => Promise<void>
  /**
   * How RPC bridges (`bridge.mqtt.<name>.address = <node>@<host>[:<port>]`) reach a node of
   * another cluster: over the cluster transport, authenticated by `node.cookie`, never
   * making the two nodes members of each other. Absent when the cluster part offers none.
   */
  readonly bridgeTransport?: RpcBridgeTransport
}

/** The node's core and services: what the parts above the core are built from (everything but the parts). */
export type NodeComponents = Omit<StarlingNode, 'cluster' | 'port' | 'stop'>

/**
 * The parts above the core that a node is assembled with. The composition root
 * (bin/assemble.ts) gives them; the core imports none of them, so node/ never depends on
 * plugins/, rules/, cluster/ or api/ (a dependency check in CI holds that).
 */
export interface NodeParts {
  /** Every plugin the node offers, in load order (plugins/index.ts `pluginList`); default none. */
  plugins?: readonly PluginDefinition[]
  /**
   * What each plugin is given as `PluginContext.parts`: the extension points of the parts
   * above the core (plugins/kit/parts.ts `PluginParts`), opaque to the core.
   */
  pluginParts?: unknown
  /**
   * Registers a part's operations on the node's RPC (rule engine, schema registry), after the
   * core's, once the node is complete; each is awaited before the next (the rule engine may
   * load its compiler for the stored rules first).
   */
  operations?: ReadonlyArray<(node: StarlingNode) => void | Promise<void>>
  /** Builds the cluster part from the node's components (started after the plugins; a failure to bind is `cluster.listen`'s). */
  cluster?: (components: NodeComponents) => ClusterPart
  /** The parts' and the plugins' `starling-ctl` commands (rule engine, schema registry, cluster, each plugin's `ctl`): the control socket checks their arguments as it does the core's. */
  ctlCommands?: ReadonlyArray<CtlCommand<any>>
}

/** How a node is started beside its configuration. */
export interface StartNodeInit {
  /** The parts above the core (none: a single MQTT node with its services). */
  parts?: NodeParts
  logger: Logger
  /** Directory relative paths resolve against (default: the config's root, see loadConfig). */
  cwd?: string
  /** The `etc` directory (plugin configs in `<etcDir>/plugins/`); default `<cwd>/etc`. */
  etcDir?: string
  /** Environment for `STARLING_*` overrides of plugin keys (default: process.env). */
  env?: Record<string, string | undefined>
}

/**
 * Starts a node from a loaded configuration. Everything is started in dependency order
 * (store, MQTT core, listeners, control socket); a failure stops what was started and
 * rejects with an error naming what could not start.
 */
export async function startNode (config: StarlingConfig, init: StartNodeInit): Promise<StarlingNode> {
  const { logger } = init
  // EMQ X keys accepted without effect: one line each (docs/migration.md)
  for (const w of configWarnings(config)) logger.warn({ key: w.key, source: w.source }, w.message)
  const cwd = init.cwd ?? configRoot(config)
  const name = config['node.name']
  const dataDir = resolvePath(config, 'node.data_dir', cwd)
  // the store holds sessions, API apps and the cluster key: readable by the node's user only
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  chmodSync(dataDir, 0o700)
  const metrics = createMetrics()
  const store = await createStore({ dir: join(dataDir, 'store'), logger })
  const cleanups: Array<() => Promise<void>> = [() => store.close()]
  try {
    const persistence = createStorePersistence({ store, logger })
    const shared = new SharedData(store, name, { logger })
    const hooks = new HooksBus(logger.child({ component: 'hooks' }))
    const settings = brokerSettingsFrom(config)
    const broker = await Broker.create(settings, { logger: logger.child({ component: 'mqtt' }), metrics, hooks, persistence })
    // aedes.close() never destroys its persistence: wait for its writes before the store closes
    cleanups.unshift(async () => { await broker.close(); await persistence.destroy() })
    const expiry = broker.createSessionExpiry(logger.child({ component: 'mqtt:sessions' }))
    await expiry.start()
    cleanups.unshift(async () => expiry.stop())
    const listeners = listenerSpecs(config, cwd, logger).map(spec => new MqttListener(spec, broker, logger.child({ component: 'mqtt:listeners' })))
    const startedAt = Date.now()
    const table = [...NODE_CTL_COMMANDS, ...(init.parts?.ctlCommands ?? [])]
    const control = createControlServer({ socketPath: controlSocketPath(dataDir), logger, handlers: {}, table })
    control.register('status', () => ({ node: name, status: 'started', version: VERSION, uptime: Math.floor((Date.now() - startedAt) / 1000) }))
    control.register('listeners', (): ListenerInfo[] => listeners.map(l => l.info()))
    await control.start()
    cleanups.unshift(() => control.stop())
    const onStop = (stop: () => Promise<void>): void => { cleanups.unshift(stop) }
    const parts = init.parts ?? {}
    // One object, grown in typed steps: each part is given it when everything the part's
    // components type lists is in it, and the node's config, which the configs API replaces
    // (node/ops/config-ops.ts), is the same for all of them.
    const core = { config, logger, store, shared, broker, metrics, hooks, listeners, control, name, startedAt, rpc: new NodeRpc(name), listenerBoard: new ListenerBoard() }
    const services = await startServices(core, { cwd, etcDir: init.etcDir, env: init.env, plugins: parts.plugins, pluginParts: parts.pluginParts }, onStop)
    const components: NodeComponents = Object.assign(core, { services })
    const cluster = parts.cluster?.(components)
    let stopping: Promise<void> | null = null
    const node: StarlingNode = Object.assign(components, {
      cluster,
      port: (protocol: ListenerSpec['protocol']) => listeners.find(l => l.spec.protocol === protocol)?.port ?? 0,
      stop: () => (stopping ??= runAll(cleanups, logger))
    })
    // the operations the API and the CLI call, the core's then the parts', before any plugin runs
    registerOperations(node)
    for (const register of parts.operations ?? []) await register(node)
    await startPlugins(node, onStop)
    if (cluster !== undefined) {
      try {
        await cluster.start()
      } catch (err: any) {
        throw new ListenError('cluster.listen', config['cluster.listen']?.text ?? 'off', err)
      }
      onStop(() => cluster.stop())
      warnOfDefaultCookie(config, logger)
    }
    // accept clients last: every service (ACL, banned list, packet tap) applies to the first one
    for (const listener of listeners) {
      try {
        await listener.start()
      } catch (err: any) {
        // the key of each MQTT listener: listener.tcp.external for mqtt:tcp, and so on
        throw new ListenError(listener.spec.key ?? `listener.${listener.spec.protocol.slice('mqtt:'.length)}.external`, `${listener.spec.host}:${listener.spec.port}`, err)
      }
      cleanups.unshift(() => listener.stop())
    }
    logger.info({ version: VERSION, dataDir }, `node ${name} started`)
    return node
  } catch (err) {
    await runAll(cleanups, logger)
    throw err
  }
}

async function runAll (steps: Array<() => Promise<void>>, logger: Logger): Promise<void> {
  for (const step of steps) {
    try {
      await step()
    } catch (err) {
      logger.warn({ err }, 'error while stopping')
    }
  }
}

/**
 * The MQTT listeners from `listener.<tcp|ssl|ws|wss>.<name>*`: `external`, then those of other
 * names (EMQ X's `listener.tcp.internal`, docs/migration.md); an empty address disables one.
 */
function listenerSpecs (cfg: StarlingConfig, cwd: string, logger: Logger): ListenerSpec[] {
  const c = cfg as Record<string, any>
  const specs: ListenerSpec[] = []
  const kinds = [['tcp', 'mqtt:tcp'], ['ssl', 'mqtt:ssl'], ['ws', 'mqtt:ws'], ['wss', 'mqtt:wss']] as const
  for (const [kind, protocol] of kinds) for (const name of listenerNames(c, kind)) {
    const key = `listener.${kind}.${name}`
    const address = c[key]
    if (address === null || address === undefined) continue
    const spec: ListenerSpec = {
      key,
      protocol,
      host: address.host,
      port: address.port,
      maxConns: c[`${key}.max_conns`],
      acceptors: c[`${key}.acceptors`],
      zone: c[`${key}.zone`],
      mountpoint: c[`${key}.mountpoint`]
    }
    if (kind === 'ws' || kind === 'wss') spec.path = c[`${key}.mqtt_path`]
    if (c[`${key}.proxy_protocol`] === true) spec.proxyProtocol = { timeoutMs: c[`${key}.proxy_protocol_timeout`] }
    if (kind === 'ssl' || kind === 'wss') {
      // relative to the installation, or (etc/...) the user's etc directory
      const file = (k: string): string => resolveConfigPath(cfg, c[`${key}.${k}`], cwd)
      spec.tls = {
        keyfile: file('keyfile'),
        certfile: file('certfile'),
        cacertfile: file('cacertfile'),
        verify: c[`${key}.verify`],
        failIfNoPeerCert: c[`${key}.fail_if_no_peer_cert`],
        peerCertAsUsername: c[`${key}.peer_cert_as_username`],
        handshakeTimeoutMs: kind === 'ssl' ? c[`${key}.handshake_timeout`] : undefined
      }
      for (const k of ['keyfile', 'certfile'] as const) {
        if (existsSync(spec.tls[k])) continue
        // the shipped defaults point at etc/certs: make the development certificate there
        if (dirname(spec.tls[k]) === resolveConfigPath(cfg, 'etc/certs', cwd)) ensureDevCertificates(dirname(spec.tls[k]), logger)
        else throw new Error(`TLS file ${spec.tls[k]} (${key}.${k}) does not exist; point ${key}.${k} at a PEM file`)
      }
    }
    specs.push(spec)
  }
  return specs
}

/**
 * The default `node.cookie` is public (it is in the docs): a mesh reachable beyond this host
 * with it lets anyone who can connect join the cluster. Said once at start.
 */
function warnOfDefaultCookie (config: StarlingConfig, logger: Logger): void {
  const listen = config['cluster.listen']
  if (listen === null) return
  const loopback = listen.host === 'localhost' || listen.host === '::1' || listen.host.startsWith('127.')
  if (loopback || config['node.cookie'] !== CONFIG_SCHEMA['node.cookie'].default) return
  logger.warn({ key: 'node.cookie', listen: listen.host }, 'the cluster listens beyond loopback with the default node.cookie: anyone who can reach it can join; set your own cookie')
}
