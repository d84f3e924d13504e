/**
 * A real local HTTP server for the web_hook tests: records every request (method, path,
 * headers, body) and answers with the status the test sets.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request the sink received. */
export interface SinkRequest {
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  body: string
}

/** A running sink. */
export interface HttpSink {
  url: string
  requests: SinkRequest[]
  /** The status answered to the next requests (default 200). */
  status: number
  close: () => Promise<void>
}

/** Starts a sink on 127.0.0.1, port 0. */
export async function startHttpSink (): Promise<HttpSink> {
  const sink: HttpSink = { url: '', requests: [], status: 200, close: async () => undefined }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      sink.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      res.statusCode = sink.status
      res.end('ok')
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  sink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  sink.close = async () => {
    server.closeAllConnections()
    await new Promise<void>(resolve => server.close(() => resolve()))
  }
  return sink
}

/** A URL nothing listens on (a port just freed). */
export async function deadUrl (): Promise<string> {
  const server = http.createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>(resolve => server.close(() => resolve()))
  return `http://127.0.0.1:${port}/hook`
}
