/**
 * The one builder of Node.js TLS options from EMQ X's `ssl.*` keys, for everything that
 * connects out over TLS: the auth backends' pools (SQL, Redis, MongoDB, LDAP, HTTP), the MQTT
 * bridge's link, and the rule engine's resources (rules/resource-tls.ts reads their params).
 * In the core (node/) because the rule engine's own resource types use it as the plugins do.
 *
 * What is the same everywhere: the PEM files (`cacertfile`, `certfile`, `keyfile`) are read
 * when the options are built, `verify` is `rejectUnauthorized`, and `tls_versions` bounds
 * the protocol versions. What differs is the meaning of `server_name_indication`, and the
 * caller says which ({@link ServerNameRule}); it is never guessed from the product:
 * - `check-name` (SQL pools: pg and mysql2 pass neither SNI nor a name check of their own):
 *   no name sends the connect host as SNI (unless an IP address); a name is sent and the
 *   certificate is checked against it; `disable` skips the name check (EMQ X's word).
 * - `sni` (HTTP through undici, LDAP through ldapts, which connect by host themselves): a
 *   name is sent as SNI and Node checks the certificate against it; `disable` sends none.
 * - `sni-literal` (Redis, MongoDB: their keys document no `disable`): a name is sent as SNI
 *   and checked, whatever it is.
 *
 * Invariant: the options hold the files' contents, never their paths, so a file changed or
 * removed after the pool or plugin started changes nothing until it is built again.
 */
import { readFileSync } from 'node:fs'
import { checkServerIdentity, type ConnectionOptions, type PeerCertificate, type SecureVersion } from 'node:tls'

/** EMQ X's `ssl.*` keys as values; the files are paths already resolved by the caller. */
export interface TlsSettings {
  /** CA certificates the server's certificate is checked against (with `verify`). */
  cacertfile?: string
  /** Client certificate (chain) and its key, for servers that ask for one. */
  certfile?: string
  keyfile?: string
  /** Check the server's certificate (EMQ X's `ssl.verify = true`, `verify_peer`). */
  verify: boolean
  /**
   * `server_name_indication`: the name sent (SNI) and checked; undefined: none set. What
   * `'disable'` means depends on the {@link ServerNameRule}.
   */
  serverName?: string
  /** Allowed protocol versions (`tlsv1.2`, `tlsv1.3` ...); undefined: Node's defaults. */
  versions?: string[]
}

/** What `server_name_indication` means for one kind of connection: see the module comment. */
export type ServerNameRule = 'check-name' | 'sni' | 'sni-literal'

/** A PEM file of {@link TlsSettings}, by its EMQ X key name. */
export type TlsFileKey = 'cacertfile' | 'certfile' | 'keyfile'

/** How {@link buildTlsOptions} names things for one caller. */
export interface TlsBuildContext {
  rule: ServerNameRule
  /** The host connected to: with `check-name`, the SNI sent when no name is set. */
  host?: string
  /** Reports a file that cannot be read (a configuration error naming the key); default: throws the fs error. */
  unreadable?: (key: TlsFileKey, path: string, err: Error) => never
}

const VERSIONS: Readonly<Record<string, SecureVersion>> = {
  tlsv1: 'TLSv1', 'tlsv1.1': 'TLSv1.1', 'tlsv1.2': 'TLSv1.2', 'tlsv1.3': 'TLSv1.3'
}

/** Whether `v` is a TLS version word EMQ X's `ssl.tls_versions` takes. */
export function isTlsVersion (v: string): boolean {
  return VERSIONS[v.toLowerCase()] !== undefined
}

/** Node's TLS options of `tls` for `context`. Reads the files; see {@link TlsBuildContext.unreadable}. */
export function buildTlsOptions (tls: TlsSettings, context: TlsBuildContext): ConnectionOptions {
  const read = (key: TlsFileKey): Buffer | undefined => {
    const path = tls[key]
    if (path === undefined) return undefined
    try {
      return readFileSync(path)
    } catch (err) {
      if (context.unreadable === undefined) throw err
      return context.unreadable(key, path, err as Error)
    }
  }
  const out: ConnectionOptions = { rejectUnauthorized: tls.verify }
  const ca = read('cacertfile')
  const cert = read('certfile')
  const key = read('keyfile')
  if (ca !== undefined) out.ca = ca
  if (cert !== undefined) out.cert = cert
  if (key !== undefined) out.key = key
  Object.assign(out, serverNameOptions(tls.serverName, context))
  if (tls.versions !== undefined && tls.versions.length > 0) {
    const order = Object.values(VERSIONS)
    const idx = tls.versions.map((v) => order.indexOf(VERSIONS[v.toLowerCase()])).sort((a, b) => a - b)
    out.minVersion = order[idx[0]]
    out.maxVersion = order[idx[idx.length - 1]]
  }
  return out
}

function serverNameOptions (name: string | undefined, { rule, host }: TlsBuildContext): ConnectionOptions {
  if (rule === 'sni-literal') return name === undefined ? {} : { servername: name }
  if (rule === 'sni') return name === 'disable' ? { servername: '' } : name === undefined ? {} : { servername: name }
  if (name === 'disable') return { checkServerIdentity: () => undefined }
  const sent = name ?? host
  const out: ConnectionOptions = {}
  // SNI is for names only: an IP address is checked against the certificate's IP SANs
  if (sent !== undefined && !/^[\d.]+$|:/.test(sent)) out.servername = sent
  if (name !== undefined) out.checkServerIdentity = (_host: string, cert: PeerCertificate) => checkServerIdentity(name, cert)
  return out
}
