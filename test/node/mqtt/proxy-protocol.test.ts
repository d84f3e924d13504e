/**
 * The PROXY protocol parser (node/mqtt/proxy-protocol.ts) against headers built here from
 * HAProxy's specification (proxy-protocol.txt, versions 1 and 2), the malformed ones a
 * listener must refuse, and seeded random bytes it must never throw on.
 */
import { parseProxyHeader, MAX_HEADER_BYTES } from '../../../node/mqtt/proxy-protocol.js'
import { proxyV1, proxyV2, V2_SIGNATURE } from '../../../bench/fuzz/proxy-headers.js'

const CONNECT = Buffer.from([0x10, 0x0c, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x00])

describe('PROXY protocol v1', () => {
  it('reads a TCP4 line and says where the MQTT bytes start', () => {
    const header = proxyV1('TCP4', '203.0.113.7', '192.0.2.1', 40001, 1883)
    const parsed = parseProxyHeader(Buffer.concat([header, CONNECT]))
    expect(parsed).toEqual({
      state: 'done',
      length: header.length,
      header: { version: 1, source: { address: '203.0.113.7', port: 40001 }, destination: { address: '192.0.2.1', port: 1883 } }
    })
  })

  it('reads a TCP6 line', () => {
    const parsed = parseProxyHeader(proxyV1('TCP6', '2001:db8::7', '2001:db8::1', 65535, 0))
    expect(parsed).toMatchObject({ state: 'done', header: { source: { address: '2001:db8::7', port: 65535 }, destination: { port: 0 } } })
  })

  it('reads UNKNOWN as "the connection\'s own addresses"', () => {
    expect(parseProxyHeader(Buffer.from('PROXY UNKNOWN ffff::1 whatever\r\n'))).toEqual({ state: 'done', length: 32, header: { version: 1 } })
  })

  it('waits for the rest of a line cut anywhere', () => {
    const header = proxyV1('TCP4', '10.0.0.1', '10.0.0.2', 1, 2)
    for (let n = 0; n < header.length; n++) expect(parseProxyHeader(header.subarray(0, n)).state).toBe('incomplete')
  })

  it.each([
    ['a plain MQTT CONNECT', CONNECT],
    ['lower-case proxy', Buffer.from('proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n')],
    ['an unknown protocol', Buffer.from('PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n')],
    ['IPv6 addresses under TCP4', Buffer.from('PROXY TCP4 ::1 ::1 1 2\r\n')],
    ['IPv4 addresses under TCP6', Buffer.from('PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n')],
    ['an address that is not one', Buffer.from('PROXY TCP4 1.2.3.400 5.6.7.8 1 2\r\n')],
    ['a port over 65535', Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n')],
    ['a port with a leading zero', Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n')],
    ['a negative port', Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n')],
    ['a field missing', Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n')],
    ['a field too many', Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n')],
    ['two spaces', Buffer.from('PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n')],
    ['no CRLF within 107 bytes', Buffer.from('PROXY UNKNOWN ' + 'x'.repeat(120))]
  ])('refuses %s', (_what, bytes) => {
    expect(parseProxyHeader(bytes).state).toBe('invalid')
  })
})

describe('PROXY protocol v2', () => {
  it('reads a PROXY command for TCP over IPv4', () => {
    const header = proxyV2({ family: 'inet', source: '203.0.113.7', destination: '192.0.2.1', sourcePort: 40001, destinationPort: 8883 })
    expect(parseProxyHeader(Buffer.concat([header, CONNECT]))).toEqual({
      state: 'done',
      length: header.length,
      header: { version: 2, source: { address: '203.0.113.7', port: 40001 }, destination: { address: '192.0.2.1', port: 8883 } }
    })
  })

  it('reads TCP over IPv6, in the shortest form', () => {
    const header = proxyV2({ family: 'inet6', source: '2001:db8:0:0:0:0:0:7', destination: '::1', sourcePort: 1, destinationPort: 2 })
    expect(parseProxyHeader(header)).toMatchObject({ state: 'done', header: { source: { address: '2001:db8::7', port: 1 }, destination: { address: '::1' } } })
  })

  it('skips the TLVs after the addresses', () => {
    const tlvs = Buffer.from([0x01, 0x00, 0x02, 0x68, 0x32, 0x04, 0x00, 0x00]) // ALPN "h2", an empty NOOP
    const header = proxyV2({ family: 'inet', source: '10.1.2.3', destination: '10.0.0.1', sourcePort: 5, destinationPort: 6, tlvs })
    expect(parseProxyHeader(header)).toMatchObject({ state: 'done', length: header.length, header: { source: { address: '10.1.2.3' } } })
  })

  it('reads LOCAL (the balancer\'s own health check) as "the connection\'s own addresses"', () => {
    const header = proxyV2({ command: 0, family: 'inet', source: '10.1.2.3', destination: '10.0.0.1', sourcePort: 5, destinationPort: 6 })
    expect(parseProxyHeader(header)).toEqual({ state: 'done', length: header.length, header: { version: 2 } })
  })

  it('reads UNSPEC and UNIX addresses as "the connection\'s own addresses"', () => {
    expect(parseProxyHeader(proxyV2({ family: 'unspec' }))).toEqual({ state: 'done', length: 16, header: { version: 2 } })
    expect(parseProxyHeader(proxyV2({ family: 'unix' }))).toEqual({ state: 'done', length: 16 + 216, header: { version: 2 } })
  })

  it('waits for the rest of a header cut anywhere', () => {
    const header = proxyV2({ family: 'inet6', source: '::2', destination: '::1', sourcePort: 1, destinationPort: 2 })
    for (let n = 0; n < header.length; n++) expect(parseProxyHeader(header.subarray(0, n)).state).toBe('incomplete')
  })

  const good = (): Buffer => proxyV2({ family: 'inet', source: '10.1.2.3', destination: '10.0.0.1', sourcePort: 5, destinationPort: 6 })
  const changed = (at: number, value: number): Buffer => { const b = good(); b[at] = value; return b }
  it.each([
    ['a signature off by one byte', changed(7, 0x52)],
    ['version 1 in the version nibble', changed(12, 0x11)],
    ['version 3', changed(12, 0x31)],
    ['an unknown command', changed(12, 0x22)],
    ['an unknown family', changed(13, 0x41)],
    ['an unknown protocol', changed(13, 0x13)],
    ['a datagram (UDP) connection', changed(13, 0x12)],
    ['a length too short for the addresses', Buffer.concat([V2_SIGNATURE, Buffer.from([0x21, 0x11, 0x00, 0x08]), Buffer.alloc(8)])],
    ['a TLV cut short', proxyV2({ family: 'inet', source: '1.2.3.4', destination: '5.6.7.8', sourcePort: 1, destinationPort: 2, tlvs: Buffer.from([0x04, 0x00]) })],
    ['a TLV longer than the header', proxyV2({ family: 'inet', source: '1.2.3.4', destination: '5.6.7.8', sourcePort: 1, destinationPort: 2, tlvs: Buffer.from([0x04, 0x00, 0x09, 0x00]) })]
  ])('refuses %s', (_what, bytes) => {
    expect(parseProxyHeader(bytes).state).toBe('invalid')
  })
})

describe('PROXY protocol parser on random input', () => {
  it('never throws, never reads past what it was given, and never waits for more than a header can be', () => {
    // a seeded generator (mulberry32), so a failure can be replayed
    let seed = 0x5eed2024
    const random = (): number => {
      seed = (seed + 0x6d2b79f5) | 0
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296
    }
    const starts = [good(), proxyV1('TCP4', '1.2.3.4', '5.6.7.8', 1, 2), proxyV1('TCP6', '::1', '::2', 3, 4), Buffer.alloc(0)]
    for (let i = 0; i < 20000; i++) {
      const base = Buffer.from(starts[i % starts.length])
      // flip a few bytes, cut or extend
      for (let k = Math.floor(random() * 4); k > 0 && base.length > 0; k--) base[Math.floor(random() * base.length)] = Math.floor(random() * 256)
      const tail = Buffer.from(Array.from({ length: Math.floor(random() * 40) }, () => Math.floor(random() * 256)))
      const input = Buffer.concat([base.subarray(0, Math.floor(random() * (base.length + 1))), random() < 0.5 ? tail : Buffer.alloc(0)])
      const parsed = parseProxyHeader(input)
      if (parsed.state === 'done') expect(parsed.length).toBeLessThanOrEqual(input.length)
      if (parsed.state === 'incomplete') expect(input.length).toBeLessThan(MAX_HEADER_BYTES)
    }
  })

  function good (): Buffer { return proxyV2({ family: 'inet', source: '10.1.2.3', destination: '10.0.0.1', sourcePort: 5, destinationPort: 6 }) }
})
