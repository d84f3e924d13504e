import mqttPacket from 'mqtt-packet'
import { checkPacket, sessionExpiryOf } from '../../../node/mqtt/packet-check.js'
import { readVarint, scanUtf8, UTF8_BAD, UTF8_WILDCARD, UTF8_CONTROL } from '../../../node/mqtt/wire-bytes.js'

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')

/** The reason code the validator gives a whole frame (null = valid). */
function codeOf (frame: Buffer, version: number, strict = false): number | null {
  let i = 1
  while ((frame[i] & 128) !== 0) i++
  const body = i + 1
  return checkPacket(frame, frame[0], body, frame.length, version, strict)?.reasonCode ?? null
}

describe('packet validator', () => {
  it('accepts what mqtt-packet generates for every packet type a client sends, on 3.1.1 and 5.0', () => {
    for (const protocolVersion of [4, 5]) {
      const v5 = protocolVersion === 5
      const packets: any[] = [
        { cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, clientId: 'c', keepalive: 30, username: 'u', password: Buffer.from('p'), will: { topic: 'w/t', payload: Buffer.from('bye'), qos: 1, retain: true, ...(v5 ? { properties: { willDelayInterval: 5 } } : {}) }, ...(v5 ? { properties: { sessionExpiryInterval: 60, receiveMaximum: 10, userProperties: { a: 'b' } } } : {}) },
        { cmd: 'publish', topic: 'a/b', payload: Buffer.from('x'), qos: 0 },
        { cmd: 'publish', topic: 'a/b', payload: Buffer.from('x'), qos: 2, messageId: 7, retain: true, ...(v5 ? { properties: { payloadFormatIndicator: true, contentType: 'text/plain', userProperties: { k: ['v1', 'v2'] }, topicAlias: 3 } } : {}) },
        { cmd: 'puback', messageId: 1 }, { cmd: 'pubrec', messageId: 1 }, { cmd: 'pubrel', messageId: 1 }, { cmd: 'pubcomp', messageId: 1 },
        { cmd: 'subscribe', messageId: 2, subscriptions: [{ topic: 'a/+', qos: 1 }, { topic: '$share/g/#', qos: 2 }], ...(v5 ? { properties: { subscriptionIdentifier: 9 } } : {}) },
        { cmd: 'unsubscribe', messageId: 3, unsubscriptions: ['a/+'] },
        { cmd: 'pingreq' },
        { cmd: 'disconnect', ...(v5 ? { reasonCode: 4 } : {}) }
      ]
      for (const p of packets) expect([p.cmd, codeOf(mqttPacket.generate(p, { protocolVersion }), protocolVersion)]).toEqual([p.cmd, null])
    }
  })

  it.each([
    ['PUBREC without a packet identifier', '5000', 4, 0x81],
    ['PUBREL without a packet identifier', '6200', 5, 0x81],
    ['PUBACK with packet identifier 0', '40020000', 5, 0x82],
    ['PUBLISH QoS 1 with packet identifier 0', '3206 000161 0000 78', 4, 0x82],
    ['PUBLISH QoS 3', '3606 000161 0001 78', 4, 0x81],
    ['QoS 0 PUBLISH with DUP', '3804 000161 78', 4, 0x81],
    ['PUBLISH to a wildcard topic', '3004 00012b 78', 4, 0x82],
    ['PUBLISH to an empty topic (3.1.1)', '3003 0000 78', 4, 0x82],
    ['PUBLISH to an empty topic without a Topic Alias (5.0)', '3004 0000 00 78', 5, 0x82],
    ['PUBLISH topic with invalid UTF-8', '3004 0001ff 78', 4, 0x81],
    ['PUBLISH topic with a surrogate', '3006 0003eda080 78', 4, 0x81],
    ['a User Property past the property block (the poison)', '31120008706f69736f6e2f3106260001617fff78', 5, 0x81],
    ['a duplicated Payload Format Indicator', '320b 000161 0001 04 01000101 78', 5, 0x82],
    ['a Subscription Identifier in a PUBLISH', '3006 000161 02 0b01', 5, 0x82],
    ['Topic Alias 0', '3007 000161 03 230000', 5, 0x94],
    ['a CONNACK-only property in a PUBLISH', '3006 000161 02 2401', 5, 0x81],
    ['SUBSCRIBE with packet identifier 0', '8208 0000 0003612f62 01', 4, 0x82],
    ['SUBSCRIBE without a filter', '8203 0001 00', 5, 0x82],
    ['SUBSCRIBE with QoS 3 (3.1.1: malformed)', '8208 0001 0003612f62 03', 4, 0x81],
    ['SUBSCRIBE with QoS 3 (5.0 3.8.3.1: a Protocol Error)', '8209 0001 00 0003612f62 03', 5, 0x82],
    ['SUBSCRIBE options with reserved bits (3.1.1)', '8208 0001 0003612f62 04', 4, 0x81],
    ['SUBSCRIBE with Retain Handling 3', '8209 0001 00 0003612f62 30', 5, 0x82],
    ['No Local on a shared subscription', '8210 0001 00 000a 2473686172652f672f23 04', 5, 0x82],
    ['SUBSCRIBE with flags 0000', '8008 0001 0003612f62 00', 4, 0x81],
    ['UNSUBSCRIBE without a filter', 'a202 0001', 4, 0x82],
    ['an empty topic filter', 'a204 0001 0000', 4, 0x82],
    ['PINGREQ with a body', 'c00100', 4, 0x81],
    ['AUTH on 3.1.1', 'f000', 4, 0x81],
    ['CONNACK from a client', '20020000', 4, 0x82],
    ['CONNECT at level 6', '100c 00044d515454 06 02 003c 0000', 4, 0x84],
    ['CONNECT with the reserved flag', '100c 00044d515454 04 03 003c 0000', 4, 0x81],
    ['CONNECT with Will QoS and no Will (no code named: a Protocol Error, 1.2)', '100c 00044d515454 04 0a 003c 0000', 4, 0x82],
    ['CONNECT with a protocol name other than MQTT [MQTT-3.1.2-1]', '100d 00044d515458 05 02 003c 00 0000', 5, 0x84],
    ['CONNECT with a password and no user name (3.1.1)', '1012 00044d515454 04 42 003c 00026964 00027077', 4, 0x81],
    ['CONNECT with Receive Maximum 0', '1010 00044d515454 05 02 003c 03210000 0000', 5, 0x82],
    ['CONNECT with bytes after the payload', '100d 00044d515454 04 02 003c 0000 ff', 4, 0x81]
  ])('refuses %s', (_what, bytes, version, code) => {
    expect(codeOf(hex(bytes), version)).toBe(code)
  })

  it('reads the Session Expiry Interval of a CONNECT and a DISCONNECT (-1 when absent)', () => {
    const connect = (props: string): Buffer => hex('10' + (12 + hex(props).length).toString(16).padStart(2, '0') + '00044d515454 05 02 003c' + props + '0000')
    expect(sessionExpiryOf(connect('00'), 2, 15, 1)).toBe(-1)
    expect(sessionExpiryOf(connect('05 1100000e10'), 2, 20, 1)).toBe(3600)
    expect(sessionExpiryOf(hex('e000'), 2, 2, 14)).toBe(-1)
    expect(sessionExpiryOf(hex('e007 00 05 110000000a'), 2, 9, 14)).toBe(10)
  })

  it('strict mode refuses control characters and payloads that break their Payload Format Indicator', () => {
    const control = hex('3005 00026101 00')
    const notUtf8 = hex('3209 000166 0001 020101 ff')
    expect([codeOf(control, 5), codeOf(notUtf8, 5)]).toEqual([null, null])
    expect([codeOf(control, 5, true), codeOf(notUtf8, 5, true)]).toEqual([0x81, 0x99])
  })

  it('reads variable byte integers in their shortest form only [MQTT-1.5.5-1]', () => {
    expect(readVarint(hex('7f'), 0, 1)).toBe(127)
    expect(readVarint(hex('8001'), 0, 2)).toBe(128)
    expect(readVarint(hex('ffffff7f'), 0, 4)).toBe(268_435_455)
    expect(readVarint(hex('8000'), 0, 2)).toBe(-1)
    expect(readVarint(hex('ffffffff01'), 0, 5)).toBe(-1)
    expect(readVarint(hex('80'), 0, 1)).toBe(-1)
  })

  it('classifies UTF-8 strings', () => {
    const flags = (s: Buffer | string): number => { const b = Buffer.from(s); return scanUtf8(b, 0, b.length) }
    expect(flags('a/b')).toBe(0)
    expect(flags('a/+')).toBe(UTF8_WILDCARD)
    expect(flags('a\u0001')).toBe(UTF8_CONTROL)
    expect(flags('é\u0085')).toBe(UTF8_CONTROL)
    expect(flags(hex('61ff'))).toBe(UTF8_BAD)
    expect(flags('a\u0000')).toBe(UTF8_BAD)
  })
})
