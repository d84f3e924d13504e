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
  /** Node-wide zone keys of a zone other than `external` -> value text. */
  readonly zoneNodeWide: Map<string, Raw & { readonly entry: NodeWideZoneKey }>
  readonly warnings: ConfigWarning[]
  readonly problems: ConfigError[]
}

const SCHEMA: ConfigSchema = CONFIG_SCHEMA

/** An empty state. */
export function newLoadState (): LoadState {
  return { raw: new Map(), zones: new Map(), zoneNodeWide: new Map(), warnings: [], problems: [] }
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
    if (Object.hasOwn(SCHEMA, other.external) || emqxOutcome(other.external, value) !== undefined) {
      warn(`${key} = ${clipValue(value)} is not opened: Starling has one listener per protocol (listener.${other.kind}.external; give it a zone with listener.${other.kind}.external.zone); accepted without effect`)
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
function otherListener (key: string): { kind: string, external: string } | undefined {
  const m = /^listener\.(tcp|ssl|ws|wss)\.([A-Za-z][A-Za-z0-9_-]*)((?:\..+)?)$/.exec(key)
  if (m === null || m[2] === 'external') return undefined
  return { kind: m[1], external: `listener.${m[1]}.external${m[3]}` }
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

/** A zone key's value as config text. */
export function formatZoneValue (key: string, value: ConfigValue): string {
  const zone = parseZoneKey(key)
  const entry = zone === undefined ? undefined : ZONE_KEYS[zone.key]
  return entry === undefined ? String(value) : formatValue(entry.spec, value)
}
