/**
 * The CONNECT with Clean Start, which node/mqtt/connect.ts handles in place of aedes' connect
 * handler (issue 22, CPU per CONNECT): what a client relies on, over real sockets, for the
 * paths that handler has of its own: an old session's queue dropped [MQTT-3.1.2-4], packets
 * sent right behind CONNECT, the keep alive armed at CONNECT, a takeover.
 */
import { startTestNode, connect, closeClients, waitFor, type TestNode } from '../helpers/node.js'
import { open, leave, closeOpened, openRaw, connectPacket } from '../helpers/mqtt.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode() })
afterAll(async () => { await node.destroy() })
afterEach(async () => {
  await closeOpened()
  await closeClients()
})

describe('CONNECT with Clean Start', () => {
  it.each([4, 5] as const)('drops what the old session had queued, from the store too (MQTT %i)', async (protocolVersion) => {
    const clientId = `connect-queued-${protocolVersion}`
    const properties = protocolVersion === 5 ? { sessionExpiryInterval: 600 } : undefined
    const first = await open(node, { protocolVersion, clientId, clean: false, properties })
    await first.client.subscribeAsync(`connect/queued/${protocolVersion}`, { qos: 1 })
    await leave(first.client)
    const pub = await connect(node, { protocolVersion })
    await pub.publishAsync(`connect/queued/${protocolVersion}`, 'one', { qos: 1 })
    await pub.publishAsync(`connect/queued/${protocolVersion}`, 'two', { qos: 1 })
    await waitFor(() => node.broker.core.sessions.queuedOf(clientId).length === 2, 'two messages queued')

    const fresh = await open(node, { protocolVersion, clientId, clean: true })
    expect(fresh.connack.sessionPresent).toBe(false)
    await waitFor(() => node.broker.core.sessions.queuedOf(clientId).length === 0, 'the queue emptied')
    // a ping round trip: anything the broker would still send has been sent by then
    await fresh.client.subscribeAsync('connect/none', { qos: 0 })
    expect(fresh.messages).toEqual([])
  })

  it('answers packets sent in the same write as CONNECT, after CONNACK', async () => {
    const raw = await openRaw(node, 4)
    const mqttPacket = (await import('mqtt-packet')).default
    const frames = [
      connectPacket(4, { clientId: 'connect-pipelined', keepalive: 30 }),
      { cmd: 'subscribe', messageId: 7, subscriptions: [{ topic: 'connect/pipelined', qos: 0 }] },
      { cmd: 'publish', topic: 'connect/pipelined', payload: Buffer.from('self'), qos: 0, retain: false, dup: false },
      { cmd: 'pingreq' }
    ].map(p => mqttPacket.generate(p, { protocolVersion: 4 }))
    raw.write(Buffer.concat(frames))
    await raw.next('pingresp')
    await raw.next('suback')
    await raw.next('publish')
    // aedes' SUBACK waits for the subscription to be stored: it may come after the others
    expect(raw.packets[0]).toMatchObject({ cmd: 'connack', returnCode: 0 })
    expect(raw.packets.map(p => p.cmd).sort()).toEqual(['connack', 'pingresp', 'publish', 'suback'])
    expect(raw.packets.find(p => p.cmd === 'publish').payload.toString()).toBe('self')
  })

  it('counts the client once connected, and no longer once it left', async () => {
    await waitFor(() => node.broker.core.clientCount === 0, 'the earlier tests\' clients gone')
    const client = await open(node, { protocolVersion: 4, clientId: 'connect-counted', clean: true })
    expect(node.broker.core.clientCount).toBe(1)
    expect(node.broker.core.client('connect-counted')?.connected).toBe(true)
    await leave(client.client)
    await waitFor(() => node.broker.core.clientCount === 0, 'the client gone')
  })

  it('closes the old connection of a client id taken over, with DISCONNECT 0x8E for MQTT 5', async () => {
    const old = await openRaw(node, 5)
    old.send(connectPacket(5, { clientId: 'connect-takeover', keepalive: 30 }))
    expect((await old.next('connack')).reasonCode).toBe(0)
    const next = await openRaw(node, 5)
    next.send(connectPacket(5, { clientId: 'connect-takeover', keepalive: 30 }))
    expect((await next.next('connack')).reasonCode).toBe(0)
    expect((await old.next('disconnect'))?.reasonCode).toBe(0x8e)
    await waitFor(() => old.closed(), 'the old connection closed')
    expect(next.closed()).toBe(false)
    expect(node.broker.core.client('connect-takeover')?.connected).toBe(true)
  })
})
