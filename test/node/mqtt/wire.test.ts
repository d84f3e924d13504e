import { Duplex, PassThrough } from 'node:stream'
import mqttPacket from 'mqtt-packet'
import { Wire, type WireLimits } from '../../../node/mqtt/wire.js'
import { createMetrics } from '../../../node/metrics.js'

const limits: WireLimits = {
  receiveMaximum: 32, maxQos: 2, retainAvailable: true, maxPacketSize: 1024 * 1024, strictMode: false,
  highWaterMark: 64 * 1024, dropThreshold: 8 * 1024 * 1024, rateLimits: null, forceShutdown: null,
  sharedSubscription: true, wildcardSubscription: true, maxTopicLevels: 0
}

function frames (): Buffer[] {
  const v = { protocolVersion: 5 } as any
  return [
    mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, clientId: 'w', keepalive: 30 } as any, v),
    mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: '$share/g/a/+', qos: 1 }, { topic: 'bad/#/x', qos: 0 }] } as any, v),
    mqttPacket.generate({ cmd: 'publish', topic: 'a/b', payload: Buffer.alloc(300, 7), qos: 0 } as any, v),
    mqttPacket.generate({ cmd: 'publish', topic: 'a/c', payload: Buffer.alloc(5000, 8), qos: 1, messageId: 9 } as any, v),
    mqttPacket.generate({ cmd: 'pingreq' } as any, v)
  ]
}

/** Feeds `chunks` through the wire's inbound scan, collecting what aedes would be handed. */
function scanAll (chunks: Buffer[]): { out: Buffer, wire: Wire, violations: number[] } {
  const violations: number[] = []
  const wire = new Wire(new PassThrough(), limits, createMetrics(), (_w, code) => violations.push(code))
  const parts: Buffer[] = []
  for (const chunk of chunks) {
    const got = wire.scanInbound(Buffer.from(chunk))
    if (got !== null) parts.push(got)
  }
  return { out: Buffer.concat(parts), wire, violations }
}

describe('wire inbound scan', () => {
  it('hands aedes every frame whatever the read boundaries, rewriting $share in place', () => {
    const stream = Buffer.concat(frames())
    const whole = scanAll([stream])
    expect(whole.violations).toEqual([])
    expect(whole.out.length).toBe(stream.length)
    expect(whole.out.includes(Buffer.from('\u0000share/g/a/+'))).toBe(true)
    expect(whole.wire.counters.recvPkt).toBe(5)
    for (let cut = 1; cut < stream.length; cut++) {
      const split = scanAll([stream.subarray(0, cut), stream.subarray(cut)])
      expect(split.violations).toEqual([])
      expect(split.out.equals(whole.out)).toBe(true)
      expect(split.wire.counters.recvPkt).toBe(5)
    }
  })

  it('survives one-byte reads', () => {
    const stream = Buffer.concat(frames())
    const bytes = Array.from(stream, b => Buffer.from([b]))
    const r = scanAll(bytes)
    expect(r.out.equals(scanAll([stream]).out)).toBe(true)
  })

  it('reports a PUBLISH whose topic length runs past the packet as malformed (0x81)', () => {
    const connect = frames()[0]
    const bad = Buffer.from([0x30, 3, 0xff, 0xff, 0x61])
    const r = scanAll([connect, bad])
    expect(r.violations).toEqual([0x81])
  })

  it('reports a topic with U+0000 or invalid UTF-8 as malformed (0x81)', () => {
    const connect = frames()[0]
    for (const topic of [Buffer.from('a\u0000b'), Buffer.from([0x61, 0xff, 0x62])]) {
      const body = Buffer.concat([Buffer.from([0, topic.length]), topic, Buffer.from([0]), Buffer.from('x')])
      const r = scanAll([connect, Buffer.concat([Buffer.from([0x30, body.length]), body])])
      expect(r.violations).toEqual([0x81])
    }
  })
})

describe('wire outbound', () => {
  it('asks for drain once what it holds and what the socket still holds reach the high-water mark', async () => {
    // a socket whose peer reads nothing: every byte handed to it stays in its buffer
    const socket = new Duplex({ read () {}, write () {}, writableHighWaterMark: limits.highWaterMark })
    const wire = new Wire(socket, limits, createMetrics(), () => {})
    const frame = Buffer.alloc(4096, 1)
    for (let n = 0; n < 10; n++) expect(socket.write(frame)).toBe(true)
    await new Promise((resolve) => setImmediate(resolve))
    expect(socket.writableLength).toBe(40960)
    // a new turn: the wire holds nothing, the socket 40 KiB below its own mark
    let accepted = 0
    while (socket.write(frame)) accepted += frame.length
    // the write that said no is queued too; together under the mark plus that one frame
    expect(wire.pending + socket.writableLength).toBeLessThanOrEqual(limits.highWaterMark + frame.length)
    expect(accepted).toBe(limits.highWaterMark - 40960 - frame.length)
  })
})
