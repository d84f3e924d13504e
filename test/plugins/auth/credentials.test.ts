import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStore, type Store } from '../../../node/store/index.js'
import { silentLogger } from '../../../node/logger.js'
import {
  createAuthClientids, createAuthUsers, AUTH_CLIENTID_TABLE, AUTH_USERNAME_TABLE, type CredentialService
} from '../../../plugins/auth/credentials.js'
import {
  CredentialEmptyError, CredentialExistsError, CredentialInvalidError, CredentialNotFoundError
} from '../../../plugins/auth/errors.js'

describe('credential services', () => {
  let dir: string
  let store: Store

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'starling-auth-'))
    store = await createStore({ dir, logger: silentLogger() })
  })
  afterEach(async () => {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  })

  describe.each([
    ['users', createAuthUsers, AUTH_USERNAME_TABLE, 'username'],
    ['clientid', createAuthClientids, AUTH_CLIENTID_TABLE, 'client id']
  ] as const)('%s', (_group, create, table, kind) => {
    let service: CredentialService
    beforeEach(() => { service = create(store) })

    it(`keeps entries in the ${table} table, hashed with salted sha256 by default`, async () => {
      await service.add('alice', 'secret')
      const raw = store.table<any>(table).get('alice')
      expect(raw).toEqual({ hash: 'sha256', salt: expect.stringMatching(/^[0-9a-f]{32}$/), password: expect.stringMatching(/^[0-9a-f]{64}$/), created_at: expect.any(Number) })
      expect(raw.password).not.toContain('secret')
      expect(service.kind).toBe(kind)
      expect(service.table).toBe(table)
    })

    it('adds, lists in order, looks up, updates and deletes', async () => {
      await service.add('bob', 'pw-b')
      await service.add('alice', 'pw-a')
      expect(service.list()).toEqual(['alice', 'bob'])
      const before = service.lookup('alice')!
      expect(before).toMatchObject({ id: 'alice', hash: 'sha256' })
      expect(service.lookup('carol')).toBeUndefined()

      await service.update('alice', 'pw-a2')
      const after = service.lookup('alice')!
      expect(after.created_at).toBe(before.created_at)
      expect(after.password).not.toBe(before.password)
      expect(await service.authenticate('alice', Buffer.from('pw-a2'))).toBe('allow')
      expect(await service.authenticate('alice', Buffer.from('pw-a'))).toBe('deny')

      await service.delete('bob')
      expect(service.list()).toEqual(['alice'])
    })

    it('refuses a second add of the same id with code 113 and keeps the first password', async () => {
      await service.add('alice', 'first')
      await expect(service.add('alice', 'second')).rejects.toThrow(CredentialExistsError)
      await expect(service.add('alice', 'second')).rejects.toMatchObject({ code: 113, message: expect.stringContaining('"alice" already exists') })
      expect(await service.authenticate('alice', Buffer.from('first'))).toBe('allow')
    })

    it('lets only one of two concurrent adds of one id succeed', async () => {
      const results = await Promise.allSettled([service.add('race', 'one'), service.add('race', 'two')])
      expect(results.map(r => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    })

    it('refuses update and delete of an unknown id with code 105, naming it', async () => {
      await expect(service.update('ghost', 'pw')).rejects.toThrow(CredentialNotFoundError)
      await expect(service.update('ghost', 'pw')).rejects.toMatchObject({ code: 105, message: expect.stringContaining('"ghost" does not exist') })
      await expect(service.delete('ghost')).rejects.toMatchObject({ code: 105 })
    })

    it('refuses empty ids and passwords with code 104 and ids that cannot be stored with 108', async () => {
      await expect(service.add('', 'pw')).rejects.toThrow(CredentialEmptyError)
      await expect(service.add('alice', '')).rejects.toMatchObject({ code: 104 })
      await expect(service.add('x'.repeat(2000), 'pw')).rejects.toThrow(CredentialInvalidError)
      await expect(service.add(42 as any, 'pw')).rejects.toMatchObject({ code: 108 })
      expect(service.list()).toEqual([])
    })

    it('decides: no entry -> ignore, right password -> allow, wrong or missing -> deny', async () => {
      await service.add('alice', 'secret')
      expect(await service.authenticate('nobody', Buffer.from('secret'))).toBe('ignore')
      expect(await service.authenticate(undefined, Buffer.from('secret'))).toBe('ignore')
      expect(await service.authenticate('x'.repeat(5000), Buffer.from('secret'))).toBe('ignore')
      expect(await service.authenticate('alice', Buffer.from('secret'))).toBe('allow')
      expect(await service.authenticate('alice', Buffer.from('Secret'))).toBe('deny')
      expect(await service.authenticate('alice', undefined)).toBe('deny')
      expect(await service.authenticate('alice', Buffer.alloc(0))).toBe('deny')
    })
  })

  it('verifies each entry with the hash it was stored with, whatever the service now uses', async () => {
    await createAuthUsers(store, { passwordHash: 'md5' }).add('old', 'pw-old')
    const now = createAuthUsers(store, { passwordHash: 'plain' })
    await now.add('new', 'pw-new')
    expect(now.lookup('old')!.hash).toBe('md5')
    expect(now.lookup('new')).toMatchObject({ hash: 'plain', password: 'pw-new' })
    expect(await now.authenticate('old', Buffer.from('pw-old'))).toBe('allow')
  })

  it('refuses a bcrypt password longer than the 72 bytes bcrypt uses', async () => {
    const users = createAuthUsers(store, { passwordHash: 'bcrypt' })
    await expect(users.add('long', 'p'.repeat(73))).rejects.toMatchObject({ code: 108 })
    await users.add('ok', 'p'.repeat(72))
    expect(await users.authenticate('ok', Buffer.from('p'.repeat(72)))).toBe('allow')
  })

  it('keeps the client id and username tables apart', async () => {
    await createAuthUsers(store).add('same', 'as-user')
    await createAuthClientids(store).add('same', 'as-client')
    expect(await createAuthUsers(store).authenticate('same', Buffer.from('as-client'))).toBe('deny')
    expect(await createAuthClientids(store).authenticate('same', Buffer.from('as-client'))).toBe('allow')
  })

  it('keeps entries when the store is reopened', async () => {
    await createAuthUsers(store).add('alice', 'secret')
    await store.close()
    store = await createStore({ dir, logger: silentLogger() })
    expect(await createAuthUsers(store).authenticate('alice', Buffer.from('secret'))).toBe('allow')
  })
})
