/**
 * Sessions, client ids, takeover, keep alive and wills, seen from real clients on real sockets
 * (MQTT 3.1.1 §3.1.2.4, §3.1.3.1; MQTT 5.0 §3.1.2.11.2, §3.1.3.2, §4.1).
 *
 * The few waits for wall time (session expiry, will delay) are `waitFor` on a deadline a
 * margin past the interval the broker times, never a blind sleep before an assertion.
 */
import type { IClientOptions, MqttClient } from 'mqtt'
import { startTestNode, connect, closeClients, nextMessage, waitFor, type TestNode } from '../helpers/node.js'
import { open, leave, drop, until, marker, closeOpened, openRaw, connectPacket, type Opened } from '../helpers/mqtt.js'

/** `mqtt.session_expiry_interval` of the node under test: the cap on what v5 clients ask. */
const SESSION_EXPIRY_CAP_S = 3600

let node: TestNode
beforeAll(async () => { node = await startTestNode({ 'mqtt.session_expiry_interval': '1h' }) })
afterAll(async () => { await node.destroy() })
afterEach(async () => {
  await closeOpened()
  await closeClients()
})

/**
 * Proves a client got nothing but `topic`'s marker: the client subscribes to the marker topic,
 * `via` publishes to it after whatever else, and the marker's arrival closes the window.
 */
async function onlyMarkerArrives (sub: Opened, via: MqttClient, topic: string, before: () => Promise<void> = async () => {}): Promise<void> {
  await sub.client.subscribeAsync(topic, { qos: 1 })
  await before()
  await marker(sub, via, topic)
  expect(sub.messages.map(m => `${m.topic} ${m.payload.toString()}`)).toEqual([`${topic} marker`])
}

describe('MQTT 3.1.1 sessions', () => {
  it('keeps the subscriptions of a clean=false session and delivers the QoS 1 and 2 messages queued while offline, with sessionPresent', async () => {
    const first = await open(node, { protocolVersion: 4, clientId: 'v4-persist', clean: false })
    expect(first.connack.sessionPresent).toBe(false)
    await first.client.subscribeAsync('v4/persist/#', { qos: 2 })
    await leave(first.client)

    const pub = await connect(node, { protocolVersion: 4 })
    await pub.publishAsync('v4/persist/one', 'q1', { qos: 1 })
    await pub.publishAsync('v4/persist/two', 'q2', { qos: 2 })

    const again = await open(node, { protocolVersion: 4, clientId: 'v4-persist', clean: false })
    expect(again.connack.sessionPresent).toBe(true)
    await waitFor(() => again.messages.length >= 2, 'queued messages')
    expect(again.messages.map(m => [m.topic, m.payload.toString(), m.packet.qos])).toEqual([
      ['v4/persist/one', 'q1', 1],
      ['v4/persist/two', 'q2', 2]
    ])
    // the subscription itself survived too: live messages keep arriving
    const live = nextMessage(again.client)
    await pub.publishAsync('v4/persist/three', 'live', { qos: 1 })
    expect((await live).payload.toString()).toBe('live')
  })

  it('discards the stored session when the client reconnects with clean=true', async () => {
    const first = await open(node, { protocolVersion: 4, clientId: 'v4-discard', clean: false })
    await first.client.subscribeAsync('v4/discard/t', { qos: 1 })
    await leave(first.client)
    const pub = await connect(node, { protocolVersion: 4 })
    await pub.publishAsync('v4/discard/t', 'queued', { qos: 1 })

    const clean = await open(node, { protocolVersion: 4, clientId: 'v4-discard', clean: true })
    expect(clean.connack.sessionPresent).toBe(false)
    // neither the queued message nor the old subscription's deliveries reach it
    await onlyMarkerArrives(clean, pub, 'v4/discard/marker', async () => {
      await pub.publishAsync('v4/discard/t', 'after', { qos: 1 })
    })
    await leave(clean.client)

    // and the clean session left nothing behind for a later clean=false connection
    const later = await open(node, { protocolVersion: 4, clientId: 'v4-discard', clean: false })
    expect(later.connack.sessionPresent).toBe(false)
  })

  it('delivers what a clean=true client subscribes to while its old session\'s long queue is still being dropped', async () => {
    // the CONNECT's last step drops the old queue through the store after the CONNACK; the
    // client reads meanwhile, and QoS 0 and 1 deliveries to it must not wait for, or be lost
    // to, that step (aedes writes to a client that is connecting or connected)
    const first = await open(node, { protocolVersion: 4, clientId: 'v4-long-queue', clean: false })
    await first.client.subscribeAsync('v4/long/t', { qos: 1 })
    await leave(first.client)
    const pub = await connect(node, { protocolVersion: 4 })
    await Promise.all(Array.from({ length: 3000 }, async (_, i) => await pub.publishAsync('v4/long/t', `q${i}`, { qos: 1 })))

    const clean = await open(node, { protocolVersion: 4, clientId: 'v4-long-queue', clean: true })
    expect(clean.connack.sessionPresent).toBe(false)
    await clean.client.subscribeAsync('v4/long/live', { qos: 1 })
    await pub.publishAsync('v4/long/live', 'one', { qos: 1 })
    await pub.publishAsync('v4/long/live', 'zero', { qos: 0 })
    await waitFor(() => clean.messages.length >= 2, 'the QoS 1 and QoS 0 messages')
    expect(clean.messages.map(m => [m.topic, m.payload.toString(), m.packet.qos])).toEqual([
      ['v4/long/live', 'one', 1],
      ['v4/long/live', 'zero', 0]
    ])
  })
})

describe('MQTT 5 Session Expiry Interval', () => {
  it('keeps the session while the interval runs: subscriptions and queued messages, with sessionPresent', async () => {
    const props = { sessionExpiryInterval: 10 }
    const first = await open(node, { protocolVersion: 5, clientId: 'v5-kept', clean: false, properties: props })
    await first.client.subscribeAsync('v5/kept/t', { qos: 1 })
    await leave(first.client)
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('v5/kept/t', 'queued', { qos: 1 })

    const again = await open(node, { protocolVersion: 5, clientId: 'v5-kept', clean: false, properties: props })
    expect(again.connack.sessionPresent).toBe(true)
    await waitFor(() => again.messages.length >= 1, 'queued message')
    expect(again.messages.map(m => m.payload.toString())).toEqual(['queued'])
  })

  it('ends the session with the connection when the CONNECT has no Session Expiry Interval', async () => {
    const first = await open(node, { protocolVersion: 5, clientId: 'v5-zero', clean: false })
    await first.client.subscribeAsync('v5/zero/t', { qos: 1 })
    await leave(first.client)
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('v5/zero/t', 'queued', { qos: 1 })

    const again = await open(node, { protocolVersion: 5, clientId: 'v5-zero', clean: false })
    expect(again.connack.sessionPresent).toBe(false)
    await onlyMarkerArrives(again, pub, 'v5/zero/marker', async () => {
      await pub.publishAsync('v5/zero/t', 'after', { qos: 1 })
    })
  })

  it('discards the session once the interval has passed', async () => {
    const props = { sessionExpiryInterval: 1 }
    const first = await open(node, { protocolVersion: 5, clientId: 'v5-expired', clean: false, properties: props })
    await first.client.subscribeAsync('v5/expired/t', { qos: 1 })
    await leave(first.client)
    const gone = Date.now()
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('v5/expired/t', 'queued', { qos: 1 })

    // the broker's 1 s expiry timer started when it saw the DISCONNECT (before `gone`)
    await until(gone + 2000, 'the session expiry interval to pass')
    const again = await open(node, { protocolVersion: 5, clientId: 'v5-expired', clean: false, properties: props })
    expect(again.connack.sessionPresent).toBe(false)
    await onlyMarkerArrives(again, pub, 'v5/expired/marker', async () => {
      await pub.publishAsync('v5/expired/t', 'after', { qos: 1 })
    })
  })

  it('discards the old session on Clean Start even when the new one has an expiry interval', async () => {
    const props = { sessionExpiryInterval: 60 }
    const first = await open(node, { protocolVersion: 5, clientId: 'v5-cleanstart', clean: false, properties: props })
    await first.client.subscribeAsync('v5/cleanstart/t', { qos: 1 })
    await leave(first.client)
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('v5/cleanstart/t', 'queued', { qos: 1 })

    const fresh = await open(node, { protocolVersion: 5, clientId: 'v5-cleanstart', clean: true, properties: props })
    expect(fresh.connack.sessionPresent).toBe(false)
    await onlyMarkerArrives(fresh, pub, 'v5/cleanstart/marker', async () => {
      await pub.publishAsync('v5/cleanstart/t', 'after', { qos: 1 })
    })
  })

  it('caps a longer requested interval to mqtt.session_expiry_interval and says so in CONNACK', async () => {
    const capped = await open(node, { protocolVersion: 5, clientId: 'v5-capped', clean: true, properties: { sessionExpiryInterval: 7 * 24 * 3600 } })
    expect(capped.connack.properties?.sessionExpiryInterval).toBe(SESSION_EXPIRY_CAP_S)
  })
})

describe('zero-length client identifiers', () => {
  it('accepts an MQTT 3.1.1 clean session with an empty client id', async () => {
    const anon = await open(node, { protocolVersion: 4, clientId: '', clean: true })
    expect(anon.connack.returnCode).toBe(0)
    const arrived = nextMessage(anon.client)
    await anon.client.subscribeAsync('zero/v4', { qos: 1 })
    await anon.client.publishAsync('zero/v4', 'works', { qos: 1 })
    expect((await arrived).payload.toString()).toBe('works')
  })

  it('refuses an MQTT 3.1.1 clean=false session with an empty client id with return code 2 and closes it', async () => {
    const raw = await openRaw(node, 4)
    // mqtt-packet refuses to encode this CONNECT, so it is written by hand [MQTT-3.1.3-8]
    raw.write(Buffer.from([
      0x10, 12, // CONNECT, remaining length
      0, 4, 0x4d, 0x51, 0x54, 0x54, 4, // "MQTT", protocol level 4
      0x00, // connect flags: CleanSession = 0
      0, 0, // keep alive
      0, 0 // client id: zero bytes
    ]))
    expect((await raw.next('connack'))?.returnCode).toBe(2)
    await waitFor(raw.closed, 'the connection to close')
  })

  it('assigns an MQTT 5 client with an empty client id its own Assigned Client Identifier', async () => {
    const a = await open(node, { protocolVersion: 5, clientId: '' })
    const b = await open(node, { protocolVersion: 5, clientId: '' })
    const idA = a.connack.properties?.assignedClientIdentifier
    const idB = b.connack.properties?.assignedClientIdentifier
    expect(typeof idA).toBe('string')
    expect(idA.length).toBeGreaterThan(0)
    expect(idB).not.toBe(idA)
  })
})

describe('session takeover', () => {
  it('disconnects an MQTT 5 client with 0x8E (Session taken over) when its client id connects again', async () => {
    const first = await open(node, { protocolVersion: 5, clientId: 'takeover-v5' })
    const second = await open(node, { protocolVersion: 5, clientId: 'takeover-v5' })
    await waitFor(first.closed, 'the first connection to close')
    expect(first.disconnect()?.reasonCode).toBe(0x8e)
    // the new connection is the one that works
    const arrived = nextMessage(second.client)
    await second.client.subscribeAsync('takeover/v5', { qos: 1 })
    await second.client.publishAsync('takeover/v5', 'mine', { qos: 1 })
    expect((await arrived).payload.toString()).toBe('mine')
  })

  it('closes the older MQTT 3.1.1 connection when its client id connects again', async () => {
    const first = await open(node, { protocolVersion: 4, clientId: 'takeover-v4' })
    const second = await open(node, { protocolVersion: 4, clientId: 'takeover-v4' })
    await waitFor(first.closed, 'the first connection to close')
    expect(second.client.connected).toBe(true)
  })
})

describe('keep alive', () => {
  it('disconnects a client that is silent for its keep alive and publishes its will', async () => {
    const watcher = await connect(node, { protocolVersion: 4 })
    await watcher.subscribeAsync('keepalive/will', { qos: 1 })
    const will = nextMessage(watcher, 15000)
    const raw = await openRaw(node, 4)
    raw.send(connectPacket(4, {
      clientId: 'silent-keepalive',
      keepalive: 1,
      will: { topic: 'keepalive/will', payload: Buffer.from('timed out'), qos: 1, retain: false }
    }))
    expect((await raw.next('connack'))?.returnCode).toBe(0)
    // from here on the client sends nothing, not even PINGREQ
    await waitFor(raw.closed, 'the broker to close the silent connection')
    expect((await will).payload.toString()).toBe('timed out')
  })
})

describe('MQTT 5 Will Delay Interval', () => {
  async function watch (topic: string): Promise<Opened> {
    const watcher = await open(node, { protocolVersion: 5 })
    await watcher.client.subscribeAsync(topic, { qos: 1 })
    return watcher
  }

  function willOpts (clientId: string, topic: string, willDelayInterval: number, sessionExpiryInterval: number): IClientOptions {
    return {
      protocolVersion: 5,
      clientId,
      clean: true,
      properties: { sessionExpiryInterval },
      will: { topic, payload: Buffer.from(`will of ${clientId}`), qos: 1, retain: false, properties: { willDelayInterval } }
    }
  }

  it('publishes the will after the delay when the client does not come back', async () => {
    const watcher = await watch('willdelay/late')
    const dying = await open(node, willOpts('will-late', 'willdelay/late', 1, 10))
    drop(dying.client)
    await waitFor(() => watcher.messages.length > 0, 'the delayed will', 15000)
    expect(watcher.messages.map(m => m.payload.toString())).toEqual(['will of will-late'])
  })

  it('does not publish the will when the client reconnects within the delay', async () => {
    const watcher = await watch('willdelay/back')
    const dying = await open(node, willOpts('will-back', 'willdelay/back', 1, 10))
    drop(dying.client)
    const droppedAt = Date.now()
    // resume the same session (no will this time) well inside the 1 s delay
    await open(node, { protocolVersion: 5, clientId: 'will-back', clean: false, properties: { sessionExpiryInterval: 10 } })
    await until(droppedAt + 2000, 'the will delay to pass')
    const pub = await connect(node, { protocolVersion: 5 })
    await onlyMarkerArrives(watcher, pub, 'willdelay/back/marker')
  })

  it('publishes the will when the session ends if the session expiry is shorter than the will delay', async () => {
    const watcher = await watch('willdelay/capped')
    const dying = await open(node, willOpts('will-capped', 'willdelay/capped', 30, 1))
    drop(dying.client)
    // a 30 s delay would outlast this wait: the will comes with the session's end after 1 s
    await waitFor(() => watcher.messages.length > 0, 'the will at session end', 10000)
    expect(watcher.messages.map(m => m.payload.toString())).toEqual(['will of will-capped'])
  })
})
