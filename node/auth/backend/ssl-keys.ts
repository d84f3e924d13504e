/**
 * EMQ X 4.4's TLS keys of the Redis and MongoDB auth plugins (`<prefix>.ssl` on/off and
 * `<prefix>.ssl.cacertfile|certfile|keyfile|verify|server_name_indication`), as a schema
 * fragment and as Node.js TLS options with the files read at load.
 *
 * Deviation: `ssl.verify` defaults to true (EMQ X: false, `verify_none`); a server whose
 * certificate is not signed by `cacertfile` (or the system CAs) is refused unless it is set
 * to false.
 */
import { readFileSync } from 'node:fs'
import type { ConnectionOptions } from 'node:tls'
import { ConfigError, type ConfigSchema } from '../../config/index.js'

/** The TLS keys under `prefix` (`auth.redis`). */
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

/** Node.js TLS options from `config`, or undefined when `<prefix>.ssl` is off. Throws ConfigError for an unreadable file. */
export function sslOptions (prefix: string, config: Record<string, any>, resolvePath: (path: string) => string): ConnectionOptions | undefined {
  if (config[`${prefix}.ssl`] !== true) return undefined
  const read = (key: string): Buffer | undefined => {
    const path = String(config[`${prefix}.ssl.${key}`] ?? '')
    if (path === '') return undefined
    try {
      return readFileSync(resolvePath(path))
    } catch (err) {
      throw ConfigError.badValue(`${prefix}.ssl.${key}`, path, `a readable PEM file (${(err as Error).message})`, 'plugin config')
    }
  }
  const cert = read('certfile')
  const key = read('keyfile')
  if ((cert === undefined) !== (key === undefined)) {
    throw ConfigError.badValue(`${prefix}.ssl.${cert === undefined ? 'certfile' : 'keyfile'}`, '', 'set together with ' + (cert === undefined ? 'keyfile' : 'certfile'), 'plugin config')
  }
  const sni = String(config[`${prefix}.ssl.server_name_indication`] ?? '')
  return {
    ca: read('cacertfile'),
    cert,
    key,
    rejectUnauthorized: config[`${prefix}.ssl.verify`] !== false,
    ...(sni !== '' ? { servername: sni } : {})
  }
}
