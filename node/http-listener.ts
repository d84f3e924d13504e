/**
 * The HTTP(S) listeners of the parts above the MQTT core (the management API on 8080, the
 * dashboard on 18083): one way to bind an HTTP application on a configured address and, when
 * configured, on an HTTPS one too, with a connection limit shared by both, the `{code,
 * message}` answer to requests Node's HTTP parser refuses, and a stop that closes every open
 * connection. A bind failure is a {@link ListenError} naming the configuration key.
 */
import http from 'node:http'
import https from 'node:https'
import { readFileSync } from 'node:fs'
import type { AddressInfo, Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { Duplex } from 'node:stream'
import type { ListenerAddress } from './config/index.js'
import { ListenError } from './listen-error.js'

/**
 * A request listener whose application is built at the first request: `build` runs once
 * (later requests wait for the same build), so what only serves HTTP (Express, its routers,
 * the validators) is not loaded by a node nobody has asked anything yet. A build that fails
 * answers 500 with the error envelope (code 102) and is tried again at the next request.
 */
export function lazyRequestListener (build: () => Promise<http.RequestListener>): http.RequestListener {
  let ready: http.RequestListener | undefined
  let building: Promise<http.RequestListener> | undefined
  return (req, res) => {
    if (ready !== undefined) { ready(req, res); return }
    building ??= build().then((app) => (ready = app), (err: unknown) => { building = undefined; throw err })
    building.then((app) => { app(req, res) }, (err: unknown) => {
      const body = JSON.stringify({ code: 102, message: `the HTTP application could not start: ${err instanceof Error ? err.message : String(err)}` })
      res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) }).end(body)
    })
  }
}

/** Where and how to listen. */
export interface HttpListenerSpec {
  /** The plain HTTP address, and the configuration key it came from (for the bind error); absent: HTTP is off. */
  http?: { address: ListenerAddress, key: string }
  /**
   * The HTTPS address when one is configured, with its PEM files (`cacertfile` optional: the
   * CAs client certificates are checked against, which also complete the chain sent), and
   * client certificates as EMQ X's `verify` / `fail_if_no_peer_cert` (default: not asked).
   */
  https?: { address: ListenerAddress, key: string, keyfile: string, certfile: string, cacertfile?: string, verify?: 'verify_none' | 'verify_peer', failIfNoPeerCert?: boolean }
  /** Most connections open at once over both (read per connection, so a live change applies at once); default no limit. */
  maxConns?: () => number
}

/** Running HTTP(S) listeners. */
export interface HttpListeners {
  /** The bound HTTP port (differs from the configured one when that was 0); undefined when HTTP is off. */
  readonly port: number | undefined
  /** The bound HTTPS port, when HTTPS is on. */
  readonly httpsPort: number | undefined
  /** Connections open now, over both. */
  connections: () => number
  /** Stops listening and closes every open connection. */
  stop: () => Promise<void>
}

/**
 * A request Node's HTTP parser refuses before the application sees it (a request line and
 * headers over its 16 KiB, a malformed request line or header) is answered with the error
 * envelope too, code 102 (431 or 400), where Node answered a bare 431/400 without a body
 * (found by bench/fuzz/api-door.ts); the connection then closes, as Node's own answer closes it.
 */
function answerClientError (err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) { socket.destroy(); return }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW'
  const body = JSON.stringify({ code: 102, message: tooLarge ? 'request line and headers larger than 16384 bytes' : `malformed HTTP request (${String(err.code ?? err.message)})` })
  socket.end(`HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
}

/**
 * Whether a client on a `verify_peer` listener may go on: a certificate that does not verify
 * against the CAs is always refused; a missing one only with `fail_if_no_peer_cert`
 * (EMQ X's, and Starling's MQTT listeners', rule).
 */
function peerAccepted (socket: TLSSocket, failIfNoPeerCert: boolean): boolean {
  const cert = socket.getPeerCertificate()
  const hasCert = cert !== null && Object.keys(cert).length > 0
  return hasCert ? socket.authorized : !failIfNoPeerCert
}

/** Serves `app` as `spec` says; rejects with a {@link ListenError} when an address cannot be bound (nothing is left listening then). */
export async function startHttpListeners (app: http.RequestListener, spec: HttpListenerSpec): Promise<HttpListeners> {
  const servers: http.Server[] = []
  let open = 0
  // a connection over the limit is closed unanswered
  const limit = (socket: Socket): void => {
    if (spec.maxConns !== undefined && open >= spec.maxConns()) {
      socket.destroy()
      return
    }
    open++
    socket.once('close', () => { open-- })
  }
  const listen = async (server: http.Server, address: ListenerAddress): Promise<number> => {
    server.on('connection', limit)
    server.on('clientError', answerClientError)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(address.port, address.host, () => { server.off('error', reject); resolve() })
    })
    servers.push(server)
    return (server.address() as AddressInfo).port
  }
  const stop = async (): Promise<void> => {
    await Promise.all(servers.map(s => new Promise<void>(resolve => {
      s.close(() => resolve())
      s.closeAllConnections()
    })))
  }
  let current = spec.http
  try {
    const port = spec.http === undefined ? undefined : await listen(http.createServer(app), spec.http.address)
    let httpsPort: number | undefined
    if (spec.https !== undefined) {
      const tls = spec.https
      current = tls
      const verifyPeer = tls.verify === 'verify_peer'
      // with verify_peer Node is told not to reject, so that the two EMQ X cases are told apart (peerAccepted)
      const options: https.ServerOptions = { key: readFileSync(tls.keyfile), cert: readFileSync(tls.certfile), requestCert: verifyPeer, rejectUnauthorized: false }
      if (tls.cacertfile !== undefined) options.ca = readFileSync(tls.cacertfile)
      const server = https.createServer(options, app)
      if (verifyPeer) {
        // before the HTTP parser sees the connection: a refused one is closed before any request is read
        server.prependListener('secureConnection', (socket: TLSSocket) => {
          if (!peerAccepted(socket, tls.failIfNoPeerCert === true)) socket.destroy()
        })
      }
      httpsPort = await listen(server, tls.address)
    }
    return { port, httpsPort, connections: () => open, stop }
  } catch (err) {
    await stop()
    if (current === undefined) throw err
    throw new ListenError(current.key, current.address.text, err)
  }
}
