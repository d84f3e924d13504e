/**
 * PROXY protocol headers as a load balancer sends them (HAProxy's proxy-protocol.txt,
 * versions 1 and 2), built here from the specification and not from the node's parser, for
 * the parser's tests and the listeners' (and the fuzzer's PROXY door).
 */
import { isIPv4 } from 'node:net'

/** v2's 12-byte signature. */
export const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a])

/** A v1 line: `PROXY TCP4|TCP6 <source> <destination> <source port> <destination port>\r\n`. */
export function proxyV1 (family: 'TCP4' | 'TCP6', source: string, destination: string, sourcePort: number, destinationPort: number): Buffer {
  return Buffer.from(`PROXY ${family} ${source} ${destination} ${sourcePort} ${destinationPort}\r\n`, 'latin1')
}

/** What {@link proxyV2} writes; `command` 1 (PROXY, the default) or 0 (LOCAL). */
export interface ProxyV2Init {
  command?: 0 | 1
  family: 'unspec' | 'inet' | 'inet6' | 'unix'
  source?: string
  destination?: string
  sourcePort?: number
  destinationPort?: number
  /** Raw TLV bytes after the addresses. */
  tlvs?: Buffer
}

/** A v2 header for a TCP (stream) connection. */
export function proxyV2 (init: ProxyV2Init): Buffer {
  const family = { unspec: 0, inet: 1, inet6: 2, unix: 3 }[init.family]
  let addresses = Buffer.alloc(0)
  if (init.family === 'inet' || init.family === 'inet6') {
    const ip = init.family === 'inet' ? ipv4Bytes : ipv6Bytes
    const ports = Buffer.alloc(4)
    ports.writeUInt16BE(init.sourcePort ?? 0, 0)
    ports.writeUInt16BE(init.destinationPort ?? 0, 2)
    addresses = Buffer.concat([ip(init.source ?? ''), ip(init.destination ?? ''), ports])
  } else if (init.family === 'unix') {
    addresses = Buffer.alloc(216)
  }
  const body = Buffer.concat([addresses, init.tlvs ?? Buffer.alloc(0)])
  const fixed = Buffer.from([0x20 | (init.command ?? 1), (family << 4) | (init.family === 'unspec' ? 0 : 1), 0, 0])
  fixed.writeUInt16BE(body.length, 2)
  return Buffer.concat([V2_SIGNATURE, fixed, body])
}

function ipv4Bytes (address: string): Buffer {
  if (!isIPv4(address)) throw new Error(`not IPv4: ${address}`)
  return Buffer.from(address.split('.').map(Number))
}

function ipv6Bytes (address: string): Buffer {
  const [head, tail] = address.split('::')
  const groups = (s: string | undefined): string[] => s === undefined || s === '' ? [] : s.split(':')
  const left = groups(head)
  const right = groups(tail)
  const all = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
  const out = Buffer.alloc(16)
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2))
  return out
}
