/**
 * EMQ X 4's dashboard password hashes in Starling's user table (plugins/dashboard/users.ts):
 * kept as a data import brings them, they let the user sign in with the same password, and
 * that first sign-in rehashes with bcrypt.
 */
import { createHash } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStore, type Store } from '../../../node/store/index.js'
import { silentLogger } from '../../../node/logger.js'
import { createDashboardUsers, emqxPasswordHash } from '../../../plugins/dashboard/users.js'

/** EMQ X's `mqtt_admin` bytes: 4 salt bytes and the raw digest of salt ‖ password. */
function emqxBytes (algorithm: 'sha256' | 'md5', password: string): Buffer {
  const salt = Buffer.from('f1577bfa', 'hex')
  return Buffer.concat([salt, createHash(algorithm).update(salt).update(password).digest()])
}

describe('dashboard users imported from EMQ X', () => {
  let dir: string
  let store: Store
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'starling-dash-'))
    store = await createStore({ dir, logger: silentLogger() })
  })
  afterEach(async () => {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('reads EMQ X 4.2\'s admin hash of the fixture (salted MD5 of "public")', () => {
    expect(emqxPasswordHash(Buffer.from('8Vd7+gVg2J3nE1Xjyxqd59sA5mo=', 'base64'))).toBe('emqx-md5:f1577bfa:0560d89de71355e3cb1a9de7db00e66a')
    expect(emqxPasswordHash(Buffer.alloc(25))).toBeUndefined()
  })

  it.each(['sha256', 'md5'] as const)('signs a user in with the password of an EMQ X salted %s hash, then keeps it as bcrypt', async (algorithm) => {
    const users = createDashboardUsers(store, () => 'admin')
    const hash = emqxPasswordHash(emqxBytes(algorithm, 'old-pass'))!
    await users.restore('ops', 'viewer', hash)
    expect(await users.verify('ops', 'wrong')).toBeUndefined()
    expect(users.exportAll()[0].password_hash).toBe(hash)
    expect(await users.verify('ops', 'old-pass')).toMatchObject({ username: 'ops', tags: 'viewer' })
    expect(users.exportAll()[0].password_hash).toMatch(/^\$2[aby]\$10\$/)
    expect(await users.verify('ops', 'old-pass')).toMatchObject({ username: 'ops' })
  })

  it('refuses to store a hash in no form it reads', async () => {
    const users = createDashboardUsers(store, () => 'admin')
    await expect(users.restore('ops', '', 'md5:abc')).rejects.toThrow('the password hash is in no form Starling reads')
  })
})
