/**
 * MQTT 5 will messages (MQTT 5.0 §3.1.2.5, §3.1.3.2): the will PUBLISH carries the will
 * properties a PUBLISH may carry and never the Will Delay Interval; will delay and session
 * expiry together decide when it goes out [MQTT-3.1.3-9].
 */
import { spawn, spawnSync } from 'node:child_process'
import { startTestNode, closeClients, waitFor, type TestNode } from '../helpers/node.js'
import { open, drop, until, closeOpened, openRaw, connectPacket, type RawClient } from '../helpers/mqtt.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode() })
afterAll(async () => { await node.destroy() })
afterEach(async () => {
  await closeOpened()
  await closeClients()
})

/** A raw v5 subscriber to `topic`: sees the PUBLISH properties exactly as the broker encoded them. */
async function watcher (topic: string): Promise<RawClient> {
  const raw = await openRaw(node, 5)
  raw.send(connectPacket(5))
  await raw.next('connack')
  raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 1 }] })
  await raw.next('suback')
  return raw
}

function wills (raw: RawClient): any[] {
  return raw.packets.filter(p => p.cmd === 'publish')
}

describe('will PUBLISH properties', () => {
  it('maps the will properties to PUBLISH properties and leaves out Will Delay Interval (0x18)', async () => {
    const watch = await watcher('will/props')
    const client = await open(node, {
      protocolVersion: 5,
      clientId: 'will-props',
      properties: { sessionExpiryInterval: 10 },
      will: {
        topic: 'will/props',
        payload: Buffer.from('gone'),
        qos: 1,
        retain: false,
        properties: {
          willDelayInterval: 1,
          payloadFormatIndicator: true,
          messageExpiryInterval: 300,
          contentType: 'text/plain',
          responseTopic: 'will/reply',
          correlationData: Buffer.from('corr'),
          userProperties: { origin: 'test' }
        }
      } as any
    })
    drop(client.client)
    await waitFor(() => wills(watch).length === 1, 'the will')
    const props = wills(watch)[0].properties ?? {}
    expect(props.willDelayInterval).toBeUndefined()
    expect(props.payloadFormatIndicator).toBe(true)
    expect(props.messageExpiryInterval).toBeGreaterThan(0)
    expect(props.messageExpiryInterval).toBeLessThanOrEqual(300)
    expect(props.contentType).toBe('text/plain')
    expect(props.responseTopic).toBe('will/reply')
    expect(Buffer.from(props.correlationData).toString()).toBe('corr')
    expect(props.userProperties).toEqual({ origin: 'test' })
  })

  it('a will without a delay is published at once, without Will Delay Interval', async () => {
    const watch = await watcher('will/nodelay')
    const client = await open(node, {
      protocolVersion: 5,
      clientId: 'will-nodelay',
      will: { topic: 'will/nodelay', payload: Buffer.from('gone'), qos: 0, retain: false, properties: { willDelayInterval: 0, contentType: 'x' } } as any
    })
    drop(client.client)
    await waitFor(() => wills(watch).length === 1, 'the will')
    expect(wills(watch)[0].properties?.willDelayInterval).toBeUndefined()
    expect(wills(watch)[0].properties?.contentType).toBe('x')
  })
})

/** mosquitto_sub, a strict MQTT 5 client: it drops the connection on a PUBLISH with a Will Delay Interval. */
const hasMosquittoSub = spawnSync('mosquitto_sub', ['--help']).status !== null

;(hasMosquittoSub ? it : it.skip)('a strict client (mosquitto_sub -V 5) receives the will', async () => {
  const sub = spawn('mosquitto_sub', ['-V', '5', '-h', '127.0.0.1', '-p', String(node.port('mqtt:tcp')), '-t', 'will/strict', '-C', '1'])
  let out = ''
  sub.stdout.on('data', (d: Buffer) => { out += d.toString() })
  const exited = new Promise<number | null>(resolve => sub.on('exit', (code) => resolve(code)))
  try {
    const subscribed = (): boolean => [...node.broker.core.clients()].some(c => c.subscriptions['will/strict'] !== undefined)
    await waitFor(subscribed, 'mosquitto_sub to subscribe')
    const client = await open(node, {
      protocolVersion: 5,
      clientId: 'will-strict',
      will: { topic: 'will/strict', payload: Buffer.from('gone'), qos: 0, retain: false, properties: { willDelayInterval: 0, contentType: 'text/plain' } } as any
    })
    drop(client.client)
    expect(await exited).toBe(0)
    expect(out.trim()).toBe('gone')
  } finally {
    sub.kill()
  }
})

describe('will delay and session expiry [MQTT-3.1.3-9]', () => {
  it('publishes the will when the session ends, if that comes before the will delay', async () => {
    const watch = await watcher('will/session-end')
    const client = await open(node, {
      protocolVersion: 5,
      clientId: 'will-session-end',
      properties: { sessionExpiryInterval: 1 },
      will: { topic: 'will/session-end', payload: Buffer.from('gone'), qos: 1, retain: false, properties: { willDelayInterval: 3600 } } as any
    })
    const droppedAt = Date.now()
    drop(client.client)
    await waitFor(() => wills(watch).length === 1, 'the will at session end', 8000)
    expect(Date.now() - droppedAt).toBeGreaterThanOrEqual(900)
  })

  it('a reconnect within the will delay cancels the will', async () => {
    const watch = await watcher('will/cancelled')
    const opts = {
      protocolVersion: 5 as const,
      clientId: 'will-cancelled',
      clean: false,
      properties: { sessionExpiryInterval: 60 },
      will: { topic: 'will/cancelled', payload: Buffer.from('gone'), qos: 1, retain: false, properties: { willDelayInterval: 1 } } as any
    }
    const first = await open(node, opts)
    const droppedAt = Date.now()
    drop(first.client)
    await waitFor(() => !(first.client as any).connected && node.broker.core.client('will-cancelled') === undefined, 'the broker to see the drop')
    const second = await open(node, { ...opts, will: undefined })
    expect(second.connack.sessionPresent).toBe(true)
    await until(droppedAt + 2000, 'the will delay to pass')
    // a QoS 1 message after the delay: had the will gone out, it would be here first
    const raw: RawClient = watch
    await second.client.publishAsync('will/cancelled', 'after', { qos: 1 })
    await waitFor(() => wills(raw).length > 0, 'the message after the delay')
    expect(wills(raw).map(p => p.payload.toString())).toEqual(['after'])
  })
})
