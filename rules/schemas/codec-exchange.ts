/**
 * Request/answer exchanges with `3rd-party` codec services, made off the event loop.
 *
 * The network I/O runs in a worker thread (one per registry, started on first use); the
 * node's thread posts a request and gets a promise of the answer. Rule SQL functions are
 * synchronous, so `schema_decode`/`schema_encode` on a 3rd-party schema do not wait for it:
 * third-party-codec.ts starts the exchange, makes the rule's evaluation wait for it
 * (rules/funcs/errors.ts `DeferredResult`), and the rule engine evaluates the rule again
 * for that event once the answer is in. The node never blocks on a codec service.
 *
 * Invariants: answers carry the request's id; an exchange that missed its deadline is
 * answered as a `parse` failure on this side and its late answer is dropped; the worker is
 * unref'd and never keeps the process alive.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads'

/** Where an exchange goes: an HTTP URL (POST) or a TCP `host:port`. */
export type CodecTarget =
  | { kind: 'http', url: string, headers: Record<string, string> }
  | { kind: 'tcp', host: string, port: number }

/** One exchange: the JSON request text sent to `target`, and its time limits. */
export interface ExchangeRequest {
  target: CodecTarget
  /** The request body (a codec-wire.ts {@link CodecRequest} as JSON). */
  body: string
  /** How long connecting may take (a kept-open connection is reused without waiting). */
  connectTimeoutMs: number
  /** How long the answer may take once connected. */
  parseTimeoutMs: number
}

/**
 * How an exchange ended: the service's result (base64 text, unchecked), or a failure with
 * the stage it happened at: `connect` (no connection), `parse` (no answer in time, or the
 * connection broke), `service` (the service answered with an error).
 */
export type ExchangeResult =
  | { ok: true, payload: string }
  | { ok: false, stage: 'connect' | 'parse' | 'service', error: string }

/** Extra time the caller waits beyond the worker's own timeouts before giving up on it. */
const WORKER_MARGIN_MS = 1000

interface Pending { resolve: (result: ExchangeResult) => void, timer: NodeJS.Timeout }

/** Makes exchanges through one worker thread (started on first use). */
export class CodecExchange {
  private worker: Worker | null = null
  private port: MessagePort | null = null
  private nextId = 1
  private readonly pending = new Map<number, Pending>()

  /** Runs one exchange; never rejects (a failure is an {@link ExchangeResult}). */
  async call (request: ExchangeRequest): Promise<ExchangeResult> {
    const port = this.started()
    const id = this.nextId++
    return await new Promise<ExchangeResult>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        resolve({ ok: false, stage: 'parse', error: 'the codec worker thread did not answer in time' })
      }, request.connectTimeoutMs + request.parseTimeoutMs + WORKER_MARGIN_MS)
      timer.unref()
      this.pending.set(id, { resolve, timer })
      port.postMessage({ id, request })
    })
  }

  /** Stops the worker (its connections close); exchanges in flight fail; the next call starts a new one. */
  close (): void {
    const worker = this.worker
    this.worker = null
    this.port?.close()
    this.port = null
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer)
      p.resolve({ ok: false, stage: 'parse', error: 'the codec worker stopped' })
      this.pending.delete(id)
    }
    if (worker !== null) void worker.terminate()
  }

  private started (): MessagePort {
    if (this.worker !== null && this.port !== null) return this.port
    const { port1, port2 } = new MessageChannel()
    const source = `const { workerData } = require('node:worker_threads');\n(${codecWorker.toString()})(require, workerData)`
    const worker = new Worker(source, { eval: true, workerData: { port: port2 }, transferList: [port2] })
    worker.unref()
    worker.on('error', () => { if (this.worker === worker) this.close() })
    worker.on('exit', () => { if (this.worker === worker) { this.worker = null; this.port = null } })
    port1.on('message', (msg: { id: number, result: ExchangeResult }) => {
      const p = this.pending.get(msg.id)
      if (p === undefined) return // the late answer of an exchange this side gave up on
      this.pending.delete(msg.id)
      clearTimeout(p.timer)
      p.resolve(msg.result)
    })
    port1.unref()
    this.worker = worker
    this.port = port1
    return port1
  }
}

/**
 * The worker thread's program. It runs from its source text (`toString()`), so it must be
 * self-contained: no imports, no outer variables; modules come through `load` (the
 * worker's `require`). Keeps HTTP connections alive (one agent per scheme) and one TCP
 * connection per `host:port`; TCP framing as codec-wire.ts defines it.
 */
function codecWorker (load: (id: string) => any, data: { port: MessagePort }): void {
  const http = load('node:http')
  const https = load('node:https')
  const net = load('node:net')
  const agents: Record<string, unknown> = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) }
  interface Conn { socket: any, ready: Promise<void>, waiting: Array<(frame: Buffer | null, err?: string) => void>, buffered: Buffer, closed: boolean }
  const conns = new Map<string, Conn>()

  data.port.on('message', (msg: { id: number, request: ExchangeRequest }) => {
    const run = msg.request.target.kind === 'http' ? overHttp(msg.request, true) : overTcp(msg.request, true)
    run.then(
      (result) => answer(msg.id, result),
      (err: Error) => answer(msg.id, { ok: false, stage: 'parse', error: String(err?.message ?? err) })
    )
  })

  function answer (id: number, result: ExchangeResult): void {
    data.port.postMessage({ id, result })
  }

  /** `retry`: a kept-alive connection the server closed meanwhile is retried once on a new one. */
  function overHttp (request: ExchangeRequest, retry: boolean): Promise<ExchangeResult> {
    const target = request.target as { url: string, headers: Record<string, string> }
    return new Promise((resolve) => {
      let settled = false
      let connected = false
      const done = (result: ExchangeResult): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(result)
      }
      const url = new URL(target.url)
      const body = Buffer.from(request.body, 'utf8')
      const req = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        agent: agents[url.protocol],
        headers: { ...target.headers, 'content-type': 'application/json', 'content-length': String(body.length) }
      })
      let timer = setTimeout(() => {
        done({ ok: false, stage: 'connect', error: `no connection to ${url.host} within ${request.connectTimeoutMs} ms` })
        req.destroy()
      }, request.connectTimeoutMs)
      const onConnected = (): void => {
        connected = true
        clearTimeout(timer)
        timer = setTimeout(() => {
          done({ ok: false, stage: 'parse', error: `no answer from ${target.url} within ${request.parseTimeoutMs} ms` })
          req.destroy()
        }, request.parseTimeoutMs)
      }
      req.on('socket', (socket: any) => {
        if (socket.connecting === true) socket.once('connect', onConnected)
        else onConnected()
      })
      req.on('error', (err: Error & { code?: string }) => {
        if (retry && !settled && req.reusedSocket === true && err.code === 'ECONNRESET') {
          settled = true
          clearTimeout(timer)
          resolve(overHttp(request, false))
          return
        }
        done({ ok: false, stage: connected ? 'parse' : 'connect', error: err.message })
      })
      req.on('response', (res: any) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('error', (err: Error) => done({ ok: false, stage: 'parse', error: err.message }))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8').trim()
          if (res.statusCode === 200) done({ ok: true, payload: text })
          else done({ ok: false, stage: 'service', error: `HTTP ${String(res.statusCode)}${text === '' ? '' : ': ' + text.slice(0, 200)}` })
        })
      })
      req.end(body)
    })
  }

  function connection (host: string, port: number, connectTimeoutMs: number): Conn {
    const key = `${host}:${port}`
    const open = conns.get(key)
    if (open !== undefined && !open.closed) return open
    const socket = net.connect({ host, port })
    socket.setNoDelay(true)
    let lastError = 'connection closed'
    const conn: Conn = { socket, ready: Promise.resolve(), waiting: [], buffered: Buffer.alloc(0), closed: false }
    conn.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => socket.destroy(new Error(`no connection to ${key} within ${connectTimeoutMs} ms`)), connectTimeoutMs)
      socket.once('connect', () => { clearTimeout(timer); resolve() })
      socket.on('error', (err: Error) => { lastError = err.message })
      socket.once('close', () => {
        clearTimeout(timer)
        conn.closed = true
        if (conns.get(key) === conn) conns.delete(key)
        reject(new Error(lastError))
        for (const wake of conn.waiting.splice(0)) wake(null, lastError)
      })
    })
    conn.ready.catch(() => {})
    socket.on('data', (chunk: Buffer) => {
      conn.buffered = conn.buffered.length === 0 ? chunk : Buffer.concat([conn.buffered, chunk])
      while (conn.buffered.length >= 4) {
        const length = conn.buffered.readUInt32BE(0)
        if (conn.buffered.length < 4 + length) break
        const frame = conn.buffered.subarray(4, 4 + length)
        conn.buffered = conn.buffered.subarray(4 + length)
        conn.waiting.shift()?.(frame)
      }
    })
    conns.set(key, conn)
    return conn
  }

  /** `retry`: as for overHttp, a kept-open connection found closed is retried once. */
  async function overTcp (request: ExchangeRequest, retry: boolean): Promise<ExchangeResult> {
    const target = request.target as { host: string, port: number }
    const reused = conns.has(`${target.host}:${target.port}`)
    const conn = connection(target.host, target.port, request.connectTimeoutMs)
    try {
      await conn.ready
    } catch (err) {
      return { ok: false, stage: 'connect', error: (err as Error).message }
    }
    const result = await new Promise<ExchangeResult & { closed?: true }>((resolve) => {
      const timer = setTimeout(() => {
        // the answer may still come: drop the connection so later answers stay in step
        conn.socket.destroy()
        resolve({ ok: false, stage: 'parse', error: `no answer from ${target.host}:${target.port} within ${request.parseTimeoutMs} ms` })
      }, request.parseTimeoutMs)
      conn.waiting.push((frame, err) => {
        clearTimeout(timer)
        if (frame === null) { resolve({ ok: false, stage: 'parse', error: err ?? 'connection closed', closed: true }); return }
        let answer: { code?: unknown, payload?: unknown, message?: unknown }
        try {
          answer = JSON.parse(frame.toString('utf8'))
        } catch {
          resolve({ ok: false, stage: 'service', error: 'the answer frame is not JSON' })
          return
        }
        if (answer?.code === 0 && typeof answer.payload === 'string') resolve({ ok: true, payload: answer.payload })
        else resolve({ ok: false, stage: 'service', error: typeof answer?.message === 'string' ? answer.message : `code ${String(answer?.code)}` })
      })
      const body = Buffer.from(request.body, 'utf8')
      const header = Buffer.allocUnsafe(4)
      header.writeUInt32BE(body.length, 0)
      conn.socket.write(Buffer.concat([header, body]))
    })
    if (result.closed === true && reused && retry) return await overTcp(request, false)
    delete result.closed
    return result
  }
}
