/**
 * Reading and changing a plugin's settings at run time (`/nodes/:node/plugin_configs/:plugin`).
 *
 * A change is written into the plugin's file `etc/plugins/<plugin>.conf` (the line of each
 * key is replaced, or a line is appended; comments and other lines stay) and, when the
 * plugin is loaded, the plugin is reloaded so it runs with them: every plugin reads its
 * settings when it loads, so every changed key needs that reload. An inactive plugin gets
 * them at its next load. Invariants:
 * - the values are checked against the plugin's schema before the file is touched; a bad
 *   key or value is 108 with the config error's message and nothing changes;
 * - if the reload fails, the previous file is put back and the plugin is loaded again with
 *   it, so a failed change leaves the plugin as it was;
 * - changes of one node are made one at a time.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { MissingParameterError, RefusedError, WrongTypeError } from '../errors.js'
import { ConfigError, describePluginConfig, loadPluginConfig, parseConfText, redactSecrets, restoreConfigValue, type ConfigSchema } from '../config/index.js'
import type { PluginManager } from '../plugins/index.js'

/** What `PUT /nodes/:node/plugin_configs/:plugin` answers. */
export interface PluginConfigChange {
  /** The keys whose value changed: each takes effect when the plugin (re)loads. */
  reload_required: string[]
  /** True when the plugin was loaded and has been reloaded with the new settings. */
  reloaded: boolean
}

/** Changes in progress per plugin manager (one node): they run one after the other. */
const queues = new WeakMap<PluginManager, Promise<unknown>>()

/**
 * One setting in EMQ X 3.4's plugin_configs list. `desc` is the key's one-line doc;
 * `required` says the key has no default (it must be set). EMQ X's `required` meant "set in
 * the file" and gave unset keys the value `""`; Starling gives every key its value in force.
 */
export interface PluginConfigEntry {
  key: string
  value: string
  desc: string
  required: boolean
}

/** The plugin's settings as EMQ X 3.4's list, one entry per concrete key (secrets redacted). */
export function pluginConfigEntries (plugins: PluginManager, plugin: string): PluginConfigEntry[] {
  const { configSchema } = plugins.definition(plugin)
  const config = plugins.readConfig(plugin) as Record<string, any>
  const entries: PluginConfigEntry[] = []
  for (const [schemaKey, spec] of Object.entries(configSchema)) {
    // one schema key at a time, so that each concrete key (`auth.user.1.username`) keeps its spec
    const one: ConfigSchema = { [schemaKey]: spec }
    const shown = redactSecrets(one, describePluginConfig(one, { [schemaKey]: config[schemaKey] } as any))
    for (const [key, value] of Object.entries(shown)) entries.push({ key, value, desc: spec.doc, required: spec.default === undefined })
  }
  return entries
}

/** The plugin's settings as text (`retainer.max_payload_size` -> `1MB`), from its file now. */
export function readPluginConfig (plugins: PluginManager, plugin: string): Record<string, string> {
  const { configSchema } = plugins.definition(plugin)
  return redactSecrets(configSchema, describePluginConfig(configSchema, plugins.readConfig(plugin) as any))
}

/** Sets `values` (key -> value text) in the plugin's file and reloads it when loaded; see the module comment. */
export async function changePluginConfig (plugins: PluginManager, plugin: string, values: Record<string, string>): Promise<PluginConfigChange> {
  const schema = plugins.definition(plugin).configSchema
  const run = (queues.get(plugins) ?? Promise.resolve()).catch(() => undefined).then(async () => await change(plugins, plugin, schema, values))
  queues.set(plugins, run)
  return await run
}

async function change (plugins: PluginManager, plugin: string, schema: ConfigSchema, values: Record<string, string>): Promise<PluginConfigChange> {
  if (Object.keys(values).length === 0) throw new MissingParameterError(`missing parameter: give at least one key of ${plugin} with its value`)
  for (const [key, value] of Object.entries(values)) {
    if (typeof value !== 'string') throw new WrongTypeError(`parameter ${key} must be text`)
    if (/[\r\n]/.test(value)) throw new WrongTypeError(`parameter ${key}: a value cannot contain a line break`)
  }
  // a secret sent back as GET showed it (REDACTED, or a URL's masked parts) stays as it is
  const current = settingsInForce(plugins, plugin, schema)
  values = Object.fromEntries(Object.entries(values).flatMap(([key, value]) => {
    const kept = restoreConfigValue(schema, key, value, current[key])
    return kept === undefined ? [] : [[key, kept]]
  }))
  if (Object.keys(values).length === 0) return { reload_required: [], reloaded: false }
  const file = plugins.configFile(plugin)
  const before = fileSettings(file, schema, {})
  const after = asBadInput(() => fileSettings(file, schema, values) as Record<string, string>)
  const changed = Object.keys(after).filter(key => before?.[key] !== after[key])
  if (changed.length === 0) return { reload_required: [], reloaded: false }

  const oldText = existsSync(file) ? readFileSync(file, 'utf8') : null
  writeAtomically(file, withValues(oldText ?? '', file, Object.fromEntries(changed.map(k => [k, after[k]]))))
  const restore = (): void => {
    if (oldText === null) rmSync(file, { force: true })
    else writeAtomically(file, oldText)
  }
  try {
    plugins.readConfig(plugin) // with the node's environment, which wins over the file
  } catch (err) {
    restore()
    throw asApiError(err)
  }
  if (!plugins.isActive(plugin)) return { reload_required: changed, reloaded: false }
  try {
    await plugins.reload(plugin)
  } catch (err) {
    restore()
    if (!plugins.isActive(plugin)) await plugins.load(plugin).catch(() => undefined)
    throw new RefusedError(`${(err as Error).message}; the previous settings of ${plugin} were put back`)
  }
  return { reload_required: changed, reloaded: true }
}

/** The plugin's settings in force as text, unmasked (empty when its file is unusable): what a masked value sent back stands for. */
function settingsInForce (plugins: PluginManager, plugin: string, schema: ConfigSchema): Record<string, string> {
  try {
    return describePluginConfig(schema, plugins.readConfig(plugin) as any)
  } catch {
    return {}
  }
}

/** The settings the file gives (with `overrides` on top) as text; undefined when the file is unusable. */
function fileSettings (file: string, schema: ConfigSchema, overrides: Record<string, string>): Record<string, string> | undefined {
  try {
    return describePluginConfig(schema, loadPluginConfig(file, schema, { optional: true, env: {}, overrides }))
  } catch (err) {
    if (Object.keys(overrides).length > 0) throw err
    return undefined
  }
}

function asApiError (err: unknown): unknown {
  return err instanceof ConfigError ? new WrongTypeError(err.message) : err
}

function asBadInput<T> (fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    throw asApiError(err)
  }
}

/** `text` with each key of `values` set: its last line replaced, or a line appended. */
function withValues (text: string, file: string, values: Record<string, string>): string {
  const lines = text === '' ? [] : text.replace(/\r?\n$/, '').split(/\r?\n/)
  const lastLine = new Map<string, number>()
  for (const entry of parseConfText(text, file)) lastLine.set(entry.key, entry.line - 1)
  for (const [key, value] of Object.entries(values)) {
    const line = `${key} = ${confValue(value)}`
    const at = lastLine.get(key)
    if (at === undefined) lines.push(line)
    else lines[at] = line
  }
  return lines.join('\n') + '\n'
}

/** A value as the file must hold it: quoted when it is empty, has outer spaces or quotes. */
function confValue (value: string): string {
  return value === '' || value.trim() !== value || (value.startsWith('"') && value.endsWith('"')) ? `"${value}"` : value
}

function writeAtomically (file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true })
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, text)
  renameSync(tmp, file)
}
