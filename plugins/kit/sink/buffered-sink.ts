/**
 * The buffered sink every outbound integration shares (docs/architecture.md): items go into a
 * replay queue (memory, or disk segments with a directory), a pump takes batches from it and
 * sends them through a target (an MQTT bridge's link, a database's pool), and the queue is
 * told an item is done only once the target acknowledged it.
 *
 * Invariants:
 * - A batch is acknowledged to the queue only once `target.send` resolved for it.
 * - When the target goes down (`send` rejects with anything but {@link RejectedBatch}, or
 *   `onDown` fires), every popped batch goes back to the head of the queue in order and is
 *   sent again once connected: the far side sees the items in order, one possibly twice,
 *   none lost.
 * - A batch the target refuses for good ({@link RejectedBatch}: a row the database will
 *   never take) is acknowledged, reported to `onFailed` and not sent again, so one bad item
 *   cannot hold the queue forever.
 * - At most `maxInflightBatches` batches are sent and not yet settled.
 * - While started and not connected, the sink tries again after `reconnectIntervalMs`,
 *   doubling up to `maxReconnectIntervalMs` while it keeps failing (equal by default: a fixed
 *   interval, the MQTT bridge's `reconnect_interval`); a connect resets the interval.
 * - `stop` puts every popped batch back and closes the target; the queue keeps its items
 *   (on disk too) for the next `start`.
 */
import type { Logger } from '../../../node/logger.js'
import type { AppendOptions, AppendResult, ReplayQueue, ReplayQueueStats } from '../replayq/replayq.js'

/** The far side of a sink. */
export interface SinkTarget<T> {
  /** Connects; rejects when the far side cannot be reached (the sink tries again). */
  connect: () => Promise<void>
  /**
   * Sends a batch; resolves once the far side acknowledged all of it; rejects with
   * {@link RejectedBatch} when it refused the batch for good, with anything else when the
   * connection failed first (the batch is sent again).
   */
  send: (batch: T[]) => Promise<void>
  /** Registers the listener of a drop after a successful connect (optional). */
  onDown?: (listener: (err: Error) => void) => void
  close: () => Promise<void>
}

/** The far side refused a batch for good: counted as failed, not sent again. */
export class RejectedBatch extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'RejectedBatch'
  }
}

/** Where a sink is: stopped, trying to connect, or sending. */
export type SinkStatus = 'stopped' | 'connecting' | 'connected'

/** Options of {@link createBufferedSink}. */
export interface BufferedSinkOptions<T> {
  queue: ReplayQueue<T>
  target: SinkTarget<T>
  /** Batches sent and not yet settled, at most. */
  maxInflightBatches: number
  /** Wait before the first new connect attempt, in ms. */
  reconnectIntervalMs: number
  /** Longest wait between attempts while they keep failing (default `reconnectIntervalMs`: fixed). */
  maxReconnectIntervalMs?: number
  /** Logs with the caller's context (the bridge's or the resource's name). */
  logger: Logger
  /** What the logs call the far side (`127.0.0.1:1883`, `pgsql 127.0.0.1:5432`). */
  address: string
  /** Items the target acknowledged. */
  onSent?: (items: T[]) => void
  /** Items the target refused for good. */
  onFailed?: (items: T[], err: Error) => void
  /** Called after each batch is acknowledged to the queue (clear a buffer alarm). */
  onAcked?: () => void
}

/** A running sink: see the module's invariants. */
export interface BufferedSink<T> {
  readonly status: SinkStatus
  /** Items acknowledged by the target since the sink was made. */
  readonly sent: number
  /** Items the target refused for good since the sink was made. */
  readonly failed: number
  /** Appends to the queue (durable when it resolves, with a directory) and wakes the pump. */
  append: (items: T[], opts?: AppendOptions) => Promise<AppendResult>
  queueStats: () => ReplayQueueStats
  /** Starts connecting and sending; false when it runs already. */
  start: () => boolean
  /** Stops sending and closes the target, keeping the queue; false when it was stopped. */
  stop: () => Promise<boolean>
  /**
   * Connects now instead of at the end of the current wait, when one is under way (a health
   * check saw the far side back: its writes need not wait out a long back-off).
   */
  retryNow: () => void
}

/** A sink over `opts.queue` and `opts.target`; stopped until {@link BufferedSink.start}. */
export function createBufferedSink<T> (opts: BufferedSinkOptions<T>): BufferedSink<T> {
  const { queue, target, logger: log } = opts
  const maxWait = Math.max(opts.reconnectIntervalMs, opts.maxReconnectIntervalMs ?? opts.reconnectIntervalMs)
  let status: SinkStatus = 'stopped'
  let running = false
  let sent = 0
  let failed = 0
  let inflight = 0
  /** Changes when the target goes down or the sink stops: callbacks of older sends are ignored. */
  let generation = 0
  let wait = opts.reconnectIntervalMs
  let reconnectTimer: NodeJS.Timeout | undefined
  let pumpScheduled = false

  const schedulePump = (): void => {
    if (pumpScheduled || status !== 'connected') return
    pumpScheduled = true
    setImmediate(() => {
      pumpScheduled = false
      pump()
    })
  }

  const settled = (): void => {
    inflight--
    opts.onAcked?.()
    pump()
  }

  const pump = (): void => {
    while (status === 'connected' && inflight < opts.maxInflightBatches) {
      const batch = queue.pop()
      if (batch.items.length === 0) return
      inflight++
      const gen = generation
      target.send(batch.items).then(() => {
        if (gen !== generation) return
        if (queue.ack(batch.ackRef)) {
          sent += batch.items.length
          opts.onSent?.(batch.items)
        }
        settled()
      }, (err: Error) => {
        if (gen !== generation) return
        if (err instanceof RejectedBatch) {
          if (queue.ack(batch.ackRef)) {
            failed += batch.items.length
            log.warn({ err: err.message, address: opts.address, items: batch.items.length }, 'a batch was refused by the far side; counted as failed')
            opts.onFailed?.(batch.items, err)
          }
          settled()
          return
        }
        inflight--
        down(err)
      })
    }
  }

  /** Every popped batch back to the queue's head; nothing in flight any more. */
  const rewind = (): void => {
    generation++
    inflight = 0
    queue.reset()
  }

  const down = (err: Error): void => {
    if (!running || status !== 'connected') return
    log.warn({ err: err.message, address: opts.address }, 'disconnected; reconnecting')
    status = 'connecting'
    rewind()
    scheduleReconnect()
  }
  target.onDown?.(down)

  const scheduleReconnect = (): void => {
    if (!running || reconnectTimer !== undefined) return
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined
      void connect()
    }, wait)
  }

  const connect = async (): Promise<void> => {
    if (!running) return
    status = 'connecting'
    const gen = generation
    try {
      await target.connect()
    } catch (err) {
      if (!running || gen !== generation) return
      log.info({ err: (err as Error).message, address: opts.address, retryInMs: wait }, 'cannot connect; trying again later')
      scheduleReconnect()
      wait = Math.min(maxWait, wait * 2)
      return
    }
    if (!running || gen !== generation) {
      await target.close()
      return
    }
    wait = opts.reconnectIntervalMs
    status = 'connected'
    log.info({ address: opts.address }, 'connected')
    pump()
  }

  return {
    get status () { return status },
    get sent () { return sent },
    get failed () { return failed },
    async append (items, appendOpts) {
      const result = await queue.append(items, appendOpts)
      schedulePump()
      return result
    },
    queueStats: () => queue.stats(),
    start () {
      if (running) return false
      running = true
      status = 'connecting'
      void connect()
      return true
    },
    retryNow () {
      if (!running || reconnectTimer === undefined) return
      clearTimeout(reconnectTimer)
      reconnectTimer = undefined
      void connect()
    },
    async stop () {
      if (!running) return false
      running = false
      clearTimeout(reconnectTimer)
      reconnectTimer = undefined
      wait = opts.reconnectIntervalMs
      rewind()
      status = 'stopped'
      await target.close()
      return true
    }
  }
}
