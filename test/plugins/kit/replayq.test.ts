import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openReplayQueue, type ReplayOverflow, type ReplayQueue, type ReplayQueueOptions } from '../../../plugins/kit/replayq/replayq.js'
import { DEFAULT_IO } from '../../../plugins/kit/replayq/replayq-files.js'
import { DoneSet } from '../../../plugins/kit/replayq/replayq-done.js'

const item = (n: number): Buffer => Buffer.from(`item-${String(n).padStart(8, '0')}`) // 13 bytes
const ids = (items: Buffer[]): number[] => items.map((b) => Number(b.toString().slice(5)))
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i)
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

async function waitFor (predicate: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!await predicate()) {
    if (Date.now() > until) throw new Error('timed out waiting')
    await sleep(5)
  }
}

/** Pops everything (acking it when `ack`) and returns the ids in order. */
function drain (q: ReplayQueue<Buffer>, ack = true): number[] {
  const out: number[] = []
  for (;;) {
    const { items, ackRef } = q.pop(100, Infinity)
    if (items.length === 0) return out
    out.push(...ids(items))
    if (ack) q.ack(ackRef)
  }
}

async function segmentFiles (dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith('.seg')).sort()
}

describe('replay queue', () => {
  let dir: string
  const open: Array<ReplayQueue<any>> = []
  const openQueue = async <T = Buffer>(opts: Partial<ReplayQueueOptions<T>> = {}): Promise<ReplayQueue<T>> => {
    const q = await openReplayQueue<T>({ dir, segBytes: 300, ...opts })
    open.push(q)
    return q
  }

  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'starling-replayq-')) })
  afterEach(async () => {
    for (const q of open.splice(0)) await q.close()
    await rm(dir, { recursive: true, force: true })
  })

  describe('memory-only', () => {
    it('pops in append order within the batch limits and forgets acknowledged items', async () => {
      const q = await openReplayQueue<Buffer>({ batchCountLimit: 4, batchBytesLimit: 30 })
      await expect(q.append(range(0, 10).map(item))).resolves.toEqual({ accepted: 10, refused: 0 })
      const a = q.pop()
      expect(ids(a.items)).toEqual([0, 1]) // 2 × 13 bytes: a third would pass 30
      const b = q.pop(3, Infinity)
      expect(ids(b.items)).toEqual([2, 3, 4])
      expect(q.stats()).toMatchObject({ count: 10, pending: 5, bytes: 130, segments: 0 })
      q.ack(b.ackRef)
      q.ack(a.ackRef)
      expect(q.stats()).toMatchObject({ count: 5, pending: 0, bytes: 65 })
      expect(drain(q)).toEqual([5, 6, 7, 8, 9])
      await q.close()
    })

    it('drops the oldest queued items past the cap and refuses droppable ones, reporting both', async () => {
      const events: ReplayOverflow[] = []
      const q = await openReplayQueue<Buffer>({ maxTotalBytes: 13 * 5, onOverflow: (e) => events.push(e), now: () => 42 })
      await q.append(range(0, 5).map(item))
      const popped = q.pop(1) // pending items are not dropped
      await q.append(range(5, 7).map(item))
      expect(events).toEqual([{ reason: 'max_total_bytes', dropped: 2, refused: 0, count: 5, bytes: 65, at: 42 }])
      await expect(q.append([item(7)], { droppable: true })).resolves.toEqual({ accepted: 0, refused: 1 })
      expect(events[1]).toMatchObject({ dropped: 0, refused: 1 })
      expect(q.stats()).toMatchObject({ dropped: 3, count: 5 })
      q.ack(popped.ackRef)
      expect(drain(q)).toEqual([3, 4, 5, 6])
      await q.close()
    })

    it('puts nacked and reset batches back in order', async () => {
      const q = await openReplayQueue<Buffer>({})
      await q.append(range(0, 9).map(item))
      const a = q.pop(3)
      const b = q.pop(3)
      expect(q.nack(b.ackRef)).toBe(true)
      expect(q.reset()).toBe(3)
      expect(q.ack(a.ackRef)).toBe(false) // stale after reset
      expect(drain(q)).toEqual(range(0, 9))
    })

    it('keeps objects with encode/decode and sizes them with sizeOf', async () => {
      const q = await openReplayQueue<{ topic: string }>({ sizeOf: (m) => m.topic.length })
      await q.append([{ topic: 'a/b' }, { topic: 'c' }])
      expect(q.stats().bytes).toBe(4)
      expect(q.pop().items).toEqual([{ topic: 'a/b' }, { topic: 'c' }])
    })
  })

  describe('on disk', () => {
    it('keeps append order across segments and across a restart', async () => {
      let q = await openQueue()
      for (let i = 0; i < 100; i += 10) await q.append(range(i, i + 10).map(item))
      const files = await segmentFiles(dir)
      expect(files.length).toBeGreaterThan(5) // 30 bytes a record, 300 a segment
      expect(files[0]).toMatch(/^\d{16}\.seg$/)
      for (const f of files) expect((await stat(join(dir, f))).size).toBeLessThanOrEqual(300)
      expect(drain(q, false)).toEqual(range(0, 100))
      await q.close()
      q = await openQueue()
      expect(q.stats()).toMatchObject({ count: 100, bytes: 1300 })
      expect(drain(q)).toEqual(range(0, 100))
    })

    it('writes the appends of one turn as one group with one fsync, and resolves only after it', async () => {
      const syncs: number[] = []
      let release!: () => void
      const gate = new Promise<void>((resolve) => { release = resolve })
      const q = await openQueue({
        segBytes: 1024 * 1024,
        io: {
          writev: DEFAULT_IO.writev,
          sync: async (file) => { syncs.push(file.fd); await gate; await DEFAULT_IO.sync(file) }
        }
      })
      let resolved = 0
      try {
        const appends = range(0, 50).map((n) => q.append([item(n)]).then(() => { resolved++ }))
        await waitFor(() => syncs.length > 0)
        await sleep(20)
        expect(syncs.length).toBe(1)
        expect(resolved).toBe(0)
        // appended while the first group is being synced: the next group
        const later = range(50, 60).map((n) => q.append([item(n)]))
        release()
        await Promise.all([...appends, ...later])
      } finally {
        release()
      }
      expect(resolved).toBe(50)
      expect(syncs.length).toBe(2)
      expect(q.stats()).toMatchObject({ syncs: 2, writtenBytes: 60 * 30 })
    })

    it('reads back every unacknowledged item in order after a restart, pending ones included', async () => {
      let q = await openQueue()
      await q.append(range(0, 100).map(item))
      const acked = q.pop(30, Infinity)
      q.ack(acked.ackRef)
      q.pop(20, Infinity) // popped, never acknowledged
      await q.close()
      q = await openQueue()
      expect(q.stats()).toMatchObject({ count: 70 })
      expect(drain(q)).toEqual(range(30, 100))
    })

    it('commits only the contiguous acknowledged prefix, remembering later acks across a restart', async () => {
      let q = await openQueue()
      await q.append(range(0, 30).map(item))
      const a = q.pop(10, Infinity)
      const b = q.pop(10, Infinity)
      const c = q.pop(10, Infinity)
      q.ack(c.ackRef)
      q.ack(a.ackRef)
      await q.close()
      const commit = JSON.parse(await readFile(join(dir, 'COMMIT'), 'utf8'))
      expect(commit).toMatchObject({ commit: 10, done: [[20, 30]] })
      q = await openQueue()
      expect(drain(q)).toEqual(range(10, 20))
      void b
    })

    it('deletes a segment once every item in it is acknowledged', async () => {
      const q = await openQueue()
      await q.append(range(0, 60).map(item))
      const before = (await segmentFiles(dir)).length
      const first = q.pop(10, Infinity) // 10 × 30 bytes: exactly the first segment
      const second = q.pop(5, Infinity)
      q.ack(first.ackRef)
      await waitFor(async () => (await segmentFiles(dir)).length < before)
      expect((await segmentFiles(dir)).length).toBe(before - 1)
      expect(q.stats().segments).toBe(before - 1)
      drain(q)
      q.ack(second.ackRef)
      await q.close()
      expect(await segmentFiles(dir)).toEqual([])
    })

    it('truncates a torn write at the end of the last segment and goes on', async () => {
      let q = await openQueue({ segBytes: 10_000 })
      await q.append(range(0, 5).map(item))
      await q.close()
      const [file] = await segmentFiles(dir)
      const good = (await stat(join(dir, file!))).size
      await appendFile(join(dir, file!), Buffer.from([0, 0, 0, 13, 1, 2, 3, 4, 0, 0])) // a record cut short
      q = await openQueue({ segBytes: 10_000 })
      expect((await stat(join(dir, file!))).size).toBe(good)
      expect(q.stats()).toMatchObject({ count: 5, corrupt: 0 })
      await q.append([item(5)])
      await q.close()
      q = await openQueue({ segBytes: 10_000 })
      expect(drain(q)).toEqual(range(0, 6))
    })

    it('skips the rest of a segment after a corrupt record in the middle, counts it, and reads the next segments', async () => {
      let q = await openQueue()
      await q.append(range(0, 30).map(item))
      await q.close()
      const [first] = await segmentFiles(dir)
      const bytes = await readFile(join(dir, first!))
      bytes[3 * 30 + 20] ^= 0xff // the payload of the fourth record
      await writeFile(join(dir, first!), bytes)
      q = await openQueue()
      expect(q.stats()).toMatchObject({ corrupt: 1, count: 23 })
      expect(drain(q)).toEqual([0, 1, 2, ...range(10, 30)])
    })

    it('reads items beyond its memory budget back from disk, in order', async () => {
      const q = await openQueue({ segBytes: 1000, memoryBytes: 100 })
      await q.append(range(0, 200).map(item))
      const first = q.pop(5, Infinity)
      await q.append(range(200, 220).map(item))
      expect(ids(first.items)).toEqual(range(0, 5))
      expect(drain(q)).toEqual(range(5, 220))
    })

    it('drops the oldest items past the cap on disk too, and they stay dropped after a restart', async () => {
      const events: ReplayOverflow[] = []
      let q = await openQueue({ maxTotalBytes: 13 * 20, onOverflow: (e) => events.push(e) })
      await q.append(range(0, 20).map(item))
      await q.append(range(20, 25).map(item))
      expect(events).toMatchObject([{ reason: 'max_total_bytes', dropped: 5 }])
      expect(q.stats()).toMatchObject({ count: 20, dropped: 5 })
      await q.close()
      q = await openQueue()
      expect(drain(q)).toEqual(range(5, 25))
    })

    it('on a full disk drops the oldest segment and retries; fails the append when nothing can go', async () => {
      const events: ReplayOverflow[] = []
      let full = false
      const q = await openQueue({
        onOverflow: (e) => events.push(e),
        io: {
          writev: async (file, buffers, position) => {
            if (full) { full = false; throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }) }
            return await DEFAULT_IO.writev(file, buffers, position)
          },
          sync: DEFAULT_IO.sync
        }
      })
      await q.append(range(0, 25).map(item))
      full = true
      await q.append([item(25)])
      expect(events).toMatchObject([{ reason: 'disk_full', dropped: 10 }])
      expect(drain(q)).toEqual(range(10, 26))

      const broken = await openQueue({
        dir: join(dir, 'broken'),
        io: { writev: async () => { throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }) }, sync: DEFAULT_IO.sync }
      })
      await expect(broken.append([item(0)])).rejects.toThrow('no space left')
      expect(broken.stats()).toMatchObject({ count: 0, dropped: 1 })
      expect(broken.pop().items).toEqual([])
    })

    it('stores objects through encode/decode', async () => {
      const codec = { encode: (m: { n: number }) => Buffer.from(JSON.stringify(m)), decode: (b: Buffer) => JSON.parse(b.toString()) as { n: number } }
      let q = await openQueue<{ n: number }>(codec)
      await q.append([{ n: 1 }, { n: 2 }])
      await q.close()
      q = await openQueue<{ n: number }>(codec)
      expect(q.pop().items).toEqual([{ n: 1 }, { n: 2 }])
    })

    it('refuses appends after close and keeps what was appended before it', async () => {
      let q = await openQueue()
      const pending = q.append([item(1)])
      await q.close()
      await pending
      await expect(q.append([item(2)])).rejects.toThrow('after close')
      q = await openQueue()
      expect(drain(q)).toEqual([1])
    })
  })
})

describe('DoneSet', () => {
  it('advances the commit over a contiguous prefix only', () => {
    const done = new DoneSet()
    for (const n of [3, 1, 5, 4]) expect(done.add(n)).toBe(true)
    expect(done.add(4)).toBe(false)
    expect(done.snapshot()).toEqual({ commit: 0, done: [[1, 2], [3, 6]] })
    done.add(0)
    expect(done.snapshot()).toEqual({ commit: 2, done: [[3, 6]] })
    done.add(2)
    expect(done.snapshot()).toEqual({ commit: 6, done: [] })
    done.addRange(8, 10)
    done.addRange(9, 12)
    expect(done.nextNotDone(8)).toBe(12)
    expect(done.covers(8, 12)).toBe(true)
    expect(done.covers(6, 12)).toBe(false)
    expect(done.highWater()).toBe(12)
  })
})
