/**
 * The replay queue's write and read rates on this machine's disk (plugins/kit/replayq/replayq.ts):
 * durable appends per second with group commit, for appends of 1, 32 and 256 items of
 * 200 bytes made one after another, and with 64 concurrent appenders of one item (a
 * bridge under many publishers: their appends share a group and an fsync); then pop + ack
 * of everything, read back from disk after a reopen.
 *
 *   npx tsc -p tsconfig.build.json && node dist/bench/replayq.js [--seconds S] [--dir D]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openReplayQueue } from '../plugins/kit/replayq/replayq.js'

const ITEM_BYTES = 200
const { values } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, dir: { type: 'string' } } })
const seconds = Number(values.seconds)
const payload = Buffer.alloc(ITEM_BYTES, 'x')

interface Row { case: string, items: number, 'items/s': number, 'MB/s': number, fsyncs: number, 'items/fsync': number }
const rows: Row[] = []

async function appendCase (name: string, batch: number, appenders: number): Promise<string> {
  const dir = await mkdtemp(join(values.dir ?? tmpdir(), 'replayq-bench-'))
  const queue = await openReplayQueue<Buffer>({ dir })
  const items = Array.from({ length: batch }, () => payload)
  const until = performance.now() + seconds * 1000
  let appended = 0
  const start = performance.now()
  await Promise.all(Array.from({ length: appenders }, async () => {
    while (performance.now() < until) {
      await queue.append(items)
      appended += batch
    }
  }))
  const elapsed = (performance.now() - start) / 1000
  const stats = queue.stats()
  rows.push({
    case: name,
    items: appended,
    'items/s': Math.round(appended / elapsed),
    'MB/s': round(stats.writtenBytes / elapsed / 1e6),
    fsyncs: stats.syncs,
    'items/fsync': round(appended / stats.syncs)
  })
  await queue.close()
  return dir
}

async function popAckCase (dir: string): Promise<void> {
  // reopened, so every item is read back from the segment files
  const queue = await openReplayQueue<Buffer>({ dir })
  const total = queue.stats().count
  const start = performance.now()
  let popped = 0
  for (;;) {
    const { items, ackRef } = queue.pop(256, Infinity)
    if (items.length === 0) break
    popped += items.length
    queue.ack(ackRef)
  }
  const elapsed = (performance.now() - start) / 1000
  await queue.close()
  rows.push({ case: 'pop 256 + ack, read back from disk', items: popped, 'items/s': Math.round(popped / elapsed), 'MB/s': round(popped * ITEM_BYTES / elapsed / 1e6), fsyncs: 0, 'items/fsync': 0 })
  if (popped !== total) throw new Error(`popped ${popped} of ${total}`)
}

function round (n: number): number {
  return Math.round(n * 100) / 100
}

const dirs: string[] = []
dirs.push(await appendCase('append 1 item, awaited one by one', 1, 1))
dirs.push(await appendCase('append 32 items, awaited one by one', 32, 1))
dirs.push(await appendCase('append 256 items, awaited one by one', 256, 1))
dirs.push(await appendCase('64 concurrent appenders of 1 item', 1, 64))
await popAckCase(dirs[2]!)
console.table(rows)
for (const dir of dirs) await rm(dir, { recursive: true, force: true })
