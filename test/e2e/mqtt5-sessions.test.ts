/**
 * Sessions end to end (MQTT 5.0 §3.1.2.4, §3.1.2.11.2, §3.1.3.1, §3.2.2.1.1; MQTT 3.1.1
 * §3.1.2.4, §3.2.2.2): resuming a session with Session Expiry 0, session present for a
 * session without subscriptions, and the client identifiers the broker assigns.
 */
import { startTestNode, connect, closeClients, waitFor, payloads, type TestNode } from '../helpers/node.js'
import { open, leave, closeOpened, openRaw, connectPacket, nodeWith } from '../helpers/mqtt.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode({ 'mqtt.max_clientid_len': '23' }) })
afterAll(async () => { await node.destroy() })
afterEach(async () => {
  await closeOpened()
  await closeClients()
})

describe('resuming a session with Session Expiry 0', () => {
  it('sends the queued messages, then ends the session with the connection [MQTT-3.1.2-23]', async () => {
    const first = await open(node, { protocolVersion: 5, clientId: 'resume-zero', clean: false, properties: { sessionExpiryInterval: 99999 } })
    await first.client.subscribeAsync('resume/zero/t', { qos: 2 })
    await leave(first.client)
    const pub = await connect(node, { protocolVersion: 5 })
    await pub.publishAsync('resume/zero/t', 'one', { qos: 1 })
    await pub.publishAsync('resume/zero/t', 'two', { qos: 2 })
    await pub.publishAsync('resume/zero/t', 'three', { qos: 1 })

    // Clean Start 0, no Session Expiry Interval: the session resumes and ends with this connection
    const back = await open(node, { protocolVersion: 5, clientId: 'resume-zero', clean: false })
    expect(back.connack.sessionPresent).toBe(true)
    await waitFor(() => payloads(back.messages, 'resume/zero/t').length === 3, 'the three queued messages')
    // mqtt.js hands a QoS 2 message over at PUBREL, after the QoS 1 that followed it
    expect(payloads(back.messages, 'resume/zero/t').sort()).toEqual(['one', 'three', 'two'])
    await leave(back.client)

    const after = await open(node, { protocolVersion: 5, clientId: 'resume-zero', clean: false })
    expect(after.connack.sessionPresent).toBe(false)
  })
})

describe('session present for a session without subscriptions [MQTT-3.2.2-2]', () => {
  it('MQTT 3.1.1 clean session 0', async () => {
    const first = await open(node, { protocolVersion: 4, clientId: 'nosubs-v4', clean: false })
    expect(first.connack.sessionPresent).toBe(false)
    await leave(first.client)
    const back = await open(node, { protocolVersion: 4, clientId: 'nosubs-v4', clean: false })
    expect(back.connack.sessionPresent).toBe(true)
  })

  it('MQTT 5 with a Session Expiry Interval', async () => {
    const opts = { protocolVersion: 5 as const, clientId: 'nosubs-v5', clean: false, properties: { sessionExpiryInterval: 60 } }
    const first = await open(node, opts)
    expect(first.connack.sessionPresent).toBe(false)
    await leave(first.client)
    const back = await open(node, opts)
    expect(back.connack.sessionPresent).toBe(true)
  })

  it('not after a session that ended with its connection, nor after Clean Start', async () => {
    const ephemeral = await open(node, { protocolVersion: 5, clientId: 'nosubs-gone', clean: false })
    await leave(ephemeral.client)
    const back = await open(node, { protocolVersion: 5, clientId: 'nosubs-gone', clean: false })
    expect(back.connack.sessionPresent).toBe(false)
    await leave(back.client)

    const kept = await open(node, { protocolVersion: 4, clientId: 'nosubs-clean', clean: false })
    await leave(kept.client)
    const fresh = await open(node, { protocolVersion: 4, clientId: 'nosubs-clean', clean: true })
    expect(fresh.connack.sessionPresent).toBe(false)
    await leave(fresh.client)
    const again = await open(node, { protocolVersion: 4, clientId: 'nosubs-clean', clean: false })
    expect(again.connack.sessionPresent).toBe(false)
  })
})

describe('assigned client identifiers', () => {
  it('MQTT 5: a short identifier in Assigned Client Identifier, accepted under mqtt.max_clientid_len 23 [MQTT-3.1.3-7]', async () => {
    const raw = await openRaw(node, 5)
    raw.send(connectPacket(5))
    const connack = await raw.next('connack')
    expect(connack.reasonCode).toBe(0)
    const id: string = connack.properties?.assignedClientIdentifier
    expect(id).toMatch(/^[0-9A-Za-z]{1,23}$/)
    expect(id.toLowerCase()).not.toContain('aedes')
    expect([...node.broker.core.clients()].map(c => c.id)).toContain(id)
  })

  it('MQTT 3.1.1: an empty id with clean session 1 gets an id of at most 23 characters [MQTT-3.1.3-6]', async () => {
    const raw = await openRaw(node, 4)
    raw.send(connectPacket(4))
    const connack = await raw.next('connack')
    expect(connack.returnCode).toBe(0)
    const ids = [...node.broker.core.clients()].map(c => c.id)
    expect(ids.some(id => id.length > 23 || id.toLowerCase().includes('aedes'))).toBe(false)
  })

  it('MQTT 3.1.1: an empty id with clean session 0 is refused with 0x02 [MQTT-3.1.3-8]', async () => {
    const raw = await openRaw(node, 4)
    // mqtt-packet refuses to encode this CONNECT: clean session 0, zero-length client id
    raw.write(Buffer.from([0x10, 12, 0, 4, 0x4d, 0x51, 0x54, 0x54, 4, 0x00, 0, 0, 0, 0]))
    const connack = await raw.next('connack')
    expect(connack.returnCode).toBe(2)
  })

  it('every connection gets its own identifier', async () => {
    const ids = new Set<string>()
    for (let i = 0; i < 5; i++) {
      const raw = await openRaw(node, 5)
      raw.send(connectPacket(5))
      ids.add((await raw.next('connack')).properties.assignedClientIdentifier)
    }
    expect(ids.size).toBe(5)
  })
})

describe('Server Keep Alive (docs/mqtt.md: applied to every v5 client, as EMQ X does)', () => {
  const keepaliveNode = nodeWith({ 'mqtt.server_keepalive': '60s' })

  it('tells a v5 client asking for a lower keep alive to use mqtt.server_keepalive too [MQTT-3.2.2-21]', async () => {
    const client = await open(keepaliveNode(), { protocolVersion: 5, keepalive: 10 })
    expect(client.connack.properties?.serverKeepAlive).toBe(60)
  })
})
