import { createHash } from 'node:crypto'
import {
  parsePasswordHash, computePasswordHash, formatPasswordHash, BACKEND_HASHES, type PasswordChecker
} from '../../../../plugins/auth/backend/password-check.js'
import { ConfigError } from '../../../../node/config/index.js'

const KEY = 'auth.mysql.password_hash'
const pw = (s: string): Buffer => Buffer.from(s, 'utf8')
const hex = (alg: string, ...parts: string[]): string => {
  const h = createHash(alg)
  for (const p of parts) h.update(Buffer.from(p, 'utf8'))
  return h.digest('hex')
}

/** Both the synchronous and the asynchronous check, which must always agree. */
async function checkBoth (checker: PasswordChecker, stored: string, salt: string | undefined, given: Buffer | undefined): Promise<boolean> {
  const sync = checker.check(stored, salt, given)
  const async = await checker.checkAsync(stored, salt, given)
  expect(async).toBe(sync)
  return sync
}

describe('password_hash for external backends', () => {
  it('offers exactly emqx_passwd\'s hash names', () => {
    expect([...BACKEND_HASHES]).toEqual(['plain', 'md5', 'sha', 'sha256', 'sha512', 'bcrypt'])
  })

  describe('unsalted hex digests (lower-case hex of the password)', () => {
    // published digests of "password", and digests computed here with node:crypto
    const KNOWN: Array<[string, string, string]> = [
      ['md5', 'md5', '5f4dcc3b5aa765d61d8327deb882cf99'],
      ['sha', 'sha1', '5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8'],
      ['sha256', 'sha256', '5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8'],
      ['sha512', 'sha512', hex('sha512', 'password')]
    ]
    it.each(KNOWN)('%s', async (name, alg, digest) => {
      expect(digest).toBe(hex(alg, 'password'))
      const checker = parsePasswordHash(name, KEY)
      expect(checker.needsSalt).toBe(false)
      expect(await checkBoth(checker, digest, undefined, pw('password'))).toBe(true)
      expect(await checkBoth(checker, digest.toUpperCase(), undefined, pw('password'))).toBe(true)
      expect(await checkBoth(checker, digest, undefined, pw('Password'))).toBe(false)
      expect(await checkBoth(checker, digest, undefined, pw(''))).toBe(false)
      expect(await checkBoth(checker, digest, 'ignored-salt', pw('password'))).toBe(true)
    })
  })

  it('plain compares the bytes exactly', async () => {
    const checker = parsePasswordHash('plain', KEY)
    expect(await checkBoth(checker, 'public', undefined, pw('public'))).toBe(true)
    expect(await checkBoth(checker, 'public', undefined, pw('public '))).toBe(false)
    expect(await checkBoth(checker, 'public', undefined, pw('PUBLIC'))).toBe(false)
    expect(await checkBoth(checker, 'pässword', undefined, pw('pässword'))).toBe(true)
    // invalid UTF-8 never equals the text it would decode to
    expect(await checkBoth(checker, '\ufffd', undefined, Buffer.from([0xff]))).toBe(false)
  })

  it.each(['md5', 'sha', 'sha256', 'sha512'])('salt,%s hashes salt then password; %s,salt password then salt', async (name) => {
    const alg = name === 'sha' ? 'sha1' : name
    const first = parsePasswordHash(`salt,${name}`, KEY)
    const last = parsePasswordHash(`${name},salt`, KEY)
    expect(first.needsSalt && last.needsSalt).toBe(true)
    const saltFirst = hex(alg, 'NaCl', 'secret')
    const saltLast = hex(alg, 'secret', 'NaCl')
    expect(await checkBoth(first, saltFirst, 'NaCl', pw('secret'))).toBe(true)
    expect(await checkBoth(first, saltLast, 'NaCl', pw('secret'))).toBe(false)
    expect(await checkBoth(last, saltLast, 'NaCl', pw('secret'))).toBe(true)
    expect(await checkBoth(last, saltFirst, 'NaCl', pw('secret'))).toBe(false)
    expect(await checkBoth(first, saltFirst, 'nacl', pw('secret'))).toBe(false)
    // the salt is the column's text, not hex-decoded
    expect(computePasswordHash(first.spec, pw('secret'), 'abcd')).toBe(hex(alg, 'abcd', 'secret'))
  })

  it('salt,plain and plain,salt concatenate', async () => {
    expect(await checkBoth(parsePasswordHash('salt,plain', KEY), 'NaClsecret', 'NaCl', pw('secret'))).toBe(true)
    expect(await checkBoth(parsePasswordHash('plain,salt', KEY), 'secretNaCl', 'NaCl', pw('secret'))).toBe(true)
  })

  it('refuses a salted hash without a salt, and a missing password', async () => {
    const checker = parsePasswordHash('salt,sha256', KEY)
    expect(await checkBoth(checker, hex('sha256', 'secret'), undefined, pw('secret'))).toBe(false)
    expect(await checkBoth(parsePasswordHash('plain', KEY), '', undefined, undefined)).toBe(false)
    expect(await checkBoth(parsePasswordHash('sha256', KEY), hex('sha256', ''), undefined, undefined)).toBe(false)
  })

  describe('bcrypt', () => {
    // OpenBSD / Openwall crypt_blowfish test vectors, and a $2b$ hash from bcryptjs (docs/auth.md)
    const VECTORS: Array<[string, string]> = [
      ['U*U', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW'],
      ['U*U*', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK'],
      ['U*U*U', '$2a$05$XXXXXXXXXXXXXXXXXXXXXOAcXxm9kjPGEMsLznoKqmqw7tc8WCx4a'],
      ['public', '$2b$10$QWeDRxKLcnLGpkLC3G5k8eyPkYayiw1IMWGoh7fi2AUflGFQztOyG']
    ]
    it.each(VECTORS)('plain bcrypt takes the salt from the stored hash (%s)', async (password, stored) => {
      const checker = parsePasswordHash('bcrypt', KEY)
      expect(await checkBoth(checker, stored, undefined, pw(password))).toBe(true)
      expect(await checkBoth(checker, stored, undefined, pw(password + 'x'))).toBe(false)
    })

    it('salt,bcrypt and bcrypt,salt take the salt from the salt column', async () => {
      const [password, stored] = VECTORS[0]
      const salt = stored.slice(0, 29)
      for (const name of ['salt,bcrypt', 'bcrypt,salt']) {
        const checker = parsePasswordHash(name, KEY)
        expect(await checkBoth(checker, stored, salt, pw(password))).toBe(true)
        expect(await checkBoth(checker, stored, '$2a$05$XXXXXXXXXXXXXXXXXXXXXO', pw(password))).toBe(false)
        expect(await checkBoth(checker, stored, undefined, pw(password))).toBe(false)
      }
    })

    it('never matches a malformed hash or salt', async () => {
      const checker = parsePasswordHash('bcrypt', KEY)
      expect(await checkBoth(checker, 'not-a-bcrypt-hash', undefined, pw('x'))).toBe(false)
      expect(await checkBoth(checker, '', undefined, pw(''))).toBe(false)
      expect(await checkBoth(parsePasswordHash('salt,bcrypt', KEY), VECTORS[0][1], 'garbage', pw('U*U'))).toBe(false)
    })
  })

  describe('pbkdf2', () => {
    // RFC 6070 PBKDF2-HMAC-SHA1 vectors
    const RFC6070: Array<[string, string, number, number, string]> = [
      ['password', 'salt', 1, 20, '0c60c80f961f0e71f3a9b524af6012062fe037a6'],
      ['password', 'salt', 2, 20, 'ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957'],
      ['password', 'salt', 4096, 20, '4b007901b765489abead49d926f721d065a429c1'],
      ['passwordPASSWORDpassword', 'saltSALTsaltSALTsaltSALTsaltSALTsalt', 4096, 25, '3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038'],
      ['pass\0word', 'sa\0lt', 4096, 16, '56fa6aa75548099dcc37d7f03425e0c3']
    ]
    it.each(RFC6070)('pbkdf2,sha: RFC 6070 P=%j S=%j c=%d dkLen=%d', async (password, salt, c, dkLen, expected) => {
      const checker = parsePasswordHash(`pbkdf2,sha,${c},${dkLen}`, KEY)
      expect(checker.needsSalt).toBe(true)
      expect(await checkBoth(checker, expected, salt, pw(password))).toBe(true)
      expect(await checkBoth(checker, expected, salt + 'x', pw(password))).toBe(false)
      expect(await checkBoth(checker, expected, undefined, pw(password))).toBe(false)
    })

    it('pbkdf2,sha256: RFC 7914 section 11 vector', async () => {
      const expected = '55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc' +
        '49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783'
      const checker = parsePasswordHash('pbkdf2,sha256,1,64', KEY)
      expect(await checkBoth(checker, expected, 'salt', pw('passwd'))).toBe(true)
      expect(await checkBoth(checker, expected, 'salt', pw('passwe'))).toBe(false)
    })

    it.each(['md5', 'sha224', 'sha384', 'sha512'])('pbkdf2,%s is accepted', (macfun) => {
      expect(parsePasswordHash(`pbkdf2,${macfun},10,32`, KEY).name).toBe(`pbkdf2,${macfun},10,32`)
    })
  })

  describe('parsing auth.<backend>.password_hash', () => {
    it.each([
      ['sha256', { kind: 'unsalted', hash: 'sha256' }],
      ['salt,sha256', { kind: 'salt-first', hash: 'sha256' }],
      ['sha512,salt', { kind: 'salt-last', hash: 'sha512' }],
      [' salt , bcrypt ', { kind: 'salt-first', hash: 'bcrypt' }],
      ['pbkdf2,sha256,1000,20', { kind: 'pbkdf2', macfun: 'sha256', iterations: 1000, dklen: 20 }]
    ])('reads %j', (value, spec) => {
      const checker = parsePasswordHash(value, KEY)
      expect(checker.spec).toEqual(spec)
      expect(formatPasswordHash(checker.spec)).toBe(value.replace(/ /g, ''))
    })

    it.each([
      '', 'sha1', 'SHA256', 'salt', 'salt,salt', 'salt,sha256,salt', 'pepper,sha256', 'pbkdf2',
      'pbkdf2,sha256,1000', 'pbkdf2,sha256,0,20', 'pbkdf2,sha256,1000,0', 'pbkdf2,sha256,x,20',
      'pbkdf2,sha256,1000,-1', 'pbkdf2,whirlpool,1000,20', 'pbkdf2,sha256,99999999,20', 'pbkdf2,sha256,1000,4096'
    ])('refuses %j with a ConfigError naming the key', (value) => {
      let error: unknown
      try {
        parsePasswordHash(value, KEY, 'etc/plugins/svc_auth_mysql.conf')
      } catch (err) {
        error = err
      }
      expect(error).toBeInstanceOf(ConfigError)
      const e = error as ConfigError
      expect(e.key).toBe(KEY)
      expect(e.value).toBe(value)
      expect(e.message).toContain('etc/plugins/svc_auth_mysql.conf')
      expect(e.message).toContain(KEY)
    })

    it('names the MAC functions this Node supports when one is missing', () => {
      expect(() => parsePasswordHash('pbkdf2,whirlpool,1,20', KEY)).toThrow(/sha256/)
    })
  })
})
