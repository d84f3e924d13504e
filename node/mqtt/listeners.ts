import net from 'node:net'
import tls from 'node:tls'
import http from 'node:http'
import https from 'node:https'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Duplex } from 'node:stream'
import { WebSocketServer, createWebSocketStream } from 'ws'
import type { Logger } from '../logger.js'
import type { Broker } from './broker.js'
import { readProxyHeader, type ProxyAddress } from './proxy-protocol.js'

/** WebSocket sub-protocols an MQTT client may ask for (spec: default ports table). */
const MQTT_WS_PROTOCOLS = ['mqtt', 'mqttv3.1', 'mqttv3.1.1']

/** TLS settings of an `ssl` or `wss` listener (`listener.ssl.external.*`). */
export interface ListenerTls {
  keyfile: string
  certfile: string
  cacertfile: string
  /** `verify_peer` asks clients for a certificate. */
  verify: 'verify_none' | 'verify_peer'
  /** With `verify_peer`: refuse clients that send none. */
  failIfNoPeerCert: boolean
  /** `handshake_timeout` in ms (`mqtt:ssl` only): a handshake not done by then is abandoned; absent: Node's 120 s. */
  handshakeTimeoutMs?: number
  /**
   * `peer_cert_as_username`: the MQTT username becomes the client certificate's CN, DN,
   * DER bytes (`crt`), PEM text (`pem`) or DER MD5 (`md5`); absent or `off`: the CONNECT's.
   */
  peerCertAsUsername?: PeerCertAsUsername
}

/** What `peer_cert_as_username` takes the username from (EMQ X's values). */
export type PeerCertAsUsername = 'off' | 'cn' | 'dn' | 'crt' | 'pem' | 'md5'

/**
 * TLS-PSK on a listener (`svc_psk_file` sets it): the key of an identity, or undefined to
 * refuse it (the handshake fails), and the TLS 1.2 PSK cipher suites offered beside the
 * listener's certificate ones. TLS 1.3 uses its own suites (SHA-256 ones) for PSK.
 */
export interface ListenerPsk {
  lookup: (identity: string) => Buffer | undefined
  /** OpenSSL names (`PSK-AES128-CBC-SHA`); names this OpenSSL lacks are left out. */
  ciphers: readonly string[]
}

/** `names` without the cipher suites Node's OpenSSL does not offer (3DES and RC4 in OpenSSL 3). */
export function supportedPskCiphers (names: readonly string[]): string[] {
  const known = new Set(tls.getCiphers())
  return names.map(n => n.trim()).filter(n => n !== '' && known.has(n.toLowerCase()))
}

/** What one MQTT listener is configured with. */
export interface ListenerSpec {
  /** Its configuration key (`listener.tcp.external`, `listener.tcp.internal`), for errors; absent: `listener.<kind>.external`. */
  key?: string
  /** Spec protocol name: `mqtt:tcp`, `mqtt:ssl`, `mqtt:ws`, `mqtt:wss`. */
  protocol: 'mqtt:tcp' | 'mqtt:ssl' | 'mqtt:ws' | 'mqtt:wss'
  host: string
  port: number
  maxConns: number
  acceptors: number
  tls?: ListenerTls
  /** WebSocket path, e.g. `/mqtt`. */
  path?: string
  /**
   * `proxy_protocol = on`: every connection starts with a PROXY protocol header (v1 or v2,
   * node/mqtt/proxy-protocol.ts), read within `timeoutMs` (`proxy_protocol_timeout`) before
   * TLS, HTTP or MQTT; the client's address is the header's. Absent: off.
   */
  proxyProtocol?: { timeoutMs: number }
  /** `listener.<kind>.external.zone`: the zone its clients are held to (`external` when absent). */
  zone?: string
  /** `listener.<kind>.external.mountpoint`: its clients' topic prefix over their zone's; empty or absent: the zone's. */
  mountpoint?: string
}

/** A listener as the listeners API and `starling-ctl listeners` report it (spec: Listener). */
export interface ListenerInfo {
  protocol: string
  listen_on: string
  acceptors: number
  max_conns: number
  current_conns: number
  /** Empty array when nothing was shut down, otherwise counters by reason. */
  shutdown_count: Record<string, number> | []
}

/**
 * One MQTT listener: accepts sockets, enforces `max_conns`, hands each connection to the
 * broker and counts why connections ended.
 */
export class MqttListener {
  private server: net.Server | http.Server | null = null
  /** With `proxyProtocol`: the server that listens, reads each header, then hands the socket to {@link server}. */
  private front: net.Server | null = null
  /**
   * With `proxyProtocol`: the client's address by the load balancer's connection
   * (`<address>|<port>` of the accepted socket, which a TLS socket over it reports too),
   * from the header until that connection closes.
   */
  private readonly proxied = new Map<string, ProxyAddress>()
  private wss: WebSocketServer | null = null
  private current = 0
  private readonly shutdowns = new Map<string, number>()
  private boundPort = 0
  private psk: ListenerPsk | undefined
  /** Sockets whose handshake used a PSK: authenticated by it, they need no certificate. */
  private readonly pskSockets = new WeakSet<tls.TLSSocket>()

  constructor (readonly spec: ListenerSpec, private readonly broker: Broker, private readonly logger: Logger) {}

  /** The port actually bound (differs from the configured one when that was 0). */
  get port (): number { return this.boundPort }

  /** Starts listening; resolves once bound, rejects with the reason when it cannot bind. */
  async start (): Promise<void> {
    const { spec } = this
    if (spec.protocol === 'mqtt:tcp') {
      this.server = net.createServer(socket => this.accept(socket, socket))
    } else if (spec.protocol === 'mqtt:ssl') {
      const server = tls.createServer({
        ...this.secureOptions(),
        // always installed, answering from the PSK a plugin set (setPsk): the TLS server's
        // callback is fixed at creation, while the plugin comes and goes at run time
        pskCallback: (socket, identity) => {
          const key = this.psk?.lookup(identity)
          if (key === undefined) return null
          // candidates only: see usedPsk
          this.pskSockets.add(socket)
          return key
        }
      })
      server.on('secureConnection', socket => { if (this.checkPeer(socket)) this.accept(socket, socket) })
      // a tls.Server only reports a handshake that timed out (ERR_TLS_HANDSHAKE_TIMEOUT) and
      // keeps its socket: closed here, or bytes that look like the start of a record (OpenSSL
      // waits for the rest) hold a connection for as long as the peer likes. The other
      // handshake errors have closed it already.
      server.on('tlsClientError', (err, socket) => {
        this.logger.debug({ err: err.message }, 'TLS handshake failed')
        socket.destroy()
      })
      this.server = server
    } else {
      const web = spec.protocol === 'mqtt:wss' ? https.createServer(tlsOptions(spec.tls!)) : http.createServer()
      web.on('request', (_req, res) => { res.writeHead(426, { 'content-type': 'text/plain' }); res.end(`MQTT over WebSocket is at ${spec.path}\n`) })
      this.wss = new WebSocketServer({
        server: web,
        path: spec.path,
        maxPayload: 256 * 1024 * 1024,
        handleProtocols: (protocols) => MQTT_WS_PROTOCOLS.find(p => protocols.has(p)) ?? false
      })
      // ws re-emits its server's errors (a failed bind included) on itself: the bind failure
      // is answered by start()'s rejection, later ones are logged below
      this.wss.on('error', () => {})
      this.wss.on('connection', (ws, req) => {
        const tlsSocket = req.socket as tls.TLSSocket
        if (spec.protocol === 'mqtt:wss' && !this.checkPeer(tlsSocket)) { ws.terminate(); return }
        const stream = createWebSocketStream(ws)
        stream.on('error', () => stream.destroy())
        // [MQTT-6.0.0-1] MQTT travels in binary frames only: any other data frame closes the
        // connection. Runs before the stream's own listener, and a destroyed stream takes
        // no more data, so nothing of the text frame reaches the broker.
        ws.prependListener('message', (_data, isBinary) => {
          if (isBinary) return
          ws.close(1003, 'MQTT needs binary frames')
          stream.destroy()
        })
        this.accept(stream, req.socket)
      })
      this.server = web
    }
    const inner = this.server
    if (spec.proxyProtocol !== undefined) {
      const { timeoutMs } = spec.proxyProtocol
      this.front = net.createServer(socket => { this.readProxy(socket, inner, timeoutMs) })
    }
    const listening = this.front ?? this.server
    listening.maxConnections = spec.maxConns
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject)
      listening.listen(spec.port, spec.host, () => {
        listening.off('error', reject)
        this.boundPort = (listening.address() as net.AddressInfo).port
        resolve()
      })
    })
    listening.on('error', err => this.logger.error({ err, protocol: spec.protocol }, 'listener error'))
    this.logger.info({ protocol: spec.protocol, listener: spec.key, host: spec.host, port: this.boundPort, proxy_protocol: spec.proxyProtocol !== undefined }, 'listener started')
  }

  /**
   * Reads the PROXY header of a connection to the front server, then hands the socket, the
   * bytes after the header still in it, to the listener's own server as if that had
   * accepted it. A connection without a valid header in time is closed: it never reaches
   * TLS, HTTP or MQTT.
   */
  private readProxy (socket: net.Socket, inner: net.Server, timeoutMs: number): void {
    const key = `${socket.remoteAddress ?? ''}|${socket.remotePort ?? 0}`
    readProxyHeader(socket, timeoutMs).then((header) => {
      if (socket.destroyed) return
      if (header.source !== undefined) {
        this.proxied.set(key, header.source)
        socket.once('close', () => this.proxied.delete(key))
        this.logger.debug({ protocol: this.spec.protocol, balancer: `${socket.remoteAddress ?? ''}:${socket.remotePort ?? 0}`, client: `${header.source.address}:${header.source.port}` }, 'PROXY header read')
      }
      inner.emit('connection', socket)
      // a TLS server's socket takes over the connection and replays what is buffered in it
      // (Node's TLSSocket); the others read the socket as a stream, which readProxyHeader paused
      if (!(inner instanceof tls.Server)) socket.resume()
    }, (err: Error) => {
      this.logger.debug({ protocol: this.spec.protocol, peer: `${socket.remoteAddress ?? ''}:${socket.remotePort ?? 0}`, reason: err.message }, 'refused a connection without a valid PROXY header')
      this.shutdowns.set('proxy_protocol', (this.shutdowns.get('proxy_protocol') ?? 0) + 1)
      socket.destroy()
    })
  }

  /**
   * Turns TLS-PSK on (`psk`) or off (undefined) for new handshakes of an `mqtt:ssl`
   * listener: the PSK suites join or leave the listener's cipher list. Connections already
   * established are not touched.
   */
  setPsk (psk: ListenerPsk | undefined): void {
    if (this.spec.protocol !== 'mqtt:ssl') throw new Error(`TLS-PSK is for the mqtt:ssl listener, not ${this.spec.protocol}`)
    const ciphers = psk === undefined ? [] : supportedPskCiphers(psk.ciphers)
    this.psk = psk === undefined ? undefined : { lookup: psk.lookup, ciphers }
    const server = this.server as tls.Server | null
    if (server === null) return
    server.setSecureContext(this.secureOptions())
  }

  /**
   * The TLS options of the ssl/wss listener; while a PSK is set, with the PSK suites and
   * TLS_AES_128_GCM_SHA256 first, in the server's order: OpenSSL's PSK callback gives a
   * SHA-256 key, which a TLS 1.3 SHA-384 suite (the first a client like mosquitto offers)
   * cannot use, so the handshake would go on with the certificate instead.
   */
  private secureOptions (): tls.TlsOptions {
    if (this.psk === undefined) return tlsOptions(this.spec.tls!)
    const tls12 = this.psk.ciphers.length > 0 ? `:-PSK:${this.psk.ciphers.join(':')}` : ''
    return {
      ...tlsOptions(this.spec.tls!),
      // Node's default list ends with !PSK, which no later name could undo
      ciphers: `TLS_AES_128_GCM_SHA256:${tls.DEFAULT_CIPHERS.replace(':!PSK', '')}${tls12}`,
      honorCipherOrder: true
    }
  }

  /**
   * Whether the handshake on `socket` was authenticated by a PSK of the plugin: its callback
   * gave a key (a wrong one fails the handshake) and the key was used: a PSK suite (TLS 1.2),
   * or a PSK-resumed TLS 1.3 session (an identity OpenSSL could not use goes on as a
   * certificate handshake, which is not resumed).
   */
  private usedPsk (socket: tls.TLSSocket): boolean {
    if (!this.pskSockets.has(socket)) return false
    return socket.getProtocol() === 'TLSv1.3' ? socket.isSessionReused() : socket.getCipher().name.includes('PSK')
  }

  /**
   * Stops accepting connections. Open ones are not waited for: the broker closes them
   * (a Node server's close callback only runs once every connection has ended).
   */
  async stop (): Promise<void> {
    if (this.server === null) return
    const server = this.server
    this.server = null
    this.wss?.close()
    this.front?.close()
    this.front = null
    server.close()
  }

  /** The listener's counters (spec: Listener). */
  info (): ListenerInfo {
    const { spec } = this
    return {
      protocol: spec.protocol,
      listen_on: `${spec.host}:${this.boundPort || spec.port}`,
      acceptors: spec.acceptors,
      max_conns: spec.maxConns,
      current_conns: this.current,
      shutdown_count: this.shutdowns.size === 0 ? [] : Object.fromEntries(this.shutdowns)
    }
  }

  private accept (stream: Duplex, socket: net.Socket): void {
    if (this.current >= this.spec.maxConns) {
      stream.destroy()
      return
    }
    this.current++
    socket.setNoDelay(true)
    // behind a load balancer speaking PROXY: the client it carries
    const client = this.proxied.size === 0 ? undefined : this.proxied.get(`${socket.remoteAddress ?? ''}|${socket.remotePort ?? 0}`)
    this.broker.handle(stream, {
      protocol: this.spec.protocol,
      address: client?.address ?? socket.remoteAddress ?? '',
      port: client?.port ?? socket.remotePort ?? 0,
      localAddress: socket.localAddress ?? '',
      localPort: socket.localPort ?? 0,
      tlsSocket: socket instanceof tls.TLSSocket ? socket : undefined,
      transport: socket,
      peerCertAsUsername: this.spec.tls?.peerCertAsUsername,
      zone: this.spec.zone,
      mountpoint: this.spec.mountpoint,
      onClose: this.connectionClosed
    })
    forgetAddressCache(socket)
  }

  /** Every connection's `onClose`: one function, not a closure per connection. */
  private readonly connectionClosed = (reason: string): void => {
    this.current--
    this.shutdowns.set(reason, (this.shutdowns.get(reason) ?? 0) + 1)
  }

  /**
   * With `verify_peer`, Node is told not to reject so that the two EMQ X cases can be told
   * apart: a certificate that does not verify is always refused; a missing one only with
   * `fail_if_no_peer_cert`. A TLS-PSK client is authenticated by its key and needs none.
   */
  private checkPeer (socket: tls.TLSSocket): boolean {
    const t = this.spec.tls!
    if (t.verify !== 'verify_peer' || this.usedPsk(socket)) return true
    const cert = socket.getPeerCertificate()
    const hasCert = cert !== null && Object.keys(cert).length > 0
    if (!hasCert && !t.failIfNoPeerCert) return true
    if (hasCert && socket.authorized) return true
    this.logger.debug({ error: socket.authorizationError }, 'refused a TLS client certificate')
    socket.destroy()
    return false
  }
}

/**
 * The MQTT username `peer_cert_as_username` gives a client on `socket`, as EMQ X 4.4's
 * channel did: `cn` the subject's CN, `dn` its DN (the `%d` form), `crt` the DER bytes (as a
 * latin1 string), `pem` the DER in base64, `md5` the DER's MD5 in hex. Undefined (the
 * CONNECT's username stays) when the mode is off or absent, or the client sent no
 * certificate (or one without that name).
 */
export function peerCertUsername (mode: PeerCertAsUsername | undefined, socket: tls.TLSSocket | undefined,
  names: { certCn?: string, certDn?: string }): string | undefined {
  if (mode === undefined || mode === 'off' || socket === undefined) return undefined
  if (mode === 'cn') return names.certCn
  if (mode === 'dn') return names.certDn
  const der = socket.getPeerCertificate?.()?.raw
  if (der === undefined || der.length === 0) return undefined
  if (mode === 'crt') return der.toString('latin1')
  if (mode === 'pem') return der.toString('base64')
  return createHash('md5').update(der).digest('hex')
}

function tlsOptions (t: ListenerTls): tls.TlsOptions {
  return {
    key: readFileSync(t.keyfile),
    cert: readFileSync(t.certfile),
    ca: t.verify === 'verify_peer' ? readFileSync(t.cacertfile) : undefined,
    requestCert: t.verify === 'verify_peer',
    rejectUnauthorized: false,
    handshakeTimeout: t.handshakeTimeoutMs
  }
}

/**
 * Lets go of the peer and local address objects Node caches on `socket` once they were read
 * (the origin above keeps the addresses): two objects per connection for its lifetime, which
 * an idle connection holds for nothing (issue 22). Read again while the socket is open, Node
 * asks the kernel anew; after it closed, `remoteAddress` and `localAddress` are undefined.
 */
function forgetAddressCache (socket: net.Socket): void {
  const cached = socket as unknown as { _peername?: unknown, _sockname?: unknown }
  if (cached._peername !== undefined) cached._peername = undefined
  if (cached._sockname !== undefined) cached._sockname = undefined
}
