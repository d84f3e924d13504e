/**
 * Plugin configuration: each plugin declares a schema of its own keys and loads
 * `etc/plugins/<name>.conf` with the same file format, value types, environment rule and
 * errors as `etc/starling.conf`. Keys under the plugin prefixes below are refused in the
 * main file and skipped by the main loader's environment check.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { ConfigError } from './config-error.js'
import { emqxPluginFile, emqxPluginKeyOutcome, renderPlatformDirs } from './emqx-keys.js'
import { recordWarnings, type ConfigWarning } from './config-warnings.js'
import { displayPath, readConfFile } from './conf-parser.js'
import { convertValue, formatValue } from './convert-value.js'
import { configEnvEntries, envVarName } from './environment.js'
import type { ConfigSchema, ConfigValue, KeySpec, ValueOf } from './schema-types.js'

/**
 * Key prefixes that belong to plugins (EMQ X 4 kept them in `etc/plugins/*.conf`).
 * A plugin's keys must start with one of these so the main loader leaves them alone.
 */
export const PLUGIN_KEY_PREFIXES: readonly string[] = [
  'retainer.', 'bridge.', 'auth.', 'rule_engine.', 'delayed.', 'web.hook.'
]

/** Whether `key` belongs to a plugin's file rather than `etc/starling.conf`. */
export function isPluginKey (key: string): boolean {
  return PLUGIN_KEY_PREFIXES.some((p) => key.startsWith(p))
}

/** The placeholder for a user-chosen segment in a plugin key: `bridge.mqtt.<name>.address`. */
export const NAME_PLACEHOLDER = '<name>'

/**
 * A plugin's typed configuration. A fixed key holds its value; a key with `<name>` holds
 * a record from each name used in the file to its value:
 * `cfg['bridge.mqtt.<name>.address'].aws.port`.
 */
export type PluginConfig<S extends ConfigSchema> = {
  readonly [K in keyof S]: K extends `${string}<name>${string}` ? Readonly<Record<string, ValueOf<S[K]>>> : ValueOf<S[K]>
}

/** Options of `loadPluginConfig`. */
export interface LoadPluginConfigOptions {
  /** Environment to read `STARLING_` variables from (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Values that win over file and environment, keyed by concrete key. */
  readonly overrides?: Readonly<Record<string, string>>
  /** Directory a relative `file` is relative to (default `process.cwd()`). */
  readonly cwd?: string
  /** When true a missing file means defaults only; by default it is an error. */
  readonly optional?: boolean
}

interface Template { readonly key: string, readonly prefix: string, readonly pattern: RegExp }
interface Raw { readonly value: string, readonly source: string }

/**
 * Loads a plugin's file against its schema: defaults < file < environment < overrides.
 *
 * - An unknown key in the file or the overrides is a ConfigError (with a suggestion);
 *   environment variables that match no key of this schema are left for others.
 * - For `<name>` keys, every name seen under a prefix gets the defaults of all the keys of
 *   that prefix; a key without a default that is not set is an error (`missing key`).
 * - Names coming from environment variables are lower case, as the variable rule is.
 */
export function loadPluginConfig<S extends ConfigSchema> (given: string, schema: S, opts: LoadPluginConfigOptions = {}): PluginConfig<S> {
  const cwd = opts.cwd ?? process.cwd()
  const file = given
  // EMQ X's file of the plugin (emqx_auth_http.conf) beside Starling's (svc_auth_http.conf): read
  // after it, so EMQ X's files dropped into etc/plugins/ apply as they are
  const emqxFile = emqxPluginFile(given)
  const emqxEntries = emqxFile !== undefined && existsSync(resolve(cwd, emqxFile)) ? readConfFile({ path: emqxFile, cwd, required: true }) : []
  const warnings: ConfigWarning[] = []
  const fixed = Object.keys(schema).filter((k) => !k.includes(NAME_PLACEHOLDER))
  const templates = Object.keys(schema).filter((k) => k.includes(NAME_PLACEHOLDER)).map(compileTemplate)
  const values = new Map<string, Map<string, Raw>>() // schema key -> name ('' for fixed keys) -> raw
  const names = new Map<string, Set<string>>() // template prefix -> names seen

  const set = (concrete: string, raw: Raw, unknown: () => ConfigError | undefined): void => {
    const hit = matchKey(concrete, schema, templates)
    if (hit === undefined) {
      const err = unknown()
      if (err !== undefined) throw err
      return
    }
    if (hit.template !== undefined) {
      const seen = names.get(hit.template.prefix) ?? new Set<string>()
      names.set(hit.template.prefix, seen.add(hit.name))
    }
    const perName = values.get(hit.key) ?? new Map<string, Raw>()
    values.set(hit.key, perName.set(hit.name, raw))
  }

  const entries = [...readConfFile({ path: file, cwd, required: opts.optional !== true && emqxEntries.length === 0 }), ...emqxEntries]
  const fileName = displayPath(cwd, resolve(cwd, file))
  for (const e of entries) {
    const raw = { value: renderPlatformDirs(e.value), source: e.source }
    set(e.key, raw, () => {
      // EMQ X 4.4's keys of this plugin: under Starling's name, or accepted with a warning line
      const outcome = emqxPluginKeyOutcome(e.key, e.value)
      if (outcome === undefined) return ConfigError.unknownKey(e.key, e.value, e.source, Object.keys(schema))
      if (outcome.kind === 'alias') set(outcome.key, raw, () => ConfigError.unknownKey(e.key, e.value, e.source, Object.keys(schema)))
      if (outcome.kind === 'warn') warnings.push({ key: e.key, source: e.source, message: `${e.source}: ${outcome.text}` })
      return undefined
    })
  }
  for (const e of configEnvEntries(opts.env ?? process.env)) set(e.key, e, () => undefined)
  for (const [key, value] of Object.entries(opts.overrides ?? {})) {
    set(key, { value, source: 'override' }, () => ConfigError.unknownKey(key, value, 'override', Object.keys(schema)))
  }

  const out: Record<string, unknown> = {}
  for (const key of fixed) {
    out[key] = convertOne(key, key, schema[key], values.get(key)?.get(''), fileName)
  }
  for (const t of templates) {
    const perName: Record<string, ConfigValue> = {}
    for (const name of names.get(t.prefix) ?? []) {
      const concrete = t.key.replace(NAME_PLACEHOLDER, name)
      perName[name] = convertOne(concrete, t.key, schema[t.key], values.get(t.key)?.get(name), fileName)
    }
    out[t.key] = Object.freeze(perName)
  }
  const cfg = Object.freeze(out) as PluginConfig<S>
  recordWarnings(cfg, warnings)
  return cfg
}

/**
 * A plugin's configuration as text, one entry per concrete key
 * (`bridge.mqtt.aws.address` -> `127.0.0.1:1883`), for the plugin_configs API.
 */
export function describePluginConfig<S extends ConfigSchema> (schema: S, cfg: PluginConfig<S>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const key of Object.keys(schema)) {
    const spec = schema[key]
    const value = (cfg as Record<string, unknown>)[key]
    if (!key.includes(NAME_PLACEHOLDER)) {
      out[key] = formatValue(spec, value as ConfigValue)
      continue
    }
    for (const [name, v] of Object.entries(value as Record<string, ConfigValue>)) {
      out[key.replace(NAME_PLACEHOLDER, name)] = formatValue(spec, v)
    }
  }
  return out
}

function convertOne (concrete: string, schemaKey: string, spec: KeySpec, raw: Raw | undefined, fileName: string): ConfigValue {
  if (raw !== undefined) return convertValue(concrete, spec, raw.value, raw.source)
  if (spec.default === undefined) {
    throw new ConfigError(`missing key ${JSON.stringify(concrete)}: it has no default; set it in the file or as ${envVarName(concrete)}`,
      { key: concrete, source: fileName, allowed: schemaKey })
  }
  return convertValue(concrete, spec, spec.default, `default of ${schemaKey}`)
}

function compileTemplate (key: string): Template {
  const at = key.indexOf(NAME_PLACEHOLDER)
  const before = key.slice(0, at)
  const after = key.slice(at + NAME_PLACEHOLDER.length)
  return { key, prefix: before, pattern: new RegExp(`^${escapeRegExp(before)}([A-Za-z0-9_-]+)${escapeRegExp(after)}$`) }
}

function matchKey (concrete: string, schema: ConfigSchema, templates: readonly Template[]):
{ key: string, name: string, template?: Template } | undefined {
  if (Object.hasOwn(schema, concrete) && !concrete.includes(NAME_PLACEHOLDER)) return { key: concrete, name: '' }
  for (const template of templates) {
    const m = template.pattern.exec(concrete)
    if (m !== null) return { key: template.key, name: m[1], template }
  }
  return undefined
}

function escapeRegExp (s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
