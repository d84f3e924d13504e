/**
 * A real OpenLDAP (Debian packages `slapd` and `ldap-utils`) for tests: slapd with a minimal
 * slapd.conf in a temporary directory (mdb backend, the core, cosine, inetorgperson and nis
 * schemas from /etc/ldap/schema plus any a test adds), a suffix (default `dc=emqx,dc=io`, its
 * entry created) and a root DN with a password, on `ldap://127.0.0.1:<free port>`, and on
 * request `ldaps://` with a self-signed certificate made by the `openssl` CLI.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client, type Entry } from 'ldapts'
import { SERVER_HOST, spawnServer, type ServerProcess } from './core.js'
import { findBinary, runCommand } from './system.js'

const SCHEMA_DIR = '/etc/ldap/schema'
const BASE_SCHEMAS = ['core', 'cosine', 'inetorgperson', 'nis']

/** The OpenLDAP programs the harness runs. */
export interface LdapBinaries { slapd: string, ldapadd: string }

/** slapd and ldapadd; throws {@link MissingServerError} naming `slapd` or `ldap-utils`. */
export function ldapBinaries (): LdapBinaries {
  return {
    slapd: findBinary(['/usr/sbin/slapd', 'slapd'], 'slapd'),
    ldapadd: findBinary(['ldapadd'], 'ldap-utils')
  }
}

/** Options of {@link startLdap}. */
export interface LdapOptions {
  /** The suffix, whose first RDN is `dc=` or `o=` (default `dc=emqx,dc=io`). */
  suffix?: string
  /** The root DN's password (default random); the root DN is `cn=admin,<suffix>`. */
  password?: string
  /** More schema files (slapd.conf form, `.schema`), after the base ones: EMQ X's `emqx.schema`. */
  schemas?: string[]
  /** Also listen on `ldaps://` with a self-signed certificate for `127.0.0.1` and `localhost` (needs `openssl`). */
  tls?: boolean
}

/** A running slapd. */
export interface LdapServer extends ServerProcess {
  /** `ldap://127.0.0.1:port` */
  readonly url: string
  readonly suffix: string
  /** The root DN (`cn=admin,<suffix>`), which may do anything. */
  readonly bindDn: string
  readonly password: string
  /** With `tls`: the ldaps port, its URL and the certificate (PEM) a client trusts as its CA. */
  readonly ldapsPort: number | undefined
  readonly ldapsUrl: string | undefined
  readonly caCert: string | undefined
  /** Adds the entries of an LDIF text (ldapadd, as the root DN). */
  addLdif: (ldif: string) => Promise<void>
  /** An ldapts client bound as the root DN; the caller unbinds it. */
  client: () => Promise<Client>
  /** Searches the subtree at `base` (default the suffix) as the root DN. */
  search: (filter?: string, base?: string) => Promise<Entry[]>
}

/** The entry of the suffix itself, from its first RDN. */
function suffixEntry (suffix: string): Record<string, string[]> {
  const match = /^(dc|o)=([^,]+)/i.exec(suffix)
  if (match === null) throw new Error(`startLdap: the suffix must start with dc= or o= (got ${suffix})`)
  const value = match[2]
  return match[1].toLowerCase() === 'dc'
    ? { objectClass: ['top', 'dcObject', 'organization'], dc: [value], o: [value] }
    : { objectClass: ['top', 'organization'], o: [value] }
}

/** Starts slapd; see {@link LdapServer}. It runs as the test process's user (root is fine for slapd). */
export async function startLdap (opts: LdapOptions = {}): Promise<LdapServer> {
  const bin = ldapBinaries()
  const openssl = opts.tls === true ? findBinary(['openssl'], 'openssl') : undefined
  const suffix = opts.suffix ?? 'dc=emqx,dc=io'
  const entry = suffixEntry(suffix)
  const bindDn = `cn=admin,${suffix}`
  const password = opts.password ?? randomBytes(12).toString('hex')
  const schemas = [...BASE_SCHEMAS.map((s) => join(SCHEMA_DIR, `${s}.schema`)), ...(opts.schemas ?? [])]
  const client = async (url: string, timeoutMs = 10_000): Promise<Client> => {
    const c = new Client({ url, connectTimeout: timeoutMs, timeout: timeoutMs })
    try {
      await c.bind(bindDn, password)
    } catch (err) {
      await c.unbind().catch(() => {})
      throw err
    }
    return c
  }
  const urlOf = (port: number): string => `ldap://${SERVER_HOST}:${port}`
  const server = await spawnServer({
    name: 'OpenLDAP',
    debianPackage: 'slapd',
    portCount: opts.tls === true ? 2 : 1,
    setup: async (ctx) => {
      await ctx.run(['mkdir', join(ctx.dir, 'data')])
      if (openssl !== undefined) {
        await ctx.run([openssl, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
          '-keyout', join(ctx.dir, 'key.pem'), '-out', join(ctx.dir, 'cert.pem'), '-days', '2',
          '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'])
      }
      ctx.writeFile('slapd.conf', [
        ...schemas.map((s) => `include ${s}`),
        `pidfile ${join(ctx.dir, 'slapd.pid')}`,
        `argsfile ${join(ctx.dir, 'slapd.args')}`,
        'modulepath /usr/lib/ldap',
        'moduleload back_mdb',
        ...(openssl !== undefined ? [`TLSCertificateFile ${join(ctx.dir, 'cert.pem')}`, `TLSCertificateKeyFile ${join(ctx.dir, 'key.pem')}`] : []),
        'database mdb',
        `suffix "${suffix}"`,
        `rootdn "${bindDn}"`,
        `rootpw ${password}`,
        `directory ${join(ctx.dir, 'data')}`,
        ''
      ].join('\n'))
    },
    // -d 0: stay in the foreground (stopped by its PID), no debug output; config errors still print
    command: (ctx) => [bin.slapd, '-f', join(ctx.dir, 'slapd.conf'), '-d', '0',
      '-h', [urlOf(ctx.ports[0]) + '/', ...(ctx.ports.length > 1 ? [`ldaps://${ctx.host}:${ctx.ports[1]}/`] : [])].join(' ')],
    probe: async (ctx, timeoutMs) => { await (await client(urlOf(ctx.port), timeoutMs)).unbind() },
    firstStart: async (ctx) => {
      const c = await client(urlOf(ctx.port))
      try {
        await c.add(suffix, entry)
      } finally {
        await c.unbind()
      }
    }
  })
  const url = urlOf(server.port)
  const withClient = async <T>(fn: (c: Client) => Promise<T>): Promise<T> => {
    const c = await client(url)
    try {
      return await fn(c)
    } finally {
      await c.unbind().catch(() => {})
    }
  }
  return Object.assign(server, {
    url,
    suffix,
    bindDn,
    password,
    ldapsPort: openssl !== undefined ? server.ports[1] : undefined,
    ldapsUrl: openssl !== undefined ? `ldaps://${SERVER_HOST}:${server.ports[1]}` : undefined,
    caCert: openssl !== undefined ? readFileSync(join(server.dir, 'cert.pem'), 'utf8') : undefined,
    addLdif: async (ldif: string) => {
      await runCommand([bin.ldapadd, '-x', '-H', url, '-D', bindDn, '-w', password], { input: ldif })
    },
    client: async () => await client(url),
    search: async (filter = '(objectClass=*)', base = suffix) =>
      await withClient(async (c) => (await c.search(base, { scope: 'sub', filter })).searchEntries)
  })
}
