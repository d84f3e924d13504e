/**
 * What `svc_bridge_rabbit` publishes and how: one AMQP message per row, its routing key and
 * body filled from the action's `routing_key` and `payload_tmpl`, and a {@link DataClient}
 * publishing a batch on one connection's ConfirmChannel (amqplib, loaded by the caller at the
 * first resource).
 *
 * Invariants:
 * - A row counts as written only once the broker confirmed (acked) its message: publisher
 *   confirms. A nack refuses that row for good ({@link WriteRefused.rows}); the other rows of
 *   the batch are written.
 * - A channel or connection closed before every confirm came makes the whole batch be
 *   published again (the kit retries it): at least once, never lost while it waits.
 * - Each exchange is declared (`assertExchange` with the action's type and durability) on a
 *   channel before the first message to it; an exchange that exists with another type or
 *   durability (PRECONDITION_FAILED) refuses its rows for good with a message saying so, and
 *   the channel the broker closed for it is opened again for the others.
 */
import type { ConnectionOptions } from 'node:tls'
import { WrongTypeError } from '../../node/errors.js'
import { parseDuration } from '../../node/config/value-types.js'
import { fillString, hasPlaceholder } from '../../node/template/index.js'
import { parseRedisServers } from '../kit/pools/servers.js'
import { WriteRefused, type DataClient } from '../kit/data/index.js'

/** AMQP 0-9-1's exchange types. */
export const EXCHANGE_TYPES = ['direct', 'fanout', 'topic', 'headers'] as const
export type ExchangeType = typeof EXCHANGE_TYPES[number]

/** One message as the buffer keeps it: exchange, its type and durability, routing key, body. */
export interface RabbitMessage {
  x: string
  t: ExchangeType
  d: boolean
  k: string
  p: string
}

/** One buffered write: its messages (one per row). */
export interface RabbitWrite {
  msgs: RabbitMessage[]
}

/** The action's params compiled. */
export interface RabbitAction {
  exchange: string
  type: ExchangeType
  durable: boolean
  routingKey: string
  /** Empty: the selected data as JSON. */
  payload: string
}

/** The AMQP reply code of a declare that does not match the exchange that exists. */
const PRECONDITION_FAILED = 406

function refuseParam (key: string, why: string): never {
  throw new WrongTypeError(`action data_to_rabbit: parameter ${key} ${why}`)
}

/** Compiles `data_to_rabbit`'s params; throws a 108 naming the key. */
export function compileRabbitAction (params: Record<string, unknown>): RabbitAction {
  const exchange = String(params.exchange ?? '').trim()
  if (exchange === '') refuseParam('exchange', 'must name an exchange (it is declared when the action first publishes)')
  if (hasPlaceholder(exchange)) refuseParam('exchange', 'cannot hold a placeholder: a message\'s data never chooses the exchange')
  if (exchange.startsWith('amq.') && !/^amq\.(direct|fanout|topic|headers|match)$/.test(exchange)) {
    refuseParam('exchange', `${JSON.stringify(exchange)} starts with amq., a prefix RabbitMQ keeps for its own exchanges`)
  }
  const type = String(params.exchange_type ?? 'topic') as ExchangeType
  if (!EXCHANGE_TYPES.includes(type)) refuseParam('exchange_type', `must be one of ${EXCHANGE_TYPES.join(', ')}, got ${JSON.stringify(params.exchange_type)}`)
  const routingKey = String(params.routing_key ?? '')
  if (Buffer.byteLength(routingKey) > 255 && !hasPlaceholder(routingKey)) refuseParam('routing_key', 'is longer than AMQP\'s 255 bytes')
  return { exchange, type, durable: params.durable === true || params.durable === 'true', routingKey, payload: String(params.payload_tmpl ?? '') }
}

/** The message of one run. */
export function rabbitRow (action: RabbitAction, selected: Record<string, unknown>): RabbitWrite {
  return {
    msgs: [{
      x: action.exchange,
      t: action.type,
      d: action.durable,
      k: fillString(action.routingKey, selected),
      p: action.payload === '' ? JSON.stringify(selected) : fillString(action.payload, selected)
    }]
  }
}

/** What the client connects with. */
export interface RabbitSettings {
  host: string
  port: number
  username: string
  password: string
  vhost: string
  /** Seconds (0: none). */
  heartbeatS: number
  /** Connect timeout, ms. */
  timeoutMs: number
  /** Node's TLS options, or undefined without `ssl`. */
  tls: ConnectionOptions | undefined
}

function duration (key: string, value: unknown, what: string): number {
  const ms = typeof value === 'number' ? value * 1000 : parseDuration(String(value ?? ''))
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) throw new WrongTypeError(`${what}: parameter ${key} must be a duration (30s, 5s, 500ms), got ${JSON.stringify(value)}`)
  return ms
}

/** The settings of a `bridge_rabbit` config without TLS (checks it: 108 naming the key). */
export function rabbitSettingsOf (config: Record<string, unknown>): Omit<RabbitSettings, 'tls'> {
  const what = 'resource type bridge_rabbit config'
  let host: string, port: number
  try {
    const servers = parseRedisServers(String(config.server ?? ''), 5672)
    if (servers.length !== 1) throw new Error('one server only')
    ;({ host, port } = servers[0])
  } catch (err) {
    throw new WrongTypeError(`${what}: parameter server must be one host:port, got ${JSON.stringify(config.server)} (${(err as Error).message})`)
  }
  const timeoutMs = duration('timeout', config.timeout, what)
  if (timeoutMs < 1) throw new WrongTypeError(`${what}: parameter timeout must be longer than 0`)
  return {
    host,
    port,
    username: String(config.username ?? 'guest'),
    password: String(config.password ?? 'guest'),
    vhost: String(config.virtual_host ?? '/'),
    heartbeatS: Math.round(duration('heartbeat', config.heartbeat, what) / 1000),
    timeoutMs
  }
}

/** The amqplib calls the client uses (the module is loaded by the caller, at the first resource). */
export type AmqpConnect = typeof import('amqplib').connect
type Connection = Awaited<ReturnType<AmqpConnect>>
type ConfirmChannel = Awaited<ReturnType<Connection['createConfirmChannel']>>

/** The AMQP reply code of an amqplib error (a channel or connection closed by the broker), if any. */
function codeOf (err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code
  return typeof code === 'number' ? code : undefined
}

/** A {@link DataClient} publishing {@link RabbitWrite}s to the broker `settings` name. */
export function rabbitDataClient (settings: RabbitSettings, amqpConnect: AmqpConnect): DataClient<RabbitWrite> {
  const address = `rabbitmq ${settings.host}:${settings.port}${settings.vhost === '/' ? '' : ` vhost ${settings.vhost}`}`
  let connection: Connection | undefined
  let channel: ConfirmChannel | undefined
  /** Exchanges declared on `channel` (`name type durable`). */
  let declared = new Set<string>()
  let opening: Promise<void> | undefined
  let lastError: string | undefined
  let closed = false

  const openChannel = async (conn: Connection): Promise<ConfirmChannel> => {
    const ch = await conn.createConfirmChannel()
    ch.on('error', (err: Error) => { lastError = err.message })
    ch.on('close', () => { if (channel === ch) { channel = undefined; declared = new Set() } })
    channel = ch
    declared = new Set()
    return ch
  }

  const open = async (): Promise<void> => {
    if (closed) throw new Error('the client is closed')
    if (connection !== undefined && channel !== undefined) return
    if (connection === undefined) {
      lastError = undefined
      const conn = await amqpConnect({
        protocol: settings.tls === undefined ? 'amqp' : 'amqps',
        hostname: settings.host,
        port: settings.port,
        username: settings.username,
        password: settings.password,
        vhost: settings.vhost,
        heartbeat: settings.heartbeatS
      }, { ...settings.tls, timeout: settings.timeoutMs, noDelay: true })
      conn.on('error', (err: Error) => { lastError = err.message })
      conn.on('close', () => { if (connection === conn) { connection = undefined; channel = undefined; declared = new Set() } })
      connection = conn
      if (closed) { await conn.close().catch(() => {}); throw new Error('the client is closed') }
    }
    await openChannel(connection)
  }

  const connect = async (): Promise<void> => {
    opening ??= open().finally(() => { opening = undefined })
    await opening
  }

  /** Declares the exchanges of `msgs` not declared yet; returns the ones that exist otherwise, with why. */
  const declare = async (msgs: readonly RabbitMessage[]): Promise<Map<string, string>> => {
    const mismatched = new Map<string, string>()
    for (const m of msgs) {
      const key = `${m.x} ${m.t} ${String(m.d)}`
      if (declared.has(key) || mismatched.has(m.x)) continue
      const ch = channel
      if (ch === undefined || connection === undefined) throw new Error(`not connected${lastError === undefined ? '' : `: ${lastError}`}`)
      try {
        await ch.assertExchange(m.x, m.t, { durable: m.d })
        declared.add(key)
      } catch (err) {
        if (codeOf(err) !== PRECONDITION_FAILED) throw err
        mismatched.set(m.x, `exchange ${JSON.stringify(m.x)} exists with another type or durability than the action's (${m.t}, durable ${String(m.d)}): change the action's exchange_type/durable or delete the exchange (${(err as Error).message})`)
        // the broker closed the channel: a new one for the other exchanges
        if (connection !== undefined) await openChannel(connection)
      }
    }
    return mismatched
  }

  return {
    address,
    async connect () {
      try {
        await connect()
      } catch (err) {
        const why = (err as Error).message
        throw new Error(lastError === undefined || why.includes(lastError) ? why : `${why}: ${lastError}`, { cause: err })
      }
    },
    async alive () {
      if (closed) return false
      if (connection !== undefined && channel !== undefined) return true
      // not connected: try now, so a broker back is seen without waiting for the sink's back-off
      try {
        await connect()
        return true
      } catch {
        return false
      }
    },
    async write (writes) {
      const msgs = writes.flatMap((w) => w.msgs)
      if (msgs.length === 0) return
      const mismatched = await declare(msgs)
      const ch = channel
      if (ch === undefined) throw new Error(`not connected${lastError === undefined ? '' : `: ${lastError}`}`)
      const refused: number[] = []
      let reason: string | undefined
      const confirms: Array<Promise<void>> = []
      for (const [i, m] of msgs.entries()) {
        const mismatch = mismatched.get(m.x)
        if (mismatch !== undefined) {
          refused.push(i)
          reason ??= mismatch
          continue
        }
        confirms.push(new Promise<void>((resolve, reject) => {
          // throws when the channel is closed: the batch is published again
          ch.publish(m.x, m.k, Buffer.from(m.p, 'utf8'), { persistent: m.d, contentType: 'application/json' }, (err: Error | null) => {
            if (err === null || err === undefined) { resolve(); return }
            if (err.message === 'message nacked') { refused.push(i); reason ??= `the broker refused (nacked) the message to exchange ${JSON.stringify(m.x)}`; resolve(); return }
            reject(err)
          })
        }))
      }
      const outcomes = await Promise.allSettled(confirms)
      const lost = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected')
      if (lost !== undefined) throw new Error(`confirms lost (${String((lost.reason as Error).message)}): the batch is published again`, { cause: lost.reason })
      if (refused.length > 0) throw new WriteRefused(`${reason ?? 'refused'} (${refused.length} of ${msgs.length} messages)`, { rows: refused.sort((a, b) => a - b) })
    },
    merge: (rows) => ({ msgs: rows.flatMap((r) => r.msgs) }),
    split: (w) => w.msgs.map((m) => ({ msgs: [m] })),
    rows: (w) => w.msgs.length,
    async close () {
      closed = true
      const conn = connection
      connection = undefined
      channel = undefined
      await opening?.catch(() => {})
      await (conn ?? connection)?.close().catch(() => {})
    }
  }
}
