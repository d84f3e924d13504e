/**
 * Protocol errors close the connection that made them, whatever `mqtt.strict_mode` says:
 * MQTT 5 connections are told why first (DISCONNECT 0x81 Malformed Packet, 0x82 Protocol
 * Error, or CONNACK with the code for an error in the CONNECT), 3.1.1 connections are
 * closed without a word, and the node keeps serving everybody else. Packets that once
 * crashed or poisoned the node (issue 11) are among them.
 */
import net from 'node:net'
import mqttPacket from 'mqtt-packet'
import mqtt, { type MqttClient, type IClientOptions } from 'mqtt'
import { startTestNode, connect, closeClients, nextMessage, collect, type TestNode } from '../helpers/node.js'
import { within } from '../helpers/process.js'

const opened = new Set<net.Socket>()

/** A raw connection: writes bytes, parses what the node answers at `version`. */
class Raw {
  readonly packets: any[] = []
  readonly closed: Promise<void>
  private constructor (readonly socket: net.Socket, version: number) {
    const parser = mqttPacket.parser({ protocolVersion: version })
    parser.on('packet', (p: any) => this.packets.push(p))
    parser.on('error', () => {})
    socket.on('data', chunk => parser.parse(chunk))
    socket.on('error', () => {})
    this.closed = new Promise(resolve => socket.once('close', () => resolve()))
  }

  static async open (port: number, version: number): Promise<Raw> {
    const socket = net.connect(port, '127.0.0.1')
    opened.add(socket)
    await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject) })
    return new Raw(socket, version)
  }

  /** Opens, sends CONNECT at `version` and waits for its CONNACK. */
  static async session (port: number, version: 4 | 5, clientId: string): Promise<Raw> {
    const raw = await Raw.open(port, version)
    raw.write(connectFrame(version, clientId))
    await within((async () => { while (raw.of('connack').length === 0) await new Promise(resolve => setTimeout(resolve, 5)) })(), 5000, 'CONNACK')
    return raw
  }

  write (bytes: Buffer): void { this.socket.write(bytes) }
  of (cmd: string): any[] { return this.packets.filter(p => p.cmd === cmd) }
  async closedWithin (what: string): Promise<void> { await within(this.closed, 5000, `the node closing the connection after ${what}`) }
}

function connectFrame (version: 4 | 5, clientId: string): Buffer {
  return mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clean: true, clientId, keepalive: 0 } as any)
}

/** A client for a whole describe block: the per-test cleanup (closeClients) leaves it open. */
async function suiteClient (node: TestNode, opts: IClientOptions): Promise<MqttClient> {
  const client = mqtt.connect({ host: '127.0.0.1', port: node.port('mqtt:tcp'), reconnectPeriod: 0, connectTimeout: 5000, ...opts })
  await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
  return client
}

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')

/** v5 PUBLISH bodies carry a property length after the topic (and packet id). */
function props (version: 4 | 5, bytes = ''): string {
  return version === 5 ? (Buffer.from([hex(bytes).length]).toString('hex') + bytes) : ''
}

afterEach(async () => {
  for (const s of opened) s.destroy()
  opened.clear()
  await closeClients()
})

describe('protocol errors after CONNECT', () => {
  let node: TestNode
  let watcher: MqttClient
  let publisher: MqttClient
  let checks = 0
  beforeAll(async () => {
    node = await startTestNode()
    watcher = await suiteClient(node, { protocolVersion: 5, clientId: 'pe-watcher' })
    publisher = await suiteClient(node, { protocolVersion: 4, clientId: 'pe-publisher' })
    await watcher.subscribeAsync('health/#', { qos: 1 })
  })
  afterAll(async () => {
    await new Promise<void>(resolve => watcher.end(true, {}, () => resolve()))
    await new Promise<void>(resolve => publisher.end(true, {}, () => resolve()))
    await node.destroy()
  })

  /** The node still routes between the two clients connected since the start. */
  async function stillServes (): Promise<void> {
    const topic = `health/${++checks}`
    const arrived = nextMessage(watcher)
    await publisher.publishAsync(topic, 'ok', { qos: 1 })
    expect((await arrived).topic).toBe(topic)
  }

  // [name, bytes after CONNECT per version (null: not on that version), v5 reason code, packet that must not answer it]
  const cases: Array<[string, (v: 4 | 5) => string | null, number, string | null]> = [
    ['PUBREC without a packet identifier', () => '5000', 0x81, 'pubrel'],
    ['PUBREL without a packet identifier', () => '6200', 0x81, 'pubcomp'],
    ['PUBACK without a packet identifier', () => '4000', 0x81, null],
    ['PUBCOMP without a packet identifier', () => '7000', 0x81, null],
    ['SUBSCRIBE with packet identifier 0 [MQTT-2.2.1-3]', v => '82' + (v === 5 ? '09' : '08') + '0000' + props(v) + '0003612f6201', 0x82, 'suback'],
    ['PUBLISH QoS 1 with packet identifier 0 [MQTT-2.2.1-3]', v => '32' + (v === 5 ? '07' : '06') + '0001610000' + props(v) + '78', 0x82, 'puback'],
    ['invalid UTF-8 in a SUBSCRIBE topic filter [MQTT-1.5.4-1]', v => '82' + (v === 5 ? '09' : '08') + '0001' + props(v) + '000361ff6200', 0x81, 'suback'],
    ['a duplicated Payload Format Indicator', v => v === 5 ? '320b' + '000161' + '0001' + '04' + '01000101' + '78' : null, 0x82, 'puback'],
    ['a QoS 0 PUBLISH with DUP set [MQTT-3.3.1-2]', v => '38' + (v === 5 ? '05' : '04') + '000161' + props(v) + '78', 0x81, null],
    ['an UNSUBSCRIBE without a topic filter [MQTT-3.10.3-2]', v => 'a2' + (v === 5 ? '03' : '02') + '0001' + props(v), 0x82, 'unsuback'],
    ['a User Property running past the property block', v => v === 5 ? '31120008706f69736f6e2f3106260001617fff78' : null, 0x81, null],
    ['an AUTH packet (no enhanced authentication offered)', v => v === 5 ? 'f00218' + '00' : 'f000', 0x82, null]
  ]

  for (const [what, bytes, code, notAnswered] of cases) {
    for (const version of [4, 5] as const) {
      const b = bytes(version)
      if (b === null) continue
      const expected = version === 5 ? `DISCONNECT 0x${code.toString(16)}` : 'no answer'
      it(`MQTT ${version}: closes after ${what}, with ${expected}`, async () => {
        const raw = await Raw.session(node.port('mqtt:tcp'), version, `pe-${checks}-${version}`)
        raw.write(hex(b))
        await raw.closedWithin(what)
        if (version === 5) {
          expect(raw.of('disconnect').map(d => d.reasonCode)).toEqual([code])
        } else {
          expect(raw.packets.map(p => p.cmd)).toEqual(['connack'])
        }
        if (notAnswered !== null) expect(raw.of(notAnswered)).toEqual([])
        await stillServes()
      })
    }
  }

  it('MQTT 5: an error pipelined behind the CONNECT gets the CONNACK first, then DISCONNECT 0x82 [MQTT-3.2.0-1]', async () => {
    const raw = await Raw.open(node.port('mqtt:tcp'), 5)
    raw.write(Buffer.concat([connectFrame(5, 'pe-pipelined'), hex('82090000' + '00' + '0003612f6201')]))
    await raw.closedWithin('a pipelined SUBSCRIBE with packet identifier 0')
    expect(raw.packets.map(p => [p.cmd, p.reasonCode])).toEqual([['connack', 0], ['disconnect', 0x82]])
    await stillServes()
  })

  it('refuses a retained poison PUBLISH without storing it: MQTT 5 subscribers, now and after a restart, are served', async () => {
    const raw = await Raw.session(node.port('mqtt:tcp'), 5, 'pe-poisoner')
    raw.write(hex('31120008706f69736f6e2f3106260001617fff78'))
    await raw.closedWithin('the poison PUBLISH')
    expect(raw.of('disconnect').map(d => d.reasonCode)).toEqual([0x81])
    const sub = await connect(node, { protocolVersion: 5, clientId: 'pe-poison-sub' })
    const got = collect(sub)
    await sub.subscribeAsync('poison/#', { qos: 1 })
    await new Promise(resolve => setTimeout(resolve, 200))
    expect(got).toEqual([])
    await stillServes()

    // same data directory, new node: nothing was stored, the first v5 subscription finds nothing
    const dataDir = node.dataDir
    await new Promise<void>(resolve => sub.end(true, {}, () => resolve()))
    await node.stop()
    const again = await startTestNode({}, dataDir)
    try {
      const sub2 = await connect(again, { protocolVersion: 5, clientId: 'pe-poison-sub-2' })
      const got2 = collect(sub2)
      await sub2.subscribeAsync('poison/#', { qos: 1 })
      const arrived = nextMessage(sub2)
      const pub = await connect(again, { protocolVersion: 5, clientId: 'pe-poison-pub' })
      await pub.publishAsync('poison/ok', 'fine', { qos: 1 })
      expect((await arrived).topic).toBe('poison/ok')
      expect(got2.map(m => m.topic)).toEqual(['poison/ok'])
    } finally {
      await closeClients()
      await again.stop()
    }
    // back on the suite's node for the remaining tests
    node = await startTestNode({}, dataDir)
    watcher = await suiteClient(node, { protocolVersion: 5, clientId: 'pe-watcher' })
    publisher = await suiteClient(node, { protocolVersion: 4, clientId: 'pe-publisher' })
    await watcher.subscribeAsync('health/#', { qos: 1 })
    await stillServes()
  })
})

describe('protocol errors in the CONNECT', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode() })
  afterAll(async () => { await node.destroy() })

  it('answers an unsupported protocol level (6) with CONNACK 0x01 in 3.1.1 form, then closes [MQTT-3.1.2-2]', async () => {
    const raw = await Raw.open(node.port('mqtt:tcp'), 4)
    const received: Buffer[] = []
    raw.socket.on('data', chunk => received.push(chunk))
    raw.write(hex('100c00044d5154540602003c0000'))
    await raw.closedWithin('protocol level 6')
    expect(Buffer.concat(received).toString('hex')).toBe('20020001')
  })

  it.each([
    ['a duplicated Receive Maximum', '06' + '21000a21000a', 0x82],
    ['a property running past the property block', '03' + '110000', 0x81],
    ['a CONNACK-only property (Maximum QoS)', '02' + '2401', 0x81]
  ])('MQTT 5: answers a CONNECT with %s with a CONNACK carrying the reason code, and closes', async (_what, propertyBytes, code) => {
    const raw = await Raw.open(node.port('mqtt:tcp'), 5)
    const body = hex('00044d515454' + '05' + '02' + '003c' + propertyBytes + '0002' + '6964')
    raw.write(Buffer.concat([Buffer.from([0x10, body.length]), body]))
    await raw.closedWithin('a bad CONNECT')
    expect(raw.packets.map(p => [p.cmd, p.reasonCode])).toEqual([['connack', code]])
  })

  it('MQTT 3.1.1: closes a CONNECT with a password and no user name without a CONNACK [MQTT-3.1.2-22]', async () => {
    const raw = await Raw.open(node.port('mqtt:tcp'), 4)
    raw.write(hex('1012' + '00044d515454' + '04' + '42' + '003c' + '0002' + '6964' + '0002' + '7077'))
    await raw.closedWithin('a password without a user name')
    expect(raw.packets).toEqual([])
  })
})

describe('mqtt.strict_mode', () => {
  // a QoS 1 PUBLISH on fuzz/s with Payload Format Indicator 1 and a payload that is not UTF-8
  const notUtf8 = hex('3209' + '000166' + '0001' + '020101' + 'ff')
  // a QoS 0 PUBLISH to a topic with a control character (U+0001)
  const control = hex('3005' + '00026101' + '00')

  it.each([['false'], ['true']] as const)('strict_mode %s: a standard protocol error closes the connection', async (strict) => {
    const node = await startTestNode({ 'mqtt.strict_mode': strict })
    try {
      const raw = await Raw.session(node.port('mqtt:tcp'), 5, 'strict-std')
      raw.write(hex('8209' + '0000' + '00' + '0003612f62' + '01'))
      await raw.closedWithin('SUBSCRIBE with packet identifier 0')
      expect(raw.of('disconnect').map(d => d.reasonCode)).toEqual([0x82])
    } finally {
      await node.destroy()
    }
  })

  it('on: refuses a payload that is not UTF-8 though its Payload Format Indicator says so (0x99), and a control character in a topic (0x81)', async () => {
    const node = await startTestNode({ 'mqtt.strict_mode': 'true' })
    try {
      for (const [bytes, code] of [[notUtf8, 0x99], [control, 0x81]] as const) {
        const raw = await Raw.session(node.port('mqtt:tcp'), 5, `strict-on-${code}`)
        raw.write(bytes)
        await raw.closedWithin('a strict-mode error')
        expect(raw.of('disconnect').map(d => d.reasonCode)).toEqual([code])
        expect(raw.of('puback')).toEqual([])
      }
    } finally {
      await node.destroy()
    }
  })

  it('off (default): accepts and delivers both', async () => {
    const node = await startTestNode()
    try {
      const sub = await connect(node, { protocolVersion: 5, clientId: 'strict-off-sub' })
      const got = collect(sub)
      await sub.subscribeAsync({ f: { qos: 1 }, 'a\u0001': { qos: 0 } })
      const raw = await Raw.session(node.port('mqtt:tcp'), 5, 'strict-off')
      raw.write(Buffer.concat([notUtf8, control]))
      await within((async () => { while (got.length < 2) await new Promise(resolve => setTimeout(resolve, 5)) })(), 5000, 'both messages delivered')
      expect(got.map(m => m.topic).sort()).toEqual(['a\u0001', 'f'])
      expect(raw.socket.destroyed).toBe(false)
    } finally {
      await closeClients()
      await node.destroy()
    }
  })
})
