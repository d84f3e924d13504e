import {
  PASSWORD_HASHES, hashPassword, verifyPassword, parsePasswordHashName, type PasswordHashName, type StoredPassword
} from '../../../plugins/auth/password-hash.js'
import { ConfigError } from '../../../node/config/index.js'

/** Entries as docs/auth.md specifies them, computed outside Starling (Python hashlib, bcryptjs): the format must not drift. */
const SALT = '000102030405060708090a0b0c0d0e0f'
const FIXED: ReadonlyArray<[PasswordHashName, StoredPassword]> = [
  ['plain', { hash: 'plain', salt: '', password: 'public' }],
  ['md5', { hash: 'md5', salt: SALT, password: 'bf694688016929ffe4fd5cb3285037ad' }],
  ['sha', { hash: 'sha', salt: SALT, password: 'e01acdfb96397845bfae933e5c37d68cb0b9ebc8' }],
  ['sha256', { hash: 'sha256', salt: SALT, password: 'c97d096bee5288e642002a343875c1c271e2abdf0c20291d059fb9832b046ae5' }],
  ['bcrypt', { hash: 'bcrypt', salt: '', password: '$2b$10$QWeDRxKLcnLGpkLC3G5k8eyPkYayiw1IMWGoh7fi2AUflGFQztOyG' }]
]

describe('password hashes', () => {
  it('offers exactly EMQ X\'s names', () => {
    expect([...PASSWORD_HASHES]).toEqual(['plain', 'md5', 'sha', 'sha256', 'bcrypt'])
  })

  describe.each(PASSWORD_HASHES)('%s', (hash) => {
    it('verifies the right password and refuses wrong ones', async () => {
      const stored = await hashPassword(hash, 'correct horse')
      expect(stored.hash).toBe(hash)
      expect(await verifyPassword(stored, 'correct horse')).toBe(true)
      expect(await verifyPassword(stored, Buffer.from('correct horse'))).toBe(true)
      for (const wrong of ['correct hors', 'correct horse ', 'Correct horse', '', 'x'.repeat(200)]) {
        expect(await verifyPassword(stored, wrong)).toBe(false)
      }
    })

    it('verifies an entry stored in the documented format', async () => {
      const [, stored] = FIXED.find(([name]) => name === hash)!
      expect(await verifyPassword(stored, 'public')).toBe(true)
      expect(await verifyPassword(stored, 'private')).toBe(false)
    })
  })

  it.each(['md5', 'sha', 'sha256'] as const)('salts %s with 16 fresh random bytes per entry', async (hash) => {
    const a = await hashPassword(hash, 'same')
    const b = await hashPassword(hash, 'same')
    expect(a.salt).toMatch(/^[0-9a-f]{32}$/)
    expect(a.salt).not.toBe(b.salt)
    expect(a.password).not.toBe(b.password)
    expect(a.password).toMatch(hash === 'md5' ? /^[0-9a-f]{32}$/ : hash === 'sha' ? /^[0-9a-f]{40}$/ : /^[0-9a-f]{64}$/)
  })

  it('keeps plain passwords as they are, without salt', async () => {
    expect(await hashPassword('plain', 'public')).toEqual({ hash: 'plain', salt: '', password: 'public' })
  })

  it('stores bcrypt with cost 10 and its own salt', async () => {
    const stored = await hashPassword('bcrypt', 'public')
    expect(stored.salt).toBe('')
    expect(stored.password).toMatch(/^\$2b\$10\$.{53}$/)
  })

  it('never matches an entry with an unknown hash', async () => {
    expect(await verifyPassword({ hash: 'sha512' as any, salt: '', password: 'public' }, 'public')).toBe(false)
  })

  it('refuses an unknown hash name as a configuration error naming the key', () => {
    expect(parsePasswordHashName('sha256', 'auth.user.password_hash')).toBe('sha256')
    expect(() => parsePasswordHashName('sha512', 'auth.user.password_hash')).toThrow(ConfigError)
    expect(() => parsePasswordHashName('sha512', 'auth.user.password_hash')).toThrow(/auth\.user\.password_hash.*plain, md5, sha, sha256, bcrypt/)
  })
})
