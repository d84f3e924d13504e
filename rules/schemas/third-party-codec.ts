/**
 * `3rd-party` schemas: encoding and decoding by an external codec service over HTTP or TCP
 * (codec-wire.ts; docs/schema-registry.md). The service's address is `parser_addr.url`
 * (HTTP), `parser_addr.server` (TCP) or the `config.url` / `config.server` of the resource
 * `parser_addr.resource_id` (read at each call, so the resource must still exist).
 *
 * At create time {@link probeService} checks that the service can be connected to (spec
 * Errors 4). At run time a call the codec has no answer for starts an exchange
 * (codec-exchange.ts) and throws {@link DeferredResult}: the rule engine evaluates the
 * rule again for the same event once the answer is in, and the call then answers from
 * what the exchange brought back (kept for {@link ANSWER_TTL_MS}). The node never waits
 * for the service. A call that could not connect or got no answer in time makes the
 * schema fail fast (no network) for a back-off of 1 s, doubling with each further such
 * failure up to 30 s; the first call after the back-off tries again, and a success ends
 * it. An error the service answers is not a transport failure and starts no back-off.
 */
import { connect } from 'node:net'
import { createHash } from 'node:crypto'
import { maskUrl } from '../../node/config/index.js'
import { DeferredResult } from '../funcs/errors.js'
import type { Resource } from '../types.js'
import { binaryValue, jsonEncode } from '../funcs/value-model.js'
import type { CodecRequest } from './codec-wire.js'
import type { SchemaCodec } from './codec.js'
import type { CodecTarget, CodecExchange, ExchangeResult } from './codec-exchange.js'
import { DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_PARSE_TIMEOUT_S, parseServer, type ParserAddr, type ParserOpts, type Schema } from './schema.js'

/** The first back-off after a transport failure, in ms. */
export const BACKOFF_START_MS = 1000
/** The longest back-off, in ms. */
export const BACKOFF_MAX_MS = 30_000
/** How long an answer is kept for the evaluations waiting for it. */
export const ANSWER_TTL_MS = 10_000
/** The most answers kept per schema (the oldest go first). */
const MAX_ANSWERS = 10_000

/** An exchange in flight (`ready` set) or its outcome. */
interface Answer { at: number, ready?: Promise<void>, result?: Buffer, error?: Error }

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** Looks a resource up by id (the rule engine's resources). */
export type ResourceLookup = (id: string) => Resource | undefined

/** Where `addr` points to now; throws a message naming what is wrong with a resource. */
export function targetOf (addr: ParserAddr, resource: ResourceLookup): CodecTarget {
  if (addr.url !== undefined) return { kind: 'http', url: addr.url, headers: {} }
  if (addr.server !== undefined) return { kind: 'tcp', ...parseServer(addr.server) }
  const id = addr.resource_id ?? ''
  const found = resource(id)
  if (found === undefined) throw new Error(`resource ${id} does not exist; create it first (POST /api/v3/resources) or give parser_addr.url or parser_addr.server`)
  const { url, server, headers } = found.config as { url?: unknown, server?: unknown, headers?: unknown }
  if (typeof url === 'string') {
    const h = typeof headers === 'object' && headers !== null ? Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)])) : {}
    return { kind: 'http', url, headers: h }
  }
  if (typeof server === 'string') return { kind: 'tcp', ...parseServer(server) }
  throw new Error(`resource ${id} (type ${found.type}) has no url or server in its config; a codec service needs one`)
}

/** `http://...` (its credentials masked) or `host:port`, for messages. */
export function describeTarget (t: CodecTarget): string {
  return t.kind === 'http' ? maskUrl(t.url) : `${t.host}:${t.port}`
}

/** Connect and parse timeouts of a schema, in ms (defaults filled). */
export function timeoutsOf (opts: Partial<ParserOpts>): { connectMs: number, parseMs: number } {
  return {
    connectMs: (opts.connect_timeout ?? DEFAULT_CONNECT_TIMEOUT_S) * 1000,
    parseMs: (opts.parse_timeout ?? DEFAULT_PARSE_TIMEOUT_S) * 1000
  }
}

/**
 * Resolves when a TCP connection to the service's host and port opens within
 * `timeoutMs` (then closes it); rejects with the reason otherwise. For an HTTP URL the
 * host and port of the URL (default 80 or 443) are tried.
 */
export async function probeService (target: CodecTarget, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  let host: string
  let port: number
  if (target.kind === 'tcp') {
    ({ host, port } = target)
  } else {
    const url = new URL(target.url)
    host = url.hostname.replace(/^\[(.*)\]$/, '$1')
    port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80
  }
  await new Promise<void>((resolve, reject) => {
    const socket = connect({ host, port, signal })
    const timer = setTimeout(() => socket.destroy(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs)
    socket.once('connect', () => { clearTimeout(timer); socket.end(); resolve() })
    socket.once('error', (err) => { clearTimeout(timer); socket.destroy(); reject(err) })
  })
}

/** The codec of one 3rd-party schema. */
export class ThirdPartyCodec implements SchemaCodec {
  private failures = 0
  private downUntil = 0
  private lastError = ''
  private readonly answers = new Map<string, Answer>()

  constructor (
    private readonly schema: Schema,
    private readonly exchange: CodecExchange,
    private readonly resource: ResourceLookup,
    private readonly now: () => number = Date.now
  ) {}

  /** The service's answer (bytes): text when printable UTF-8 (so `d.key` reads JSON), else a Buffer. */
  decode (data: Buffer, messageType: string | undefined): unknown {
    return binaryValue(this.call('decode', data, messageType))
  }

  /** A binary is sent as is, anything else as its JSON text; the answer is the encoded bytes. */
  encode (value: unknown, messageType: string | undefined): Buffer {
    const data = Buffer.isBuffer(value) ? value : Buffer.from(typeof value === 'string' ? value : jsonEncode('schema_encode', value), 'utf8')
    return this.call('encode', data, messageType)
  }

  private call (type: CodecRequest['type'], data: Buffer, messageType: string | undefined): Buffer {
    const fn = type === 'decode' ? 'schema_decode' : 'schema_encode'
    const key = `${type}\u0000${messageType ?? ''}\u0000${createHash('sha1').update(data).digest('base64')}`
    const known = this.answers.get(key)
    if (known !== undefined) {
      if (known.ready !== undefined) throw new DeferredResult(fn, known.ready)
      if (known.error !== undefined) throw known.error
      return known.result as Buffer
    }
    const wait = this.downUntil - this.now()
    if (wait > 0) throw new Error(`codec service unavailable (${this.lastError}); not called for another ${wait} ms`)
    const target = targetOf(this.schema.parser_addr ?? {}, this.resource)
    const opts = this.schema.parser_opts as ParserOpts
    const { connectMs, parseMs } = timeoutsOf(opts)
    const request: CodecRequest = { type, schema_name: this.schema.name, opts: opts['3rd_party_opts'], payload: data.toString('base64') }
    if (messageType !== undefined) request.message_type = messageType
    const answer: Answer = { at: this.now() }
    answer.ready = this.exchange.call({ target, body: JSON.stringify(request), connectTimeoutMs: connectMs, parseTimeoutMs: parseMs })
      .then((result) => { this.settle(answer, target, result) })
    this.remember(key, answer)
    throw new DeferredResult(fn, answer.ready)
  }

  /** Records how an exchange ended: the result bytes, or the error later calls throw. */
  private settle (answer: Answer, target: CodecTarget, result: ExchangeResult): void {
    answer.ready = undefined
    answer.at = this.now()
    if (!result.ok) {
      // the worker names the URL in its errors; they reach the logs and the rule's failures
      const error = target.kind === 'http' ? result.error.replaceAll(target.url, maskUrl(target.url)) : result.error
      const reason = `${describeTarget(target)}: ${error}`
      if (result.stage !== 'service') this.backOff(reason)
      answer.error = new Error(result.stage === 'service' ? `the codec service answered an error: ${reason}` : `codec service ${reason}`)
      return
    }
    this.failures = 0
    this.downUntil = 0
    if (!BASE64.test(result.payload) || result.payload.length % 4 === 1) {
      answer.error = new Error(`the codec service at ${describeTarget(target)} answered something that is not base64`)
      return
    }
    answer.result = Buffer.from(result.payload, 'base64')
  }

  /** Keeps `answer` under `key`, dropping answers older than {@link ANSWER_TTL_MS} and the oldest beyond {@link MAX_ANSWERS}. */
  private remember (key: string, answer: Answer): void {
    const oldest = this.now() - ANSWER_TTL_MS
    for (const [k, a] of this.answers) {
      if (a.ready === undefined && (a.at < oldest || this.answers.size >= MAX_ANSWERS)) this.answers.delete(k)
      else break
    }
    this.answers.set(key, answer)
  }

  private backOff (reason: string): void {
    this.failures++
    this.lastError = reason
    this.downUntil = this.now() + Math.min(BACKOFF_MAX_MS, BACKOFF_START_MS * 2 ** (this.failures - 1))
  }
}
