/**
 * EMQ X 4.4's `<prefix>.ssl.*` keys of the auth backends (`cacertfile`, `certfile`,
 * `keyfile`, `verify`, `server_name_indication`, and `tls_versions` where a plugin has it),
 * read into Node.js TLS options at load by the one builder, plugins/kit/pools/tls.ts.
 *
 * What differs between the plugins is given by each, never guessed: how its `ssl.verify`
 * value reads (a bool, or `verify_peer`/`verify_none` for LDAP), what its
 * `server_name_indication` means ({@link ServerNameRule}), and whether a certfile without its
 * keyfile is refused at load (Redis, MongoDB, HTTP) or left to the handshake (LDAP, SQL).
 * An unreadable file is a ConfigError naming the key and the value as written.
 *
 * Deviation (Redis, MongoDB): `ssl.verify` defaults to true (EMQ X: false, `verify_none`); a
 * server whose certificate is not signed by `cacertfile` (or the system CAs) is refused unless
 * it is set to false.
 */
import type { ConnectionOptions } from 'node:tls'
import { ConfigError, type ConfigSchema } from '../../../node/config/index.js'
import { buildTlsOptions, isTlsVersion, type ServerNameRule, type TlsSettings } from '../../../node/tls-options.js'

/** The TLS keys of Redis and MongoDB under `prefix` (`auth.redis`). */
export function sslSchema (prefix: string, enabled: 'on' | 'off' = 'off'): ConfigSchema {
  return {
    [`${prefix}.ssl`]: { type: 'bool', default: enabled, live: false, doc: 'Connect with TLS.' },
    [`${prefix}.ssl.cacertfile`]: { type: 'string', default: '', allowEmpty: true, live: false, doc: 'PEM file of the CA certificates that sign the server\'s certificate; empty: the system\'s CAs.' },
    [`${prefix}.ssl.certfile`]: { type: 'string', default: '', allowEmpty: true, live: false, doc: 'PEM file of the client certificate, when the server asks for one; empty: none.' },
    [`${prefix}.ssl.keyfile`]: { type: 'string', default: '', allowEmpty: true, live: false, doc: 'PEM file of the client certificate\'s private key.' },
    [`${prefix}.ssl.verify`]: { type: 'bool', default: 'true', live: false, doc: 'Check the server\'s certificate and name (EMQ X defaulted to false).' },
    [`${prefix}.ssl.server_name_indication`]: { type: 'string', default: '', allowEmpty: true, live: false, doc: 'Server name sent (SNI) and checked; empty: the host name of the server address.' }
  }
}

/**
 * The `<prefix>.ssl.*` values as {@link TlsSettings}: files resolved (empty: none), an empty
 * server name as none, `tls_versions` split and checked. `verify` is the plugin's reading of
 * its `ssl.verify`. Throws ConfigError for an unknown TLS version.
 */
export function sslSettingsOf (prefix: string, config: Record<string, any>, resolvePath: (path: string) => string, verify: boolean): TlsSettings {
  const file = (key: string): string | undefined => {
    const path = String(config[`${prefix}.ssl.${key}`] ?? '')
    return path === '' ? undefined : resolvePath(path)
  }
  const sni = String(config[`${prefix}.ssl.server_name_indication`] ?? '')
  const versionsText = String(config[`${prefix}.ssl.tls_versions`] ?? '')
  const versions = versionsText.split(',').map((v) => v.trim()).filter((v) => v !== '')
  for (const v of versions) if (!isTlsVersion(v)) throw ConfigError.badValue(`${prefix}.ssl.tls_versions`, versionsText, 'a list of tlsv1.3, tlsv1.2, tlsv1.1, tlsv1', 'plugin config')
  return {
    cacertfile: file('cacertfile'),
    certfile: file('certfile'),
    keyfile: file('keyfile'),
    verify,
    serverName: sni === '' ? undefined : sni,
    versions: versions.length > 0 ? versions : undefined
  }
}

/** How one plugin reads its `ssl.*` keys where plugins differ (see the module comment). */
export interface SslKeyRules {
  /** Whether the plugin's `<prefix>.ssl.verify` value asks to check the server's certificate. */
  verify: (value: unknown) => boolean
  /** What `server_name_indication` means for the plugin's client library. */
  serverName: ServerNameRule
  /** Refuse a certfile without its keyfile (or the reverse) at load. */
  certNeedsKey: boolean
}

/** Node.js TLS options from the `<prefix>.ssl.*` keys, files read now. Throws ConfigError. */
export function sslKeyOptions (prefix: string, config: Record<string, any>, resolvePath: (path: string) => string, rules: SslKeyRules): ConnectionOptions {
  const settings = sslSettingsOf(prefix, config, resolvePath, rules.verify(config[`${prefix}.ssl.verify`]))
  const options = buildTlsOptions(settings, {
    rule: rules.serverName,
    unreadable: (key, _path, err) => {
      throw ConfigError.badValue(`${prefix}.ssl.${key}`, String(config[`${prefix}.ssl.${key}`]), `a readable PEM file (${err.message})`, 'plugin config')
    }
  })
  if (rules.certNeedsKey && (options.cert === undefined) !== (options.key === undefined)) {
    const [missing, given] = options.cert === undefined ? ['certfile', 'keyfile'] : ['keyfile', 'certfile']
    throw ConfigError.badValue(`${prefix}.ssl.${missing}`, '', `set together with ${given}: a client certificate needs its key`, 'plugin config')
  }
  return options
}

/** Redis and MongoDB: `ssl.verify` a bool defaulting to true, the server name sent as written, certfile and keyfile together. */
const REDIS_MONGO_RULES: SslKeyRules = { verify: (v) => v !== false, serverName: 'sni-literal', certNeedsKey: true }

/** Redis's and MongoDB's TLS options from `config`, or undefined when `<prefix>.ssl` is off. Throws ConfigError. */
export function sslOptions (prefix: string, config: Record<string, any>, resolvePath: (path: string) => string): ConnectionOptions | undefined {
  if (config[`${prefix}.ssl`] !== true) return undefined
  return sslKeyOptions(prefix, config, resolvePath, REDIS_MONGO_RULES)
}
