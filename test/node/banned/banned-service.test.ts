import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStore, type Store } from '../../../node/store/index.js'
import { silentLogger } from '../../../node/logger.js'
import { createBannedService, BANNED_TABLE, type BannedService } from '../../../node/banned/banned-service.js'
import { BannedEntryNotFoundError } from '../../../node/banned/banned-entry.js'
import type { BannedList } from '../../../node/mqtt/broker.js'
import { waitFor } from '../../helpers/node.js'

describe('banned service', () => {
  let dir: string
  let store: Store
  let clock: number
  /** A broker that records the banned list it is given (as Broker.useBannedList does). */
  let broker: { banned: BannedList | null, useBannedList: (list: BannedList) => () => void }
  let banned: BannedService
  const seconds = (): number => Math.floor(clock / 1000)
  const client = (clientId: string, username?: string, peerhost = '192.0.2.1'): any => ({ clientId, username, peerhost })

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'starling-banned-'))
    store = await createStore({ dir, logger: silentLogger() })
    clock = 1_700_000_000_000
    broker = {
      banned: null,
      useBannedList (list) { broker.banned = list; return () => { if (broker.banned === list) broker.banned = null } }
    }
    banned = createBannedService({ store, broker, logger: silentLogger() }, { now: () => clock })
  })
  afterEach(async () => {
    await banned.stop()
    await store.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('refuses a client by client id, username or IP address while the entry is live', async () => {
    await banned.add({ who: 'bad-client', as: 'client_id', reason: 'flapping' })
    await banned.add({ who: 'bad-user', as: 'username' })
    await banned.add({ who: '198.51.100.7', as: 'ip_address', reason: 'scanner' })
    expect(banned.check(client('bad-client'))).toBe('flapping')
    expect(banned.check(client('c2', 'bad-user'))).toBe('banned as username')
    expect(banned.check(client('c3', 'u', '198.51.100.7'))).toBe('scanner')
    expect(banned.check(client('c3', 'u', '::ffff:198.51.100.7'))).toBe('scanner')
    expect(banned.check(client('good', 'good-user'))).toBeNull()
    expect(banned.check(client('', undefined, ''))).toBeNull()
  })

  it('stops refusing when until has passed, and lists only live entries', async () => {
    await banned.add({ who: 'short', as: 'client_id', until: seconds() + 2 })
    await banned.add({ who: 'long', as: 'client_id', until: seconds() + 3600 })
    expect(banned.list().map(e => e.who)).toEqual(['long', 'short'])
    clock += 2000
    expect(banned.check(client('short'))).toBeNull()
    expect(banned.check(client('long'))).not.toBeNull()
    expect(banned.list().map(e => e.who)).toEqual(['long'])
    expect(banned.lookup('short', 'client_id')).toBeUndefined()
  })

  it('purges expired entries from the store', async () => {
    await banned.add({ who: 'short', as: 'client_id', until: seconds() + 1 })
    await banned.add({ who: 'long', as: 'username' })
    clock += 1000
    expect(await banned.purge()).toBe(1)
    expect([...store.table(BANNED_TABLE).entries()].map(([key]) => key)).toEqual(['username:long'])
  })

  it('replaces an entry added again for the same who and as', async () => {
    await banned.add({ who: 'c1', as: 'client_id', reason: 'first' })
    await banned.add({ who: 'c1', as: 'clientid', reason: 'second' })
    expect(banned.list()).toEqual([expect.objectContaining({ who: 'c1', as: 'client_id', reason: 'second' })])
  })

  it('deletes an entry, and refuses to delete one that is not there', async () => {
    await banned.add({ who: '10.0.0.1', as: 'ip_address' })
    await banned.delete('::ffff:10.0.0.1', 'ip_address')
    expect(banned.list()).toEqual([])
    await expect(banned.delete('10.0.0.1', 'ip_address')).rejects.toThrow(BannedEntryNotFoundError)
    await expect(banned.delete('x', 'nonsense')).rejects.toMatchObject({ code: 108 })
  })

  it('changes nothing on bad input', async () => {
    await expect(banned.add({ who: 'c1', as: 'client_id', until: 5 })).rejects.toMatchObject({ code: 108 })
    await expect(banned.add({ as: 'client_id' })).rejects.toMatchObject({ code: 107 })
    expect(banned.list()).toEqual([])
  })

  it('sets itself as the broker\'s banned list on start and removes itself on stop', async () => {
    await banned.start()
    expect(broker.banned).toBe(banned)
    await banned.stop()
    expect(broker.banned).toBeNull()
  })

  it('purges at start and then every purgeIntervalMs', async () => {
    await banned.add({ who: 'a', as: 'client_id', until: seconds() + 1 })
    clock += 1000
    const fast = createBannedService({ store, broker, logger: silentLogger() }, { now: () => clock, purgeIntervalMs: 10 })
    await fast.start()
    expect(store.table(BANNED_TABLE).count()).toBe(0)
    await fast.add({ who: 'b', as: 'client_id', until: seconds() + 1 })
    clock += 1000
    await waitFor(() => store.table(BANNED_TABLE).count() === 0, 'the periodic purge', 5000)
    await fast.stop()
  })
})
