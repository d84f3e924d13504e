/**
 * node/mqtt/fast-write.ts: the acknowledgements it encodes are mqtt-packet's bytes for the same
 * packet and protocol level, and everything else is left to mqtt-packet (null). Its use on real
 * connections is every QoS 1/2 flow of test/e2e (mqtt-qos-flows, mqtt5-*, mqtt-reason-codes).
 */
import mqttPacket from 'mqtt-packet'
import { ackFrame } from '../../../node/mqtt/fast-write.js'

const VERSIONS = [3, 4, 5] as const

describe('fast acknowledgement frames', () => {
  const packets: any[] = []
  for (const cmd of ['puback', 'pubrec', 'pubrel', 'pubcomp']) {
    for (const messageId of [1, 7, 256, 65535]) {
      packets.push({ cmd, messageId })
      for (const reasonCode of [0, 0x10, 0x80, 0x87, 0x92]) packets.push({ cmd, messageId, reasonCode })
    }
    if (cmd !== 'pubrel') packets.push({ cmd, messageId: 9, dup: true })
  }
  packets.push({ cmd: 'pingresp' })

  it.each(VERSIONS)('are mqtt-packet\'s bytes for every acknowledgement, reason code and PINGRESP (MQTT level %i)', (version) => {
    for (const packet of packets) {
      const frame = ackFrame(packet, version)
      expect([packet, frame?.toString('hex')]).toEqual([packet, mqttPacket.generate(packet, { protocolVersion: version }).toString('hex')])
    }
  })

  it('leaves to mqtt-packet what it does not encode: properties, other packets, bad identifiers', () => {
    expect(ackFrame({ cmd: 'puback', messageId: 1, reasonCode: 0x80, properties: { reasonString: 'no' } }, 5)).toBeNull()
    expect(ackFrame({ cmd: 'suback', messageId: 1, granted: [0] }, 4)).toBeNull()
    expect(ackFrame({ cmd: 'publish', topic: 't', payload: Buffer.alloc(0), qos: 0 }, 4)).toBeNull()
    expect(ackFrame({ cmd: 'puback' }, 4)).toBeNull()
    expect(ackFrame({ cmd: 'puback', messageId: 70000 }, 4)).toBeNull()
    // a PUBREL has no DUP flag: mqtt-packet throws on one, and so it is left to it
    expect(ackFrame({ cmd: 'pubrel', messageId: 1, dup: true }, 4)).toBeNull()
  })
})
