/**
 * plugins/kit/sink/buffered-sink.ts: the queue, pump and reconnects every outbound
 * integration shares (the MQTT bridge runs on it: test/e2e/bridge-*.test.ts). Here its own
 * rules, with a target that fails on demand: order kept through a drop, a batch refused for
 * good counted and skipped, reconnect waits that double and reset.
 */
import { silentLogger } from '../../../node/logger.js'
import { openReplayQueue } from '../../../plugins/kit/replayq/replayq.js'
import { createBufferedSink, RejectedBatch, type SinkTarget } from '../../../plugins/kit/sink/buffered-sink.js'

async function until (check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 5))
  }
}

/** A target that records what it took and fails the way the test says. */
function flakyTarget (): SinkTarget<number> & { got: number[], connects: number[], failConnects: number, failNext: 'down' | 'reject' | null, downListener?: (err: Error) => void } {
  const t = {
    got: [] as number[],
    connects: [] as number[],
    failConnects: 0,
    failNext: null as 'down' | 'reject' | null,
    downListener: undefined as ((err: Error) => void) | undefined,
    async connect () {
      t.connects.push(Date.now())
      if (t.failConnects > 0) { t.failConnects--; throw new Error('refused') }
    },
    async send (batch: number[]) {
      const fail = t.failNext
      t.failNext = null
      if (fail === 'down') throw new Error('connection reset')
      if (fail === 'reject') throw new RejectedBatch('duplicate key')
      t.got.push(...batch)
    },
    onDown (listener: (err: Error) => void) { t.downListener = listener },
    async close () {}
  }
  return t
}

test('items arrive in order and once acknowledged leave the queue; a drop sends the popped batch again', async () => {
  const queue = await openReplayQueue<number>({ batchCountLimit: 3, sizeOf: () => 8 })
  const target = flakyTarget()
  const sink = createBufferedSink({ queue, target, maxInflightBatches: 1, reconnectIntervalMs: 10, logger: silentLogger(), address: 'test' })
  sink.start()
  await until(() => sink.status === 'connected', 'connected')
  target.failNext = 'down'
  await sink.append([1, 2, 3, 4, 5, 6, 7])
  await until(() => target.got.length === 7, 'all seven')
  expect(target.got).toEqual([1, 2, 3, 4, 5, 6, 7])
  expect(sink.sent).toBe(7)
  expect(sink.queueStats().count).toBe(0)
  expect(target.connects.length).toBe(2)
  await sink.stop()
})

test('a batch refused for good is counted as failed, reported, and the next ones still go', async () => {
  const queue = await openReplayQueue<number>({ batchCountLimit: 2, sizeOf: () => 8 })
  const target = flakyTarget()
  const failed: number[] = []
  const sink = createBufferedSink({ queue, target, maxInflightBatches: 1, reconnectIntervalMs: 10, logger: silentLogger(), address: 'test', onFailed: (items) => failed.push(...items) })
  sink.start()
  await until(() => sink.status === 'connected', 'connected')
  target.failNext = 'reject'
  await sink.append([1, 2, 3, 4])
  await until(() => sink.sent + sink.failed === 4, 'four settled')
  expect(failed).toEqual([1, 2])
  expect(target.got).toEqual([3, 4])
  expect(sink.failed).toBe(2)
  expect(target.connects.length).toBe(1)
  await sink.stop()
})

test('connect attempts wait longer each time up to the cap, and a connect resets the wait', async () => {
  const queue = await openReplayQueue<number>({ sizeOf: () => 8 })
  const target = flakyTarget()
  target.failConnects = 4
  const sink = createBufferedSink({ queue, target, maxInflightBatches: 1, reconnectIntervalMs: 40, maxReconnectIntervalMs: 160, logger: silentLogger(), address: 'test' })
  sink.start()
  await until(() => sink.status === 'connected', 'connected', 10_000)
  const gaps = target.connects.slice(1).map((t, i) => t - target.connects[i])
  // 40, 80, 160, 160 (timers fire late, never early)
  expect(gaps.length).toBe(4)
  expect(gaps[0]).toBeGreaterThanOrEqual(38)
  expect(gaps[1]).toBeGreaterThanOrEqual(78)
  expect(gaps[2]).toBeGreaterThanOrEqual(158)
  expect(gaps[3]).toBeGreaterThanOrEqual(158)
  expect(gaps[3]).toBeLessThan(320)
  // a drop now: the first wait is the short one again
  const before = target.connects.length
  const droppedAt = Date.now()
  target.downListener!(new Error('gone'))
  await until(() => target.connects.length === before + 1, 'the reconnect')
  expect(target.connects[before] - droppedAt).toBeGreaterThanOrEqual(38)
  expect(target.connects[before] - droppedAt).toBeLessThan(150)
  await until(() => sink.status === 'connected', 'connected again')
  await sink.stop()
  expect(sink.status).toBe('stopped')
})

test('retryNow connects at once instead of at the end of a long wait', async () => {
  const queue = await openReplayQueue<number>({ sizeOf: () => 8 })
  const target = flakyTarget()
  target.failConnects = 1
  const sink = createBufferedSink({ queue, target, maxInflightBatches: 1, reconnectIntervalMs: 60_000, logger: silentLogger(), address: 'test' })
  sink.start()
  await until(() => target.connects.length === 1, 'the first, failed attempt')
  const asked = Date.now()
  sink.retryNow()
  await until(() => sink.status === 'connected', 'connected')
  expect(target.connects[1] - asked).toBeLessThan(1000)
  await sink.stop()
})
