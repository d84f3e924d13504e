/**
 * node/mqtt/fast-parse.ts against mqtt-packet's own parser: the same packets, in the same
 * order, with the same fields in the same order, for streams of every kind of frame (MQTT
 * 3.1.1 and 5, QoS 0/1/2, retain and dup, v5 PUBLISHes with and without properties, the
 * packets it leaves to mqtt-packet, a frame larger than what it keeps of a cut read) cut into
 * reads at every offset near a frame's start (every 17th elsewhere), in random pieces (seeded), and with a parse called again from inside
 * a 'packet' listener.
 */
import mqttPacket from 'mqtt-packet'
import { useFastParse } from '../../../node/mqtt/fast-parse.js'

type Packet = Record<string, unknown>

/** A parser as aedes makes it, after the CONNECT of `version` (3.1.1 when 4). */
function parserFor (version: 4 | 5, fast: boolean): { parser: any, got: Packet[] } {
  const parser: any = mqttPacket.parser({ protocolVersion: version })
  if (fast) {
    useFastParse(parser)
    expect(parser.parse).not.toBe(Object.getPrototypeOf(parser).parse)
  }
  const got: Packet[] = []
  parser.on('packet', (p: Packet) => got.push(p))
  parser.on('error', (err: Error) => { throw err })
  return { parser, got }
}

/** Each packet as a list of [key, value] in insertion order, Buffers as hex: field order counts. */
function shape (packets: Packet[]): unknown[] {
  return packets.map(p => Object.entries(p).map(([k, v]) => [k, Buffer.isBuffer(v) ? `hex:${v.toString('hex')}` : v]))
}

function frames (version: 4 | 5): Buffer[] {
  const opts = { protocolVersion: version }
  const gen = (p: any): Buffer => mqttPacket.generate(p, opts)
  const list: Buffer[] = [
    gen({ cmd: 'publish', topic: 'a/b', payload: Buffer.from('hello'), qos: 0, retain: false, dup: false }),
    // the same topic again (its string is reused), then one of the same length that differs
    gen({ cmd: 'publish', topic: 'a/b', payload: Buffer.from('again'), qos: 0, retain: false, dup: false }),
    gen({ cmd: 'publish', topic: 'a/c', payload: Buffer.from('other'), qos: 0, retain: false, dup: false }),
    gen({ cmd: 'publish', topic: 'a/é', payload: Buffer.from('x'), qos: 0, retain: false, dup: false }),
    gen({ cmd: 'publish', topic: 'a/é', payload: Buffer.from('y'), qos: 0, retain: false, dup: false }),
    gen({ cmd: 'publish', topic: 'sensors/é/temp', payload: Buffer.from('21.5'), qos: 1, messageId: 7, retain: true, dup: false }),
    gen({ cmd: 'publish', topic: 't', payload: Buffer.alloc(0), qos: 2, messageId: 65535, retain: false, dup: true }),
    gen({ cmd: 'publish', topic: 'big', payload: Buffer.alloc(300, 7), qos: 0, retain: false, dup: false }),
    // larger than what a cut read keeps in fast-parse: its pieces go to mqtt-packet's list
    gen({ cmd: 'publish', topic: 'large', payload: Buffer.alloc(5000, 9), qos: 1, messageId: 12, retain: false, dup: false }),
    gen({ cmd: 'puback', messageId: 9 }),
    gen({ cmd: 'pingreq' }),
    gen({ cmd: 'subscribe', messageId: 3, subscriptions: [{ topic: 'x/#', qos: 1 }] }),
    gen({ cmd: 'pubrec', messageId: 4 }),
    gen({ cmd: 'pubrel', messageId: 4 }),
    gen({ cmd: 'pubcomp', messageId: 4 }),
    gen({ cmd: 'unsubscribe', messageId: 5, unsubscriptions: ['x/#'] })
  ]
  if (version === 5) {
    list.push(
      gen({ cmd: 'publish', topic: 'p', payload: Buffer.from('{}'), qos: 1, messageId: 8, properties: { contentType: 'application/json', userProperties: { a: 'b' } } }),
      gen({ cmd: 'publish', topic: '', payload: Buffer.from('aliased'), qos: 0, properties: { topicAlias: 3 } }),
      gen({ cmd: 'puback', messageId: 10, reasonCode: 0x10 }),
      gen({ cmd: 'puback', messageId: 11, reasonCode: 0x80, properties: { reasonString: 'no' } }),
      gen({ cmd: 'disconnect', reasonCode: 0 })
    )
  } else {
    list.push(gen({ cmd: 'disconnect' }))
  }
  return list
}

/** Feeds `pieces` to a parser of each kind; returns both outcomes. */
function both (version: 4 | 5, pieces: Buffer[]): [unknown[], unknown[]] {
  const plain = parserFor(version, false)
  const fast = parserFor(version, true)
  for (const piece of pieces) {
    plain.parser.parse(piece)
    fast.parser.parse(piece)
  }
  expect(fast.parser._list.length).toBe(plain.parser._list.length)
  return [shape(fast.got), shape(plain.got)]
}

/** A deterministic generator (mulberry32). */
function random (seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe.each([4, 5] as const)('fast parse, MQTT %s', (version) => {
  const stream = Buffer.concat(frames(version))

  it('gives mqtt-packet\'s packets for the whole stream in one read', () => {
    const [fast, plain] = both(version, [stream])
    expect(plain.length).toBe(frames(version).length)
    expect(fast).toEqual(plain)
  })

  it('gives mqtt-packet\'s packets when the stream is cut in two at every offset near a frame\'s start, and every 17th elsewhere', () => {
    const starts: number[] = []
    frames(version).reduce((at, frame) => { starts.push(at); return at + frame.length }, 0)
    const near = (cut: number): boolean => starts.some((start) => Math.abs(cut - start) <= 40)
    for (let cut = 1; cut < stream.length; cut += near(cut) ? 1 : 17) {
      const [fast, plain] = both(version, [stream.subarray(0, cut), stream.subarray(cut)])
      expect(fast).toEqual(plain)
    }
  })

  it('gives mqtt-packet\'s packets for 300 seeded random cuttings of ten copies of the stream', () => {
    const next = random(version * 1000 + 1)
    const long = Buffer.concat(Array.from({ length: 10 }, () => stream))
    for (let round = 0; round < 300; round++) {
      const pieces: Buffer[] = []
      for (let at = 0; at < long.length;) {
        const n = 1 + Math.floor(next() * 200)
        pieces.push(long.subarray(at, at + n))
        at += n
      }
      const [fast, plain] = both(version, pieces)
      expect(fast).toEqual(plain)
    }
  })

  it('keeps the order when a listener parses the next read from inside its own packet', () => {
    const { parser, got } = parserFor(version, true)
    const list = frames(version)
    let reentered = false
    parser.on('packet', () => {
      // as aedes' nextBatch does when a handler finishes at once: the next read, parsed at once
      if (!reentered) { reentered = true; parser.parse(Buffer.concat(list.slice(2))) }
    })
    parser.parse(Buffer.concat(list.slice(0, 2)))
    const plain = parserFor(version, false)
    plain.parser.parse(Buffer.concat(list))
    expect(shape(got)).toEqual(shape(plain.got))
  })
})
