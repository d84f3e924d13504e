/**
 * The one reader of a resource's TLS parameters (EMQ X 4.4's resource keys: `ssl`,
 * `cacertfile`, `certfile`, `keyfile`, `verify`, `server_name_indication`, `tls_version`),
 * for every resource type that connects out over TLS: the params a type declares
 * ({@link resourceTlsParams}, which the dashboard's resource form shows) and the settings
 * read from a resource's config ({@link resourceTls}) for node/tls-options.ts's builder.
 */
import { isTlsVersion, type TlsSettings } from '../node/tls-options.js'
import { WrongTypeError } from '../node/errors.js'
import type { ParamSpecs } from './types.js'

/** What {@link resourceTlsParams} declares. */
export interface ResourceTlsOptions {
  /**
   * Whether the type has an `ssl` switch (database and queue backends), or TLS follows from
   * the address (`https://` for web_hook): then only the files and checks are declared.
   */
  sslSwitch: boolean
  /** `verify`'s default: EMQ X 4.4's is false for web_hook, true for the MQTT bridge. */
  verifyDefault: boolean
}

/** The TLS params of a resource type, EMQ X 4.4's names, titles and defaults. */
export function resourceTlsParams (opts: ResourceTlsOptions): ParamSpecs {
  const params: ParamSpecs = {}
  if (opts.sslSwitch) {
    params.ssl = { type: 'boolean', required: false, default: false, title: 'Enable SSL', description: 'Connect over TLS' }
  }
  params.cacertfile = { type: 'string', required: false, default: '', title: 'CA Certificate File', description: 'PEM file of the CA certificates the server\'s certificate is checked against (with verify)' }
  params.certfile = { type: 'string', required: false, default: '', title: 'Certificate File', description: 'PEM file of the client certificate, for servers that ask for one' }
  params.keyfile = { type: 'string', required: false, default: '', title: 'Key File', description: 'PEM file of the client certificate\'s private key' }
  params.verify = { type: 'boolean', required: false, default: opts.verifyDefault, title: 'Verify Server Certificate', description: 'Check the server\'s certificate against the CA certificates and its name' }
  params.server_name_indication = {
    type: 'string', required: false, default: '', title: 'Server Name Indication',
    description: 'The name sent as SNI and checked against the certificate; empty or auto: the host connected to; disable: none sent'
  }
  params.tls_version = { type: 'string', required: false, default: '', title: 'TLS Versions', description: 'Allowed versions, comma separated (tlsv1.2,tlsv1.3); empty: Node.js\'s defaults' }
  return params
}

/**
 * The TLS settings of a resource's `config`, or undefined when it does not use TLS: `ssl`
 * false (with a switch), or (without one) `https` false. Throws a 400 naming the key for a
 * TLS version that does not exist.
 */
export function resourceTls (config: Record<string, unknown>, https?: boolean): TlsSettings | undefined {
  const on = https ?? (config.ssl === true || config.ssl === 'true' || config.ssl === 'on')
  if (!on) return undefined
  const text = (key: string): string | undefined => {
    const v = config[key]
    return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined
  }
  const versions = text('tls_version')?.split(/[,\s]+/).filter((v) => v !== '')
  for (const v of versions ?? []) {
    if (!isTlsVersion(v)) throw new WrongTypeError(`tls_version: ${v} is not a TLS version (tlsv1, tlsv1.1, tlsv1.2, tlsv1.3)`)
  }
  return {
    cacertfile: text('cacertfile'),
    certfile: text('certfile'),
    keyfile: text('keyfile'),
    verify: config.verify === true || config.verify === 'true',
    // EMQ X 4.4 exports write `auto` for the host connected to
    serverName: text('server_name_indication') === 'auto' ? undefined : text('server_name_indication'),
    versions
  }
}
