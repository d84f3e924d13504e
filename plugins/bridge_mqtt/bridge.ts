/**
 * One bridge at run time (docs/bridges.md): its forwards are sinks of the MQTT core whose
 * messages go into the replay queue of a buffered sink (plugins/kit/sink/), which sends
 * batches from the queue through the link, and (MQTT bridge) the messages of the remote
 * subscriptions are published locally.
 *
 * Invariants:
 * - A message on a forwarded topic is handed to the publisher's completion (its PUBACK /
 *   PUBREC) only once the queue's append resolved: with `queue.replayq_dir` that is once it
 *   is written and fsynced, so a SIGKILL never loses what a publisher was told was received.
 *   A QoS 0 message is appended as droppable (refused, counted, when the buffer is full).
 * - A batch is acknowledged to the queue only once the link resolved it (every QoS 1/2
 *   message acknowledged by the remote); when the link drops, every popped batch goes back
 *   to the head of the queue in order (`reset`) and is sent again after the reconnect, so
 *   the remote sees the messages in order, a QoS 1 one possibly twice, none lost.
 * - At most `max_inflight_batches` batches are sent and not yet acknowledged.
 * - Loop prevention: a message this bridge brought in from the remote (published locally
 *   with the bridge's client id) is never forwarded by it, nor is a message published here by
 *   another broker's bridge (a client that connected with the bridge bit).
 * - `stop` removes the sinks (nothing new is buffered) and keeps the queue; `start` sends
 *   what it holds. While started and not connected, the bridge tries again every
 *   `reconnect_interval`.
 * - Forwards and subscriptions changed at run time are kept in the node's store (table
 *   `bridges`, one entry per bridge: what was added and removed) and applied again at the
 *   next start over the config file's lists: file + added - removed.
 */
import type { Alarms } from '../../node/alarms/index.js'
import { RefusedError } from '../../node/errors.js'
import type { Logger } from '../../node/logger.js'
import type { MqttCore, PublishMessage } from '../../node/mqtt/core.js'
import { openReplayQueue, type ReplayOverflow, type ReplayQueue } from '../kit/replayq/replayq.js'
import { createBufferedSink, type BufferedSink } from '../kit/sink/buffered-sink.js'
import type { StoreTable } from '../../node/store/index.js'
import { badFilter, expandMountpoint } from './config.js'
import type { Bridge, BridgeConfig, BridgeInfo, BridgeLink, BridgeLinkHooks } from './types.js'

/** Store table of the run-time changes of forwards and subscriptions (node.store). */
export const BRIDGES_TABLE = 'bridges'

/** What a bridge's forwards and subscriptions gained and lost at run time. */
export interface BridgeChanges {
  forwards: { add: string[], del: string[] }
  subscriptions: { add: Array<{ topic: string, qos: 0 | 1 | 2 }>, del: string[] }
}

/** What a bridge is built with. */
export interface BridgeComponents {
  core: MqttCore
  /** The node name (`${node}` in mountpoints). */
  nodeName: string
  logger: Logger
  /** Raises `bridge_<name>_buffer_full` (absent: no alarm). */
  alarms?: Pick<Alarms, 'activate' | 'deactivate'>
  /** Where run-time changes are kept (absent: not kept). */
  table?: StoreTable<BridgeChanges>
}

/** A link, or a function that makes one with the bridge's hooks (an MQTT link needs them). */
export type BridgeLinkSource = BridgeLink | ((hooks: BridgeLinkHooks) => BridgeLink)

/** The alarm of a bridge whose buffer dropped messages. */
export function bufferAlarmId (name: string): string {
  return `bridge_${name}_buffer_full`
}

/** An item of the queue: the message as forwarded, without the mountpoint. */
type Item = PublishMessage

/** Encodes an item for the disk buffer: u32 header length, JSON header, payload. */
export function encodeItem (m: Item): Buffer {
  const header: Record<string, unknown> = { t: m.topic, q: m.qos, r: m.retain }
  if (m.properties !== undefined) header.p = encodeProperties(m.properties)
  const json = Buffer.from(JSON.stringify(header))
  const head = Buffer.allocUnsafe(4)
  head.writeUInt32BE(json.length, 0)
  return Buffer.concat([head, json, m.payload])
}

/** The item of {@link encodeItem}'s bytes. */
export function decodeItem (buf: Buffer): Item {
  const len = buf.readUInt32BE(0)
  const header = JSON.parse(buf.subarray(4, 4 + len).toString()) as { t: string, q: number, r: boolean, p?: Record<string, unknown> }
  const item: Item = { cmd: 'publish', topic: header.t, payload: Buffer.from(buf.subarray(4 + len)), qos: header.q, retain: header.r, dup: false }
  if (header.p !== undefined) item.properties = decodeProperties(header.p)
  return item
}

function encodeProperties (props: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(props)) out[k] = Buffer.isBuffer(v) ? { $b64: v.toString('base64') } : v
  return out
}

function decodeProperties (props: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(props)) {
    const b64 = (v as { $b64?: unknown } | null)?.$b64
    out[k] = typeof b64 === 'string' ? Buffer.from(b64, 'base64') : v
  }
  return out
}

/** MQTT 5 properties a forwarded message keeps in the buffer (the link decides what it sends). */
const BUFFERED_PROPERTIES = ['payloadFormatIndicator', 'messageExpiryInterval', 'contentType', 'responseTopic', 'correlationData', 'userProperties']

function toItem (m: Readonly<PublishMessage>): Item {
  const item: Item = { cmd: 'publish', topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, dup: false }
  const props = m.properties
  if (props !== undefined && props !== null) {
    let kept: Record<string, unknown> | undefined
    for (const key of BUFFERED_PROPERTIES) {
      if (props[key] === undefined) continue
      kept ??= {}
      kept[key] = props[key]
    }
    if (kept !== undefined) item.properties = kept
  }
  return item
}

/** Memory-only size of an item (what the cap counts). */
function sizeOfItem (m: Item): number {
  return m.payload.length + Buffer.byteLength(m.topic) + 32
}

/** A bridge, with its queue opened (read back from `queue.replayq_dir` when set). Not started. */
export async function createBridge (config: BridgeConfig, components: BridgeComponents, linkSource: BridgeLinkSource): Promise<Bridge> {
  const { core, logger, alarms, table } = components
  const log = logger.child({ bridge: config.name })
  const alarmId = bufferAlarmId(config.name)
  const mountpoint = expandMountpoint(config.mountpoint, components.nodeName)
  const receiveMountpoint = expandMountpoint(config.receiveMountpoint, components.nodeName)
  const cap = config.queue.maxTotalBytes
  let alarmed = false

  const onOverflow = (event: ReplayOverflow): void => {
    if (alarms !== undefined && !alarmed) {
      alarmed = true
      alarms.activate(alarmId, `bridge ${config.name}: the buffer is full (${event.reason}); messages are dropped`, {
        bridge: config.name, reason: event.reason, dropped: event.dropped, refused: event.refused, count: event.count, bytes: event.bytes
      })
    } else if (!alarmed) {
      alarmed = true
      log.warn({ reason: event.reason, dropped: event.dropped, refused: event.refused }, 'bridge buffer full: messages are dropped')
    }
  }
  const dir = config.queue.replayqDir
  const queue: ReplayQueue<Item> = await openReplayQueue<Item>(dir !== undefined
    ? {
        dir,
        segBytes: config.queue.replayqSegBytes,
        maxTotalBytes: cap,
        batchCountLimit: config.queue.batchCountLimit,
        batchBytesLimit: config.queue.batchBytesLimit,
        encode: encodeItem,
        decode: decodeItem,
        onOverflow,
        logger: log
      }
    : {
        maxTotalBytes: cap,
        batchCountLimit: config.queue.batchCountLimit,
        batchBytesLimit: config.queue.batchBytesLimit,
        sizeOf: sizeOfItem,
        onOverflow,
        logger: log
      })

  // the lists: the file's, with the run-time changes kept in the store applied over them
  const changes: BridgeChanges = structuredClone(table?.get(config.name) ?? { forwards: { add: [], del: [] }, subscriptions: { add: [], del: [] } })
  const forwards = [...new Set([...config.forwards, ...changes.forwards.add])].filter((f) => !changes.forwards.del.includes(f))
  const subscriptions = new Map<string, 0 | 1 | 2>()
  for (const s of [...config.subscriptions, ...changes.subscriptions.add]) subscriptions.set(s.topic, s.qos)
  for (const t of changes.subscriptions.del) subscriptions.delete(t)
  const subscriptionList = (): Array<{ topic: string, qos: 0 | 1 | 2 }> => [...subscriptions].map(([topic, qos]) => ({ topic, qos }))

  let running = false
  let received = 0
  let closed = false
  const sinks = new Map<string, () => void>()
  /** Messages already appended (a message matching two forwards is appended once). */
  const seen = new WeakSet<object>()

  const hooks: BridgeLinkHooks = {
    receive: async (message) => {
      received++
      await core.publish({ ...message, topic: receiveMountpoint + message.topic, clientId: config.clientId })
    },
    subscriptions: subscriptionList
  }
  const link: BridgeLink = typeof linkSource === 'function' ? linkSource(hooks) : linkSource
  // the queue, the pump, the reconnects: the sink every outbound integration shares
  const sink: BufferedSink<Item> = createBufferedSink<Item>({
    queue,
    target: {
      connect: async () => { await link.connect() },
      send: async (items) => { await link.send(mountpoint === '' ? items : items.map((m) => ({ ...m, topic: mountpoint + m.topic }))) },
      onDown: (listener) => { link.onDown(listener) },
      close: async () => { await link.close() }
    },
    maxInflightBatches: config.maxInflightBatches,
    reconnectIntervalMs: config.reconnectIntervalMs,
    logger: log,
    address: config.address,
    onAcked: () => { clearAlarm() }
  })

  /** Whether a local message must not be forwarded (loop prevention). */
  const isLoop = (m: Readonly<PublishMessage>): boolean => {
    const from = m.clientId
    if (from === undefined) return false
    if (from === config.clientId) return true
    return core.client(from)?.state?.isBridge === true
  }

  const sinkHandler = (message: Readonly<PublishMessage>, done: (err?: Error | null) => void): void => {
    if (seen.has(message)) { done(); return }
    seen.add(message)
    if (isLoop(message)) { done(); return }
    sink.append([toItem(message)], { droppable: message.qos === 0 }).then(() => {
      done()
    }, (err: Error) => {
      log.error({ err, topic: message.topic }, 'a forwarded message could not be buffered')
      done(err)
    })
  }

  const addSink = (filter: string): void => {
    if (sinks.has(filter)) return
    sinks.set(filter, core.sink(filter, sinkHandler))
  }
  const removeSink = (filter: string): void => {
    sinks.get(filter)?.()
    sinks.delete(filter)
  }

  const clearAlarm = (): void => {
    if (!alarmed) return
    const stats = queue.stats()
    if (stats.count === 0 || (cap > 0 && stats.bytes <= cap * 0.9)) {
      alarmed = false
      alarms?.deactivate(alarmId)
    }
  }

  const persist = async (): Promise<void> => {
    await table?.put(config.name, structuredClone(changes))
  }

  const checkTopic = (topic: string): void => {
    const bad = badFilter(topic)
    if (bad !== undefined) throw new RefusedError(`bridge ${config.name}: ${bad}`)
  }

  const bridge: Bridge = {
    name: config.name,

    info (): BridgeInfo {
      const stats = queue.stats()
      return {
        name: config.name,
        status: sink.status,
        address: config.address,
        kind: config.kind,
        forwards: [...forwards],
        subscriptions: subscriptionList(),
        sent: sink.sent,
        received,
        buffered: stats.count,
        dropped: stats.dropped
      }
    },

    async start () {
      if (running || closed) return false
      running = true
      for (const f of forwards) addSink(f)
      sink.start()
      return true
    },

    async stop () {
      if (!running) return false
      running = false
      for (const f of [...sinks.keys()]) removeSink(f)
      await sink.stop()
      return true
    },

    async addForward (topic) {
      checkTopic(topic)
      if (!forwards.includes(topic)) forwards.push(topic)
      if (running) addSink(topic)
      changes.forwards.del = changes.forwards.del.filter((t) => t !== topic)
      if (!config.forwards.includes(topic) && !changes.forwards.add.includes(topic)) changes.forwards.add.push(topic)
      await persist()
    },

    async delForward (topic) {
      // as EMQ X's: removing a forward that is not there succeeds
      const at = forwards.indexOf(topic)
      if (at >= 0) forwards.splice(at, 1)
      removeSink(topic)
      changes.forwards.add = changes.forwards.add.filter((t) => t !== topic)
      if (config.forwards.includes(topic) && !changes.forwards.del.includes(topic)) changes.forwards.del.push(topic)
      await persist()
    },

    async addSubscription (topic, qos) {
      checkTopic(topic)
      if (config.kind === 'rpc') throw new RefusedError(`bridge ${config.name} is an RPC bridge: it is forward-only and has no subscriptions`)
      if (![0, 1, 2].includes(qos)) throw new RefusedError(`bad QoS ${String(qos)}: expected 0, 1 or 2`)
      if (sink.status === 'connected' && link.subscribe !== undefined) await link.subscribe([{ topic, qos }])
      subscriptions.set(topic, qos)
      changes.subscriptions.del = changes.subscriptions.del.filter((t) => t !== topic)
      changes.subscriptions.add = changes.subscriptions.add.filter((s) => s.topic !== topic)
      const inFile = config.subscriptions.find((s) => s.topic === topic)
      if (inFile === undefined || inFile.qos !== qos) changes.subscriptions.add.push({ topic, qos })
      await persist()
    },

    async delSubscription (topic) {
      if (!subscriptions.delete(topic)) return // as EMQ X's: nothing to remove succeeds
      changes.subscriptions.add = changes.subscriptions.add.filter((s) => s.topic !== topic)
      if (config.subscriptions.some((s) => s.topic === topic) && !changes.subscriptions.del.includes(topic)) changes.subscriptions.del.push(topic)
      await persist()
      if (sink.status === 'connected' && link.unsubscribe !== undefined) {
        await link.unsubscribe([topic]).catch((err: Error) => log.warn({ err: err.message, topic }, 'unsubscribe on the remote broker failed'))
      }
    },

    // the rule engine's data_to_mqtt_broker (plugins/bridge_mqtt/actions.ts): as a forward's message, without a sink
    async forward (message) {
      if (closed) throw new RefusedError(`bridge ${config.name} is closed`)
      const result = await sink.append([toItem(message)], { droppable: message.qos === 0 })
      if (result.refused > 0) throw new RefusedError(`bridge ${config.name}: the buffer is full; the QoS 0 message was dropped`)
    },

    async close () {
      if (closed) return
      await bridge.stop()
      closed = true
      await queue.close()
    }
  }
  return bridge
}
