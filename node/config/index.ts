/**
 * The configuration subsystem: one typed schema for `etc/starling.conf`, a loader that
 * layers defaults, file, environment and overrides and validates everything at start-up,
 * the same machinery for plugin files, and development TLS files.
 */
export { ConfigError, type ConfigErrorInit } from './config-error.js'
export { parseConfText, readConfFile, type ConfEntry, type ConfFileLocation } from './conf-parser.js'
export { allowedText, convertValue, formatValue } from './convert-value.js'
export { DEV_CERTIFICATE_FILES, ensureDevCertificates, type EnsureDevCertificatesOptions } from './dev-certificates.js'
export { CONFIG_ENV_PREFIX, ETC_DIR_ENV, NON_CONFIG_ENV_VARS, envVarName, keyFromEnvVar } from './environment.js'
export {
  CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE, configKeys, describeConfig, loadConfig, resolvePath, resolveConfigPath, configRoot, configFile, configEtcDir,
  redactSecrets, isSecretKey, maskConfigValue, restoreConfigValue,
  type LoadConfigOptions
} from './load-config.js'
export {
  NAME_PLACEHOLDER, PLUGIN_KEY_PREFIXES, describePluginConfig, isPluginKey, loadPluginConfig,
  type LoadPluginConfigOptions, type PluginConfig
} from './plugin-config.js'
export { configWarnings, type ConfigWarning } from './config-warnings.js'
export { listenerNames } from './migrate-keys.js'
export { foreignPluginFileWarnings } from './plugin-files.js'
export { PLATFORM_DIRS, emqxOutcome, emqxPluginFile, emqxPluginKeyOutcome, renderPlatformDirs, type EmqxOutcome } from './emqx-keys.js'
export { ZONE_KEYS, ZONE_ONLY, parseZoneKey, zoneNames, zoneValue } from './zones.js'
export { renderConfigurationDoc, renderDefaultConfFile } from './render-docs.js'
export type { ConfigKey, ConfigPathKey, StarlingConfig } from './schema.js'
export type {
  AddressSpec, BoolSpec, ConfigKeyInfo, ConfigSchema, ConfigValue, ConfigValues, EnumSpec, KeySpec,
  NumberSpec, PathKeys, PathSpec, QuantitySpec, StringSpec, ValueOf, ValueType
} from './schema-types.js'
export { REDACTED } from './schema-types.js'
export { isCredentialName, maskHeader, maskHeaderList, maskHeaders, maskPairs, maskUrl, restoreHeaderList, restoreHeaders, restorePairs, restoreUrl } from './secret-values.js'
export {
  formatDuration, formatSize, parseAddress, parseBool, parseDuration, parseFloatValue, parseInteger,
  parseSize, type ListenerAddress
} from './value-types.js'
