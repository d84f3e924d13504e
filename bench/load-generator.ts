/**
 * The main-thread side of the load generator: spreads publishers, subscribers and idle
 * connections over worker threads, drives them through setup → start → stop → close,
 * and reads their shared counters.
 */
import { Worker } from 'node:worker_threads'
import {
  COUNTER_SLOTS, Control, Counter,
  type PublisherSpec, type SubscriberSpec, type WorkerCommand, type WorkerPlan, type WorkerReply
} from './load-plan.js'
import { LatencyHistogram } from './latency-histogram.js'

/** The whole load of one run, before it is split over workers. */
export interface LoadInit {
  host: string
  port: number
  /** Number of worker threads. */
  workers: number
  /** Prefix for client identifiers; make it unique per run. */
  clientIdPrefix: string
  keepalive: number
  connectBatch: number
  publishers: number
  publisher: PublisherSpec
  subscribers: number
  subscriber: SubscriberSpec
  idle: number
}

/** Sums of every worker's counters at one instant. */
export interface LoadCounters {
  sent: number
  received: number
  acked: number
  skipped: number
  dropped: number
  connected: number
}

/** Splits `count` items over `workers`, round-robin, starting at worker `first` and stepping by `step`. */
function spread (count: number, workers: number, first: number, step: number): number[][] {
  const out: number[][] = Array.from({ length: workers }, () => [])
  for (let i = 0; i < count; i++) out[(((first + i * step) % workers) + workers) % workers].push(i)
  return out
}

/** Drives a set of load workers. Create it, then `setup()`, `start()`, `stop()`, `close()`, `terminate()`. */
export class LoadGenerator {
  private readonly workers: Worker[] = []
  private readonly counters: Float64Array
  private readonly control: Int32Array
  private readonly pending = new Map<number, { resolve: (r: WorkerReply) => void, reject: (e: Error) => void }>()
  private nextId = 1

  constructor (init: LoadInit) {
    const counterBuffer = new SharedArrayBuffer(init.workers * COUNTER_SLOTS * 8)
    const controlBuffer = new SharedArrayBuffer(4 * 4)
    this.counters = new Float64Array(counterBuffer)
    this.control = new Int32Array(controlBuffer)
    // Subscribers fill workers from the first, publishers from the last, so a single
    // subscriber and a single publisher never share a thread when there are two or more.
    const subs = spread(init.subscribers, init.workers, 0, 1)
    const pubs = spread(init.publishers, init.workers, init.workers - 1, -1)
    const idle = spread(init.idle, init.workers, 0, 1)
    for (let w = 0; w < init.workers; w++) {
      const plan: WorkerPlan = {
        host: init.host,
        port: init.port,
        workerIndex: w,
        clientIdPrefix: init.clientIdPrefix,
        keepalive: init.keepalive,
        connectBatch: init.connectBatch,
        publishers: pubs[w],
        publisher: init.publisher,
        subscribers: subs[w],
        subscriber: init.subscriber,
        idle: idle[w].length,
        counters: counterBuffer,
        control: controlBuffer
      }
      const worker = new Worker(new URL('./load-worker.js', import.meta.url), { workerData: plan })
      worker.on('message', (reply: WorkerReply) => this.onReply(reply))
      worker.on('error', (err) => this.failAll(err))
      this.workers.push(worker)
    }
  }

  /** Opens every connection and subscription; rejects if any worker fails. */
  setup (): Promise<void> {
    return this.all({ cmd: 'setup' })
  }

  /** Publishers begin sending. */
  start (): Promise<void> {
    return this.all({ cmd: 'start' })
  }

  /** Publishers stop sending; subscribers keep receiving. */
  stop (): Promise<void> {
    return this.all({ cmd: 'stop' })
  }

  /** Disconnects publishers or everyone, gracefully (DISCONNECT) or abruptly (TCP RST). */
  close (which: 'publishers' | 'all', abrupt: boolean): Promise<void> {
    return this.all({ cmd: 'close', which, abrupt })
  }

  /** Turns latency recording on or off in every worker. */
  setRecording (on: boolean): void {
    Atomics.store(this.control, Control.RECORDING, on ? 1 : 0)
  }

  /** Current totals over all workers. */
  read (): LoadCounters {
    const c = this.counters
    const total: LoadCounters = { sent: 0, received: 0, acked: 0, skipped: 0, dropped: 0, connected: 0 }
    for (let base = 0; base < c.length; base += COUNTER_SLOTS) {
      total.sent += c[base + Counter.SENT]
      total.received += c[base + Counter.RECEIVED]
      total.acked += c[base + Counter.ACKED]
      total.skipped += c[base + Counter.SKIPPED]
      total.dropped += c[base + Counter.DROPPED]
      total.connected += c[base + Counter.CONNECTED]
    }
    return total
  }

  /** Latencies recorded while recording was on, merged over workers. */
  async histogram (): Promise<LatencyHistogram> {
    const merged = new LatencyHistogram()
    const replies = await Promise.all(this.workers.map((w) => this.send(w, { cmd: 'histogram' })))
    for (const reply of replies) {
      if (reply.histogram === undefined) continue
      const part = new LatencyHistogram(reply.histogram.counts)
      part.max = reply.histogram.max
      merged.merge(part)
    }
    return merged
  }

  /**
   * Waits until subscribers stop receiving (no change for `quietMs`) or `maxMs` passes,
   * so in-flight messages are not cut off by close.
   */
  async drain (quietMs: number, maxMs: number): Promise<void> {
    const deadline = Date.now() + maxMs
    let last = this.read().received
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, quietMs))
      const now = this.read().received
      if (now === last) return
      last = now
    }
  }

  /** Stops every worker thread (their sockets close with them). */
  async terminate (): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()))
    this.failAll(new Error('load generator terminated'))
  }

  private async all (command: DistributiveOmit<WorkerCommand, 'id'>): Promise<void> {
    const replies = await Promise.all(this.workers.map((w) => this.send(w, command)))
    const failed = replies.find((r) => r.error !== undefined)
    if (failed !== undefined) throw new Error(`load worker: ${failed.error as string}`)
  }

  private send (worker: Worker, command: DistributiveOmit<WorkerCommand, 'id'>): Promise<WorkerReply> {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      worker.postMessage({ ...command, id })
    })
  }

  private onReply (reply: WorkerReply): void {
    const waiter = this.pending.get(reply.id)
    this.pending.delete(reply.id)
    waiter?.resolve(reply)
  }

  private failAll (err: Error): void {
    for (const waiter of this.pending.values()) waiter.reject(err)
    this.pending.clear()
  }
}

/** `Omit` applied to each member of a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never
