/** IP addresses and CIDR blocks of `{ipaddr, "..."}` rules, IPv4 and IPv6. */
import { cidrContains, parseCidr, parseIpAddress } from '../../../node/acl/index.js'

describe('parseIpAddress', () => {
  it.each([
    ['127.0.0.1', { family: 4, words: [0x7f000001] }],
    ['::ffff:127.0.0.1', { family: 4, words: [0x7f000001] }],
    ['::ffff:7f00:1', { family: 4, words: [0x7f000001] }],
    ['::1', { family: 6, words: [0, 0, 0, 1] }],
    ['fe80::1%eth0', { family: 6, words: [0xfe800000, 0, 0, 1] }],
    ['2001:db8::8:800:200c:417a', { family: 6, words: [0x20010db8, 0, 0x00080800, 0x200c417a] }],
    ['64:ff9b::192.0.2.33', { family: 6, words: [0x0064ff9b, 0, 0, 0xc0000221] }]
  ])('%s', (text, expected) => {
    expect(parseIpAddress(text)).toEqual(expected)
  })

  it.each(['', 'localhost', '1.2.3', '256.0.0.1', '1::2::3'])('refuses %j', (text) => {
    expect(parseIpAddress(text)).toBeNull()
  })
})

describe('CIDR blocks', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1', true],
    ['127.0.0.1', '127.0.0.2', false],
    ['127.0.0.1', '::ffff:127.0.0.1', true],
    ['192.168.0.0/24', '192.168.0.255', true],
    ['192.168.0.0/24', '192.168.1.0', false],
    ['192.168.0.7/24', '192.168.0.1', true],
    ['0.0.0.0/0', '8.8.8.8', true],
    ['10.0.0.0/8', '10.255.255.255', true],
    ['10.0.0.0/8', '11.0.0.0', false],
    ['::1', '::1', true],
    ['::1', '127.0.0.1', false],
    ['fd00::/8', 'fdff:ffff::1', true],
    ['fd00::/8', 'fe00::1', false],
    ['2001:db8::/32', '2001:db8:ffff:1::1', true],
    ['2001:db8::/33', '2001:db8:8000::1', false],
    ['::/0', '::1', true],
    ['::ffff:10.0.0.0/104', '10.1.2.3', true],
    ['::ffff:10.0.0.0/104', '11.1.2.3', false]
  ])('%s contains %s: %s', (block, ip, expected) => {
    const b = parseCidr(block)
    const a = parseIpAddress(ip)
    expect(b).not.toBeNull()
    expect(a).not.toBeNull()
    expect(cidrContains(b!, a!)).toBe(expected)
  })

  it.each(['10.0.0.0/33', '10.0.0.0/', '10.0.0.0/a', 'fd00::/129', 'host/8', '::ffff:10.0.0.0/64', 'fe80::1%eth0'])('refuses %j', (text) => {
    expect(parseCidr(text)).toBeNull()
  })
})
