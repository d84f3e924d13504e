/**
 * Environment variables that set config keys: `STARLING_` + the key upper-cased with
 * each `.` written `__` (`listener.tcp.external` <- `STARLING_LISTENER__TCP__EXTERNAL`,
 * `node.data_dir` <- `STARLING_NODE__DATA_DIR`). A few `STARLING_` names are not keys;
 * they are listed in `NON_CONFIG_ENV_VARS`.
 */

/** Prefix of every environment variable the node reads. */
export const CONFIG_ENV_PREFIX = 'STARLING_'

/** The user's etc directory when no `--etc-dir` is given (`loadConfig`'s `etcDir`). */
export const ETC_DIR_ENV = 'STARLING_ETC_DIR'

/**
 * `STARLING_` variables that are not config keys, so the loader neither applies nor
 * refuses them. `STARLING_CONFIG`: path of the config file when none is given on the
 * command line; `STARLING_ETC_DIR`: the user's etc directory. Add a name here before giving
 * it another use.
 */
export const NON_CONFIG_ENV_VARS: ReadonlySet<string> = new Set(['STARLING_CONFIG', ETC_DIR_ENV])

/** The variable that sets `key`: `mqtt.max_packet_size` -> `STARLING_MQTT__MAX_PACKET_SIZE`. */
export function envVarName (key: string): string {
  return CONFIG_ENV_PREFIX + key.toUpperCase().replaceAll('.', '__')
}

/** The key a `STARLING_` variable sets (lower case), or undefined for another name. */
export function keyFromEnvVar (name: string): string | undefined {
  if (!name.startsWith(CONFIG_ENV_PREFIX) || NON_CONFIG_ENV_VARS.has(name)) return undefined
  const rest = name.slice(CONFIG_ENV_PREFIX.length)
  return rest === '' ? undefined : rest.toLowerCase().replaceAll('__', '.')
}

/** A config value found in the environment. */
export interface EnvEntry {
  /** The variable's name, `STARLING_NODE__DATA_DIR`. */
  readonly name: string
  /** The key it sets, `node.data_dir`. */
  readonly key: string
  readonly value: string
  /** `environment STARLING_NODE__DATA_DIR`, for error messages. */
  readonly source: string
}

/** Every `STARLING_` variable of `env` that names a config key, sorted by name for stable errors. */
export function configEnvEntries (env: Readonly<Record<string, string | undefined>>): EnvEntry[] {
  const entries: EnvEntry[] = []
  for (const name of Object.keys(env).sort()) {
    const value = env[name]
    const key = keyFromEnvVar(name)
    if (key === undefined || value === undefined) continue
    entries.push({ name, key, value, source: `environment ${name}` })
  }
  return entries
}
