/**
 * The store's format version (node/store/format.ts): a new store and one written before
 * versions existed are format 1; an earlier format is upgraded step by step, each step once;
 * a later format (a newer release's store) is refused and left untouched.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStore, STORE_FORMAT, type Store, type StoreMigration } from '../../../node/store/index.js'
import { silentLogger } from '../../../node/logger.js'

let dir: string
beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'store-format-')) })
afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

const open = async (format?: { version: number, migrations: StoreMigration[] }): Promise<Store> => await createStore({ dir, logger: silentLogger(), format })

it('writes the current format into a new store', async () => {
  const store = await open()
  expect(store.table('_meta').get('format')).toBe(STORE_FORMAT)
  await store.close()
})

it('takes a store without a version (written before versions existed) as format 1, its data kept', async () => {
  const old = await open()
  await old.table('_meta').del('format')
  await old.table('banned').put('clientid:x', { who: 'x' })
  await old.close()
  const store = await open()
  expect(store.table('_meta').get('format')).toBe(1)
  expect(store.table('banned').get('clientid:x')).toEqual({ who: 'x' })
  await store.close()
})

it('upgrades an earlier format step by step, each step run once', async () => {
  const v1 = await open({ version: 1, migrations: [] })
  await v1.table('users').put('alice', { pw: 'plain' })
  await v1.close()
  const ran: number[] = []
  const migrations: StoreMigration[] = [
    { from: 1, description: 'users: wrap the password', migrate: async (s) => { ran.push(1); const t = s.table<any>('users'); for (const [k, v] of [...t.entries()]) await t.put(k, { password: { plain: v.pw } }) } },
    { from: 2, description: 'users: add a created field', migrate: async (s) => { ran.push(2); const t = s.table<any>('users'); for (const [k, v] of [...t.entries()]) await t.put(k, { ...v, created: 0 }) } }
  ]
  const v3 = await open({ version: 3, migrations })
  expect(ran).toEqual([1, 2])
  expect(v3.table('users').get('alice')).toEqual({ password: { plain: 'plain' }, created: 0 })
  expect(v3.table('_meta').get('format')).toBe(3)
  await v3.close()
  // opened again: nothing left to do
  const again = await open({ version: 3, migrations })
  expect(ran).toEqual([1, 2])
  await again.close()
})

it('refuses a store written by a newer release, leaving it as it was', async () => {
  const newer = await open({ version: STORE_FORMAT + 1, migrations: [{ from: STORE_FORMAT, description: 'x', migrate: async () => {} }] })
  await newer.table('rules').put('r1', { sql: 'SELECT * FROM "t"' })
  await newer.close()
  await expect(open()).rejects.toThrow(`is format ${STORE_FORMAT + 1}, written by a newer Starling; this one reads format ${STORE_FORMAT} and older`)
  const check = await open({ version: STORE_FORMAT + 1, migrations: [] })
  expect(check.table('_meta').get('format')).toBe(STORE_FORMAT + 1)
  expect(check.table('rules').get('r1')).toEqual({ sql: 'SELECT * FROM "t"' })
  await check.close()
})
