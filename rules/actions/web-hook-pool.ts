/**
 * A web_hook resource's connections on one node (EMQ X 4.4's ehttpc pool per resource): the
 * settings read from the resource's config ({@link webHookSettings}), an undici `Pool` for
 * the URL's origin made by the type's `open` ({@link openWebHookPool}) and closed with the
 * instance, and the one send every web_hook action goes through ({@link WebHookInstance.send}).
 *
 * Invariants:
 * - One pool per open instance: at most `pool_size` connections to the origin, each carrying
 *   up to {@link PIPELINING_DEPTH} requests with `enable_pipelining` (one at a time without).
 *   Connections open with the first request, so a resource whose server is down opens; a
 *   connection the server closed is opened again by the next request.
 * - `pending` counts the sends through the instance that passed the limit and have not
 *   settled, so it never exceeds {@link MAX_IN_FLIGHT}. Every request carries an abort signal
 *   of `request_timeout` (time queued in the pool included), so each send settles within it,
 *   and so does `close`.
 * - Nothing this module throws or logs shows the URL's credentials (userinfo, `?token=`): a
 *   URL is shown through `maskUrl`, and a library's message naming it is masked too.
 */
import { checkServerIdentity, type ConnectionOptions, type PeerCertificate } from 'node:tls'
import type { Dispatcher, Pool } from 'undici'
import { maskUrl } from '../../node/config/index.js'
import { WrongTypeError } from '../../node/errors.js'
import { buildTlsOptions, type TlsSettings } from '../../node/tls-options.js'
import { paramDuration } from '../params.js'
import { resourceTls } from '../resource-tls.js'
import type { ResourceInstance } from '../types.js'

/** Pending requests allowed per resource and node. */
export const MAX_IN_FLIGHT = 1000
/** Requests one connection carries at once with `enable_pipelining` (ehttpc's later default). */
export const PIPELINING_DEPTH = 100
/** EMQ X 4.4's defaults of the resource's keys. */
export const WEB_HOOK_DEFAULTS = { connectTimeoutMs: 5000, requestTimeoutMs: 5000, poolSize: 8, pipelining: true } as const
/** How long past `request_timeout` a closing pool may take before it is destroyed. */
const CLOSE_GRACE_MS = 100
/** Bounds an instance's health check, as the resource service bounds `healthCheck` (5 s). */
const ALIVE_TIMEOUT_MS = 5000

/** A web_hook resource's config, read and checked. */
export interface WebHookSettings {
  /** The resource's URL (its credentials are never shown: see the module comment). */
  url: URL
  connectTimeoutMs: number
  requestTimeoutMs: number
  poolSize: number
  pipelining: boolean
  /** TLS settings of an `https://` URL (undefined for `http://`). */
  tls: TlsSettings | undefined
  /**
   * Headers of every request under the action's: the resource's `headers` (configs stored
   * before the action had them), and `authorization: Basic` of the URL's userinfo; lower-case names.
   */
  headers: Record<string, string>
  /** The resource's `method` (configs stored before the action had one), upper case. */
  method: string | undefined
}

/** One request of an action. */
export interface WebHookRequest {
  method: string
  /** Path and query string, from `/`. */
  path: string
  /** Lower-case names. */
  headers: Record<string, string>
  /** Undefined: no body (GET, DELETE). */
  body: string | undefined
}

function refuse (key: string, why: string): never {
  throw new WrongTypeError(`resource type web_hook config: parameter ${key} ${why}`)
}

function durationOf (config: Record<string, unknown>, key: string, fallback: number): number {
  const value = config[key]
  if (value === undefined || value === null || value === '') return fallback
  const ms = paramDuration(value)
  if (ms === undefined) refuse(key, `must be a duration such as 5s or 500ms, got ${JSON.stringify(value)}`)
  if (ms <= 0) refuse(key, 'must be more than 0')
  return ms
}

/**
 * The settings of a web_hook resource's `config`; throws a 108 naming the key for a value
 * that cannot work (a duration of 0, a pool of none, a TLS version that does not exist).
 */
export function webHookSettings (config: Record<string, unknown>): WebHookSettings {
  let url: URL
  try {
    url = new URL(String(config.url))
  } catch {
    refuse('url', 'is not a URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') refuse('url', 'must be an http:// or https:// URL')
  const poolSize = config.pool_size ?? WEB_HOOK_DEFAULTS.poolSize
  if (typeof poolSize !== 'number' || !Number.isInteger(poolSize) || poolSize < 1) refuse('pool_size', `must be a whole number of 1 or more, got ${JSON.stringify(poolSize)}`)
  const pipelining = config.enable_pipelining ?? WEB_HOOK_DEFAULTS.pipelining
  const headers: Record<string, string> = {}
  if (url.username !== '' || url.password !== '') {
    const user = decodeURIComponent(url.username)
    const password = decodeURIComponent(url.password)
    headers.authorization = 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64')
  }
  const given = config.headers
  if (typeof given === 'object' && given !== null && !Array.isArray(given)) {
    for (const [name, value] of Object.entries(given)) headers[name.toLowerCase()] = String(value)
  }
  const method = typeof config.method === 'string' && config.method !== '' ? config.method.toUpperCase() : undefined
  return {
    url,
    connectTimeoutMs: durationOf(config, 'connect_timeout', WEB_HOOK_DEFAULTS.connectTimeoutMs),
    requestTimeoutMs: durationOf(config, 'request_timeout', WEB_HOOK_DEFAULTS.requestTimeoutMs),
    poolSize,
    pipelining: pipelining === true || pipelining === 'true',
    tls: resourceTls(config, url.protocol === 'https:'),
    headers,
    method
  }
}

/** Node's TLS options of `settings` (files read now); a file that cannot be read is a 108 naming its key. */
export function webHookTlsOptions (settings: WebHookSettings): ConnectionOptions | undefined {
  if (settings.tls === undefined) return undefined
  const options = buildTlsOptions(settings.tls, {
    rule: 'sni',
    unreadable: (key, path, err) => refuse(key, `names a file that cannot be read (${path}: ${(err as NodeJS.ErrnoException).code ?? err.message})`)
  })
  // undici (7.30) handles ERR_TLS_CERT_ALTNAME_INVALID apart from other connect errors: the
  // requests queued behind it are never failed (so the pool's close waits forever) and an
  // assertion can throw out of the socket's callback. The same refusal under another code
  // takes undici's common path, which fails every queued request.
  const check = options.checkServerIdentity ?? checkServerIdentity
  options.checkServerIdentity = (host: string, cert: PeerCertificate) => {
    const err = check(host, cert)
    if (err === undefined) return undefined
    return Object.assign(new Error(err.message), { code: 'STARLING_TLS_CERT_NAME', reason: (err as { reason?: string }).reason })
  }
  return options
}

/** Opens the pool of resource `id` (undici is loaded by the first web_hook resource, not by every node). */
export async function openWebHookPool (id: string, settings: WebHookSettings): Promise<WebHookInstance> {
  const { Pool } = await import('undici')
  const tls = webHookTlsOptions(settings)
  const pool = new Pool(settings.url.origin, {
    connections: settings.poolSize,
    // 1: one request at a time on a kept-alive connection (0 would close it after each)
    pipelining: settings.pipelining ? PIPELINING_DEPTH : 1,
    headersTimeout: settings.requestTimeoutMs,
    bodyTimeout: settings.requestTimeoutMs,
    connect: { ...tls, timeout: settings.connectTimeoutMs }
  })
  return new WebHookInstance(id, settings, pool)
}

/**
 * A web_hook resource's running part on one node: its pool and its pending requests (see
 * the module's invariants).
 */
export class WebHookInstance implements ResourceInstance {
  /** Requests sent and not settled yet. */
  pending = 0

  constructor (readonly id: string, readonly settings: WebHookSettings, private readonly pool: Pool) {}

  /** The URL's path and query, the path every request starts from. */
  get basePath (): string {
    return this.settings.url.pathname + this.settings.url.search
  }

  /**
   * Sends `request`; resolves on a 2xx answer, rejects otherwise (another status, no
   * connection within `connect_timeout`, no answer within `request_timeout`, more than
   * {@link MAX_IN_FLIGHT} pending) with a message that shows no credential.
   */
  async send (request: WebHookRequest): Promise<void> {
    if (this.pending >= MAX_IN_FLIGHT) throw new Error(`web_hook ${this.id}: ${MAX_IN_FLIGHT} requests already pending; request dropped`)
    this.pending++
    const signal = AbortSignal.timeout(this.settings.requestTimeoutMs)
    try {
      const res = await this.pool.request({
        method: request.method as Dispatcher.HttpMethod,
        path: request.path,
        headers: request.headers,
        body: request.body,
        signal,
        // with pipelining on, POSTs are pipelined as ehttpc does; a request is never sent twice
        idempotent: this.settings.pipelining,
        blocking: false
      })
      await res.body.dump()
      if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`web_hook ${this.id}: ${request.method} ${this.shown(request.path)} answered HTTP ${res.statusCode}`)
    } catch (err) {
      throw this.failure(err, request, signal)
    } finally {
      this.pending--
    }
  }

  /** The status while the rule engine runs: whether the server answers a HEAD request (any status). */
  async alive (): Promise<boolean> {
    try {
      const res = await this.pool.request({ method: 'HEAD', path: this.basePath, signal: AbortSignal.timeout(Math.min(ALIVE_TIMEOUT_MS, this.settings.requestTimeoutMs)) })
      await res.body.dump()
      return true
    } catch {
      return false
    }
  }

  /**
   * Closes the pool once its pending requests settled (each within `request_timeout`). undici's
   * `close()` (7.30) can wait forever when requests pending at the close fail on the
   * connection (a server certificate refused): past `request_timeout`, when every send has
   * settled, the pool is destroyed instead.
   */
  async close (): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), this.settings.requestTimeoutMs + CLOSE_GRACE_MS) })
    const stuck = await Promise.race([this.pool.close().then(() => false), late])
    clearTimeout(timer)
    if (stuck) await this.pool.destroy()
  }

  /** The URL of `path` on the resource's origin as shown: credentials masked. */
  private shown (path: string): string {
    const u = this.settings.url
    const userinfo = u.username !== '' || u.password !== '' ? `${u.username}:${u.password}@` : ''
    return maskUrl(`${u.protocol}//${userinfo}${u.host}${path}`)
  }

  /** The error a failed send rejects with: what went wrong, never a credential. */
  private failure (err: unknown, request: WebHookRequest, signal: AbortSignal): Error {
    const e = err as { name?: string, code?: string, message?: string }
    if (typeof e.message === 'string' && e.message.startsWith(`web_hook ${this.id}: `)) return err as Error
    const where = `${request.method} ${this.shown(request.path)}`
    if (e.code === 'UND_ERR_CONNECT_TIMEOUT') return new Error(`web_hook ${this.id}: ${where}: no connection within ${this.settings.connectTimeoutMs} ms (connect_timeout)`)
    if (signal.aborted || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') {
      return new Error(`web_hook ${this.id}: ${where}: no answer within ${this.settings.requestTimeoutMs} ms (request_timeout)`)
    }
    let message = typeof e.message === 'string' ? e.message : String(err)
    const href = this.settings.url.href
    if (message.includes(href)) message = message.replaceAll(href, maskUrl(href))
    return new Error(`web_hook ${this.id}: ${where} failed: ${message}${e.code !== undefined && !message.includes(e.code) ? ` (${e.code})` : ''}`)
  }
}
