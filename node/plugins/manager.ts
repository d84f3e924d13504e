/**
 * The plugin manager of one node: knows every plugin the code defines, loads the ones
 * `data/loaded_plugins` lists at start, and loads, unloads and reloads plugins at run
 * time for the CLI and the API (spec: States and transitions, codes 110/111).
 */
import { join, resolve } from 'node:path'
import { configWarnings, foreignPluginFileWarnings, loadPluginConfig, resolvePath } from '../config/index.js'
import type { Logger } from '../logger.js'
import type { StarlingNode } from '../node.js'
import { pluginTypeOf, type PluginDefinition, type PluginInstance, type PluginType } from './types.js'
import {
  PluginAlreadyStartedError, PluginLoadError, PluginNotFoundError, PluginNotStartedError
} from './errors.js'
import { ListenError } from '../listen-error.js'
import { LOADED_PLUGINS_FILE, readLoadedPlugins, writeLoadedPlugins, type LoadedPluginEntry } from './loaded-plugins.js'

/** A plugin as the spec's Plugin resource shows it (API and `plugins list`). */
export interface PluginInfo {
  name: string
  version: string
  description: string
  /** Whether the plugin is loaded now. */
  active: boolean
  /** EMQ X 3.4's plugin type (`auth`, `protocol`, `bridge`, `backend`, `feature`). */
  type: PluginType
}

/** What {@link createPluginManager} needs. */
export interface PluginManagerInit {
  /** The node's configuration (`node.data_dir`) and logger. */
  components: Pick<StarlingNode, 'config' | 'logger'>
  /** Every plugin the code implements; names must be unique. Start loads in this order. */
  definitions: readonly PluginDefinition[]
  /** What every plugin is given as `parts` (PluginContext): the extension points of the parts above the core. */
  parts?: unknown
  /**
   * The `etc` directory: a plugin's config file is `<etcDir>/plugins/<name>.conf` (a missing
   * file means the schema's defaults). Default: `etc` under the working directory.
   */
  etcDir?: string
  /** Where `loaded_plugins` lives. Default: the node's `node.data_dir`. */
  dataDir?: string
  /** Environment for `STARLING_` overrides of plugin keys (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>
}

/** The manager's operations; all of them are serialised (one at a time, in call order). */
export interface PluginManager {
  /**
   * Attaches every plugin, then loads those listed as `true` in `loaded_plugins` (or the
   * `loadedByDefault` ones when the file does not exist; a plugin the file does not
   * mention gets its default). A plugin that fails to load stays inactive: the failure is
   * logged and returned, and the other plugins still load. A malformed `loaded_plugins`
   * rejects, naming the file and line. Does not write the file.
   */
  start(node: StarlingNode): Promise<PluginLoadError[]>
  /** Unloads every active plugin in reverse load order and detaches; the file is unchanged. */
  stop(): Promise<void>
  /** Every defined plugin with its state, sorted by name (EMQ X's order). */
  list(): PluginInfo[]
  /** One plugin's state; throws {@link PluginNotFoundError}. */
  info(name: string): PluginInfo
  /** Whether `name` is defined and loaded now. */
  isActive(name: string): boolean
  /** A plugin's definition; throws {@link PluginNotFoundError}. */
  definition(name: string): PluginDefinition
  /** The path of a plugin's config file (it may not exist). */
  configFile(name: string): string
  /** Reads and checks a plugin's config file now (ConfigError when it is wrong). */
  readConfig(name: string): Record<string, unknown>
  /**
   * Loads a plugin with its config file read now and records it in `loaded_plugins`.
   * Throws {@link PluginNotFoundError}, {@link PluginAlreadyStartedError} (110) or
   * {@link PluginLoadError} (bad config, or its load threw: it stays inactive).
   */
  load(name: string): Promise<PluginInfo>
  /** Unloads a plugin and records it; throws {@link PluginNotFoundError} or {@link PluginNotStartedError} (111). */
  unload(name: string): Promise<PluginInfo>
  /**
   * Re-reads the config file, then unloads the plugin (when active) and loads it again.
   * A bad config file fails before anything is unloaded, so the running plugin keeps going.
   */
  reload(name: string): Promise<PluginInfo>
}

interface Slot {
  readonly def: PluginDefinition
  instance: PluginInstance | undefined
}

/** Creates the manager; nothing is loaded until `start()`. */
export function createPluginManager (init: PluginManagerInit): PluginManager {
  const { config, logger } = init.components
  const log: Logger = logger.child({ component: 'plugins' })
  /** The node plugins are loaded into: given to start(), complete by then. */
  let node: StarlingNode | null = null
  const etcDir = resolve(init.etcDir ?? 'etc')
  const dataDir = init.dataDir ?? resolvePath(config, 'node.data_dir')
  const listFile = join(dataDir, LOADED_PLUGINS_FILE)
  const slots = new Map<string, Slot>()
  for (const def of init.definitions) {
    if (slots.has(def.name)) throw new Error(`plugin ${def.name} is defined twice`)
    slots.set(def.name, { def, instance: undefined })
  }
  /** Entries of the file for plugins this node does not define: kept when rewriting. */
  let foreign: LoadedPluginEntry[] = []
  /** Active plugins in load order (stop unloads in reverse). */
  const loadOrder: string[] = []
  const detachers: Array<{ name: string, detach: () => Promise<void> }> = []
  let state: 'new' | 'started' | 'stopped' = 'new'
  let queue: Promise<unknown> = Promise.resolve()

  /** Runs `fn` after every operation queued before it. */
  function exclusive<T> (fn: () => Promise<T>): Promise<T> {
    const run = queue.then(fn, fn)
    queue = run.catch(() => undefined)
    return run
  }

  function slotOf (name: string): Slot {
    const slot = slots.get(name)
    if (slot === undefined) throw new PluginNotFoundError(name, [...slots.keys()])
    return slot
  }

  function infoOf (slot: Slot): PluginInfo {
    const { name, version, description } = slot.def
    return { name, version, description, active: slot.instance !== undefined, type: pluginTypeOf(slot.def) }
  }

  function configFile (name: string): string {
    return join(etcDir, 'plugins', `${name}.conf`)
  }

  function readConfig (def: PluginDefinition): Record<string, unknown> {
    const config = loadPluginConfig(configFile(def.name), def.configSchema, { optional: true, env: init.env })
    // EMQ X 4.4 keys of the plugin's file accepted without effect: one line each (docs/migration.md)
    for (const w of configWarnings(config)) log.warn({ plugin: def.name, key: w.key, source: w.source }, w.message)
    return config
  }

  function assertStarted (): void {
    if (state === 'new') throw new Error('the plugin manager is not started yet')
    if (state === 'stopped') throw new Error('the plugin manager is stopped (the node is shutting down)')
  }

  /** Loads one plugin with `config` (already read). Invariant: the slot is inactive. */
  async function activate (slot: Slot, config: Record<string, unknown>): Promise<void> {
    const { name } = slot.def
    try {
      slot.instance = await slot.def.load({ node: nodeOf(), config, logger: logger.child({ component: 'plugins', plugin: name }), parts: init.parts })
    } catch (err) {
      throw new PluginLoadError(name, err)
    }
    loadOrder.push(name)
    log.info({ plugin: name }, `plugin ${name} loaded`)
  }

  /** Unloads one plugin. Invariant: the slot is active. A failing unload still leaves it inactive. */
  async function deactivate (slot: Slot): Promise<void> {
    const { name } = slot.def
    const instance = slot.instance as PluginInstance
    slot.instance = undefined
    loadOrder.splice(loadOrder.indexOf(name), 1)
    try {
      await instance.unload()
      log.info({ plugin: name }, `plugin ${name} unloaded`)
    } catch (err) {
      log.error({ err, plugin: name }, `plugin ${name} failed while unloading; it is inactive now`)
    }
  }

  function persist (): void {
    const entries = [...slots.values()].map((s) => ({ name: s.def.name, loaded: s.instance !== undefined }))
    writeLoadedPlugins(listFile, [...entries, ...foreign])
  }

  async function loadChecked (name: string, reload: boolean): Promise<PluginInfo> {
    assertStarted()
    const slot = slotOf(name)
    if (!reload && slot.instance !== undefined) throw new PluginAlreadyStartedError(name)
    const config = configFor(slot)
    if (slot.instance !== undefined) await deactivate(slot)
    // on failure the file keeps saying what the operator asked for, so a restart tries again
    await activate(slot, config)
    persist()
    return infoOf(slot)
  }

  /** The plugin's config read now; a bad file is that plugin's load failure. */
  function configFor (slot: Slot): Record<string, unknown> {
    try {
      return readConfig(slot.def)
    } catch (err) {
      throw new PluginLoadError(slot.def.name, err)
    }
  }

  /** The node given to start(); invariant: set whenever a plugin loads or attaches. */
  function nodeOf (): StarlingNode {
    if (node === null) throw new Error('the plugin manager is not started yet')
    return node
  }

  async function start (into: StarlingNode): Promise<PluginLoadError[]> {
    if (state !== 'new') throw new Error('the plugin manager was already started')
    node = into
    const entries = readLoadedPlugins(listFile)
    const wanted = new Map((entries ?? []).map((e) => [e.name, e.loaded]))
    foreign = (entries ?? []).filter((e) => !slots.has(e.name))
    for (const e of foreign) log.warn({ plugin: e.name, file: listFile }, `${listFile} names plugin ${e.name}, which this node does not have; ignored`)
    for (const w of foreignPluginFileWarnings(join(etcDir, 'plugins'), new Set(slots.keys()))) log.warn({ key: w.key, source: w.source }, w.message)
    for (const slot of slots.values()) {
      if (slot.def.attach === undefined) continue
      try {
        detachers.push({ name: slot.def.name, detach: await slot.def.attach(into, init.parts) })
      } catch (err) {
        await detachAll()
        throw new Error(`plugin ${slot.def.name} cannot attach to the node: ${(err as Error).message}`, { cause: err })
      }
    }
    state = 'started'
    const failures: PluginLoadError[] = []
    for (const slot of slots.values()) {
      if (!(wanted.get(slot.def.name) ?? slot.def.loadedByDefault)) continue
      try {
        await activate(slot, configFor(slot))
      } catch (err) {
        const failure = err instanceof PluginLoadError ? err : new PluginLoadError(slot.def.name, err)
        // a listener that cannot bind stops the node's start, which says so in one line
        if (!(failure.cause instanceof ListenError)) log.error({ err: failure.cause, plugin: slot.def.name }, failure.message)
        failures.push(failure)
      }
    }
    return failures
  }

  async function stop (): Promise<void> {
    if (state !== 'started') { state = 'stopped'; return }
    state = 'stopped'
    for (const name of [...loadOrder].reverse()) await deactivate(slots.get(name) as Slot)
    await detachAll()
  }

  async function detachAll (): Promise<void> {
    for (const { name, detach } of detachers.reverse()) {
      try {
        await detach()
      } catch (err) {
        log.error({ err, plugin: name }, `plugin ${name} failed to detach`)
      }
    }
    detachers.length = 0
  }

  return {
    start: (into) => exclusive(() => start(into)),
    stop: () => exclusive(stop),
    list: () => [...slots.values()].map(infoOf).sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    info: (name) => infoOf(slotOf(name)),
    isActive: (name) => slots.get(name)?.instance !== undefined,
    definition: (name) => slotOf(name).def,
    configFile: (name) => configFile(slotOf(name).def.name),
    readConfig: (name) => readConfig(slotOf(name).def),
    load: (name) => exclusive(() => loadChecked(name, false)),
    reload: (name) => exclusive(() => loadChecked(name, true)),
    unload: (name) => exclusive(async () => {
      assertStarted()
      const slot = slotOf(name)
      if (slot.instance === undefined) throw new PluginNotStartedError(name)
      await deactivate(slot)
      persist()
      return infoOf(slot)
    })
  }
}
