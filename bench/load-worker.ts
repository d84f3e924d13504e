/**
 * A load-generator worker thread. It owns its share of the connections (see
 * {@link WorkerPlan}), paces its publishers, and answers the main thread's commands.
 * Counters go to shared memory so the main thread can read them at the exact moments
 * it samples the broker's CPU time.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { COUNTER_SLOTS, Control, Counter, type WorkerCommand, type WorkerPlan, type WorkerReply } from './load-plan.js'
import { LatencyHistogram } from './latency-histogram.js'
import { LoadClient, MAX_BATCH, nowUs, type ClientContext } from './load-client.js'
import { encodePublishTemplate } from './packets.js'

const CONNECT_TIMEOUT_MS = 30_000

const plan = workerData as WorkerPlan
const control = new Int32Array(plan.control)
const histogram = new LatencyHistogram()
const ctx: ClientContext = {
  counters: new Float64Array(plan.counters),
  base: plan.workerIndex * COUNTER_SLOTS,
  histogram,
  // JSON payloads carry no send time: nothing to record.
  recording: () => plan.publisher.jsonTemp === undefined && Atomics.load(control, Control.RECORDING) === 1
}

const publishers: LoadClient[] = []
const subscribers: LoadClient[] = []
const idle: LoadClient[] = []
let publishing = false
let pacer: NodeJS.Timeout | null = null
let startedAt = 0

/** Opens `ids.length` connections, `connectBatch` at a time so the broker's accept queue is not overrun. */
async function openBatched (ids: string[], into: LoadClient[]): Promise<void> {
  for (let i = 0; i < ids.length; i += plan.connectBatch) {
    const batch = ids.slice(i, i + plan.connectBatch).map(async (id) => {
      const client = new LoadClient(plan.host, plan.port, ctx)
      into.push(client)
      await client.connect(id, plan.keepalive, CONNECT_TIMEOUT_MS)
      return client
    })
    await Promise.all(batch)
  }
}

async function setup (): Promise<void> {
  const prefix = `${plan.clientIdPrefix}-w${plan.workerIndex}`
  // Subscribers first: every subscription must exist before the first PUBLISH.
  await openBatched(plan.subscribers.map((i) => `${prefix}-sub${i}`), subscribers)
  for (let i = 0; i < subscribers.length; i += plan.connectBatch) {
    await Promise.all(subscribers.slice(i, i + plan.connectBatch)
      .map((s) => s.subscribe(plan.subscriber.filter, plan.subscriber.qos, CONNECT_TIMEOUT_MS)))
  }
  await openBatched(plan.publishers.map((i) => `${prefix}-pub${i}`), publishers)
  plan.publishers.forEach((index, k) => {
    const topic = plan.publisher.topic.replace('{i}', String(index))
    publishers[k].preparePublisher(encodePublishTemplate(topic, plan.publisher.qos, plan.publisher.payloadSize, plan.publisher.jsonTemp))
  })
  await openBatched(Array.from({ length: plan.idle }, (_, i) => `${prefix}-idle${i}`), idle)
}

/** Throttled pacing: each tick brings every publisher up to `rate × elapsed`. */
function paceTick (): void {
  const spec = plan.publisher
  const elapsedS = (nowUs() - startedAt) / 1e6
  const target = Math.floor(spec.rate * elapsedS)
  for (const client of publishers) {
    let due = target - client.scheduled
    if (due <= 0) continue
    client.scheduled = target
    // A backed-up socket skips this tick's sends instead of queueing them in memory.
    while (due > 0 && !client.backedUp) {
      const sent = client.publish(due, spec.inflightWindow)
      if (sent === 0) break
      due -= sent
    }
    if (due > 0) ctx.counters[ctx.base + Counter.SKIPPED] += due
  }
}

/** Unthrottled: write a batch, then continue on the next turn or when the socket drains. */
function pump (client: LoadClient): void {
  if (!publishing) return
  client.publish(MAX_BATCH, plan.publisher.inflightWindow)
  if (client.backedUp) client.onceDrained(() => pump(client))
  else setImmediate(pump, client)
}

function start (): void {
  publishing = true
  startedAt = nowUs()
  if (plan.publisher.rate > 0) {
    pacer = setInterval(paceTick, plan.publisher.tickMs)
  } else {
    for (const client of publishers) setImmediate(pump, client)
  }
}

function stop (): void {
  publishing = false
  if (pacer !== null) clearInterval(pacer)
  pacer = null
}

async function close (which: 'publishers' | 'all', abrupt: boolean): Promise<void> {
  stop()
  const clients = which === 'publishers' ? publishers : [...publishers, ...subscribers, ...idle]
  await Promise.all(clients.map((c) => c.close(abrupt)))
}

async function handle (message: WorkerCommand): Promise<WorkerReply> {
  switch (message.cmd) {
    case 'setup':
      await setup()
      return { id: message.id }
    case 'start':
      start()
      return { id: message.id }
    case 'stop':
      stop()
      return { id: message.id }
    case 'histogram':
      return { id: message.id, histogram: { counts: histogram.counts, max: histogram.max } }
    case 'close':
      await close(message.which, message.abrupt)
      return { id: message.id }
  }
}

parentPort?.on('message', (message: WorkerCommand) => {
  handle(message).then(
    (reply) => parentPort?.postMessage(reply),
    (err: Error) => parentPort?.postMessage({ id: message.id, error: err.message } satisfies WorkerReply)
  )
})
