/**
 * A client may send packets behind its CONNECT without waiting for the CONNACK [MQTT-3.1.4-6
 * context]; when one of them breaks the protocol, everything before it is processed in order
 * (the CONNECT authenticated and answered, the messages delivered, the SUBSCRIBE and QoS 1
 * PUBLISHes answered), and only then is the connection closed: MQTT 5 with a DISCONNECT that
 * carries the standard's reason code, 3.1.1 without a word [MQTT-4.13.1-1]. The same bytes are
 * written, in one TCP write, to Starling and to Mosquitto 2, which behave alike (except where
 * the comments say Mosquitto is silent and the standard asks for a DISCONNECT).
 */
import mqttPacket from 'mqtt-packet'
import { startTestNode, closeClients, connect, collect, waitFor, type TestNode, type Received } from '../helpers/node.js'
import { openRawAt, openRawSession, closeOpened, type RawClient } from '../helpers/mqtt.js'
import { startMosquitto, type MosquittoServer } from '../helpers/servers/mosquitto.js'
import type { MqttClient } from 'mqtt'

/** A PUBLISH with QoS 3: a Malformed Packet [MQTT-3.3.1-4]. */
const MALFORMED_PUBLISH = Buffer.from('3606000161000178', 'hex')

interface Broker {
  name: string
  port: () => number
  subscriber: (clientId: string) => Promise<MqttClient>
}

/** What the raw client got back: packet types with their reason codes, in order. */
function answers (raw: RawClient): string[] {
  return raw.packets.map(p => {
    if (p.cmd === 'connack') return `connack ${p.reasonCode ?? p.returnCode}`
    if (p.cmd === 'disconnect') return `disconnect 0x${(p.reasonCode as number).toString(16)}`
    if (p.cmd === 'suback') return `suback ${(p.granted as number[]).join(',')}`
    if (p.cmd === 'puback') return `puback ${p.messageId as number}`
    return p.cmd
  })
}

function frame (version: 4 | 5, packet: any): Buffer {
  return mqttPacket.generate(packet, { protocolVersion: version })
}

function connectFrame (version: 4 | 5, clientId: string): Buffer {
  return frame(version, { cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clean: true, clientId, keepalive: 0 })
}

/** Writes `bytes` in one write on a fresh connection; resolves once the server has closed it. */
async function pipelined (port: number, version: 4 | 5, bytes: Buffer): Promise<RawClient> {
  const raw = await openRawAt(port, version)
  raw.write(bytes)
  await waitFor(() => raw.closed(), 'the server closing the connection', 10_000)
  return raw
}

/** The scenarios, each run on both brokers and both versions. */
function scenarios (broker: () => Broker): void {
  let sub: MqttClient
  let got: Received[]
  beforeEach(async () => {
    sub = await broker().subscriber(`pv-sub-${Math.random().toString(36).slice(2, 8)}`)
    got = collect(sub)
    await sub.subscribeAsync('pipe/#', { qos: 1 })
  })
  afterEach(async () => {
    await new Promise<void>(resolve => sub.end(true, {}, () => resolve()))
    await closeOpened()
  })

  const payloads = (topic: string): string[] => got.filter(m => m.topic === topic).map(m => m.payload.toString())

  for (const version of [4, 5] as const) {
    const bye = version === 5 ? ['disconnect 0x81'] : []

    it(`MQTT ${version}: CONNECT, five QoS 0 PUBLISHes and a malformed PUBLISH in one write: CONNACK, the five delivered in order, then the close`, async () => {
      const topic = `pipe/qos0/${version}`
      const five = [1, 2, 3, 4, 5].map(i => frame(version, { cmd: 'publish', topic, payload: `m${i}`, qos: 0 }))
      const raw = await pipelined(broker().port(), version, Buffer.concat([connectFrame(version, `pv-q0-${version}`), ...five, MALFORMED_PUBLISH]))
      expect(answers(raw)).toEqual(['connack 0', ...bye])
      await waitFor(() => payloads(topic).length === 5, 'the five messages')
      expect(payloads(topic)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5'])
    })

    it(`MQTT ${version}: CONNECT, SUBSCRIBE and two QoS 1 PUBLISHes before a malformed packet: each is answered before the close`, async () => {
      const topic = `pipe/qos1/${version}`
      const bytes = Buffer.concat([
        connectFrame(version, `pv-q1-${version}`),
        frame(version, { cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'own/x', qos: 0 }] }),
        frame(version, { cmd: 'publish', topic, payload: 'q1', qos: 1, messageId: 11 }),
        frame(version, { cmd: 'publish', topic, payload: 'q2', qos: 1, messageId: 12 }),
        MALFORMED_PUBLISH
      ])
      const raw = await pipelined(broker().port(), version, bytes)
      // the standard orders the PUBACKs among themselves [MQTT-4.6.0-2], not the SUBACK
      // among them (Starling answers the SUBSCRIBE once it is stored, after the PUBACKs)
      const got = answers(raw)
      expect([got[0], ...got.slice(1, 4).sort(), ...got.slice(4)]).toEqual(['connack 0', 'puback 11', 'puback 12', 'suback 0', ...bye])
      expect(got.filter(a => a.startsWith('puback'))).toEqual(['puback 11', 'puback 12'])
      await waitFor(() => payloads(topic).length === 2, 'both messages')
      expect(payloads(topic)).toEqual(['q1', 'q2'])
    })

    it(`MQTT ${version}: a connected client's QoS 1 PUBLISHes pipelined before a malformed one are acknowledged before the close`, async () => {
      const port = broker().port()
      const raw = await openRawAt(port, version)
      raw.write(connectFrame(version, `pv-live-${version}`))
      await raw.next('connack')
      const topic = `pipe/live/${version}`
      const three = [1, 2, 3].map(i => frame(version, { cmd: 'publish', topic, payload: `l${i}`, qos: 1, messageId: i }))
      raw.write(Buffer.concat([...three, MALFORMED_PUBLISH]))
      await waitFor(() => raw.closed(), 'the close')
      expect(answers(raw)).toEqual(['connack 0', 'puback 1', 'puback 2', 'puback 3', ...bye])
      await waitFor(() => payloads(topic).length === 3, 'the three messages')
      expect(payloads(topic)).toEqual(['l1', 'l2', 'l3'])
    })
  }
}

afterEach(async () => {
  await closeClients()
  await closeOpened()
})

describe('Starling: packets pipelined before a protocol error are processed first', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode() })
  afterAll(async () => { await node.destroy() })
  scenarios(() => ({ name: 'Starling', port: () => node.port('mqtt:tcp'), subscriber: async (clientId) => await connect(node, { protocolVersion: 5, clientId }) }))

  it('MQTT 5: a second CONNECT pipelined behind the first gets the CONNACK, the message before it delivered, then DISCONNECT 0x82 [MQTT-3.1.0-2]', async () => {
    const sub = await connect(node, { protocolVersion: 5, clientId: 'pv-second-sub' })
    const got = collect(sub)
    await sub.subscribeAsync('pipe/second', { qos: 1 })
    const first = connectFrame(5, 'pv-second')
    const raw = await pipelined(node.port('mqtt:tcp'), 5, Buffer.concat([first, frame(5, { cmd: 'publish', topic: 'pipe/second', payload: 'before', qos: 0 }), first]))
    // Mosquitto 2 closes without a DISCONNECT here; the standard asks for one (4.13.1: SHOULD)
    expect(answers(raw)).toEqual(['connack 0', 'disconnect 0x82'])
    await waitFor(() => got.length === 1, 'the message before the second CONNECT')
    expect(got[0].payload.toString()).toBe('before')
  })

  it('MQTT 5: a client that ends its side right after the malformed packet still gets the DISCONNECT', async () => {
    const raw = await openRawSession(node, 5, 'pv-half-close')
    raw.write(Buffer.concat([frame(5, { cmd: 'publish', topic: 'pipe/half', payload: 'h', qos: 1, messageId: 1 }), MALFORMED_PUBLISH]))
    raw.end()
    await waitFor(() => raw.closed(), 'the close')
    expect(raw.packets.filter(p => p.cmd === 'disconnect').map(p => p.reasonCode)).toEqual([0x81])
  })

  it('MQTT 3.1.1: a connection answered with nothing but the CONNACK still serves others, and a refused CONNECT stops there', async () => {
    // a CONNECT refused by the broker (identifier rejected: empty id, clean session 0) is not followed by the packets behind it [MQTT-3.1.4-6]
    const raw = await pipelined(node.port('mqtt:tcp'), 4, Buffer.concat([
      Buffer.from('100c00044d51545404000000' + '0000', 'hex'), // clean session 0, empty client id
      frame(4, { cmd: 'publish', topic: 'pipe/refused', payload: 'never', qos: 1, messageId: 1 }),
      MALFORMED_PUBLISH
    ]))
    expect(answers(raw)).toEqual(['connack 2'])
    const still = await openRawSession(node, 4, 'pv-still')
    expect(still.closed()).toBe(false)
  })
})

describe('Mosquitto 2, the same bytes', () => {
  let mosquitto: MosquittoServer
  beforeAll(async () => { mosquitto = await startMosquitto() }, 60_000)
  afterAll(async () => { await mosquitto?.stop() })
  scenarios(() => ({ name: 'Mosquitto', port: () => mosquitto.port, subscriber: async (clientId) => await mosquitto.connect({ protocolVersion: 5, clientId }) }))
})
