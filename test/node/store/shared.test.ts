import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStore, MAX_KEY_BYTES, type Store } from '../../../node/store/index.js'
import { Hlc, SharedData, type SharedChange } from '../../../node/store/shared.js'
import { silentLogger } from '../../../node/logger.js'

/** One replica: a real store in its own directory and the SharedData over it. */
interface Replica {
  name: string
  dir: string
  store: Store
  shared: SharedData
  /** Changes written on this replica, in order (what the cluster would ship). */
  outbox: SharedChange[]
}

describe('shared data (replicated tables)', () => {
  const replicas: Replica[] = []

  afterEach(async () => {
    for (const r of replicas.splice(0)) {
      await r.store.close()
      await rm(r.dir, { recursive: true, force: true })
    }
  })

  async function replica (name: string, now?: () => number, dir?: string): Promise<Replica> {
    const where = dir ?? await mkdtemp(join(tmpdir(), `starling-shared-${name}-`))
    const store = await createStore({ dir: where, logger: silentLogger() })
    const shared = new SharedData(store, name, { now })
    const r: Replica = { name, dir: where, store, shared, outbox: [] }
    shared.onLocalChange((change) => r.outbox.push(change))
    replicas.push(r)
    return r
  }

  /** Closes `r`'s store and opens the same directory again (a restart). */
  async function reopen (r: Replica, now?: () => number): Promise<Replica> {
    await r.store.close()
    replicas.splice(replicas.indexOf(r), 1)
    return await replica(r.name, now, r.dir)
  }

  /** Forwards every local change of each replica to the other, as the cluster layer does. */
  function link (a: Replica, b: Replica): () => Promise<void> {
    const inFlight: Array<Promise<boolean>> = []
    a.shared.onLocalChange((change) => inFlight.push(b.shared.apply(change)))
    b.shared.onLocalChange((change) => inFlight.push(a.shared.apply(change)))
    return async () => { while (inFlight.length > 0) await inFlight.shift() }
  }

  /** Applies the changes to `to` in the given order, all issued in one turn. */
  async function deliver (to: Replica, changes: SharedChange[]): Promise<boolean[]> {
    return await Promise.all(changes.map(async (c) => await to.shared.apply(c)))
  }

  it('replicates a put and a delete, and tells the other node through onRemoteChange', async () => {
    const a = await replica('a')
    const b = await replica('b')
    const delivered = link(a, b)
    const seen: Array<[string, unknown]> = []
    b.shared.table<{ v: number }>('rules').onRemoteChange((key, value) => seen.push([key, value]))

    await a.shared.table('rules').put('r1', { v: 1 })
    await delivered()
    expect(b.shared.table('rules').get('r1')).toEqual({ v: 1 })
    expect(b.store.table('rules').get('r1')).toEqual({ v: 1 }) // the plain store table holds it

    await a.shared.table('rules').del('r1')
    await delivered()
    expect(b.shared.table('rules').has('r1')).toBe(false)
    expect(seen).toEqual([['r1', { v: 1 }], ['r1', undefined]])
  })

  it('does not report a node its own writes as remote changes', async () => {
    const a = await replica('a')
    const b = await replica('b')
    const delivered = link(a, b)
    const seenOnA: string[] = []
    a.shared.table('banned').onRemoteChange((key) => seenOnA.push(key))
    await a.shared.table('banned').put('client_id:x', { who: 'x' })
    await delivered()
    expect(seenOnA).toEqual([])
    expect(b.outbox).toEqual([]) // an applied change is not shipped again
  })

  it.each([
    ['same millisecond: the higher node name wins', 1000, 1000, 'B'],
    ['a later write wins whatever the node names', 2000, 1000, 'A']
  ])('converges concurrent writes to the higher stamp in any arrival order (%s)', async (_title, nowA, nowB, winner) => {
    for (const order of ['a first', 'b first']) {
      const a = await replica('a', () => nowA)
      const b = await replica('b', () => nowB)
      const c = await replica('c', () => 0)
      const ta = a.shared.table<string>('rules')
      const tb = b.shared.table<string>('rules')
      await Promise.all([ta.put('k', 'A'), tb.put('k', 'B')])
      const [fromA, fromB] = [a.outbox[0], b.outbox[0]]
      const changes = order === 'a first' ? [fromA, fromB] : [fromB, fromA]
      // crosswise, and both to a third node in one turn (the second overtakes the first before it commits)
      await Promise.all([deliver(a, [fromB]), deliver(b, [fromA]), deliver(c, changes)])
      for (const r of [a, b, c]) expect([order, r.name, r.shared.table('rules').get('k')]).toEqual([order, r.name, winner])
      expect(a.shared.digest('rules')).toBe(b.shared.digest('rules'))
      expect(c.shared.digest('rules')).toBe(a.shared.digest('rules'))
      for (const r of replicas.splice(0)) { await r.store.close(); await rm(r.dir, { recursive: true, force: true }) }
    }
  })

  it('reports to onRemoteChange only the change that won when two arrive in one turn', async () => {
    const c = await replica('c')
    const seen: unknown[] = []
    c.shared.table('rules').onRemoteChange((_key, value) => seen.push(value))
    const older = { table: 'rules', key: 'k', value: 'old', stamp: new Hlc('a', () => 1000).next() }
    const newer = { table: 'rules', key: 'k', value: 'new', stamp: new Hlc('b', () => 2000).next() }
    expect(await deliver(c, [newer, older])).toEqual([true, false])
    expect(await deliver(c, [older])).toEqual([false])
    expect(c.shared.table('rules').get('k')).toBe('new')
    expect(seen).toEqual(['new'])
  })

  it('keeps a local write made while an older remote change was still being written', async () => {
    const a = await replica('a')
    const seen: unknown[] = []
    const table = a.shared.table<string>('rules')
    table.onRemoteChange((_key, value) => seen.push(value))
    const remote = { table: 'rules', key: 'k', value: 'remote', stamp: new Hlc('b', () => Date.now() - 1000).next() }
    const applied = a.shared.apply(remote)
    const local = table.put('k', 'local') // same turn: the remote write has not committed yet
    await Promise.all([applied, local])
    expect(table.get('k')).toBe('local')
    expect(seen).toEqual([]) // the remote value never became this node's data
  })

  it('lets a delete beat an older put and lose to a newer one', async () => {
    for (const [putAt, delAt, survives] of [[1500, 2000, false], [2000, 1500, true]] as const) {
      let time = 1000
      const a = await replica('a', () => time)
      const b = await replica('b', () => time)
      await a.shared.table('apps').put('app1', { secret: 'one' })
      await deliver(b, a.outbox.splice(0))
      // concurrent: a writes again, b deletes; neither has seen the other's change yet
      time = putAt
      const put = a.shared.table('apps').put('app1', { secret: 'two' })
      time = delAt
      const del = b.shared.table('apps').del('app1')
      await Promise.all([put, del])
      await Promise.all([deliver(a, b.outbox), deliver(b, a.outbox)])
      for (const r of [a, b]) {
        expect([putAt, r.name, r.shared.table('apps').get('app1')]).toEqual([putAt, r.name, survives ? { secret: 'two' } : undefined])
      }
      expect(a.shared.digest('apps')).toBe(b.shared.digest('apps'))
      for (const r of replicas.splice(0)) { await r.store.close(); await rm(r.dir, { recursive: true, force: true }) }
    }
  })

  it('keeps deletes as tombstones in the snapshot, so a late older put cannot bring a value back', async () => {
    const a = await replica('a')
    const table = a.shared.table('banned')
    await table.put('client_id:x', { who: 'x' })
    const oldPut = a.outbox[0]
    await table.del('client_id:x')
    const snapshot = a.shared.snapshot('banned')
    expect(snapshot).toEqual([{ table: 'banned', key: 'client_id:x', stamp: a.outbox[1].stamp }])
    expect('value' in snapshot[0]).toBe(false)
    expect(await a.shared.apply(oldPut)).toBe(false)
    expect(table.has('client_id:x')).toBe(false)
  })

  it('has equal digests exactly when two nodes agree, after merging snapshots both ways', async () => {
    const a = await replica('a')
    const b = await replica('b')
    await Promise.all([
      a.shared.table('rules').put('r1', 'a1'), a.shared.table('rules').put('r2', 'a2'),
      b.shared.table('rules').put('r2', 'b2'), b.shared.table('rules').put('r3', 'b3')
    ])
    await a.shared.table('rules').del('r1')
    expect(a.shared.digest('rules')).not.toBe(b.shared.digest('rules'))

    const [fromA, fromB] = [a.shared.snapshot('rules'), b.shared.snapshot('rules')]
    await deliver(b, fromA)
    expect(a.shared.digest('rules')).not.toBe(b.shared.digest('rules'))
    await deliver(a, fromB)
    expect(a.shared.digest('rules')).toBe(b.shared.digest('rules'))
    expect([...a.shared.table('rules').entries()]).toEqual([...b.shared.table('rules').entries()])
    expect(b.shared.table('rules').has('r1')).toBe(false)
    expect(b.shared.snapshot('rules').find((c) => c.key === 'r1')).toEqual({ table: 'rules', key: 'r1', stamp: expect.any(String) })
  })

  it('keeps stamps across a restart, and its clock never goes back', async () => {
    let time = 5_000_000
    let a = await replica('a', () => time)
    await a.shared.table('rules').put('mine', 1)
    const future = new Hlc('b', () => Date.now() + 60_000).next()
    await a.shared.apply({ table: 'rules', key: 'theirs', value: 2, stamp: future })
    const before = a.shared.snapshot('rules')

    time = 1_000 // the wall clock went back while the node was down
    a = await reopen(a, () => time)
    expect(a.shared.snapshot('rules')).toEqual(before)
    await a.shared.table('rules').put('after', 3)
    expect(a.outbox[0].stamp > future).toBe(true)
    expect(a.outbox[0].stamp > before[0].stamp).toBe(true)
  })

  it('stamps legacy entries (written before shared data) and replicates them through the snapshot', async () => {
    const a = await replica('a')
    const b = await replica('b')
    await a.store.table('auth_username').put('alice', { hash: 'x' })
    await a.store.table('auth_username').put('both', { from: 'a' })
    await b.store.table('auth_username').put('both', { from: 'b' })

    // one stamp per legacy entry, whichever way it is asked for (digest, then snapshot, same turn)
    const digest = a.shared.digest('auth_username')
    const first = a.shared.snapshot('auth_username')
    expect(a.shared.digest('auth_username')).toBe(digest)
    expect(first.map((c) => [c.key, c.value])).toEqual([['alice', { hash: 'x' }], ['both', { from: 'a' }]])
    await a.store.flushed()
    expect(a.shared.snapshot('auth_username')).toEqual(first)

    // both nodes stamp their own legacy entries; the later stamp of 'both' wins on both
    const fromB = b.shared.snapshot('auth_username')
    await Promise.all([deliver(b, first), deliver(a, fromB)])
    expect(b.shared.table('auth_username').get('alice')).toEqual({ hash: 'x' })
    expect(a.shared.table('auth_username').get('both')).toEqual(b.shared.table('auth_username').get('both'))
    expect(a.shared.digest('auth_username')).toBe(b.shared.digest('auth_username'))
  })

  it('stamps a value written around shared data after it was stamped (a delete, then a raw put)', async () => {
    const a = await replica('a')
    await a.shared.table('rules').put('k', 1)
    await a.shared.table('rules').del('k')
    const tombstone = a.shared.snapshot('rules')[0].stamp
    await a.store.table('rules').put('k', 2)
    const [entry] = a.shared.snapshot('rules')
    expect(entry).toEqual({ table: 'rules', key: 'k', value: 2, stamp: expect.any(String) })
    expect(entry.stamp > tombstone).toBe(true)
  })

  it('refuses a bad key or a malformed change, writing and shipping nothing', async () => {
    const a = await replica('a')
    const table = a.shared.table('rules')
    await expect(table.put('', 1)).rejects.toThrow(/non-empty/)
    await expect(table.put('x'.repeat(MAX_KEY_BYTES + 1), 1)).rejects.toThrow(/shared table "rules".*longer than/)
    expect(a.outbox).toEqual([])
    await expect(a.shared.apply({ table: 'rules', key: 'k', value: 1, stamp: 'yesterday' })).rejects.toThrow(/not a stamp/)
    await expect(a.shared.apply({ table: 'shared_stamps', key: 'k', value: 1, stamp: new Hlc('b').next() })).rejects.toThrow(/cannot be a shared table/)
    expect(table.count()).toBe(0)
  })

  it('handles keys as long as the store allows, tombstones included', async () => {
    const a = await replica('a')
    const b = await replica('b')
    const delivered = link(a, b)
    const key = 'k'.repeat(MAX_KEY_BYTES)
    await a.shared.table('banned').put(key, 1)
    await delivered()
    expect(b.shared.table('banned').get(key)).toBe(1)
    await b.shared.table('banned').del(key)
    await delivered()
    expect(a.shared.table('banned').has(key)).toBe(false)
    expect(a.shared.snapshot('banned')).toEqual([{ table: 'banned', key, stamp: b.outbox[0].stamp }])
  })

  it('issues ever-growing stamps that sort as strings, past a full counter', () => {
    const clock = new Hlc('n', () => 1000)
    const first = clock.next()
    clock.observe(`${(1000).toString(36).padStart(10, '0')}.zzzz.m`)
    const afterFull = clock.next()
    const then = clock.next()
    expect(first < afterFull && afterFull < then).toBe(true)
    expect(afterFull).toMatch(/^[0-9a-z]{10}\.[0-9a-z]{4}\.n$/)
  })
})
