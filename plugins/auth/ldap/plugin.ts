/**
 * `svc_auth_ldap`: authentication and ACL against an LDAP directory, as EMQ X 4.4's
 * emqx_auth_ldap (docs/auth/svc_auth_ldap.md).
 *
 * - CONNECT: search the client's entry (base `auth.ldap.custom_base_dn`, filter
 *   `(objectClass=<match_objectclass>)`) as `bind_dn`. No entry → ignore. `isEnabled: FALSE`
 *   → deny. Then either bind as the entry with the CONNECT password (`bind_as_user = true`)
 *   or compare the password with the entry's `password.attributetype` (`{SHA}`, `{SSHA}` ...:
 *   ./password.ts). A superuser has `<superuser.attributetype>: TRUE` (Starling's addition).
 * - ACL: the entry's `mqttPublishTopic` / `mqttSubscriptionTopic` and `mqttPubSubTopic`
 *   values are filters; one matching → allow; else ignore (the next source decides).
 * - The pool (plugins/kit/pools/ldap.ts) connects lazily and reconnects; the framework bounds each
 *   request by `auth.ldap.timeout` and answers ignore when the directory cannot be reached.
 */
import type { Entry } from 'ldapts'
import { ConfigError } from '../../../node/config/index.js'
import type { ConfigSchema } from '../../../node/config/index.js'
import { defineAuthBackend, decideJwtAcl, type BackendClient, type BackendOpenContext } from '../backend/index.js'
import { sslKeyOptions, type SslKeyRules } from '../backend/ssl-keys.js'
import { checkLdapPassword } from './password.js'
import { compileLdapQuery, type LdapFilterEntry } from './query.js'

const file = (doc: string): ConfigSchema[string] => ({ type: 'string', default: '', allowEmpty: true, live: false, doc })

/** The plugin's keys: EMQ X 4.4's names and defaults (plus the superuser attribute). */
export const LDAP_CONFIG_SCHEMA: ConfigSchema = {
  'auth.ldap.servers': { type: 'string', default: '127.0.0.1', live: false, doc: 'LDAP servers (host names or IP addresses), separated by commas; tried in order when connecting.' },
  'auth.ldap.port': { type: 'int', default: '389', min: 1, max: 65535, live: false, doc: 'The servers\' port (636 is usual with auth.ldap.ssl.enable = true).' },
  'auth.ldap.pool': { type: 'int', default: '8', min: 1, max: 1024, live: false, doc: 'Connections to the directory; each serves one request at a time.' },
  'auth.ldap.bind_dn': { type: 'string', default: 'cn=root,dc=emqx,dc=io', allowEmpty: true, live: false, doc: 'The DN the pool binds as to search (empty: anonymous).' },
  'auth.ldap.bind_password': { type: 'string', default: 'public', allowEmpty: true, secret: true, live: false, doc: 'The bind DN\'s password.' },
  'auth.ldap.timeout': { type: 'duration', default: '30s', min: 1, live: false, doc: 'Longest connect, bind or search; past it (or when no server answers) the plugin answers ignore and the next in the chain decides.' },
  'auth.ldap.device_dn': { type: 'string', default: 'ou=device,dc=emqx,dc=io', live: false, doc: 'The DN under which the device entries are (${device_dn} in custom_base_dn).' },
  'auth.ldap.match_objectclass': { type: 'string', default: 'mqttUser', live: false, doc: 'The object class a device entry has: the search filter is (objectClass=<this>) unless auth.ldap.filters are set.' },
  'auth.ldap.custom_base_dn': { type: 'string', default: '${username_attr}=${user},${device_dn}', live: false, doc: 'The search base for a client: ${user} is the MQTT username (escaped as a DN value), ${username_attr} and ${device_dn} their keys.' },
  'auth.ldap.filters.<name>.key': { type: 'string', live: false, doc: 'A filter attribute: the entries, in the order of <name> (1, 2 ...), make the search filter instead of (objectClass=<match_objectclass>).' },
  'auth.ldap.filters.<name>.value': { type: 'string', live: false, doc: 'Its value; ${user} is the MQTT username (escaped).' },
  'auth.ldap.filters.<name>.op': { type: 'enum', values: ['and', 'or'], default: 'and', live: false, doc: 'How this entry joins the next one (left to right).' },
  'auth.ldap.username.attributetype': { type: 'string', default: 'uid', live: false, doc: 'The attribute holding the username (${username_attr}).' },
  'auth.ldap.password.attributetype': { type: 'string', default: 'userPassword', live: false, doc: 'The attribute holding the password as {SCHEME}base64 ({MD5}, {SHA}, {SHA256}, {SHA512}, {SSHA} ...), read unless bind_as_user.' },
  'auth.ldap.bind_as_user': { type: 'bool', default: 'false', live: false, doc: 'true: check the password by binding as the client\'s entry; false: compare it with the password attribute.' },
  'auth.ldap.superuser.attributetype': { type: 'string', default: 'isSuperuser', allowEmpty: true, live: false, doc: 'A boolean attribute: TRUE makes the client a superuser (bypassing ACLs); empty: no superusers. Not in EMQ X 4.4.' },
  'auth.ldap.ssl.enable': { type: 'bool', default: 'false', live: false, doc: 'Connect with TLS (ldaps://).' },
  'auth.ldap.ssl.certfile': file('Client certificate (PEM) presented to the server; empty for none.'),
  'auth.ldap.ssl.keyfile': file('Its private key (PEM).'),
  'auth.ldap.ssl.cacertfile': file('CA certificates (PEM) the server\'s certificate is checked against; empty: the system\'s.'),
  'auth.ldap.ssl.verify': { type: 'enum', values: ['verify_none', 'verify_peer'], default: 'verify_none', live: false, doc: 'verify_peer: refuse a server whose certificate does not chain to the CA or name the server.' },
  'auth.ldap.ssl.server_name_indication': { type: 'string', default: '', allowEmpty: true, live: false, doc: 'The name sent as SNI and checked in the certificate; empty: the server\'s host; disable: none.' }
}

/** An attribute's values, whatever case the server spelled its name in. */
function values (entry: Entry, name: string): Array<string | Buffer> {
  const lower = name.toLowerCase()
  for (const [key, value] of Object.entries(entry)) {
    if (key.toLowerCase() !== lower || key === 'dn') continue
    return Array.isArray(value) ? value : [value]
  }
  return []
}

const text = (v: string | Buffer | undefined): string | undefined => v === undefined ? undefined : Buffer.isBuffer(v) ? v.toString('utf8') : v

/** LDAP's `ssl.verify` is an enum, ldapts sends the host as SNI itself (`disable`: none), a missing key shows at the handshake. */
const LDAP_SSL_RULES: SslKeyRules = { verify: (v) => v === 'verify_peer', serverName: 'sni', certNeedsKey: false }

/** `auth.ldap.filters.<n>.*` in the order of `<n>` (numbers numerically). */
function filterEntries (config: Record<string, any>): LdapFilterEntry[] {
  const keys: Record<string, string> = config['auth.ldap.filters.<name>.key'] ?? {}
  const vals: Record<string, string> = config['auth.ldap.filters.<name>.value'] ?? {}
  const ops: Record<string, string> = config['auth.ldap.filters.<name>.op'] ?? {}
  const names = [...new Set([...Object.keys(keys), ...Object.keys(vals)])]
  names.sort((a, b) => (Number(a) - Number(b)) || a.localeCompare(b))
  return names.map((n) => {
    if (keys[n] === undefined || vals[n] === undefined) throw ConfigError.badValue(`auth.ldap.filters.${n}`, '', 'both key and value', 'plugin config')
    return { key: keys[n], value: vals[n], op: ops[n] }
  })
}

async function openLdap ({ config, resolvePath, logger }: BackendOpenContext): Promise<BackendClient> {
  const servers = String(config['auth.ldap.servers']).split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (servers.length === 0) throw ConfigError.badValue('auth.ldap.servers', config['auth.ldap.servers'], 'host names or IP addresses separated by commas', 'plugin config')
  const ssl: boolean = config['auth.ldap.ssl.enable']
  const query = compileLdapQuery({
    customBaseDn: config['auth.ldap.custom_base_dn'],
    deviceDn: config['auth.ldap.device_dn'],
    usernameAttr: config['auth.ldap.username.attributetype'],
    matchObjectclass: config['auth.ldap.match_objectclass'],
    filters: filterEntries(config)
  })
  // ldapts is loaded by the first load of the plugin, not by every node (kit/pools/index.ts)
  const { createLdapPool } = await import('../../kit/pools/ldap.js')
  const pool = createLdapPool({
    servers,
    port: config['auth.ldap.port'],
    ssl,
    tls: ssl ? sslKeyOptions('auth.ldap', config, resolvePath, LDAP_SSL_RULES) : undefined,
    size: config['auth.ldap.pool'],
    bindDn: config['auth.ldap.bind_dn'],
    bindPassword: config['auth.ldap.bind_password'],
    timeoutMs: config['auth.ldap.timeout']
  })
  const passwordAttr: string = config['auth.ldap.password.attributetype']
  const superAttr: string = config['auth.ldap.superuser.attributetype']
  const bindAsUser: boolean = config['auth.ldap.bind_as_user']
  logger.info({ servers, ssl, filter: query.filterSource, bindAsUser }, 'svc_auth_ldap: searching the directory')

  return {
    authenticate: async (ctx, request) => {
      // EMQ X looked up every CONNECT; without a username there is no entry to find (and the directory is not asked)
      if (ctx.username === undefined || ctx.username === '') return { verdict: 'ignore' }
      const attributes = ['isEnabled', ...(bindAsUser ? [] : [passwordAttr]), ...(superAttr !== '' ? [superAttr] : [])]
      const entries = await pool.search(query.baseDn(ctx), { scope: 'sub', filter: query.filter(ctx), attributes })
      request.answered()
      if (entries.length === 0) return { verdict: 'ignore' }
      if (entries.length > 1) {
        logger.warn({ username: ctx.username, dns: entries.map((e) => e.dn) }, 'svc_auth_ldap: several entries match the client; refusing it')
        return { verdict: 'deny' }
      }
      const entry = entries[0]
      if (text(values(entry, 'isEnabled')[0])?.toLowerCase() === 'false') return { verdict: 'deny' }
      const password = ctx.password ?? Buffer.alloc(0)
      let ok: boolean
      if (bindAsUser) {
        ok = await pool.checkBind(entry.dn, Buffer.isBuffer(password) ? password.toString('utf8') : password)
      } else {
        const stored = values(entry, passwordAttr)[0]
        // EMQ X: an entry without the attribute is "not found"
        if (stored === undefined) return { verdict: 'ignore' }
        ok = checkLdapPassword(stored, password)
      }
      if (!ok) return { verdict: 'deny' }
      const superuser = superAttr !== '' && text(values(entry, superAttr)[0])?.toUpperCase() === 'TRUE'
      return { verdict: 'allow', superuser }
    },
    checkAcl: async (ctx, action, request) => {
      if (ctx.username === undefined || ctx.username === '') return 'ignore'
      const attr = action === 'publish' ? 'mqttPublishTopic' : 'mqttSubscriptionTopic'
      const entries = await pool.search(query.baseDn(ctx), { scope: 'sub', filter: query.filter(ctx), attributes: [attr, 'mqttPubSubTopic'] })
      request.answered()
      if (entries.length !== 1) return 'ignore'
      const list = (name: string): string[] => values(entries[0], name).map((v) => text(v) as string)
      const claims = { acl: { all: list('mqttPubSubTopic'), [action === 'publish' ? 'pub' : 'sub']: list(attr) } }
      // EMQ X: a matching filter allows; no match is not a decision
      const verdict = decideJwtAcl(claims, 'acl', { clientId: ctx.clientId, username: ctx.username, peerhost: ctx.peerhost }, action, ctx.topic ?? '')
      return verdict === 'allow' ? 'allow' : 'ignore'
    },
    close: async () => { await pool.close() }
  }
}

/** The `svc_auth_ldap` plugin. */
export const svcAuthLdap = defineAuthBackend({
  name: 'svc_auth_ldap',
  description: 'Authentication and ACL with an LDAP directory (EMQ X 4.4 emqx_auth_ldap)',
  prefix: 'auth.ldap',
  configSchema: LDAP_CONFIG_SCHEMA,
  open: openLdap
})
