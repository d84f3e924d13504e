import mqttPacket from 'mqtt-packet'
import { MalformedStreamError, MqttFramer, PacketType, type FrameSink } from '../../bench/mqtt-framer.js'
import { encodePublishTemplate, writePuback } from '../../bench/packets.js'

interface Seen { type: number, flags: number, body: Buffer }

function collect (): { sink: FrameSink, seen: Seen[] } {
  const seen: Seen[] = []
  return {
    seen,
    sink: { onPacket: (type, flags, buf, start, end) => seen.push({ type, flags, body: Buffer.from(buf.subarray(start, end)) }) }
  }
}

describe('bench MQTT framer', () => {
  it('frames several packets delivered in one chunk', () => {
    const { sink, seen } = collect()
    const bytes = Buffer.concat([
      mqttPacket.generate({ cmd: 'connack', returnCode: 0, sessionPresent: false }),
      mqttPacket.generate({ cmd: 'puback', messageId: 7 }),
      mqttPacket.generate({ cmd: 'pingresp' })
    ])
    new MqttFramer(sink).push(bytes)
    expect(seen.map((s) => s.type)).toEqual([PacketType.CONNACK, PacketType.PUBACK, PacketType.PINGRESP])
    expect(seen[1].body.readUInt16BE(0)).toBe(7)
  })

  it('reassembles a PUBLISH split at every byte, including inside the length varint', () => {
    const payload = Buffer.alloc(300, 1)
    const packet = mqttPacket.generate({ cmd: 'publish', topic: 'a/b', payload, qos: 1, messageId: 42, retain: false, dup: false })
    for (let cut = 1; cut < packet.length; cut++) {
      const { sink, seen } = collect()
      const framer = new MqttFramer(sink)
      framer.push(packet.subarray(0, cut))
      framer.push(packet.subarray(cut))
      expect(seen).toHaveLength(1)
      expect(seen[0].type).toBe(PacketType.PUBLISH)
      expect((seen[0].flags >> 1) & 3).toBe(1)
      expect(seen[0].body.length).toBe(2 + 3 + 2 + 300)
      expect(framer.pendingBytes).toBe(0)
    }
  })

  it('rejects a remaining length longer than four bytes', () => {
    const { sink } = collect()
    expect(() => new MqttFramer(sink).push(Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01]))).toThrow(MalformedStreamError)
  })
})

describe('bench packets', () => {
  it('places the payload and packet id offsets where mqtt-packet parses them', () => {
    const template = encodePublishTemplate('t/1', 1, 64)
    const bytes = Buffer.from(template.bytes)
    bytes.writeUInt16BE(513, template.packetIdOffset)
    bytes.writeDoubleBE(123.5, template.payloadOffset)
    const parser = mqttPacket.parser()
    const packets: any[] = []
    parser.on('packet', (p) => packets.push(p))
    parser.parse(bytes)
    expect(packets[0]).toMatchObject({ cmd: 'publish', topic: 't/1', qos: 1, messageId: 513 })
    expect(packets[0].payload.readDoubleBE(0)).toBe(123.5)
  })

  it('writes a PUBACK mqtt-packet understands', () => {
    const out = Buffer.alloc(4)
    expect(writePuback(out, 0, 0x1234)).toBe(4)
    const parser = mqttPacket.parser()
    const packets: any[] = []
    parser.on('packet', (p) => packets.push(p))
    parser.parse(out)
    expect(packets[0]).toMatchObject({ cmd: 'puback', messageId: 0x1234 })
  })
})
