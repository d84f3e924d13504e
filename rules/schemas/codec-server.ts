/**
 * The reference `3rd-party` codec service (docs/schema-registry.md, "The reference codec
 * server"): speaks codec-wire.ts over HTTP and TCP, for tests and as a starting point for
 * users. `bin/starling-codec` runs it; {@link startCodecServer} embeds it.
 *
 * Its codec is chosen per schema by `3rd_party_opts`, a comma-separated list of steps run
 * in order, for decode and encode alike:
 * - `xor:<key>`: each byte XOR the key's bytes in turn (`xor` alone: key `starling`);
 *   XOR is its own inverse, so the same opts decode what they encoded;
 * - `echo` (or empty opts): the data unchanged;
 * - `delay:<ms>`: wait before answering (to try `parse_timeout`);
 * - `fail[:<message>]`: answer an error.
 * A program may pass its own `codec` instead.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net'
import { FrameReader, frame, type CodecRequest, type CodecResponse } from './codec-wire.js'

/** Turns a request's data (bytes) into the result (bytes); throws to answer an error. */
export type CodecFunction = (request: CodecRequest, data: Buffer) => Buffer | Promise<Buffer>

/** Where the server listens: HTTP and/or TCP (port 0: any free port), and its codec. */
export interface CodecServerInit {
  http?: { host?: string, port?: number }
  tcp?: { host?: string, port?: number }
  /** Default {@link referenceCodec}. */
  codec?: CodecFunction
}

/** A running codec server. */
export interface CodecServer {
  /** `http://<host>:<port>/codec` when serving HTTP (any path is served). */
  readonly httpUrl: string | undefined
  /** `<host>:<port>` when serving TCP. */
  readonly tcpAddress: string | undefined
  /** Stops listening and closes every open connection. */
  close (): Promise<void>
}

/** The largest HTTP request body accepted. */
const MAX_HTTP_BODY = 16 * 1024 * 1024

/** The reference codec: the `3rd_party_opts` steps described in the module comment. */
export async function referenceCodec (request: CodecRequest, data: Buffer): Promise<Buffer> {
  let out = data
  for (const step of request.opts.split(',').map(s => s.trim()).filter(s => s !== '')) {
    const colon = step.indexOf(':')
    const op = colon < 0 ? step : step.slice(0, colon)
    const arg = colon < 0 ? undefined : step.slice(colon + 1)
    if (op === 'echo') continue
    if (op === 'xor') out = xor(out, Buffer.from(arg === undefined || arg === '' ? 'starling' : arg, 'utf8'))
    else if (op === 'delay') await new Promise(resolve => setTimeout(resolve, Number(arg ?? 0)))
    else if (op === 'fail') throw new Error(arg ?? `${request.type} failed on request`)
    else throw new Error(`unknown step '${op}' in opts; steps: xor[:key], echo, delay:<ms>, fail[:message]`)
  }
  return out
}

function xor (data: Buffer, key: Buffer): Buffer {
  const out = Buffer.allocUnsafe(data.length)
  for (let i = 0; i < data.length; i++) out[i] = data[i] ^ key[i % key.length]
  return out
}

/** Checks a request's shape; answers the request or throws why it is not one. */
export function parseCodecRequest (text: string): CodecRequest {
  let body: any
  try {
    body = JSON.parse(text)
  } catch {
    throw new Error('the request is not JSON')
  }
  if (typeof body !== 'object' || body === null) throw new Error('the request must be a JSON object')
  if (body.type !== 'decode' && body.type !== 'encode') throw new Error('type must be "decode" or "encode"')
  for (const key of ['schema_name', 'opts', 'payload']) {
    if (typeof body[key] !== 'string') throw new Error(`${key} must be a string`)
  }
  if (body.message_type !== undefined && typeof body.message_type !== 'string') throw new Error('message_type must be a string')
  return body as CodecRequest
}

/** Starts the server; resolves once every requested listener listens. */
export async function startCodecServer (init: CodecServerInit): Promise<CodecServer> {
  const codec = init.codec ?? referenceCodec
  const run = async (request: CodecRequest): Promise<Buffer> => await codec(request, Buffer.from(request.payload, 'base64'))
  let http: HttpServer | undefined
  let tcp: TcpServer | undefined
  const sockets = new Set<Socket>()
  let httpUrl: string | undefined
  let tcpAddress: string | undefined
  if (init.http !== undefined) {
    http = createHttpServer((req, res) => { void serveHttp(req, res, run) })
    const address = await listen(http, init.http.host ?? '127.0.0.1', init.http.port ?? 0)
    httpUrl = `http://${address.address}:${address.port}/codec`
  }
  if (init.tcp !== undefined) {
    tcp = createTcpServer((socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      serveTcp(socket, run)
    })
    const address = await listen(tcp, init.tcp.host ?? '127.0.0.1', init.tcp.port ?? 0)
    tcpAddress = `${address.address}:${address.port}`
  }
  return {
    httpUrl,
    tcpAddress,
    async close () {
      for (const socket of sockets) socket.destroy()
      http?.closeAllConnections()
      await Promise.all([http, tcp].map(async (server) => {
        if (server === undefined) return
        await new Promise<void>(resolve => server.close(() => resolve()))
      }))
    }
  }
}

async function listen (server: HttpServer | TcpServer, host: string, port: number): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => { server.off('error', reject); resolve() })
  })
  return server.address() as AddressInfo
}

/** POST: 200 with the result in base64; 400 for a bad request, 500 when the codec fails. */
async function serveHttp (req: IncomingMessage, res: ServerResponse, run: (r: CodecRequest) => Promise<Buffer>): Promise<void> {
  const reply = (status: number, text: string): void => {
    res.writeHead(status, { 'content-type': 'text/plain' })
    res.end(text)
  }
  if (req.method !== 'POST') { reply(405, 'POST a JSON codec request'); return }
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of req) {
      size += (chunk as Buffer).length
      if (size > MAX_HTTP_BODY) { reply(413, 'request too large'); return }
      chunks.push(chunk as Buffer)
    }
  } catch {
    return
  }
  let request: CodecRequest
  try {
    request = parseCodecRequest(Buffer.concat(chunks).toString('utf8'))
  } catch (err) {
    reply(400, (err as Error).message)
    return
  }
  try {
    reply(200, (await run(request)).toString('base64'))
  } catch (err) {
    reply(500, (err as Error).message)
  }
}

/** Frames in, frames out in the same order (requests on one connection run one at a time). */
function serveTcp (socket: Socket, run: (r: CodecRequest) => Promise<Buffer>): void {
  const reader = new FrameReader()
  let chain = Promise.resolve()
  socket.setNoDelay(true)
  socket.on('error', () => socket.destroy())
  socket.on('data', (chunk) => {
    let frames: Buffer[]
    try {
      frames = reader.push(chunk)
    } catch {
      socket.destroy()
      return
    }
    for (const f of frames) {
      chain = chain.then(async () => {
        let answer: CodecResponse
        try {
          answer = { code: 0, payload: (await run(parseCodecRequest(f.toString('utf8')))).toString('base64') }
        } catch (err) {
          answer = { code: 1, message: (err as Error).message }
        }
        if (!socket.destroyed) socket.write(frame(JSON.stringify(answer)))
      })
    }
  })
}
