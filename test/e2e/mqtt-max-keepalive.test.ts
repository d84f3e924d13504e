/**
 * `mqtt.max_keepalive` (docs/mqtt.md, Server Keep Alive) seen from real clients: mqtt.js
 * (MQTT 5 and 3.1.1) and bare sockets that send nothing after CONNECT, so the broker's own
 * timeout shows. The cap is 2 s, so a client held to it is dropped after 3 s (1.5 x, the
 * default `mqtt.keepalive_backoff`). Last, the CONNACKs are compared with Mosquitto's
 * `max_keepalive` (10 s there: Mosquitto refuses less).
 */
import { spawnSync } from 'node:child_process'
import mqtt, { type IClientOptions } from 'mqtt'
import { apiRequest, startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, connectPacket, nodeWith, open, openRaw, refusedConnack, type RawClient } from '../helpers/mqtt.js'
import { mosquittoBinary, startMosquitto, type MosquittoServer } from '../helpers/servers/mosquitto.js'

afterEach(async () => { await closeOpened() })

/** The keep alive the connections API reports for `clientId`. */
async function reportedKeepalive (node: TestNode, clientId: string): Promise<number> {
  const res = await apiRequest(node, `/connections/${clientId}`)
  return res.data[0].keepalive
}

/** A bare socket that sends CONNECT (`version`, `keepalive`) and then nothing; resolves with it once CONNACK came. */
async function silentClient (node: TestNode, version: 4 | 5, clientId: string, keepalive: number): Promise<{ raw: RawClient, connack: any, at: number }> {
  const raw = await openRaw(node, version)
  raw.send(connectPacket(version, { clientId, keepalive }))
  const connack = await raw.next('connack')
  return { raw, connack, at: Date.now() }
}

describe('mqtt.max_keepalive = 2s', () => {
  const node = nodeWith({ 'mqtt.max_keepalive': '2s' })

  it('tells an MQTT 5 client asking for more, or for none (0), to use 2 s (Server Keep Alive in CONNACK)', async () => {
    const more = await open(node(), { protocolVersion: 5, clientId: 'ka-more', keepalive: 60 })
    expect(more.connack.properties?.serverKeepAlive).toBe(2)
    expect(await reportedKeepalive(node(), 'ka-more')).toBe(2)
    const none = await silentClient(node(), 5, 'ka-none', 0)
    expect([none.connack.reasonCode, none.connack.properties?.serverKeepAlive]).toEqual([0, 2])
    expect(await reportedKeepalive(node(), 'ka-none')).toBe(2)
  })

  it('lets an MQTT 5 client within the cap keep its own keep alive (no Server Keep Alive)', async () => {
    const within = await open(node(), { protocolVersion: 5, clientId: 'ka-within', keepalive: 1 })
    expect(within.connack.reasonCode).toBe(0)
    expect(within.connack.properties?.serverKeepAlive).toBeUndefined()
    expect(await reportedKeepalive(node(), 'ka-within')).toBe(1)
    const at = await open(node(), { protocolVersion: 5, clientId: 'ka-at', keepalive: 2 })
    expect(at.connack.properties?.serverKeepAlive).toBeUndefined()
  })

  it('holds a client to the cap: a silent one that asked for 60 s is dropped after 3 s, one within keeps its own 1.5 s; mqtt.js pings at 2 s and stays', async () => {
    const pinging = await open(node(), { protocolVersion: 5, clientId: 'ka-pinging', keepalive: 60 })
    const held = await silentClient(node(), 5, 'ka-held', 60)
    expect(held.connack.properties?.serverKeepAlive).toBe(2)
    const own = await silentClient(node(), 5, 'ka-own', 1)
    let ownClosedAfter = -1
    await waitFor(() => {
      if (ownClosedAfter < 0 && own.raw.closed()) ownClosedAfter = Date.now() - own.at
      return held.raw.closed()
    }, 'the held client to be dropped', 6000)
    const heldClosedAfter = Date.now() - held.at
    // 2 s x 1.5; aedes arms the timer at CONNECT, a little before the CONNACK was read
    expect(heldClosedAfter).toBeGreaterThanOrEqual(2800)
    expect(heldClosedAfter).toBeLessThan(4500)
    expect(ownClosedAfter).toBeGreaterThanOrEqual(1300)
    expect(ownClosedAfter).toBeLessThan(2800)
    // mqtt.js uses the Server Keep Alive it was told [MQTT-3.2.2-21]: its pings keep it connected
    expect(pinging.closed()).toBe(false)
    expect(pinging.client.keepalive).toBe(2)
  })

  it('refuses an MQTT 3.1.1 client asking for more, or for none, with CONNACK 0x02 (it cannot be told); accepts one within', async () => {
    expect((await refusedConnack(node(), { protocolVersion: 4, clientId: 'v4-more', keepalive: 60 })).returnCode).toBe(2)
    const none = await silentClient(node(), 4, 'v4-none', 0)
    expect(none.connack.returnCode).toBe(2)
    await waitFor(() => none.raw.closed(), 'the refused connection to close')
    const within = await open(node(), { protocolVersion: 4, clientId: 'v4-within', keepalive: 2 })
    expect(within.connack.returnCode).toBe(0)
    expect(await reportedKeepalive(node(), 'v4-within')).toBe(2)
  })

  it('follows a change through the configs API for new connections; 0 turns the cap off', async () => {
    const res = await apiRequest(node(), '/configs/starling', 'PUT', { 'mqtt.max_keepalive': '5s' })
    expect(res.data).toEqual([{ node: node().name, applied: ['mqtt.max_keepalive'], restart_required: [] }])
    try {
      expect((await open(node(), { protocolVersion: 5, keepalive: 60 })).connack.properties?.serverKeepAlive).toBe(5)
      expect((await open(node(), { protocolVersion: 4, keepalive: 5 })).connack.returnCode).toBe(0)
      await apiRequest(node(), '/configs/starling', 'PUT', { 'mqtt.max_keepalive': '0' })
      expect((await open(node(), { protocolVersion: 5, keepalive: 600 })).connack.properties?.serverKeepAlive).toBeUndefined()
      expect((await open(node(), { protocolVersion: 4, keepalive: 0 })).connack.returnCode).toBe(0)
    } finally {
      await apiRequest(node(), '/configs/starling', 'PUT', { 'mqtt.max_keepalive': '2s' })
    }
  })
})

describe('mqtt.max_keepalive beside mqtt.server_keepalive', () => {
  const node = nodeWith({ 'mqtt.server_keepalive': '60s', 'mqtt.max_keepalive': '30s' })

  it('lowers the Server Keep Alive of mqtt.server_keepalive to the cap', async () => {
    expect((await open(node(), { protocolVersion: 5, keepalive: 10 })).connack.properties?.serverKeepAlive).toBe(30)
  })
})

describe('compared with Mosquitto 2 (max_keepalive 10)', () => {
  let mosquitto: MosquittoServer
  let node: TestNode
  beforeAll(async () => {
    mosquitto = await startMosquitto({ extraConfig: ['max_keepalive 10'] })
    node = await startTestNode({ 'mqtt.max_keepalive': '10s' })
  }, 30_000)
  afterAll(async () => {
    await node?.destroy()
    await mosquitto?.close()
  })

  /** The CONNACK `port` answers a CONNECT with `opts` (the client is closed). */
  async function connackAt (port: number, opts: IClientOptions): Promise<any> {
    const client = mqtt.connect({ host: '127.0.0.1', port, reconnectPeriod: 0, connectTimeout: 5000, ...opts })
    client.on('error', () => {})
    try {
      return await new Promise<any>((resolve) => {
        client.on('packetreceive', (p: any) => { if (p.cmd === 'connack') resolve(p) })
        client.once('close', () => resolve(null))
      })
    } finally {
      client.end(true)
    }
  }

  it('answers MQTT 5 clients as Mosquitto does: Server Keep Alive 10 above the cap and for 0, none within', async () => {
    for (const keepalive of [5, 10, 11, 600, 0]) {
      const ours = await connackAt(node.port('mqtt:tcp'), { protocolVersion: 5, keepalive })
      const theirs = await connackAt(mosquitto.port, { protocolVersion: 5, keepalive })
      expect([keepalive, ours.reasonCode, ours.properties?.serverKeepAlive]).toEqual([keepalive, theirs.reasonCode, theirs.properties?.serverKeepAlive])
    }
  })

  it('answers MQTT 3.1.1 clients above the cap as Mosquitto 2.0.12 and later do (0x02); 2.0.11 still accepted them', async () => {
    const version = /mosquitto version (\d+)\.(\d+)\.(\d+)/.exec(spawnSync(mosquittoBinary(), ['-h'], { encoding: 'utf8' }).stdout ?? '')
    expect(version).not.toBeNull()
    const [major, minor, patch] = version!.slice(1).map(Number)
    const refusesV3 = major > 2 || (major === 2 && (minor > 0 || patch >= 12))
    for (const keepalive of [11, 0]) {
      const ours = await connackAt(node.port('mqtt:tcp'), { protocolVersion: 4, keepalive })
      const theirs = await connackAt(mosquitto.port, { protocolVersion: 4, keepalive })
      expect([keepalive, ours.returnCode]).toEqual([keepalive, 2])
      expect([keepalive, theirs.returnCode]).toEqual([keepalive, refusesV3 ? 2 : 0])
    }
    const within = await connackAt(mosquitto.port, { protocolVersion: 4, keepalive: 10 })
    expect(within.returnCode).toBe((await connackAt(node.port('mqtt:tcp'), { protocolVersion: 4, keepalive: 10 })).returnCode)
  })
})
