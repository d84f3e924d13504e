/**
 * How `loadConfig` takes one `key = value` of a file, the environment or the overrides:
 * a Starling key, a zone key (zones.ts), an EMQ X 4.4 key (emqx-keys.ts), or a problem.
 * Problems are collected, not thrown, so one start reports every bad key
 * (`ConfigError.all`); keys accepted without effect leave one warning line each.
 */
import { ConfigError } from './config-error.js'
import { convertValue, formatValue } from './convert-value.js'
import { clipValue, emqxOutcome } from './emqx-keys.js'
import { isPluginKey } from './plugin-config.js'
import { CONFIG_SCHEMA } from './schema.js'
import type { ConfigSchema, ConfigValue, KeySpec } from './schema-types.js'
import { ZONE_KEYS, ZONE_ONLY, parseZoneKey, type NodeWideZoneKey } from './zones.js'
import type { ConfigWarning } from './config-warnings.js'

/** A value as written, and where. */
export interface Raw { readonly value: string, readonly source: string }

/** What a load has gathered so far. */
export interface LoadState {
  /** Schema key -> its value text. */
  readonly raw: Map<string, Raw>
  /** Concrete per-zone keys (`zone.internal.max_qos_allowed`) -> value text. */
  readonly zones: Map<string, Raw & { readonly spec: KeySpec }>
  /** Keys of listeners named other than `external` (`listener.tcp.internal.zone`) -> value text, spec and listener. */
  readonly listeners: Map<string, Raw & { readonly spec: KeySpec, readonly listener: string }>
  /** Node-wide zone keys of a zone other than `external` -> value text. */
  readonly zoneNodeWide: Map<string, Raw & { readonly entry: NodeWideZoneKey }>
  readonly warnings: ConfigWarning[]
  readonly problems: ConfigError[]
}

const SCHEMA: ConfigSchema = CONFIG_SCHEMA

/** An empty state. */
export function newLoadState (): LoadState {
  return { raw: new Map(), zones: new Map(), listeners: new Map(), zoneNodeWide: new Map(), warnings: [], problems: [] }
}

/**
 * Takes `key = value` from `source`; `known` are the keys an unknown one is compared with,
 * `render` writes a suggestion as the source spells keys (an environment variable name).
 */
export function take (state: LoadState, key: string, value: string, source: string, known: readonly string[],
  render?: (key: string) => string): void {
  if (Object.hasOwn(SCHEMA, key)) {
    state.raw.set(key, { value, source })
    return
  }
  const warn = (message: string): void => { state.warnings.push({ key, source, message: `${source}: ${message}` }) }
  const zone = parseZoneKey(key)
  if (zone !== undefined) {
    takeZoneKey(state, key, zone, value, source, warn)
    return
  }
  const other = otherListener(key)
  if (other !== undefined) {
    // a listener of another name (EMQ X's listener.tcp.internal): the keys of the external one
    if (Object.hasOwn(SCHEMA, other.external)) {
      state.listeners.set(key, { value, source, spec: SCHEMA[other.external], listener: other.listener })
      return
    }
    const outcome = emqxOutcome(other.external, value)
    if (outcome !== undefined) {
      if (outcome.kind === 'alias') take(state, outcome.key.replace(`.external.`, `.${other.name}.`), value, source, known, render)
      else if (outcome.kind === 'warn') warn(outcome.text.replace(other.external, key))
      return
    }
  }
  if (isPluginKey(key)) {
    const file = key.startsWith('bridge.mqtt.') ? 'etc/plugins/svc_bridge_mqtt.conf' : 'the plugin\'s file under etc/plugins/'
    state.problems.push(new ConfigError(`key ${JSON.stringify(key)} belongs to a plugin: set it in ${file}`, { key, value, source }))
    return
  }
  const outcome = emqxOutcome(key, value)
  if (outcome === undefined) {
    state.problems.push(ConfigError.unknownKey(key, value, source, known, render))
    return
  }
  if (outcome.kind === 'alias') take(state, outcome.key, value, source, known, render)
  else if (outcome.kind === 'warn') warn(outcome.text)
}

function takeZoneKey (state: LoadState, key: string, zone: { zone: string, key: string }, value: string, source: string,
  warn: (message: string) => void): void {
  const entry = ZONE_KEYS[zone.key]
  if (entry !== undefined) {
    if (entry.perZone) state.zones.set(key, { value, source, spec: entry.spec })
    else if (zone.zone === 'external') state.raw.set(entry.node, { value, source })
    else state.zoneNodeWide.set(key, { value, source, entry })
    return
  }
  const fixed = ZONE_ONLY[zone.key]
  if (fixed === undefined) {
    const near = [...Object.keys(ZONE_KEYS), ...Object.keys(ZONE_ONLY)].map((k) => `zone.${zone.zone}.${k}`)
    state.problems.push(ConfigError.unknownKey(key, value, source, near))
    return
  }
  if (fixed.same.includes(value.trim().toLowerCase())) return
  if (fixed.erlang === true) warn(`${key} has no meaning outside the Erlang VM (${fixed.why}); accepted without effect`)
  else warn(`${key} = ${clipValue(value)} is not a Starling setting (${fixed.why}); accepted without effect`)
}

/** `listener.tcp.internal.zone` -> the same key of `listener.tcp.external`; undefined for an external listener's key or another key. */
function otherListener (key: string): { kind: string, name: string, listener: string, external: string } | undefined {
  const m = /^listener\.(tcp|ssl|ws|wss)\.([A-Za-z][A-Za-z0-9_]*)((?:\..+)?)$/.exec(key)
  if (m === null || m[2] === 'external') return undefined
  return { kind: m[1], name: m[2], listener: `listener.${m[1]}.${m[2]}`, external: `listener.${m[1]}.external${m[3]}` }
}

/** `convertValue`, with a refusal added to the problems (undefined then). */
export function tryConvert (state: LoadState, key: string, spec: KeySpec, raw: string, source: string): ConfigValue | undefined {
  try {
    return convertValue(key, spec, raw, source)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    state.problems.push(err)
    return undefined
  }
}

/**
 * Converts the zones' keys into `values` (which holds the schema's): per-zone keys under their
 * concrete name; a node-wide key of a zone other than `external` is checked, and warned of when
 * it differs from the node's value, which it cannot change.
 */
export function convertZones (state: LoadState, values: Record<string, ConfigValue>): void {
  for (const [key, r] of state.zones) {
    const v = tryConvert(state, key, r.spec, r.value, r.source)
    if (v !== undefined) values[key] = v
  }
  for (const [key, r] of state.zoneNodeWide) {
    const v = tryConvert(state, key, r.entry.spec, r.value, r.source)
    const nodeValue = values[r.entry.node]
    if (v === undefined || nodeValue === undefined || v === nodeValue) continue
    const shown = formatValue(SCHEMA[r.entry.node], nodeValue)
    state.warnings.push({
      key,
      source: r.source,
      message: `${r.source}: ${key} = ${clipValue(r.value)} does not apply: Starling holds it node-wide (${r.entry.node} = ${shown}, which zone external's value sets); accepted without effect`
    })
  }
}

/**
 * Converts the keys of the listeners named other than `external` into `values`: a listener
 * with an address gets every key the external one of its kind has, its own or the default
 * (`listener.tcp.internal.max_conns`); keys of a listener without an address open nothing and
 * are warned of.
 */
export function convertListeners (state: LoadState, values: Record<string, ConfigValue>): void {
  const opened = new Set([...state.listeners.keys()].filter((key) => state.listeners.get(key)?.listener === key))
  for (const [key, r] of state.listeners) {
    if (opened.has(r.listener)) continue
    state.warnings.push({ key, source: r.source, message: `${r.source}: ${key} = ${clipValue(r.value)} does not apply: ${r.listener} has no address, so it is not opened; accepted without effect` })
  }
  for (const listener of opened) {
    const external = listener.replace(/\.[^.]+$/, '.external')
    for (const schemaKey of Object.keys(SCHEMA)) {
      if (schemaKey !== external && !schemaKey.startsWith(`${external}.`)) continue
      const key = listener + schemaKey.slice(external.length)
      const spec = SCHEMA[schemaKey]
      const r = state.listeners.get(key) ?? { value: spec.default ?? '', source: `default of ${schemaKey}` }
      const v = tryConvert(state, key, spec, r.value, r.source)
      if (v !== undefined) values[key] = v
    }
  }
}

/** The names of the listeners of kind `kind` in a loaded config: `external` first, then the others (`internal`). */
export function listenerNames (cfg: Readonly<Record<string, unknown>>, kind: string): string[] {
  const names = ['external']
  for (const key of Object.keys(cfg)) {
    const m = /^listener\.([a-z]+)\.([A-Za-z][A-Za-z0-9_]*)$/.exec(key)
    if (m !== null && m[1] === kind && m[2] !== 'external') names.push(m[2])
  }
  return names
}

/** A key beyond the schema (a zone's, a named listener's) as config text. */
export function formatExtraValue (key: string, value: ConfigValue): string {
  const zone = parseZoneKey(key)
  const entry = zone === undefined ? undefined : ZONE_KEYS[zone.key]
  if (entry !== undefined) return formatValue(entry.spec, value)
  const other = otherListener(key)
  if (other !== undefined && Object.hasOwn(SCHEMA, other.external)) return formatValue(SCHEMA[other.external], value)
  return String(value)
}
