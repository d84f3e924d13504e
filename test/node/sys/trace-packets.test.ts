/**
 * Packet lines of client traces, fed through the trace service's packet tap the way the
 * wire layer feeds it, and the EMQ X notation of each packet.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HooksBus } from '../../../node/hooks.js'
import { silentLogger } from '../../../node/logger.js'
import { createTraceService, type TraceService } from '../../../node/trace/trace-service.js'
import { formatPacket, formatPayload, MAX_TRACED_PAYLOAD } from '../../../node/trace/trace-format.js'
import { frame, fakeWire, type Frame } from './frames.js'

let dir: string
let traces: TraceService
const handlers = new Map<string, unknown>()
const control = {
  register: (name: string, fn: unknown) => { handlers.set(name, fn) },
  unregister: (name: string) => handlers.delete(name)
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'starling-trace-unit-'))
  traces = createTraceService({ hooks: new HooksBus(silentLogger()), logger: silentLogger(), control })
})
afterEach(async () => {
  await traces.stop()
  rmSync(dir, { recursive: true, force: true })
})

const inbound = (w: object, f: Frame): void => traces.packetTap.inbound(w as any, f.buf, f.start, f.body, f.end)
const outbound = (w: object, f: Frame): void => traces.packetTap.outbound(w as any, f.buf, f.start, f.body, f.end)

describe('client trace packet lines', () => {
  it('writes RECV and SEND lines for the traced client only, CONNECT included', async () => {
    const file = join(dir, 'c1.log')
    await traces.startTrace('client', 'c1', file)
    const before = fakeWire(undefined, 0, 5555) // aedes has no client id before CONNECT
    inbound(before, frame({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: 'c1', keepalive: 60, username: 'u', password: Buffer.from('secret') }))
    const w = fakeWire('c1', 4, 5555)
    outbound(w, frame({ cmd: 'connack', returnCode: 0, sessionPresent: false }))
    inbound(w, frame({ cmd: 'publish', topic: 't/1', payload: 'hello', qos: 1, messageId: 2 }))
    outbound(w, frame({ cmd: 'puback', messageId: 2 }))
    inbound(fakeWire('c2'), frame({ cmd: 'publish', topic: 't/1', payload: 'other', qos: 0 }))
    await traces.stopTrace('client', 'c1')
    const texts = readFileSync(file, 'utf8').trimEnd().split('\n').map(l => l.replace(/^\S+ \[debug\] /, ''))
    expect(texts).toEqual([
      'c1@127.0.0.1:5555 RECV CONNECT(Q0, R0, D0, ClientId=c1, ProtoName=MQTT, ProtoVer=4, CleanStart=true, KeepAlive=60, Username=u, Password=******)',
      'c1@127.0.0.1:5555 SEND CONNACK(AckFlags=0, ReasonCode=0)',
      'c1@127.0.0.1:5555 RECV PUBLISH(Q1, R0, D0, Topic=t/1, PacketId=2, Payload=hello)',
      'c1@127.0.0.1:5555 SEND PUBACK(PacketId=2, ReasonCode=0)'
    ])
    expect(readFileSync(file, 'utf8')).not.toContain('secret')
  })

  it('decodes MQTT 5 frames with the connection\'s protocol version', async () => {
    const file = join(dir, 'v5.log')
    await traces.startTrace('client', 'c5', file)
    const w = fakeWire('c5', 5)
    inbound(w, frame({ cmd: 'subscribe', messageId: 9, subscriptions: [{ topic: 'a/#', qos: 1 }], properties: { subscriptionIdentifier: 3 } }, 5))
    outbound(w, frame({ cmd: 'suback', messageId: 9, granted: [1] }, 5))
    inbound(w, frame({ cmd: 'disconnect', reasonCode: 0 }, 5))
    await traces.stopTrace('client', 'c5')
    expect(readFileSync(file, 'utf8')).toMatch(/RECV SUBSCRIBE\(PacketId=9, TopicFilters=\[a\/#\(Q1\)\]\)\n.*SEND SUBACK\(PacketId=9, ReasonCodes=\[1\]\)\n.*RECV DISCONNECT\(ReasonCode=0\)\n$/)
  })

  it('writes no packet lines in a trace at info or above', async () => {
    const file = join(dir, 'info.log')
    await traces.startTrace('client', 'ci', file, 'info')
    inbound(fakeWire('ci'), frame({ cmd: 'pingreq' }))
    await traces.stopTrace('client', 'ci')
    expect(readFileSync(file, 'utf8')).toBe('')
  })
})

describe('trace notation', () => {
  it('writes payloads as text, binary ones in hex, long ones cut', () => {
    expect(formatPayload(Buffer.from('hello'))).toBe('hello')
    expect(formatPayload(Buffer.from([0, 1, 0xff]))).toBe('0x0001ff')
    const long = formatPayload(Buffer.alloc(MAX_TRACED_PAYLOAD + 10, 'a'))
    expect(long.endsWith(`...(${MAX_TRACED_PAYLOAD + 10} bytes)`)).toBe(true)
  })

  it.each([
    [{ cmd: 'pubrec', messageId: 3, reasonCode: 0x10 }, 'PUBREC(PacketId=3, ReasonCode=16)'],
    [{ cmd: 'unsubscribe', messageId: 4, unsubscriptions: ['a', 'b'] }, 'UNSUBSCRIBE(PacketId=4, TopicFilters=[a, b])'],
    [{ cmd: 'unsuback', messageId: 4 }, 'UNSUBACK(PacketId=4)'],
    [{ cmd: 'pingresp' }, 'PINGRESP'],
    [{ cmd: 'publish', topic: 'x', payload: Buffer.from('p'), qos: 0, retain: true, dup: false }, 'PUBLISH(Q0, R1, D0, Topic=x, Payload=p)']
  ])('writes %o as %s', (packet, text) => {
    expect(formatPacket(packet)).toBe(text)
  })
})
