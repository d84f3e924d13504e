/**
 * Loads the node's configuration once, at start-up: schema defaults < `etc/starling.conf`
 * < `STARLING_*` environment variables < overrides. Every key is converted and checked
 * here, so a bad key or value stops the node before anything listens.
 */
import { existsSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { ConfigError } from './config-error.js'
import { readConfFile } from './conf-parser.js'
import { allowedText, formatValue } from './convert-value.js'
import { ETC_DIR_ENV, configEnvEntries, envVarName } from './environment.js'
import { NAME_PLACEHOLDER, isPluginKey } from './plugin-config.js'
import { renderPlatformDirs } from './emqx-keys.js'
import { convertListeners, convertZones, formatExtraValue, newLoadState, take, tryConvert, type Raw } from './migrate-keys.js'
import { recordWarnings } from './config-warnings.js'
import { CONFIG_SCHEMA, type ConfigKey, type ConfigPathKey, type StarlingConfig } from './schema.js'
import { REDACTED, type ConfigKeyInfo, type ConfigSchema, type ConfigValue, type KeySpec } from './schema-types.js'
import { maskHeader, maskPairs, maskUrl, restorePairs, restoreUrl } from './secret-values.js'

/** Default config file, relative to the installation root (`root`). */
export const DEFAULT_CONFIG_FILE = 'etc/starling.conf'

/** Environment variable naming the config file when no `file` (`--config`) is given. */
export const CONFIG_FILE_ENV = 'STARLING_CONFIG'

/** Where `loadConfig` reads from. */
export interface LoadConfigOptions {
  /**
   * Config file (the `--config` option). Without it: `$STARLING_CONFIG`, then
   * `etc/starling.conf`. A file given either way must exist; the default may be missing.
   */
  readonly file?: string
  /** Environment to read `STARLING_` variables from (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Values that win over everything, keyed by config key, written as in the file. */
  readonly overrides?: Readonly<Record<string, string>>
  /** The caller's working directory: a file given by `file` or `$STARLING_CONFIG` resolves against it (default `process.cwd()`). */
  readonly cwd?: string
  /**
   * The installation root (EMQ X resolves against its install root likewise): the default
   * `etc/starling.conf` and every relative path key (`node.data_dir`, `acl_file`, the
   * listeners' certificate files ...) resolve against it. Default: `cwd`.
   */
  readonly root?: string
  /**
   * The user's etc directory, outside the installation (`--etc-dir`; default
   * `$STARLING_ETC_DIR`, resolved against `cwd`), so that an upgrade never touches the
   * user's settings: the default config file is `<etcDir>/starling.conf` instead of
   * `<root>/etc/starling.conf`, and a relative path key written `etc/...` (`acl_file =
   * etc/acl.conf`) names a file in it. The plugins' files are `<etcDir>/plugins/` (the node's
   * `etcDir`, from {@link configEtcDir}). Without one, the installation's `etc/`.
   */
  readonly etcDir?: string
}

/** Which configuration file a loaded config came from. */
export interface ConfigFileInfo {
  /** Absolute path of the file read, or of the default file looked for. */
  readonly path: string
  /** False when the default file was missing: the embedded defaults (and the environment) apply. */
  readonly found: boolean
}


/** The root each loaded config resolves its relative paths against, for `resolvePath`. */
const loadedFrom = new WeakMap<StarlingConfig, string>()
/** The file each loaded config was read from. */
const fileOf = new WeakMap<StarlingConfig, ConfigFileInfo>()
/** The user's etc directory of each config loaded with one. */
const etcOf = new WeakMap<StarlingConfig, string>()

const SCHEMA: ConfigSchema = CONFIG_SCHEMA
const KEYS = Object.keys(CONFIG_SCHEMA) as ConfigKey[]

/**
 * Loads and validates the node's configuration; the result is frozen.
 *
 * Every key of every source is looked at before anything is refused, and a ConfigError
 * (ConfigError.all: one line per problem) names each of: a missing file that was asked
 * for, a malformed line, an unknown key (with a suggestion), a plugin key in the main file,
 * and a value its key's type refuses. EMQ X 4.4's keys that are not Starling's are accepted
 * as emqx-keys.ts and zones.ts say, with the warning lines `configWarnings` gives.
 */
export function loadConfig (opts: LoadConfigOptions = {}): StarlingConfig {
  const cwd = resolve(opts.cwd ?? process.cwd())
  const root = resolve(cwd, opts.root ?? cwd)
  const env = opts.env ?? process.env
  const state = newLoadState()
  for (const key of KEYS) state.raw.set(key, { value: SCHEMA[key].default ?? '', source: `default of ${key}` })

  const etcDirGiven = opts.etcDir ?? nonEmpty(env[ETC_DIR_ENV])
  const etcDir = etcDirGiven === undefined ? undefined : resolve(cwd, etcDirGiven)
  const fromEnv = nonEmpty(env[CONFIG_FILE_ENV])
  const file = opts.file ?? fromEnv ?? (etcDir === undefined ? DEFAULT_CONFIG_FILE : join(etcDir, 'starling.conf'))
  const givenBy = opts.file !== undefined ? undefined : fromEnv !== undefined ? CONFIG_FILE_ENV : undefined
  const required = opts.file !== undefined || fromEnv !== undefined
  // a file the user names is theirs (their working directory); the default is the installation's
  const fileBase = required ? cwd : root
  const entries = readConfFile({ path: file, cwd: fileBase, required, givenBy, collect: state.problems })
  const info: ConfigFileInfo = { path: resolve(fileBase, file), found: required || existsSync(resolve(fileBase, file)) }
  for (const e of entries) take(state, e.key, renderPlatformDirs(e.value), e.source, KEYS)

  for (const e of configEnvEntries(env)) {
    if (isPluginKey(e.key)) continue // read by the plugin's own loader
    take(state, e.key, e.value, e.source, KEYS, envVarName)
  }

  for (const [key, value] of Object.entries(opts.overrides ?? {})) take(state, key, value, 'override', KEYS)

  const values: Record<string, ConfigValue> = {}
  for (const key of KEYS) {
    const r = state.raw.get(key) as Raw
    const v = tryConvert(state, key, SCHEMA[key], r.value, r.source)
    if (v !== undefined) values[key] = v
  }
  convertZones(state, values)
  convertListeners(state, values)
  if (state.problems.length > 0) throw ConfigError.all(inFileOrder(state.problems))
  const cfg = Object.freeze(values) as unknown as StarlingConfig
  loadedFrom.set(cfg, root)
  fileOf.set(cfg, info)
  if (etcDir !== undefined) etcOf.set(cfg, etcDir)
  recordWarnings(cfg, state.warnings)
  return cfg
}

/** The etc directory of `cfg`: the user's (`etcDir`) when it was loaded with one, else `<root>/etc`. */
export function configEtcDir (cfg: StarlingConfig): string {
  return etcOf.get(cfg) ?? join(configRoot(cfg), 'etc')
}

/** The directory relative path keys of `cfg` resolve against (its `root`). */
export function configRoot (cfg: StarlingConfig): string {
  return loadedFrom.get(cfg) ?? process.cwd()
}

/** The file `cfg` was read from, and whether the default one was there. */
export function configFile (cfg: StarlingConfig): ConfigFileInfo | undefined {
  return fileOf.get(cfg)
}

/**
 * A path key's value as an absolute path: relative paths are resolved against `cwd`,
 * by default the root the config was loaded with (`loadConfig({ root })`), except that with a
 * user's etc directory (`loadConfig({ etcDir })`) a value written `etc/...` names a file in it.
 */
export function resolvePath (cfg: StarlingConfig, key: ConfigPathKey, cwd?: string): string {
  return resolveConfigPath(cfg, cfg[key], cwd)
}

/** {@link resolvePath} for a path written in `cfg`'s terms (`etc/certs`, a key without a path type). */
export function resolveConfigPath (cfg: StarlingConfig, value: string, cwd?: string): string {
  const etcDir = etcOf.get(cfg)
  if (etcDir !== undefined && !isAbsolute(value) && (value === 'etc' || value.startsWith('etc/'))) return join(etcDir, value.slice('etc'.length))
  return resolve(cwd ?? loadedFrom.get(cfg) ?? process.cwd(), value)
}

/**
 * Every key's value as config text (`'mqtt.max_packet_size': '1MB'`), for
 * `GET /api/v3/configs`. Loading the result as overrides gives the same config back.
 */
export function describeConfig (cfg: StarlingConfig): Record<ConfigKey, string> {
  const out = {} as Record<ConfigKey, string>
  for (const key of KEYS) out[key] = formatValue(SCHEMA[key], cfg[key])
  for (const key of Object.keys(cfg)) {
    // the zones' keys (zone.internal.max_qos_allowed) and other listeners' (listener.tcp.internal), after the schema's
    if (!Object.hasOwn(SCHEMA, key)) out[key as ConfigKey] = formatExtraValue(key, (cfg as Record<string, ConfigValue>)[key])
  }
  return out
}

/**
 * `values` (key -> value text, as {@link describeConfig} or `describePluginConfig` give them)
 * with every non-empty value of a `secret` key of `schema` replaced by {@link REDACTED}.
 * Concrete plugin keys (`bridge.mqtt.aws.password`) match their `<name>` pattern.
 */
export function redactSecrets (schema: ConfigSchema, values: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(values)) out[key] = maskConfigValue(schema, key, value)
  return out
}

/** Whether `key` (a schema key, or a concrete key of a `<name>` pattern) is a secret of `schema`. */
export function isSecretKey (schema: ConfigSchema, key: string): boolean {
  return specOfKey(schema, key)?.secret === true
}

/** The spec of `key`: a schema key's own, or that of the `<name>` pattern a concrete key matches. */
function specOfKey (schema: ConfigSchema, key: string): KeySpec | undefined {
  if (Object.hasOwn(schema, key)) return schema[key]
  return Object.entries(schema).find(([pattern]) => matchesNamePattern(pattern, key))?.[1]
}

/**
 * `value` of `key` as the API, the CLI and the logs show it: {@link REDACTED} for a non-empty
 * `secret` key, the credential parts masked for a `secretParts` key (secret-values.ts).
 */
export function maskConfigValue (schema: ConfigSchema, key: string, value: string): string {
  const spec = specOfKey(schema, key)
  if (spec === undefined || value === '') return value
  if (spec.secret === true) return REDACTED
  switch (spec.secretParts) {
    case 'url': return maskUrl(value)
    case 'pairs': return maskPairs(value)
    case 'header': return maskHeader(key.slice(key.lastIndexOf('.') + 1), value)
    default: return value
  }
}

/**
 * The value to set for `key` when a change sends `sent` and the key holds `current`: what
 * {@link maskConfigValue} showed of `current` keeps it (undefined: leave the key as it is),
 * and masked parts of a `secretParts` value are the current ones. Anything else is `sent`.
 */
export function restoreConfigValue (schema: ConfigSchema, key: string, sent: string, current: string | undefined): string | undefined {
  const spec = specOfKey(schema, key)
  if (spec === undefined || !sent.includes(REDACTED)) return sent
  if (current !== undefined && sent === maskConfigValue(schema, key, current)) return undefined
  if (spec.secret === true || spec.secretParts === 'header') return sent === REDACTED ? undefined : sent
  if (spec.secretParts === 'url') return restoreUrl(sent, current)
  if (spec.secretParts === 'pairs') return restorePairs(sent, current)
  return sent
}

/** `bridge.mqtt.aws.password` against `bridge.mqtt.<name>.password`: one level for the name. */
function matchesNamePattern (pattern: string, key: string): boolean {
  const parts = pattern.split(NAME_PLACEHOLDER)
  if (parts.length !== 2) return false
  const [head, tail] = parts
  if (!key.startsWith(head) || !key.endsWith(tail) || key.length <= head.length + tail.length) return false
  return !key.slice(head.length, key.length - tail.length).includes('.')
}

/**
 * The keys of a schema with type, default, allowed values, docs, live flag and environment
 * variable: by default the node's keys, in file order; pass a plugin's schema for its keys.
 */
export function configKeys (schema: ConfigSchema = CONFIG_SCHEMA): ConfigKeyInfo[] {
  return Object.entries(schema).map(([key, spec]: [string, KeySpec]) => ({
    key,
    type: spec.type,
    default: spec.default,
    allowed: allowedText(spec),
    doc: spec.doc,
    live: spec.live,
    env: envVarName(key)
  }))
}

/** The problems of the file in line order, then the environment's and the overrides' as found. */
function inFileOrder (problems: readonly ConfigError[]): ConfigError[] {
  const line = (p: ConfigError): number => {
    const m = /:(\d+)$/.exec(p.source)
    return m === null ? Infinity : Number(m[1])
  }
  return [...problems].sort((a, b) => line(a) - line(b))
}

function nonEmpty (s: string | undefined): string | undefined {
  return s === undefined || s.trim() === '' ? undefined : s
}
