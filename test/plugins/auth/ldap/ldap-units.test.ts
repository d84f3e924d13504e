/**
 * svc_auth_ldap's pure parts: the shipped etc/plugins file, the {SCHEME} password check and
 * the search base and filter built from EMQ X's keys (escaping the username).
 */
import { join } from 'node:path'
import { loadPluginConfig, parseConfText } from '../../../../node/config/index.js'
import { svcAuthLdap } from '../../../../plugins/auth/ldap/plugin.js'
import { checkLdapPassword, formatLdapPassword } from '../../../../plugins/auth/ldap/password.js'
import { compileLdapQuery } from '../../../../plugins/auth/ldap/query.js'
import { PROJECT_ROOT } from '../../../helpers/process.js'
import { readFileSync } from 'node:fs'

describe('etc/plugins/svc_auth_ldap.conf', () => {
  it('sets every fixed key of the schema and loads as the defaults', () => {
    const file = join(PROJECT_ROOT, 'etc/plugins/svc_auth_ldap.conf')
    const keys = parseConfText(readFileSync(file, 'utf8'), file).map((e) => e.key)
    expect(keys.sort()).toEqual(Object.keys(svcAuthLdap.configSchema).filter((k) => !k.includes('<name>')).sort())
    const shipped = loadPluginConfig(file, svcAuthLdap.configSchema, { env: {} })
    const defaults = loadPluginConfig(join(PROJECT_ROOT, 'etc/plugins/none.conf'), svcAuthLdap.configSchema, { env: {}, optional: true })
    expect(shipped).toEqual(defaults)
    expect(shipped['auth.ldap.timeout']).toBe(30_000)
    expect(shipped['auth.ldap.pool']).toBe(8)
  })
})

describe('checkLdapPassword', () => {
  it('reads EMQ X\'s documented sample entries ({SHA}, {SSHA}, and {SHA} in LDIF base64)', () => {
    expect(checkLdapPassword('{SHA}mlb3fat40MKBTXUVZwCKmL73R/0=', Buffer.from('mqttuser0001'))).toBe(true)
    expect(checkLdapPassword('{SSHA}n9XdtoG4Q/TQ3TQF4Y+khJbMBH4qXj4M', Buffer.from('mqttuser0002'))).toBe(true)
    expect(checkLdapPassword('{SSHA}n9XdtoG4Q/TQ3TQF4Y+khJbMBH4qXj4M', Buffer.from('mqttuser0001'))).toBe(false)
    // the LDIF base64 form (userPassword:: e1NIQX1...), returned as text by some directories
    expect(checkLdapPassword('e1NIQX1tbGIzZmF0NDBNS0JUWFVWWndDS21MNzNSLzA9', 'mqttuser0001')).toBe(true)
  })

  it('checks every scheme it formats, salted or not, and nothing else', () => {
    for (const scheme of ['MD5', 'SHA', 'SHA256', 'SHA384', 'SHA512', 'ssha', 'SSHA256', 'SSHA512']) {
      const stored = formatLdapPassword(scheme, 'päss', Buffer.from('saltsalt'))
      expect(checkLdapPassword(stored, Buffer.from('päss'))).toBe(true)
      expect(checkLdapPassword(stored, Buffer.from('pass'))).toBe(false)
    }
    expect(checkLdapPassword('public', 'public')).toBe(false)
    expect(checkLdapPassword('{CRYPT}abcdefgh', 'public')).toBe(false)
    expect(checkLdapPassword('{SHA}', '')).toBe(false)
  })
})

describe('compileLdapQuery', () => {
  const base = { customBaseDn: '${username_attr}=${user},${device_dn}', deviceDn: 'ou=device,dc=emqx,dc=io', usernameAttr: 'uid', matchObjectclass: 'mqttUser', filters: [] }
  const ctx = (username: string): any => ({ clientId: 'c', username, peerhost: '127.0.0.1' })

  it('makes EMQ X\'s default base and filter, the username escaped as a DN value', () => {
    const q = compileLdapQuery(base)
    expect(q.baseDn(ctx('dev1'))).toBe('uid=dev1,ou=device,dc=emqx,dc=io')
    expect(q.filter(ctx('dev1'))).toBe('(objectClass=mqttUser)')
    expect(q.baseDn(ctx('a,uid=admin+x'))).toBe('uid=a\\,uid\\=admin\\+x,ou=device,dc=emqx,dc=io')
  })

  it('joins auth.ldap.filters left to right, the username escaped as a filter value', () => {
    const q = compileLdapQuery({
      ...base,
      customBaseDn: '${device_dn}',
      filters: [{ key: 'objectClass', value: 'mqttUser', op: 'and' }, { key: '${username_attr}', value: '${user}', op: 'or' }, { key: 'cn', value: 'x' }]
    })
    expect(q.baseDn(ctx('d'))).toBe('ou=device,dc=emqx,dc=io')
    expect(q.filter(ctx('dev1'))).toBe('(|(&(objectClass=mqttUser)(uid=dev1))(cn=x))')
    expect(q.filter(ctx('*)(uid=*'))).toBe('(|(&(objectClass=mqttUser)(uid=\\2a\\29\\28uid=\\2a))(cn=x))')
  })

  it('refuses a filter key that is not an attribute name', () => {
    expect(() => compileLdapQuery({ ...base, filters: [{ key: 'uid)(x', value: 'y' }] })).toThrow(/auth\.ldap\.filters/)
  })
})
