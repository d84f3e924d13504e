/**
 * The data kit's resource instance over a fake client: batches per action (flushed together
 * per batch time), a row the server refuses for good found by splitting (the others written
 * once), the deadline without the local buffer (failed, never written later; firm in sync
 * mode), and a disk buffer read back by the next open.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { silentLogger } from '../../../node/logger.js'
import { DataResource, WriteRefused, WriteSkipped, type DataClient, type DataBatchSettings, type DataResourceSettings } from '../../../plugins/kit/data/index.js'
import { jsonLength } from '../../../plugins/kit/data/data-resource.js'

/** A write: rows of numbers; a row < 0 is refused for good; `down` makes every write fail as a lost connection. */
type W = number[]

function fakeClient (): DataClient<W> & { written: number[], calls: number, down: boolean } {
  const c = {
    address: 'fake',
    written: [] as number[],
    calls: 0,
    down: false,
    connect: async () => { if (c.down) throw new Error('connection refused') },
    alive: async () => !c.down,
    write: async (writes: readonly W[]) => {
      c.calls++
      if (c.down) throw new Error('connection lost')
      const rows = writes.flat()
      if (rows.some((r) => r < 0)) throw new WriteRefused('bad row')
      c.written.push(...rows)
    },
    merge: (rows: readonly W[]) => rows.flat(),
    split: (w: W) => w.map((r) => [r]),
    rows: (w: W) => w.length,
    close: async () => {}
  }
  return c
}

/**
 * A client that pipelines (PostgreSQL's `writeAfter`), over one fake connection: each write is
 * answered `latencyMs` after the one before it (the server runs them in the order sent); a
 * write made `after` a promise is stored only if that resolves true, else skipped. `dropNext`
 * loses the connection under the next write answered (it and every write sent behind it fail).
 */
function pipeliningClient (latencyMs: number): DataClient<W> & { written: number[], inFlight: number, mostInFlight: number, skipped: number, dropNext: boolean } {
  let line: Promise<void> = Promise.resolve()
  let broken = false
  const c = {
    ...fakeClient(),
    written: [] as number[],
    inFlight: 0,
    mostInFlight: 0,
    skipped: 0,
    dropNext: false,
    connect: async () => { broken = false },
    async writeAfter (writes: readonly W[], after?: Promise<boolean>) {
      c.inFlight++
      c.mostInFlight = Math.max(c.mostInFlight, c.inFlight)
      const before = line
      let answered!: () => void
      line = new Promise<void>((resolve) => { answered = resolve })
      try {
        await before
        await new Promise((resolve) => setTimeout(resolve, latencyMs))
        if (c.dropNext) { c.dropNext = false; broken = true }
        if (broken) throw new Error('connection lost')
        const stored = after === undefined ? true : await after
        if (!stored) { c.skipped++; throw new WriteSkipped() }
        const rows = writes.flat()
        if (rows.some((r) => r < 0)) throw new WriteRefused('bad row')
        c.written.push(...rows)
      } finally {
        c.inFlight--
        answered()
      }
    }
  }
  return c
}

/** Writes rows `values` of action 'a' one every `everyMs`, each its own batch: sends pile up behind the one in flight. */
async function paced (r: DataResource<W>, values: number[], everyMs: number, batch: DataBatchSettings = { ...BATCH, batchSize: 1 }): Promise<string[]> {
  const rows: Array<Promise<void>> = []
  for (const v of values) {
    rows.push(r.write('a', batch, [v]))
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
  return await outcomes(rows)
}

const SETTINGS: DataResourceSettings = { poolSize: 1, autoReconnect: true, localBuffer: false, maxBufferBytes: 1 << 20, retryTimeoutMs: 200 }
const BATCH: DataBatchSettings = { batchSize: 10, batchTimeMs: 5, mode: 'async', syncTimeoutMs: 5000 }

let dir: string
beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'data-resource-')) })
afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

async function outcomes (ps: Array<Promise<void>>): Promise<string[]> {
  return (await Promise.allSettled(ps)).map((r) => r.status)
}

describe('DataResource', () => {
  it('writes rows in batches, in order, and fails only the rows the server refuses', async () => {
    const client = fakeClient()
    const r = await DataResource.open({ id: 'x', client, settings: SETTINGS, dataDir: dir, logger: silentLogger() })
    const rows = [1, 2, -3, 4, 5]
    const got = await outcomes(rows.map((v) => r.write('a', BATCH, [v])))
    expect(got).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    expect(client.written).toEqual([1, 2, 4, 5])
    await r.close(true)
  })

  it('flushes the batches of every action with the same batch_time together, none later than batch_time', async () => {
    const client = fakeClient()
    const r = await DataResource.open({ id: 'x', client, settings: SETTINGS, dataDir: dir, logger: silentLogger() })
    const slow: DataBatchSettings = { ...BATCH, batchTimeMs: 1000 }
    const t0 = Date.now()
    const first = r.write('a', slow, [1])
    await new Promise((resolve) => setTimeout(resolve, 500))
    // b's batch joins a's period: it goes when a's does, about 500 ms after its row, not 1000
    const t1 = Date.now()
    const second = r.write('b', slow, [2]).then(() => Date.now() - t1)
    const [, waited] = await Promise.all([first, second])
    expect(Date.now() - t0).toBeGreaterThanOrEqual(990)
    expect(waited).toBeLessThan(900)
    expect(client.written).toEqual([1, 2])
    // a batch that fills flushes at once and leaves the period; the next row starts a new one
    const full = await outcomes(Array.from({ length: 10 }, (_, i) => r.write('c', slow, [10 + i])))
    expect(full).toEqual(Array(10).fill('fulfilled'))
    expect(client.written).toEqual([1, 2, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19])
    await r.close(true)
  })

  it('without the local buffer, fails rows not written within retry_timeout and never writes them later', async () => {
    const client = fakeClient()
    const r = await DataResource.open({ id: 'x', client, settings: SETTINGS, dataDir: dir, logger: silentLogger() })
    await r.write('a', BATCH, [1])
    client.down = true
    const late = await outcomes([r.write('a', BATCH, [2]), r.write('a', BATCH, [3])])
    expect(late).toEqual(['rejected', 'rejected'])
    expect(await r.alive()).toBe(false)
    client.down = false
    await r.write('a', BATCH, [4])
    expect(client.written).toEqual([1, 4])
    await r.close(true)
  })

  it('sizes an in-memory entry by its JSON length, estimated, and drops the oldest past max_buffer_bytes', async () => {
    const entry = { r: 'a1b2c3', i: 12345678, w: { text: 'INSERT INTO t VALUES ($1, $2)', rows: [['client-1', 12345678, null, true], ['client-2', 87654321, false, 'x']] } }
    const exact = JSON.stringify(entry).length
    expect(Math.abs(jsonLength(entry) - exact)).toBeLessThanOrEqual(6)
    const client = fakeClient()
    client.down = true
    // each entry {"r":"<12 hex>","i":n,"w":[n]} counts 50: 200 bytes hold 4 of the 12
    const r = await DataResource.open({ id: 'x', client, settings: { ...SETTINGS, maxBufferBytes: 200 }, dataDir: dir, logger: silentLogger() })
    const rows = Array.from({ length: 12 }, (_v, i) => r.write('a', { ...BATCH, batchSize: 1 }, [i]))
    await outcomes(rows)
    expect(r.dropped).toBeGreaterThanOrEqual(4)
    expect(r.dropped).toBeLessThanOrEqual(11)
    await r.close(true)
  })

  it('with the local buffer, succeeds once on disk and writes what it holds after the next open, in order', async () => {
    const client = fakeClient()
    client.down = true
    const settings = { ...SETTINGS, localBuffer: true }
    const r = await DataResource.open({ id: 'backend_x:b', client, settings, dataDir: dir, logger: silentLogger() })
    expect(await outcomes([1, 2, 3].map((v) => r.write('a', BATCH, [v])))).toEqual(['fulfilled', 'fulfilled', 'fulfilled'])
    await r.close(false)
    client.down = false
    const again = await DataResource.open({ id: 'backend_x:b', client, settings, dataDir: dir, logger: silentLogger() })
    const deadline = Date.now() + 5000
    while (client.written.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(client.written).toEqual([1, 2, 3])
    await again.close(true)
  })
  it('in sync mode the deadline is firm: a row whose write is unanswered at sync_timeout fails then; in async mode that write settles it', async () => {
    for (const mode of ['sync', 'async'] as const) {
      const client = fakeClient()
      let answer: () => void = () => {}
      const write = client.write
      client.write = async (writes) => { await new Promise<void>((resolve) => { answer = resolve }); await write(writes) }
      const r = await DataResource.open({ id: 'x', client, settings: { ...SETTINGS, retryTimeoutMs: 100 }, dataDir: dir, logger: silentLogger() })
      const begin = Date.now()
      const row = r.write('a', { ...BATCH, mode, syncTimeoutMs: 100 }, [1]).then(() => 'written', (err: Error) => err.message)
      const early = await Promise.race([row, new Promise((resolve) => setTimeout(() => resolve('waiting'), 300))])
      answer()
      const outcome = await row
      if (mode === 'sync') {
        expect(early).toBe('not written within 100 ms: still being written (the server may yet store it)')
        expect(Date.now() - begin).toBeGreaterThanOrEqual(95)
      } else {
        expect(early).toBe('waiting')
        expect(outcome).toBe('written')
      }
      // the write in flight stores it either way
      const deadline = Date.now() + 5000
      while (client.written.length < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
      expect(client.written).toEqual([1])
      await r.close(true)
    }
  })

  it('uses the resource\'s own sync deadline over the action\'s when the resource has one (Kafka\'s sync_timeout)', async () => {
    const client = fakeClient()
    client.write = async () => { await new Promise<void>(() => {}) }
    const r = await DataResource.open({ id: 'x', client, settings: { ...SETTINGS, syncTimeoutMs: 80 }, dataDir: dir, logger: silentLogger() })
    const begin = Date.now()
    const outcome = await r.write('a', { ...BATCH, mode: 'sync', syncTimeoutMs: 60_000 }, [1]).then(() => 'written', (err: Error) => err.message)
    expect(outcome).toBe('not written within 80 ms: still being written (the server may yet store it)')
    expect(Date.now() - begin).toBeLessThan(5000)
    await r.close(true)
  })

  describe('with a client that pipelines', () => {
    // retry_timeout well above the test's length: a row's outcome here is its write's, never its deadline
    const PIPELINED: DataResourceSettings = { ...SETTINGS, retryTimeoutMs: 10_000 }

    it('keeps two writes in flight and stores them in the order they were buffered', async () => {
      const client = pipeliningClient(10)
      const r = await DataResource.open({ id: 'x', client, settings: PIPELINED, dataDir: dir, logger: silentLogger() })
      const values = Array.from({ length: 40 }, (_v, i) => i + 1)
      expect(await paced(r, values, 2)).toEqual(values.map(() => 'fulfilled'))
      expect(client.written).toEqual(values)
      expect(client.mostInFlight).toBe(2)
      expect(client.skipped).toBe(0)
      await r.close(true)
    })

    it('a write refused while the next is in flight: the next is not stored, then goes again after the refused one is split', async () => {
      // writes answered every 25 ms, rows every 2 ms: a write always has another behind it
      const client = pipeliningClient(25)
      const r = await DataResource.open({ id: 'x', client, settings: PIPELINED, dataDir: dir, logger: silentLogger() })
      const values = Array.from({ length: 40 }, (_v, i) => i === 9 || i === 25 ? -(i + 1) : i + 1)
      const got = await paced(r, values, 2)
      expect(got).toEqual(values.map((v) => v < 0 ? 'rejected' : 'fulfilled'))
      // every row but the refused ones, once each, in order: what followed a refusal waited for its split
      expect(client.written).toEqual(values.filter((v) => v > 0))
      expect(client.skipped).toBeGreaterThan(0)
      await r.close(true)
    })

    it('a connection lost under the first of two writes in flight: both are sent again, in order, none lost', async () => {
      const client = pipeliningClient(10)
      const r = await DataResource.open({ id: 'x', client, settings: PIPELINED, dataDir: dir, logger: silentLogger() })
      const values = Array.from({ length: 40 }, (_v, i) => i + 1)
      const rows = paced(r, values, 2)
      // a write in flight with another behind it
      const deadline = Date.now() + 5000
      while (client.inFlight < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1))
      client.dropNext = true
      expect(await rows).toEqual(values.map(() => 'fulfilled'))
      expect(client.written).toEqual(values)
      await r.close(true)
    })
  })
})
