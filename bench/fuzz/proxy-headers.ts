/**
 * PROXY protocol headers as a load balancer sends them (HAProxy's proxy-protocol.txt,
 * versions 1 and 2), built here from the specification and not from the node's parser: for
 * the fuzzer's `proxy` door (random valid headers before every connection, and broken ones)
 * and for the parser's and the listeners' tests.
 */
import net, { isIPv4 } from 'node:net'
import { connect as connectPacket, type Random } from './packets.js'
import type { Garbage } from './transports.js'

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

/** A random valid header: v1 or v2, IPv4 or IPv6, now and then v2 LOCAL or with TLVs. */
export function randomProxyHeader (r: Random): Buffer {
  const v4 = (): string => [r.int(256), r.int(256), r.int(256), r.int(256)].join('.')
  const v6 = (): string => Array.from({ length: 8 }, () => r.int(0x10000).toString(16)).join(':')
  const ipv6 = r.chance(0.3)
  const address = ipv6 ? v6 : v4
  const ports = [r.int(65536), r.int(65536)] as const
  if (r.chance(0.4)) return proxyV1(ipv6 ? 'TCP6' : 'TCP4', address(), address(), ...ports)
  const tlvs = r.chance(0.3) ? Buffer.concat([Buffer.from([r.int(256), 0, 4]), r.bytes(4)]) : undefined
  return proxyV2({ command: r.chance(0.1) ? 0 : 1, family: ipv6 ? 'inet6' : 'inet', source: address(), destination: address(), sourcePort: ports[0], destinationPort: ports[1], tlvs })
}

/**
 * Connections a listener with `proxy_protocol = on` must close (`definite`: MQTT without a
 * header, a v1 line over 107 bytes, a v2 header of version 3) or may close or serve (a valid
 * header with a few bytes flipped, cut short, then a CONNECT): either way the node must not
 * fall over.
 */
export const proxyGarbage: Garbage = async (ep, r, waits) => {
  const socket = net.connect(ep.port, ep.host)
  socket.on('error', () => {})
  socket.on('data', () => {})
  let isClosed = false
  const closed = new Promise<void>(resolve => socket.once('close', () => { isClosed = true; resolve() }))
  const up = await Promise.race([new Promise<boolean>(resolve => socket.once('connect', () => resolve(true))), closed.then(() => false)])
  const [name, definite, bytes] = garbageOf(r)
  if (!up) return { name, definite, closed: true, slow: false }
  socket.write(bytes)
  const closedIn = async (ms: number): Promise<boolean> => await Promise.race([closed.then(() => true), new Promise<boolean>(resolve => setTimeout(() => resolve(false), ms).unref())])
  let slow = false
  if (definite && !await closedIn(waits.closeMs)) slow = await closedIn(waits.leftOpenMs)
  socket.destroy()
  return { name, definite, closed: isClosed || slow, slow }
}

function garbageOf (r: Random): [name: string, definite: boolean, bytes: Buffer] {
  const connect = connectPacket(r, r.chance(0.5) ? 5 : 4, `fz-proxy-${r.int(1e9)}`)
  switch (r.int(5)) {
    case 0: return ['proxy-missing', true, connect]
    case 1: return ['proxy-v1-too-long', true, Buffer.from(`PROXY UNKNOWN ${'x'.repeat(100 + r.int(200))}\r\n`)]
    case 2: {
      const header = proxyV2({ family: 'inet', source: '10.0.0.1', destination: '10.0.0.2', sourcePort: 1, destinationPort: 2 })
      header[12] = 0x31
      return ['proxy-v2-version-3', true, Buffer.concat([header, connect])]
    }
    case 3: {
      const header = randomProxyHeader(r)
      return ['proxy-cut-short', false, header.subarray(0, 1 + r.int(header.length - 1))]
    }
    default: {
      const header = Buffer.from(randomProxyHeader(r))
      for (let n = 1 + r.int(3); n > 0; n--) header[r.int(header.length)] ^= 1 << r.int(8)
      return ['proxy-flipped', false, Buffer.concat([header, connect])]
    }
  }
}
