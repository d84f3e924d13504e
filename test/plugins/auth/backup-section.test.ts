/**
 * How a backup's auth passwords are read (plugins/auth/backup-section.ts): EMQ X's stored
 * forms and ours, each verified with the password it was made from. The EMQ X 4.2 values are
 * the ones of test/fixtures/backup/emqx42-backup.json.
 */
import { createHash } from 'node:crypto'
import { decodePassword } from '../../../plugins/auth/backup-section.js'
import { hashPassword, verifyPassword } from '../../../plugins/auth/password-hash.js'

/** EMQ X's form: base64 of 4 salt bytes and the hex digest of salt ‖ password. */
function emqxForm (algorithm: string, salt: Buffer, password: string): string {
  return Buffer.concat([salt, Buffer.from(createHash(algorithm).update(salt).update(password).digest('hex'))]).toString('base64')
}

describe('backup passwords of the built-in auth tables', () => {
  it('reads EMQ X 4.2\'s auth_clientid entry (salted SHA-256) and verifies its password', async () => {
    const stored = decodePassword('UNb0e2RhNDc3NWIyNjg5Yjg4ZDExOTVhNWFkY2MzNGFmNzY2OTNmNmRlYzE4Y2ZiZjRjNzIyMWZlZTljZmEyZDE5Yzc=', undefined)
    expect(stored).toMatchObject({ hash: 'sha256', salt: '50d6f47b' })
    expect(await verifyPassword(stored!, 'emqx_p')).toBe(true)
    expect(await verifyPassword(stored!, 'emqx_q')).toBe(false)
  })

  it('reads EMQ X 4.2.10\'s auth_mnesia entry (bare hex SHA-256, no salt)', async () => {
    const stored = decodePassword('ceb5e917f7930ae8f0dc3ceb496a428f7e644736eebca36a2b8f6bbac756171a', undefined)
    expect(stored).toEqual({ hash: 'sha256', salt: '', password: 'ceb5e917f7930ae8f0dc3ceb496a428f7e644736eebca36a2b8f6bbac756171a' })
    expect(await verifyPassword(stored!, 'emqx_p')).toBe(true)
  })

  it.each([['md5', 'md5'], ['sha1', 'sha'], ['sha256', 'sha256']] as const)('reads EMQ X\'s salted %s form', async (algorithm, name) => {
    const stored = decodePassword(emqxForm(algorithm, Buffer.from('0a0b0c0d', 'hex'), 'secret-1'), undefined)
    expect(stored).toMatchObject({ hash: name, salt: '0a0b0c0d' })
    expect(await verifyPassword(stored!, 'secret-1')).toBe(true)
  })

  it.each(['sha256', 'md5', 'bcrypt', 'plain'] as const)('reads back what an export of a %s entry writes', async (hash) => {
    const made = await hashPassword(hash, 'round-trip')
    const written = Buffer.concat([Buffer.from(made.salt, 'hex'), Buffer.from(made.password, 'utf8')]).toString('base64')
    const stored = decodePassword(written, hash)
    expect(stored).toEqual(made)
    expect(await verifyPassword(stored!, 'round-trip')).toBe(true)
  })

  it('answers undefined for a form it cannot verify (EMQ X\'s sha512)', () => {
    const salt = Buffer.from('01020304', 'hex')
    expect(decodePassword(emqxForm('sha512', salt, 'x'), undefined)).toBeUndefined()
  })
})
