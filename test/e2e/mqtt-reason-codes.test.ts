/**
 * Every protocol violation the wire knows, one raw packet each, closes an MQTT 5 connection
 * with the reason code the MQTT 5.0 standard gives for it: the DISCONNECT's for a packet
 * after the CONNECT, the CONNACK's for an error in the CONNECT. The table is the one in
 * docs/mqtt.md ("Protocol errors and their reason codes"); the paragraph is the standard's.
 */
import { startTestNode, closeClients, waitFor, type TestNode } from '../helpers/node.js'
import { openRaw, openRawSession, closeOpened } from '../helpers/mqtt.js'

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')

/** A v5 CONNECT (clean start, keep alive 60, no Session Expiry) with `props` and `payload` after its flags byte `flags`. */
function connectWith (flags: string, props: string, payload: string, name = '00044d515454', level = '05'): Buffer {
  const body = hex(name + level + flags + '003c' + props + payload)
  return Buffer.concat([Buffer.from([0x10, body.length]), body])
}

/** The client id 'id' as a CONNECT payload field. */
const ID = '00026964'

afterEach(async () => {
  await closeClients()
  await closeOpened()
})

describe('MQTT 5: the DISCONNECT reason code of each violation after the CONNECT', () => {
  let node: TestNode
  beforeAll(async () => {
    node = await startTestNode({
      'mqtt.max_qos_allowed': '1',
      'mqtt.retain_available': 'false',
      'mqtt.max_inflight': '2',
      'mqtt.max_packet_size': '200',
      'mqtt.max_topic_alias': '10',
      'mqtt.wildcard_subscription': 'false',
      'mqtt.shared_subscription': 'false'
    })
  })
  afterAll(async () => { await node.destroy() })

  // [violation, bytes after the CONNECT, reason code, the standard's paragraph]
  const cases: Array<[string, string, number, string]> = [
    // fixed header
    ['reserved packet type 0', '0000', 0x81, '2.1.2'],
    ['a CONNACK from the client', '20020000', 0x82, '2.1.2'],
    ['PINGREQ with flags 0001', 'c100', 0x81, 'MQTT-2.1.3-1'],
    ['PUBREL with flags 0000', '6002 0001', 0x81, 'MQTT-3.6.1-1'],
    ['SUBSCRIBE with flags 0000', '8009 0001 00 0003612f62 00', 0x81, 'MQTT-3.8.1-1'],
    ['UNSUBSCRIBE with flags 0000', 'a006 0001 00 000161', 0x81, 'MQTT-3.10.1-1'],
    ['DISCONNECT with flags 0001', 'e100', 0x81, 'MQTT-3.14.1-1'],
    ['remaining length in five bytes', '30 ffffffff7f', 0x81, '1.5.5'],
    ['remaining length not in its shortest form', '30 8000', 0x81, 'MQTT-1.5.5-1'],
    ['a packet above mqtt.max_packet_size', '30ff01 0001 61', 0x95, 'MQTT-3.2.2-15'],
    ['a second CONNECT', connectWith('02', '00', ID).toString('hex'), 0x82, 'MQTT-3.1.0-2'],
    // PUBLISH
    ['PUBLISH with QoS 3', '3607 000161 0001 00 78', 0x81, 'MQTT-3.3.1-4'],
    ['QoS 0 PUBLISH with DUP set', '3805 000161 00 78', 0x81, 'MQTT-3.3.1-2'],
    ['a topic longer than the packet', '3003 0005 61', 0x81, '1.2'],
    ['a topic that is not UTF-8', '3005 0001ff 00 78', 0x81, 'MQTT-1.5.4-1'],
    ['a topic with U+0000', '3005 000100 00 78', 0x81, 'MQTT-1.5.4-2'],
    ['a wildcard in the topic name', '3005 00012b 00 78', 0x82, 'MQTT-3.3.2-2'],
    ['an empty topic and no Topic Alias', '3004 0000 00 78', 0x82, '3.3.2.1'],
    ['PUBLISH QoS 1 with packet identifier 0', '3207 000161 0000 00 78', 0x82, 'MQTT-2.2.1-3'],
    ['Topic Alias 0', '3008 000161 03 230000 78', 0x94, 'MQTT-3.3.2-8'],
    ['a Topic Alias above Topic Alias Maximum (aedes)', '3008 000161 03 23000b 78', 0x94, 'MQTT-3.2.2-17'],
    ['an empty topic with a Topic Alias never set', '3007 0000 03 230001 78', 0x82, '3.3.4'],
    ['an empty topic with a Topic Alias set by an earlier PUBLISH, then a malformed one', '3008 000161 03 230001 78 3007 0000 03 230001 78 3607 000161 0001 00 78', 0x81, '3.3.4'],
    ['QoS 2 above mqtt.max_qos_allowed', '3407 000161 0001 00 78', 0x9b, 'MQTT-3.2.2-11'],
    ['RETAIN while mqtt.retain_available is false', '3105 000161 00 78', 0x9a, 'MQTT-3.2.2-14'],
    ['more QoS 1 PUBLISHes than Receive Maximum', '3207 000161 0001 00 78 3207 000161 0002 00 78 3207 000161 0003 00 78', 0x93, 'MQTT-3.3.4-7'],
    // properties
    ['an unknown property identifier', '3007 000161 02 0000 78', 0x81, '2.2.2.2'],
    ['a property of another packet type (Maximum QoS)', '3007 000161 02 2401 78', 0x81, '2.2.2.2'],
    ['a property running past its block', '3007 000161 02 0201 78', 0x81, '2.2.2.2'],
    ['a property given twice', '320b 000161 0001 04 01000101 78', 0x82, '3.3.2.3.2'],
    ['Payload Format Indicator 2', '3007 000161 02 0102 78', 0x82, '3.3.2.3.2'],
    ['a Subscription Identifier in a PUBLISH', '3007 000161 02 0b01 78', 0x82, 'MQTT-3.3.4-6'],
    ['a Response Topic with a wildcard', '3009 000161 04 0800012b 78', 0x82, 'MQTT-3.3.2-14'],
    ['a string property that is not UTF-8', '3009 000161 04 030001ff 78', 0x81, 'MQTT-1.5.4-1'],
    ['Subscription Identifier 0', '820b 0001 02 0b00 0003612f62 01', 0x82, '3.8.2.1.2'],
    // SUBSCRIBE, UNSUBSCRIBE
    ['SUBSCRIBE with packet identifier 0', '8209 0000 00 0003612f62 01', 0x82, 'MQTT-2.2.1-3'],
    ['SUBSCRIBE without a topic filter', '8203 0001 00', 0x82, 'MQTT-3.8.3-2'],
    ['an empty topic filter', '8206 0001 00 0000 01', 0x82, 'MQTT-4.7.3-1'],
    ['a topic filter that is not UTF-8', '8209 0001 00 000361ff62 01', 0x81, 'MQTT-3.8.3-1'],
    ['a topic filter without subscription options', '8208 0001 00 0003612f62', 0x81, '1.2'],
    ['subscription options with reserved bits set', '8209 0001 00 0003612f62 c1', 0x81, 'MQTT-3.8.3-5'],
    ['a subscription with QoS 3', '8209 0001 00 0003612f62 03', 0x82, '3.8.3.1'],
    ['Retain Handling 3', '8209 0001 00 0003612f62 30', 0x82, '3.8.3.1'],
    ['No Local on a shared subscription', '8210 0001 00 000a 2473686172652f672f23 04', 0x82, 'MQTT-3.8.3-4'],
    ['UNSUBSCRIBE without a topic filter', 'a203 0001 00', 0x82, 'MQTT-3.10.3-2'],
    ['a wildcard filter while mqtt.wildcard_subscription is false', '8209 0001 00 0003612f23 01', 0xa2, '3.2.2.3.11'],
    ['a shared subscription while mqtt.shared_subscription is false', '8210 0001 00 000a 2473686172652f672f78 01', 0x9e, '3.2.2.3.13'],
    // acknowledgements, PINGREQ, DISCONNECT, AUTH
    ['PUBACK without a packet identifier', '4000', 0x81, '1.2'],
    ['PUBACK with packet identifier 0', '40020000', 0x82, 'MQTT-2.2.1-5'],
    ['a PUBACK reason code that does not exist', '4003 0001 05', 0x82, 'MQTT-3.4.2-1'],
    ['a PUBREL reason code that does not exist', '6203 0001 80', 0x82, 'MQTT-3.6.2-1'],
    ['PINGREQ with a body', 'c00100', 0x81, '3.12'],
    ['a DISCONNECT reason code that does not exist', 'e00103', 0x82, 'MQTT-3.14.2-1'],
    ['DISCONNECT raising the Session Expiry Interval from 0', 'e007 00 05 11 0000000a', 0x82, '3.14.2.2.2'],
    ['AUTH without enhanced authentication', 'f000', 0x82, '3.15'],
    ['an AUTH reason code that does not exist', 'f00101', 0x82, 'MQTT-3.15.2-1']
  ]

  let n = 0
  for (const [what, bytes, code, paragraph] of cases) {
    it(`${what}: DISCONNECT 0x${code.toString(16)} [${paragraph}]`, async () => {
      const raw = await openRawSession(node, 5, `rc-${++n}`)
      raw.write(hex(bytes))
      await waitFor(() => raw.closed(), `the close after ${what}`)
      // the packets before it are answered first (the PUBACKs within Receive Maximum)
      expect(raw.packets.filter(p => p.cmd !== 'puback').slice(1).map(p => [p.cmd, p.reasonCode])).toEqual([['disconnect', code]])
      expect(raw.packets[raw.packets.length - 1].cmd).toBe('disconnect')
    })
  }

  it('a packet before the CONNECT is closed without a packet [MQTT-3.1.0-1]', async () => {
    const raw = await openRaw(node, 5)
    raw.write(hex('c000'))
    await waitFor(() => raw.closed(), 'the close')
    expect(raw.packets).toEqual([])
  })
})

describe('MQTT 5: the CONNACK reason code of each violation in the CONNECT', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode() })
  afterAll(async () => { await node.destroy() })

  // [violation, CONNECT, reason code, the standard's paragraph]
  const cases: Array<[string, Buffer, number, string]> = [
    ['a protocol name other than MQTT', connectWith('02', '00', ID, '00044d515458'), 0x84, 'MQTT-3.1.2-1'],
    ['the reserved flag set', connectWith('03', '00', ID), 0x81, 'MQTT-3.1.2-3'],
    ['Will QoS 3', connectWith('1e', '00', ID + '00' + '000161' + '0000'), 0x81, 'MQTT-3.1.2-12'],
    ['Will QoS without a Will', connectWith('0a', '00', ID), 0x82, 'MQTT-3.1.2-11'],
    ['Will Retain without a Will', connectWith('22', '00', ID), 0x82, 'MQTT-3.1.2-13'],
    ['a Will Topic with a wildcard', connectWith('06', '00', ID + '00' + '00012b' + '0000'), 0x82, 'MQTT-3.1.3-11'],
    ['a client identifier that is not UTF-8', connectWith('02', '00', '0001ff'), 0x81, 'MQTT-1.5.4-1'],
    ['Receive Maximum 0', connectWith('02', '03210000', ID), 0x82, '3.1.2.11.3'],
    ['Maximum Packet Size 0', connectWith('02', '052700000000', ID), 0x82, '3.1.2.11.4'],
    ['Request Problem Information 2', connectWith('02', '021702', ID), 0x82, '3.1.2.11.7'],
    ['a property given twice', connectWith('02', '06' + '21000a21000a', ID), 0x82, '3.1.2.11.3'],
    ['Authentication Data without an Authentication Method', connectWith('02', '04160001ff', ID), 0x82, '3.1.2.11.10'],
    ['a property of another packet type (Maximum QoS)', connectWith('02', '022401', ID), 0x81, '2.2.2.2'],
    ['bytes after the payload', connectWith('02', '00', ID + 'ff'), 0x81, '1.2']
  ]

  for (const [what, connect, code, paragraph] of cases) {
    it(`${what}: CONNACK 0x${code.toString(16)} [${paragraph}]`, async () => {
      const raw = await openRaw(node, 5)
      raw.write(connect)
      await waitFor(() => raw.closed(), `the close after ${what}`)
      expect(raw.packets.map(p => [p.cmd, p.reasonCode])).toEqual([['connack', code]])
    })
  }

  it('a protocol level it does not speak: CONNACK 0x01 in 3.1.1 form, which any client reads [MQTT-3.1.2-2]', async () => {
    const raw = await openRaw(node, 4)
    raw.write(connectWith('02', '', ID, '00044d515454', '06'))
    await waitFor(() => raw.closed(), 'the close')
    expect(raw.packets.map(p => [p.cmd, p.returnCode])).toEqual([['connack', 1]])
  })
})

describe('MQTT 5: DISCONNECT and the Session Expiry Interval (3.14.2.2.2)', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode() })
  afterAll(async () => { await node.destroy() })

  it('a client that connected with Session Expiry 0 and sets one on DISCONNECT gets DISCONNECT 0x82, and its will is published (the DISCONNECT is not valid)', async () => {
    const watcher = await openRawSession(node, 5, 'se-watcher')
    watcher.write(hex('8209 0001 00 0003772f78 00')) // SUBSCRIBE w/x
    await watcher.next('suback')
    const raw = await openRaw(node, 5)
    // CONNECT with a Will (w/x, "gone") and no Session Expiry Interval
    raw.write(connectWith('06', '00', '00027365' + '00' + '0003772f78' + '0004676f6e65'))
    await raw.next('connack')
    raw.write(hex('e007 00 05 11 0000000a'))
    await waitFor(() => raw.closed(), 'the close')
    expect(raw.packets.map(p => [p.cmd, p.reasonCode])).toEqual([['connack', 0], ['disconnect', 0x82]])
    const will = await watcher.next('publish')
    expect([will.topic, will.payload.toString()]).toEqual(['w/x', 'gone'])
  })

  it('a client that connected with a Session Expiry Interval may change it on DISCONNECT: closed without an answer', async () => {
    const raw = await openRaw(node, 5)
    raw.write(connectWith('02', '05 110000003c', '00027366'))
    await raw.next('connack')
    raw.write(hex('e007 00 05 11 0000000a'))
    await waitFor(() => raw.closed(), 'the close')
    expect(raw.packets.map(p => p.cmd)).toEqual(['connack'])
  })
})
