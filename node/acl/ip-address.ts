/**
 * IP addresses and CIDR blocks for the ACL's `{ipaddr, "..."}` rules: IPv4 and IPv6, an
 * address alone meaning the block of that one address (`/32`, `/128`). A client that
 * connected over an IPv6 socket from an IPv4 address (`::ffff:127.0.0.1`) is matched as the
 * IPv4 address, so `{ipaddr, "127.0.0.1"}` works whatever the listener binds to.
 */
import { isIPv4, isIPv6 } from 'node:net'

/** An address as numbers: IPv4 in `words[0]`, IPv6 as four 32-bit words, most significant first. */
export interface IpAddress {
  readonly family: 4 | 6
  readonly words: readonly number[]
}

/** A CIDR block: the network address (host bits cleared) and the prefix length. */
export interface CidrBlock extends IpAddress {
  readonly prefix: number
  /** The block as written in the ACL file. */
  readonly text: string
}

/** Parses an IPv4 or IPv6 address (zone id ignored); null when it is not one. */
export function parseIpAddress (text: string): IpAddress | null {
  const zone = text.indexOf('%')
  const addr = zone === -1 ? text : text.slice(0, zone)
  if (isIPv4(addr)) return { family: 4, words: [ipv4Word(addr)] }
  if (!isIPv6(addr)) return null
  const groups = ipv6Groups(addr)
  // IPv4-mapped (::ffff:a.b.c.d): the client's real address is the IPv4 one
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff) {
    return { family: 4, words: [((groups[6] << 16) | groups[7]) >>> 0] }
  }
  const words: number[] = []
  for (let i = 0; i < 8; i += 2) words.push(((groups[i] << 16) | groups[i + 1]) >>> 0)
  return { family: 6, words }
}

/**
 * Parses `a.b.c.d/n`, `x::y/n` or a bare address; null when it is none of these. Host bits
 * set in the address are cleared (`192.168.0.7/24` is `192.168.0.0/24`), as EMQ X does.
 */
export function parseCidr (text: string): CidrBlock | null {
  const slash = text.indexOf('/')
  const addrText = slash === -1 ? text : text.slice(0, slash)
  if (addrText.includes('%')) return null
  const addr = parseIpAddress(addrText)
  if (addr === null) return null
  // the family as written: a mapped IPv6 block (::ffff:a.b.c.d) has a 128-bit prefix
  const family = isIPv4(addrText) ? 4 : 6
  const bits = family === 4 ? 32 : 128
  let prefix = bits
  if (slash !== -1) {
    const p = text.slice(slash + 1)
    if (!/^[0-9]{1,3}$/.test(p) || Number(p) > bits) return null
    prefix = Number(p)
  }
  if (family === 6 && addr.family === 4) {
    // ::ffff:a.b.c.d/n: match as the IPv4 block a.b.c.d/(n-96)
    if (prefix < 96) return null
    prefix -= 96
  }
  const words = addr.words.map((w, i) => (w & mask(prefix - 32 * i)) >>> 0)
  return { family: addr.family, words, prefix, text }
}

/** True when `ip` lies in `block`. */
export function cidrContains (block: CidrBlock, ip: IpAddress): boolean {
  if (block.family !== ip.family) return false
  for (let i = 0; i < block.words.length; i++) {
    const m = mask(block.prefix - 32 * i)
    if (m === 0) return true
    if (((ip.words[i] & m) >>> 0) !== block.words[i]) return false
  }
  return true
}

/** The 32-bit mask of the first `bits` bits (clamped to 0..32). */
function mask (bits: number): number {
  if (bits <= 0) return 0
  if (bits >= 32) return 0xffffffff
  return (0xffffffff << (32 - bits)) >>> 0
}

function ipv4Word (text: string): number {
  const p = text.split('.')
  return ((Number(p[0]) << 24) | (Number(p[1]) << 16) | (Number(p[2]) << 8) | Number(p[3])) >>> 0
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail split). */
function ipv6Groups (text: string): number[] {
  let body = text
  const lastColon = text.lastIndexOf(':')
  if (text.includes('.', lastColon)) {
    const v4 = ipv4Word(text.slice(lastColon + 1))
    body = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`
  }
  const double = body.indexOf('::')
  const parse = (s: string): number[] => s === '' ? [] : s.split(':').map(g => parseInt(g, 16))
  if (double === -1) return parse(body)
  const left = parse(body.slice(0, double))
  const right = parse(body.slice(double + 2))
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right]
}
