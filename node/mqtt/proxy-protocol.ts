/**
 * The PROXY protocol (HAProxy's, versions 1 and 2: https://www.haproxy.org/download/2.8/doc/proxy-protocol.txt)
 * that a load balancer sends at the start of each connection to say whom it carries: the
 * `proxy_protocol` option of EMQ X 4's listeners. {@link parseProxyHeader} reads a header
 * from the first bytes of a connection; {@link readProxyHeader} waits for it on a socket
 * and leaves the bytes after it (the MQTT CONNECT, a TLS ClientHello, an HTTP upgrade) in
 * the socket for whoever reads it next.
 *
 * Invariants: nothing is read past the header; a connection whose first bytes cannot start
 * a header, whose header is malformed, or that sends none in time is refused (the caller
 * closes it) and never gets to MQTT; at most {@link MAX_HEADER_BYTES} are buffered.
 */
import { isIPv4, isIPv6, type Socket } from 'node:net'

/** An address and port of a proxied connection. */
export interface ProxyAddress {
  address: string
  port: number
}

/**
 * A header read. `source` is the client the load balancer carries, `destination` the
 * address it was connected to; both absent when the header does not say (v1 `UNKNOWN`, v2
 * `LOCAL` as the balancer's own health checks send, v2 `UNSPEC` or `UNIX` addresses): then
 * the connection's own addresses stand.
 */
export interface ProxyHeader {
  version: 1 | 2
  source?: ProxyAddress
  destination?: ProxyAddress
}

/** What {@link parseProxyHeader} found: a header of `length` bytes, too few bytes yet, or a refusal with its reason. */
export type ProxyParse =
  | { state: 'done', header: ProxyHeader, length: number }
  | { state: 'incomplete' }
  | { state: 'invalid', reason: string }

/** v2's 12-byte signature. */
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a])
const V1_PREFIX = Buffer.from('PROXY ', 'latin1')
/** v1's longest line, CRLF included (the spec's 107 bytes). */
const V1_MAX = 107
/** v2's header is 16 bytes and a 16-bit length. */
const V2_FIXED = 16
/** The most a header can take: a v2 header with the longest address and TLV block. */
export const MAX_HEADER_BYTES = V2_FIXED + 0xffff
/** v2 address block sizes by family: INET, INET6, UNIX. */
const V2_ADDRESS_BYTES: Record<number, number> = { 1: 12, 2: 36, 3: 216 }
const PORT = /^(?:0|[1-9]\d{0,4})$/

/** Reads a PROXY header (v1 or v2) from the start of `buf`. */
export function parseProxyHeader (buf: Buffer): ProxyParse {
  if (buf.length === 0) return { state: 'incomplete' }
  if (buf[0] === V1_PREFIX[0]) return parseV1(buf)
  if (buf[0] === V2_SIGNATURE[0]) return parseV2(buf)
  return { state: 'invalid', reason: 'not a PROXY protocol header' }
}

/** Whether `buf` starts as much of `prefix` as it holds. */
function startsAs (buf: Buffer, prefix: Buffer): boolean {
  const n = Math.min(buf.length, prefix.length)
  return buf.subarray(0, n).equals(prefix.subarray(0, n))
}

function parseV1 (buf: Buffer): ProxyParse {
  if (!startsAs(buf, V1_PREFIX)) return { state: 'invalid', reason: 'not a PROXY protocol header' }
  const end = buf.subarray(0, V1_MAX).indexOf('\r\n')
  if (end === -1) {
    return buf.length >= V1_MAX ? { state: 'invalid', reason: `PROXY v1 line longer than ${V1_MAX} bytes` } : { state: 'incomplete' }
  }
  const line = buf.subarray(V1_PREFIX.length, end).toString('latin1')
  const length = end + 2
  const fields = line.split(' ')
  if (fields[0] === 'UNKNOWN') return { state: 'done', header: { version: 1 }, length }
  if (fields.length !== 5) return { state: 'invalid', reason: 'PROXY v1 line: expected TCP4|TCP6 <source> <destination> <source port> <destination port>' }
  const [family, src, dst, sport, dport] = fields
  const isFamily = family === 'TCP4' ? isIPv4 : family === 'TCP6' ? isIPv6 : undefined
  if (isFamily === undefined) return { state: 'invalid', reason: `PROXY v1 line: unknown protocol ${JSON.stringify(family.slice(0, 16))}` }
  if (!isFamily(src) || !isFamily(dst)) return { state: 'invalid', reason: `PROXY v1 line: addresses are not ${family === 'TCP4' ? 'IPv4' : 'IPv6'}` }
  const sourcePort = portOf(sport)
  const destinationPort = portOf(dport)
  if (sourcePort === undefined || destinationPort === undefined) return { state: 'invalid', reason: 'PROXY v1 line: ports are not 0 to 65535' }
  return { state: 'done', header: { version: 1, source: { address: src, port: sourcePort }, destination: { address: dst, port: destinationPort } }, length }
}

function portOf (text: string): number | undefined {
  if (!PORT.test(text)) return undefined
  const n = Number(text)
  return n <= 65535 ? n : undefined
}

function parseV2 (buf: Buffer): ProxyParse {
  if (!startsAs(buf, V2_SIGNATURE)) return { state: 'invalid', reason: 'not a PROXY protocol header' }
  if (buf.length < V2_FIXED) return { state: 'incomplete' }
  const version = buf[12] >> 4
  const command = buf[12] & 0x0f
  if (version !== 2) return { state: 'invalid', reason: `PROXY v2 header: version ${version}` }
  if (command > 1) return { state: 'invalid', reason: `PROXY v2 header: unknown command ${command}` }
  const family = buf[13] >> 4
  const transport = buf[13] & 0x0f
  if (family > 3 || transport > 2) return { state: 'invalid', reason: `PROXY v2 header: unknown address family or protocol 0x${buf[13].toString(16)}` }
  const length = V2_FIXED + buf.readUInt16BE(14)
  if (buf.length < length) return { state: 'incomplete' }
  const body = buf.subarray(V2_FIXED, length)
  const addressBytes = V2_ADDRESS_BYTES[family] ?? 0
  if (body.length < addressBytes) return { state: 'invalid', reason: `PROXY v2 header: ${body.length} bytes cannot hold the addresses (${addressBytes})` }
  const tlvs = checkTlvs(body.subarray(addressBytes))
  if (tlvs !== null) return { state: 'invalid', reason: `PROXY v2 header: ${tlvs}` }
  // LOCAL (the balancer's own connection), UNSPEC and UNIX: the connection's addresses stand
  if (command === 0 || (family !== 1 && family !== 2)) return { state: 'done', header: { version: 2 }, length }
  if (transport !== 1) return { state: 'invalid', reason: 'PROXY v2 header: not a stream (TCP) connection' }
  const ip = family === 1 ? ipv4 : ipv6
  const size = family === 1 ? 4 : 16
  const header: ProxyHeader = {
    version: 2,
    source: { address: ip(body.subarray(0, size)), port: body.readUInt16BE(2 * size) },
    destination: { address: ip(body.subarray(size, 2 * size)), port: body.readUInt16BE(2 * size + 2) }
  }
  return { state: 'done', header, length }
}

/** The TLVs after the addresses must tile their block exactly (type, 16-bit length, value); their contents are not used. */
function checkTlvs (block: Buffer): string | null {
  let at = 0
  while (at < block.length) {
    if (block.length - at < 3) return 'a TLV cut short'
    const end = at + 3 + block.readUInt16BE(at + 1)
    if (end > block.length) return 'a TLV longer than the header'
    at = end
  }
  return null
}

function ipv4 (b: Buffer): string {
  return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`
}

/** An IPv6 address in its shortest form (as Node writes a peer's address). */
function ipv6 (b: Buffer): string {
  const groups: string[] = []
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i).toString(16))
  // the URL parser canonicalises (zeros compressed, lower case)
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1)
}

/**
 * Waits for the PROXY header at the start of `socket` (a plain TCP socket, before TLS or
 * HTTP), for at most `timeoutMs`. Resolves with it, the socket paused and the bytes after
 * the header put back for the next reader; rejects with the reason when the bytes are not a
 * header, the header is malformed, the time runs out, or the socket closes first. The
 * caller destroys the socket on rejection.
 */
export async function readProxyHeader (socket: Socket, timeoutMs: number): Promise<ProxyHeader> {
  return await new Promise<ProxyHeader>((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0)
    const done = (): void => {
      clearTimeout(timer)
      socket.off('data', onData)
      socket.off('close', onClose)
      socket.off('error', onClose)
    }
    const onData = (chunk: Buffer): void => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
      const parsed = parseProxyHeader(buf)
      if (parsed.state === 'incomplete') return
      done()
      if (parsed.state === 'invalid') { reject(new Error(parsed.reason)); return }
      socket.pause()
      if (parsed.length < buf.length) socket.unshift(buf.subarray(parsed.length))
      resolve(parsed.header)
    }
    const onClose = (): void => { done(); reject(new Error('connection closed before its PROXY header')) }
    const timer = setTimeout(() => { done(); reject(new Error(`no PROXY header within ${timeoutMs} ms`)) }, timeoutMs)
    socket.on('data', onData)
    socket.on('close', onClose)
    socket.on('error', onClose)
  })
}
