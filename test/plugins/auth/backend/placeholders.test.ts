import {
  PLACEHOLDERS, parseTemplate, placeholderValue, missingPlaceholders, renderString, compileRedisCommand,
  renderRedisCommand, escapeLdapFilterValue, escapeLdapDnValue, renderLdapFilter, renderLdapDn, type AuthContext
} from '../../../../plugins/auth/backend/placeholders.js'
import { ConfigError } from '../../../../node/config/index.js'

/** A context with every placeholder's value set, each distinct. */
const FULL: AuthContext = {
  clientId: 'client-1',
  username: 'alice',
  password: Buffer.from('s3cret'),
  peerhost: '10.0.0.7',
  protocol: 'mqtt',
  sockport: 1883,
  certCn: 'alice-cn',
  certDn: 'CN=alice-cn,O=Example',
  access: 2,
  topic: 'devices/1/up',
  mountpoint: 'tenant-a/'
}

describe('placeholders', () => {
  it('knows EMQ X 4.4\'s eleven placeholders', () => {
    expect(Object.keys(PLACEHOLDERS).sort()).toEqual(['A', 'C', 'P', 'a', 'c', 'd', 'm', 'p', 'r', 't', 'u'].sort())
  })

  it.each([
    ['%u', 'alice'], ['%c', 'client-1'], ['%a', '10.0.0.7'], ['%r', 'mqtt'], ['%P', 's3cret'], ['%p', '1883'],
    ['%C', 'alice-cn'], ['%d', 'CN=alice-cn,O=Example'], ['%A', '2'], ['%t', 'devices/1/up'], ['%m', 'tenant-a/']
  ])('renders %s', (placeholder, value) => {
    expect(renderString(parseTemplate(`<${placeholder}>`), FULL)).toBe(`<${value}>`)
  })

  it('renders %A 1 for subscribe and a text password as it is', () => {
    expect(renderString(parseTemplate('%A %P'), { ...FULL, access: 1, password: 'text' })).toBe('1 text')
  })

  it('renders an IPv4-mapped IPv6 peer as the IPv4 address, other IPv6 as they are', () => {
    expect(placeholderValue({ clientId: 'c', peerhost: '::ffff:127.0.0.1' }, 'a')).toBe('127.0.0.1')
    expect(placeholderValue({ clientId: 'c', peerhost: 'fe80::1' }, 'a')).toBe('fe80::1')
  })

  it('compiles a template once into text and placeholder parts', () => {
    const t = parseTemplate('clientid=%c,username=%u,password=%P,again=%u')
    expect(t.parts).toEqual([
      { text: 'clientid=' }, { key: 'c' }, { text: ',username=' }, { key: 'u' },
      { text: ',password=' }, { key: 'P' }, { text: ',again=' }, { key: 'u' }
    ])
    expect(t.keys).toEqual(['c', 'u', 'P'])
  })

  it('leaves a % that is not a placeholder as text', () => {
    const t = parseTemplate('100%, %x %% %')
    expect(t.keys).toEqual([])
    expect(renderString(t, FULL)).toBe('100%, %x %% %')
  })

  it('does not re-expand placeholders inside values', () => {
    expect(renderString(parseTemplate('%u/%c'), { ...FULL, username: '%c' })).toBe('%c/client-1')
  })

  it('renders a missing value as an empty string and reports it missing', () => {
    const anonymous: AuthContext = { clientId: 'c1', peerhost: '10.0.0.1' }
    const t = parseTemplate('user=%u&client=%c&cn=%C&port=%p')
    expect(renderString(t, anonymous)).toBe('user=&client=c1&cn=&port=')
    expect(missingPlaceholders(t, anonymous)).toEqual(['u', 'C', 'p'])
    expect(missingPlaceholders(t, FULL)).toEqual([])
    // an empty username is a value, not a missing one
    expect(missingPlaceholders(t, { ...FULL, username: '' })).toEqual([])
  })

  it('applies the caller\'s encoding to values only (HTTP)', () => {
    const url = parseTemplate('http://auth.local/mqtt/%u/check?c=%c')
    const rendered = renderString(url, { ...FULL, username: 'a b/../admin?x=1' }, encodeURIComponent)
    expect(rendered).toBe('http://auth.local/mqtt/a%20b%2F..%2Fadmin%3Fx%3D1/check?c=client-1')
  })

  describe('Redis commands', () => {
    it('splits into argv first, so a value with spaces stays one argument', () => {
      const cmd = compileRedisCommand('HMGET mqtt_user:%u password salt')
      const argv = renderRedisCommand(cmd, { ...FULL, username: 'eve password salt\r\nFLUSHALL' })
      expect(argv).toEqual(['HMGET', 'mqtt_user:eve password salt\r\nFLUSHALL', 'password', 'salt'])
    })

    it('substitutes inside every argument and keeps the word count', () => {
      const cmd = compileRedisCommand('  HGET   mqtt_user:%u:%c  is_superuser ')
      expect(cmd.keys).toEqual(['u', 'c'])
      expect(renderRedisCommand(cmd, FULL)).toEqual(['HGET', 'mqtt_user:alice:client-1', 'is_superuser'])
      expect(renderRedisCommand(cmd, { ...FULL, username: '' })).toHaveLength(3)
      expect(renderRedisCommand(cmd, { clientId: 'c', peerhost: '' })).toEqual(['HGET', 'mqtt_user::c', 'is_superuser'])
    })

    it('refuses an empty command with a ConfigError naming the key', () => {
      expect(() => compileRedisCommand('   ', { key: 'auth.redis.auth_cmd' })).toThrow(ConfigError)
      expect(() => compileRedisCommand('', { key: 'auth.redis.auth_cmd' })).toThrow(/auth\.redis\.auth_cmd/)
    })
  })

  describe('LDAP', () => {
    it('escapes filter values per RFC 4515', () => {
      expect(escapeLdapFilterValue('*)(uid=*))(|(uid=*')).toBe('\\2a\\29\\28uid=\\2a\\29\\29\\28|\\28uid=\\2a')
      expect(escapeLdapFilterValue('a\\b\0c')).toBe('a\\5cb\\00c')
      expect(escapeLdapFilterValue('Lučić')).toBe('Lučić')
    })

    it('renders a filter with escaped values and the template\'s own syntax intact', () => {
      const t = parseTemplate('(&(objectClass=mqttUser)(uid=%u))')
      expect(renderLdapFilter(t, { ...FULL, username: 'x)(uid=*' })).toBe('(&(objectClass=mqttUser)(uid=x\\29\\28uid=\\2a))')
    })

    it('escapes DN values per RFC 4514', () => {
      expect(escapeLdapDnValue('a,b+c"d\\e<f>g;h=i')).toBe('a\\,b\\+c\\"d\\\\e\\<f\\>g\\;h\\=i')
      expect(escapeLdapDnValue('#hash')).toBe('\\#hash')
      expect(escapeLdapDnValue('mid#dle')).toBe('mid#dle')
      expect(escapeLdapDnValue(' both ')).toBe('\\ both\\ ')
      expect(escapeLdapDnValue(' ')).toBe('\\ ')
      expect(escapeLdapDnValue('  ')).toBe('\\ \\ ')
      expect(escapeLdapDnValue('x\\ ')).toBe('x\\\\\\ ')
      expect(escapeLdapDnValue('nul\0')).toBe('nul\\00')
      expect(escapeLdapDnValue('')).toBe('')
    })

    it('renders a DN whose value cannot add RDNs', () => {
      const t = parseTemplate('uid=%u,ou=device,dc=emqx,dc=io')
      expect(renderLdapDn(t, { ...FULL, username: 'eve,ou=admins' })).toBe('uid=eve\\,ou\\=admins,ou=device,dc=emqx,dc=io')
    })
  })
})
