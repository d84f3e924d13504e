/**
 * How the fuzzer reaches a listener: a transport opens one connection and carries MQTT
 * bytes over it (plain TCP, TLS, WebSocket, WebSocket over TLS), and each transport has its
 * own garbage below MQTT (bytes that are not TLS, truncated handshakes, bad WebSocket
 * frames and handshakes). The WebSocket client is written here, frame by frame, so that it
 * can send what a well-behaved library never would.
 */
import net from 'node:net'
import tls from 'node:tls'
import { Random, connect as connectPacket } from './packets.js'

/** Where a listener is. */
export interface Endpoint {
  host: string
  port: number
  /** WebSocket path (`/mqtt`). */
  path?: string
}

/** One fuzz connection, whatever carries it. */
export interface FuzzSocket {
  /** Sends MQTT bytes (over WebSocket: one binary message, sometimes fragmented, sometimes several per frame). */
  write: (chunk: Buffer) => void
  /** The MQTT bytes received so far, in order. */
  readonly received: Buffer[]
  /** Settles when the connection is closed. */
  readonly closed: Promise<void>
  isClosed: () => boolean
  destroy: () => void
}

/** Opens one connection; null when the listener did not let it through (a refused handshake). */
export type Transport = (ep: Endpoint, r: Random) => Promise<FuzzSocket | null>

/** What a piece of transport-level garbage did. */
export interface GarbageResult {
  name: string
  /** True when the listener must close the connection for it (and did, or `closed` is false). */
  definite: boolean
  closed: boolean
  /** Closed, but only after the driver's first wait (a busy node). */
  slow: boolean
}

/** Sends one piece of garbage below MQTT to `ep` and waits for the outcome. */
export type Garbage = (ep: Endpoint, r: Random, waits: { closeMs: number, leftOpenMs: number }) => Promise<GarbageResult>

/** Resolves after `ms`; the timer does not keep the process alive (races leave it pending). */
export function sleep (ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms).unref())
}

/** A FuzzSocket over a byte stream that is MQTT already (TCP, TLS). */
function streamSocket (socket: net.Socket, ready: 'connect' | 'secureConnect'): Promise<FuzzSocket | null> {
  socket.setNoDelay(true)
  socket.on('error', () => {})
  const received: Buffer[] = []
  socket.on('data', (chunk: Buffer) => { received.push(chunk) })
  let isClosed = false
  const closed = new Promise<void>(resolve => socket.once('close', () => { isClosed = true; resolve() }))
  return new Promise(resolve => {
    socket.once(ready, () => resolve({
      write: (chunk) => { if (!socket.destroyed) socket.write(chunk) },
      received,
      closed,
      isClosed: () => isClosed,
      destroy: () => socket.destroy()
    }))
    socket.once('close', () => resolve(null))
  })
}

/** Plain TCP. */
export const tcpTransport: Transport = async (ep) => await streamSocket(net.connect(ep.port, ep.host), 'connect')

/**
 * Plain TCP whose every connection first sends `preface(r)` (the `proxy` door's PROXY
 * header, bench/fuzz/proxy-headers.ts), then MQTT.
 */
export function prefacedTcpTransport (preface: (r: Random) => Buffer): Transport {
  return async (ep, r) => {
    const socket = net.connect(ep.port, ep.host)
    socket.write(preface(r))
    return await streamSocket(socket, 'connect')
  }
}

/** TLS (the dev certificates are self-signed: not verified). */
export const tlsTransport: Transport = async (ep) =>
  await streamSocket(tls.connect({ host: ep.host, port: ep.port, rejectUnauthorized: false, servername: 'localhost' }), 'secureConnect')

// --- WebSocket (RFC 6455), the client side

const OP_CONTINUATION = 0
const OP_TEXT = 1
const OP_BINARY = 2
const OP_CLOSE = 8
const OP_PING = 9
const OP_PONG = 10

/** A client frame: FIN, RSV bits, opcode, then the payload, masked unless `mask` is false. */
export function wsFrame (opcode: number, payload: Buffer, opts: { fin?: boolean, mask?: boolean, rsv?: number } = {}): Buffer {
  const mask = opts.mask !== false
  const len = payload.length
  const lenBytes = len < 126 ? 0 : len < 65536 ? 2 : 8
  const head = Buffer.alloc(2 + lenBytes + (mask ? 4 : 0))
  head[0] = (opts.fin === false ? 0 : 0x80) | ((opts.rsv ?? 0) << 4) | opcode
  head[1] = (mask ? 0x80 : 0) | (lenBytes === 0 ? len : lenBytes === 2 ? 126 : 127)
  if (lenBytes === 2) head.writeUInt16BE(len, 2)
  if (lenBytes === 8) head.writeBigUInt64BE(BigInt(len), 2)
  if (!mask) return Buffer.concat([head, payload])
  const key = head.subarray(2 + lenBytes)
  for (let i = 0; i < 4; i++) key[i] = (Math.random() * 256) | 0
  const body = Buffer.allocUnsafe(len)
  for (let i = 0; i < len; i++) body[i] = payload[i] ^ key[i & 3]
  return Buffer.concat([head, body])
}

/** The upgrade request; `change` alters it for the handshake garbage. */
function upgradeRequest (ep: Endpoint, opts: { path?: string, protocol?: string | null, version?: string, key?: string | null } = {}): Buffer {
  const lines = [
    `GET ${opts.path ?? ep.path ?? '/mqtt'} HTTP/1.1`,
    `Host: ${ep.host}:${ep.port}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Version: ${opts.version ?? '13'}`
  ]
  if (opts.key !== null) lines.push(`Sec-WebSocket-Key: ${opts.key ?? Buffer.from(Array.from({ length: 16 }, () => (Math.random() * 256) | 0)).toString('base64')}`)
  if (opts.protocol !== null) lines.push(`Sec-WebSocket-Protocol: ${opts.protocol ?? 'mqtt'}`)
  return Buffer.from(lines.join('\r\n') + '\r\n\r\n')
}

/**
 * Does the WebSocket handshake on `raw` and returns a FuzzSocket whose writes become binary
 * messages: mostly one frame per write, sometimes fragmented in two or three frames with a
 * ping between them (control frames may come between fragments). Server frames are
 * unwrapped into `received`; a server ping is answered, a close frame ends the connection.
 */
function wsOver (raw: net.Socket, ready: 'connect' | 'secureConnect', ep: Endpoint, r: Random): Promise<FuzzSocket | null> {
  raw.setNoDelay(true)
  raw.on('error', () => {})
  const received: Buffer[] = []
  let isClosed = false
  const closed = new Promise<void>(resolve => raw.once('close', () => { isClosed = true; resolve() }))
  let pending: Buffer = Buffer.alloc(0)
  let upgraded = false
  return new Promise(resolve => {
    raw.once('close', () => resolve(null))
    raw.once(ready, () => raw.write(upgradeRequest(ep)))
    raw.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      if (!upgraded) {
        const endOfHead = pending.indexOf('\r\n\r\n')
        if (endOfHead < 0) return
        if (!pending.subarray(0, 12).toString().startsWith('HTTP/1.1 101')) { raw.destroy(); return }
        upgraded = true
        pending = pending.subarray(endOfHead + 4)
        resolve({ write, received, closed, isClosed: () => isClosed, destroy: () => raw.destroy() })
      }
      pending = readServerFrames(pending, received, raw)
    })
  })
  function write (chunk: Buffer): void {
    if (raw.destroyed) return
    if (chunk.length < 2 || r.chance(0.8)) { raw.write(wsFrame(OP_BINARY, chunk)); return }
    const cut = 1 + r.int(chunk.length - 1)
    raw.write(wsFrame(OP_BINARY, chunk.subarray(0, cut), { fin: false }))
    if (r.chance(0.3)) raw.write(wsFrame(OP_PING, Buffer.from('fz')))
    raw.write(wsFrame(OP_CONTINUATION, chunk.subarray(cut)))
  }
}

/** Unwraps the complete server frames at the head of `buf` (server frames are not masked); returns the rest. */
function readServerFrames (buf: Buffer, received: Buffer[], raw: net.Socket): Buffer {
  let pos = 0
  while (buf.length - pos >= 2) {
    const opcode = buf[pos] & 15
    let len = buf[pos + 1] & 127
    let p = pos + 2
    // (a 16-bit length of exactly 127 is a length, not the 64-bit marker)
    if (len === 126) { if (buf.length - p < 2) break; len = buf.readUInt16BE(p); p += 2 } else if (len === 127) { if (buf.length - p < 8) break; len = Number(buf.readBigUInt64BE(p)); p += 8 }
    if (buf.length - p < len) break
    const payload = buf.subarray(p, p + len)
    if (opcode === OP_BINARY || opcode === OP_TEXT || opcode === OP_CONTINUATION) received.push(Buffer.from(payload))
    else if (opcode === OP_PING && !raw.destroyed) raw.write(wsFrame(OP_PONG, payload))
    else if (opcode === OP_CLOSE) raw.end()
    pos = p + len
  }
  return pos === 0 ? buf : Buffer.from(buf.subarray(pos))
}

/** MQTT over WebSocket (`ws://host:port/mqtt`, sub-protocol `mqtt`). */
export const wsTransport: Transport = async (ep, r) => await wsOver(net.connect(ep.port, ep.host), 'connect', ep, r)

/** MQTT over WebSocket over TLS. */
export const wssTransport: Transport = async (ep, r) =>
  await wsOver(tls.connect({ host: ep.host, port: ep.port, rejectUnauthorized: false, servername: 'localhost' }), 'secureConnect', ep, r)

// --- garbage below MQTT

/** Opens a raw (TCP or TLS) connection, runs `send` once it is up, and waits for the close. */
async function rawGarbage (open: () => net.Socket, ready: 'connect' | 'secureConnect', name: string, definite: boolean,
  send: (socket: net.Socket) => void, waits: { closeMs: number, leftOpenMs: number }, r: Random): Promise<GarbageResult> {
  const socket = open()
  socket.on('error', () => {})
  socket.on('data', () => {})
  let isClosed = false
  const closed = new Promise<void>(resolve => socket.once('close', () => { isClosed = true; resolve() }))
  const up = await Promise.race([new Promise<boolean>(resolve => socket.once(ready, () => resolve(true))), closed.then(() => false)])
  if (!up) return { name, definite, closed: true, slow: false }
  send(socket)
  let slow = false
  if (definite) {
    const inTime = await Promise.race([closed.then(() => true), sleep(waits.closeMs).then(() => false)])
    if (!inTime) slow = await Promise.race([closed.then(() => true), sleep(waits.leftOpenMs).then(() => false)])
  } else {
    await Promise.race([closed, sleep(r.int(50))])
  }
  const result = { name, definite, closed: isClosed, slow }
  socket.destroy()
  await closed
  return result
}

/** A real TLS ClientHello, captured once from Node's own client (for truncated and mutated handshakes). */
let clientHello: Promise<Buffer> | null = null
export function captureClientHello (): Promise<Buffer> {
  clientHello ??= new Promise((resolve, reject) => {
    const server = net.createServer(socket => {
      socket.once('data', (chunk: Buffer) => { resolve(Buffer.from(chunk)); socket.destroy(); server.close() })
    })
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      const client = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, servername: 'localhost' })
      client.on('error', () => {})
    })
    server.on('error', reject)
  })
  return clientHello
}

/**
 * True when OpenSSL reads `bytes` as the header of a record whose body has not all come, and
 * rightly waits for the rest (the listener's handshake timeout ends the connection): its
 * first record is judged on its version's major byte (3) and its length (at most 2^14 + 2048,
 * "record overflow" above) before its body is read; the content type only once the body is
 * in. A random second byte is 3 once in 256 times: 1 or 2 connections of a long tls run.
 */
function awaitsRecordBody (bytes: Buffer): boolean {
  const length = bytes.readUInt16BE(3)
  return bytes[1] === 3 && length <= 16384 + 2048 && 5 + length > bytes.length
}

/** Bytes that are not a TLS record (a first byte outside 20..24), an MQTT CONNECT in clear, or a broken handshake. */
export const tlsGarbage: Garbage = async (ep, r, waits) => {
  const hello = await captureClientHello()
  const open = (): net.Socket => net.connect(ep.port, ep.host)
  switch (r.int(5)) {
    case 0: return await rawGarbage(open, 'connect', 'tls-plain-mqtt', true, s => s.write(connectPacket(r, r.chance(0.5) ? 5 : 4, `fz-tls-${r.int(1e9)}`)), waits, r)
    case 1: {
      const bytes = r.bytes(5 + r.int(64))
      // content types TLS does not have, and 'G' (an HTTP request); not 0x80 and above, which
      // OpenSSL may read as an SSLv2 header announcing up to 32 KB, and rightly waits for
      bytes[0] = r.pick([0x00, 0x13, 0x19, 0x47])
      return await rawGarbage(open, 'connect', awaitsRecordBody(bytes) ? 'tls-not-a-record-cut-short' : 'tls-not-a-record', !awaitsRecordBody(bytes), s => s.write(bytes), waits, r)
    }
    case 2: return await rawGarbage(open, 'connect', 'tls-truncated-hello', false, s => s.write(hello.subarray(0, 1 + r.int(hello.length - 1))), waits, r)
    case 3: return await rawGarbage(open, 'connect', 'tls-mutated-hello', false, s => {
      const bytes = Buffer.from(hello)
      for (let n = 1 + r.int(4); n > 0; n--) bytes[r.int(bytes.length)] ^= 1 << r.int(8)
      s.write(bytes)
    }, waits, r)
    default: return await rawGarbage(open, 'connect', 'tls-hello-then-garbage', false, s => s.write(Buffer.concat([hello, r.bytes(1 + r.int(200))])), waits, r)
  }
}

/**
 * WebSocket garbage after a good handshake (frames the server must close the connection
 * for: RFC 6455 5.1-5.5, and text frames [MQTT-6.0.0-1]) or a bad handshake (refused with
 * an HTTP error, or let through without the `mqtt` sub-protocol: not definite).
 */
function wsGarbageOver (openRaw: (ep: Endpoint) => net.Socket, ready: 'connect' | 'secureConnect', prefix: string): Garbage {
  return async (ep, r, waits) => {
    const hello = upgradeRequest(ep)
    const afterHandshake = (name: string, frames: () => Buffer): Promise<GarbageResult> =>
      rawGarbage(() => openRaw(ep), ready, `${prefix}-${name}`, true, s => { s.write(Buffer.concat([hello, frames()])) }, waits, r)
    const mqtt = (): Buffer => connectPacket(r, r.chance(0.5) ? 5 : 4, `fz-ws-${r.int(1e9)}`)
    switch (r.int(12)) {
      case 0: return await afterHandshake('text-frame', () => wsFrame(OP_TEXT, mqtt()))
      case 1: return await afterHandshake('unmasked-frame', () => wsFrame(OP_BINARY, mqtt(), { mask: false }))
      case 2: return await afterHandshake('rsv-bits', () => wsFrame(OP_BINARY, mqtt(), { rsv: 1 + r.int(7) }))
      case 3: return await afterHandshake('reserved-opcode', () => wsFrame(r.pick([3, 4, 5, 6, 7, 11, 12, 13, 14, 15]), mqtt()))
      case 4: return await afterHandshake('continuation-first', () => wsFrame(OP_CONTINUATION, mqtt()))
      case 5: return await afterHandshake('fragmented-control', () => wsFrame(OP_PING, Buffer.from('x'), { fin: false }))
      case 6: return await afterHandshake('long-control', () => wsFrame(OP_PING, r.bytes(126 + r.int(100))))
      case 7: return await afterHandshake('bad-close-code', () => wsFrame(OP_CLOSE, Buffer.from(r.pick([[0x00, 0x00], [0x03, 0xe7], [0x03, 0xec], [0x03, 0xed], [0x0b, 0x00], [0x13, 0x88]]))))
      case 8: return await afterHandshake('new-message-mid-fragment', () => {
        const m = mqtt()
        return Buffer.concat([wsFrame(OP_BINARY, m.subarray(0, 3), { fin: false }), wsFrame(OP_BINARY, m.subarray(3))])
      })
      case 9: {
        const bad = r.pick([
          ['wrong-path', () => upgradeRequest(ep, { path: '/nope' })],
          ['bad-version', () => upgradeRequest(ep, { version: r.pick(['7', '14', 'x']) })], // not 8: ws accepts hybi-08
          ['no-key', () => upgradeRequest(ep, { key: null })],
          ['http-garbage', () => Buffer.concat([r.bytes(1 + r.int(40)), Buffer.from('\r\n\r\n')])]
        ] as Array<[string, () => Buffer]>)
        return await rawGarbage(() => openRaw(ep), ready, `${prefix}-handshake-${bad[0]}`, true, s => s.write(bad[1]()), waits, r)
      }
      case 10: return await rawGarbage(() => openRaw(ep), ready, `${prefix}-subprotocol`, false,
        s => s.write(Buffer.concat([upgradeRequest(ep, { protocol: r.pick([null, 'chat', 'mqttv5', '']) }), wsFrame(OP_BINARY, mqtt())])), waits, r)
      default: return await rawGarbage(() => openRaw(ep), ready, `${prefix}-random-frames`, false,
        s => s.write(Buffer.concat([hello, r.bytes(2 + r.int(60))])), waits, r)
    }
  }
}

/** Bad WebSocket frames and handshakes on the ws listener. */
export const wsGarbage: Garbage = wsGarbageOver(ep => net.connect(ep.port, ep.host), 'connect', 'ws')

/** The same on the wss listener, and the TLS garbage (half each). */
const wssFrames = wsGarbageOver(ep => tls.connect({ host: ep.host, port: ep.port, rejectUnauthorized: false, servername: 'localhost' }), 'secureConnect', 'wss')
export const wssGarbage: Garbage = async (ep, r, waits) => r.chance(0.5) ? await wssFrames(ep, r, waits) : await tlsGarbage(ep, r, waits)
