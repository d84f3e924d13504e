/**
 * Traces (spec: `<ctl> trace ...`): a client trace writes every event of one client id —
 * connected, subscribe, unsubscribe, publish by it, deliver to it, acked, dropped,
 * disconnected — and, once the wire feeds {@link TraceService.packetTap}, every packet it
 * sends or receives; a topic trace writes every message published on a topic matching its
 * filter. Lines are appended to the trace's file (format: trace-format.ts) until it is
 * stopped. One trace per client id and per filter.
 *
 * Cost when nothing is traced: no hooks listener is registered and the tap returns at once.
 * A trace file is made 0600 (created so, or changed when it exists), as the log file is.
 */
import { open, type FileHandle } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { WriteStream } from 'node:fs'
import { createFrameDecoder } from '../mqtt/frame-decoder.js'
import { LOG_LEVELS, type LogLevel, type Logger } from '../logger.js'
import type { HooksBus, HookName, HookEventMap } from '../hooks.js'
import { filterError, topicMatches } from '../mqtt/topic.js'
import { PACKET, tappedClientId, type PacketTap, type TappedWire } from '../sys/packet-tap.js'
import type { ControlServer } from '../control/server.js'
import { registerTraceHandlers } from './trace-ctl.js'
import {
  traceLine, formatPacket, connectedText, disconnectedText, subscriptionText, publishText, deliverText,
  ackedText, droppedText
} from './trace-format.js'

/** What a trace follows: one client id, or the topics matching one filter. */
export type TraceType = 'client' | 'topic'

/** A running trace, as `trace list` shows it. */
export interface TraceInfo {
  type: TraceType
  /** Client id or topic filter. */
  target: string
  /** Absolute path of the file lines are appended to. */
  file: string
  /** Least severe line level written. */
  level: LogLevel
}

/** A trace request the node refuses (already running, not running, bad level or filter). */
export class TraceError extends Error {
  override readonly name = 'TraceError'
}

/** What the trace service uses from the node. */
export interface TraceNode {
  readonly hooks: HooksBus
  readonly logger: Logger
  /** Where the `trace` commands are served while the service runs. */
  readonly control: Pick<ControlServer, 'register' | 'unregister'>
}

/** The trace service of a node. */
export interface TraceService {
  /** Serves the `trace` control commands. */
  start(): void
  /** Stops every trace and closes its file. */
  stop(): Promise<void>
  /**
   * Starts a trace to `file` (appended; relative paths are relative to the node's working
   * directory). `level` defaults to `debug` (everything; EMQ X's `all` means the same).
   */
  startTrace(type: TraceType, target: string, file: string, level?: string): Promise<TraceInfo>
  /** Stops a trace and closes its file once written. */
  stopTrace(type: TraceType, target: string): Promise<TraceInfo>
  list(): TraceInfo[]
  /** Feeds client traces with packet lines; the broker sets it on every wire. */
  readonly packetTap: PacketTap
}

/** Level of each kind of line: packets and messages are debug, connection events info. */
const INFO: LogLevel = 'info'
const DEBUG: LogLevel = 'debug'

interface Trace { info: TraceInfo, rank: number, stream: WriteStream }

/**
 * A trace file is the node's user's only, as the log file is: it holds client ids, topics
 * and payloads. open's mode is masked by the umask and not applied to an existing file.
 */
const TRACE_FILE_MODE = 0o600

/** Sets an existing regular trace file to {@link TRACE_FILE_MODE} (never a device such as /dev/null). */
async function makePrivate (handle: FileHandle): Promise<void> {
  const stat = await handle.stat()
  if (stat.isFile() && (stat.mode & 0o777) !== TRACE_FILE_MODE) await handle.chmod(TRACE_FILE_MODE)
}

/** Creates the trace service of a node. */
export function createTraceService (node: TraceNode): TraceService {
  const logger = node.logger.child({ component: 'trace' })
  const clients = new Map<string, Trace>()
  const topics = new Map<string, Trace>()
  const unhook: Array<() => void> = []
  let offControl: (() => void) | null = null

  function write (trace: Trace, level: LogLevel, clientId: string, peername: string, text: string): void {
    if (LOG_LEVELS.indexOf(level) < trace.rank) return
    trace.stream.write(traceLine(level, clientId, peername, text))
  }

  function forClient (clientId: string, peername: string, level: LogLevel, text: () => string): void {
    const trace = clients.get(clientId)
    if (trace !== undefined) write(trace, level, clientId, peername, text())
  }

  function on<K extends HookName> (name: K, fn: (e: HookEventMap[K]) => void): void {
    unhook.push(node.hooks.on(name, fn))
  }

  function follow (): void {
    on('client.connected', (e) => forClient(e.client_id, e.peername, INFO, () => connectedText(e)))
    on('client.disconnected', (e) => forClient(e.client_id, e.peername, INFO, () => disconnectedText(e)))
    on('client.subscribe', (e) => forClient(e.client_id, e.peername, INFO, () => subscriptionText(e, false)))
    on('client.unsubscribe', (e) => forClient(e.client_id, e.peername, INFO, () => subscriptionText(e, true)))
    on('message.deliver', (e) => forClient(e.client_id, e.peername, DEBUG, () => deliverText(e)))
    on('message.acked', (e) => forClient(e.client_id, e.peername, DEBUG, () => ackedText(e)))
    on('message.dropped', (e) => forClient(e.client_id, e.peername, DEBUG, () => droppedText(e)))
    on('message.publish', (e) => {
      forClient(e.client_id, e.peername, DEBUG, () => publishText(e))
      for (const trace of topics.values()) {
        if (topicMatches(trace.info.target, e.topic)) write(trace, DEBUG, e.client_id, e.peername, publishText(e))
      }
    })
  }

  /** Decodes one frame; null when it does not decode (it was cut or is malformed). */
  const decode = createFrameDecoder()

  function tapped (direction: 'RECV' | 'SEND', wire: TappedWire, buf: Buffer, start: number, end: number): void {
    if (clients.size === 0) return
    let clientId = tappedClientId(wire)
    let packet: any = null
    if (clientId === undefined) {
      // CONNECT comes before aedes knows the client: its id is in the packet
      if (direction !== 'RECV' || buf[start] >> 4 !== PACKET.CONNECT) return
      packet = decode(buf.subarray(start, end), 0)
      clientId = packet?.clientId
      if (clientId === undefined) return
    }
    const trace = clients.get(clientId)
    if (trace === undefined || LOG_LEVELS.indexOf(DEBUG) < trace.rank) return
    packet ??= decode(buf.subarray(start, end), wire.protocolVersion)
    if (packet === null) return
    write(trace, DEBUG, clientId, `${wire.peer.address}:${wire.peer.port}`, `${direction} ${formatPacket(packet)}`)
  }

  async function close (trace: Trace): Promise<void> {
    await new Promise<void>((done) => trace.stream.end(done))
  }

  const service: TraceService = {
    packetTap: {
      inbound: (wire, buf, start, _body, end) => tapped('RECV', wire, buf, start, end),
      outbound: (wire, buf, start, _body, end) => tapped('SEND', wire, buf, start, end)
    },
    start () {
      offControl ??= registerTraceHandlers(node.control, service)
    },
    async stop () {
      offControl?.()
      offControl = null
      const all = [...clients.values(), ...topics.values()]
      clients.clear()
      topics.clear()
      for (const off of unhook.splice(0)) off()
      await Promise.all(all.map(close))
    },
    async startTrace (type, target, file, level = 'debug') {
      const lvl = (level === 'all' ? 'debug' : level) as LogLevel
      if (!LOG_LEVELS.includes(lvl)) throw new TraceError(`unknown level ${level}: use one of ${LOG_LEVELS.join(', ')}`)
      if (target === '') throw new TraceError(`a ${type} trace needs a ${type === 'client' ? 'client id' : 'topic filter'}`)
      if (type === 'topic') {
        const problem = filterError(target)
        if (problem !== null) throw new TraceError(`bad topic filter ${target}: ${problem}`)
      }
      const table = type === 'client' ? clients : topics
      const running = table.get(target)
      const who = type === 'client' ? 'client_id' : 'topic'
      if (running !== undefined) throw new TraceError(`trace ${who} ${target} is already running (to ${running.info.file}); stop it first`)
      const path = resolve(file)
      let handle
      try {
        handle = await open(path, 'a', TRACE_FILE_MODE)
        await makePrivate(handle)
      } catch (err) {
        await handle?.close()
        throw new TraceError(`cannot open trace file ${path}: ${(err as Error).message}`)
      }
      if (table.has(target)) {
        await handle.close()
        throw new TraceError(`trace ${who} ${target} is already running`)
      }
      const stream = handle.createWriteStream({ encoding: 'utf8' })
      stream.on('error', (err) => logger.warn({ err, file: path }, 'trace file write failed'))
      const info: TraceInfo = { type, target, file: path, level: lvl }
      table.set(target, { info, rank: LOG_LEVELS.indexOf(lvl), stream })
      if (unhook.length === 0) follow()
      logger.info(info, 'trace started')
      return info
    },
    async stopTrace (type, target) {
      const table = type === 'client' ? clients : topics
      const trace = table.get(target)
      if (trace === undefined) throw new TraceError(`no trace of ${type === 'client' ? 'client_id' : 'topic'} ${target} is running`)
      table.delete(target)
      if (clients.size === 0 && topics.size === 0) for (const off of unhook.splice(0)) off()
      await close(trace)
      logger.info(trace.info, 'trace stopped')
      return trace.info
    },
    list: () => [...clients.values(), ...topics.values()].map((t) => ({ ...t.info }))
  }
  return service
}
