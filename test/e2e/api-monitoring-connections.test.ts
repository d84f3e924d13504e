/**
 * `/api/v3/connections` (cluster and per node, by client id, by username), pagination and
 * kicking a client out, over real HTTP with mqtt.js clients on TCP, WebSocket and TLS.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { startTestNode, connect, closeClients, waitFor, API_AUTH, type TestNode } from '../helpers/node.js'
import { PROJECT_ROOT } from '../helpers/process.js'

let node: TestNode
let base: string
let certs: string
const extra = new Set<MqttClient>()

beforeAll(async () => {
  certs = mkdtempSync(join(tmpdir(), 'starling-certs-'))
  execFileSync('bash', [join(PROJECT_ROOT, 'etc/certs/make-dev-certs.sh'), certs], { stdio: 'pipe' })
  const tls: Record<string, string> = {}
  for (const kind of ['ssl', 'wss']) {
    tls[`listener.${kind}.external.keyfile`] = join(certs, 'key.pem')
    tls[`listener.${kind}.external.certfile`] = join(certs, 'cert.pem')
    tls[`listener.${kind}.external.cacertfile`] = join(certs, 'cacert.pem')
  }
  node = await startTestNode({ ...tls, 'listener.ssl.external.verify': 'verify_peer', 'listener.wss.external.verify': 'verify_peer', 'broker.sys_interval': '0' })
  base = `http://127.0.0.1:${node.api.server!.port}/api/v3`
})
afterAll(async () => {
  await node.destroy()
  rmSync(certs, { recursive: true, force: true })
})
afterEach(async () => {
  await closeClients()
  await Promise.all([...extra].map(c => new Promise<void>(resolve => c.end(true, {}, () => resolve()))))
  extra.clear()
  await waitFor(() => node.broker.core.clientCount === 0, 'no clients left')
})

async function api (path: string, method = 'GET'): Promise<{ status: number, body: any }> {
  const res = await fetch(base + path, { method, headers: { authorization: API_AUTH } })
  return { status: res.status, body: await res.json() }
}

/** Connects to any URL (ws, mqtts) and resolves once connected. */
async function connectUrl (url: string, opts: IClientOptions): Promise<MqttClient> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...opts })
  extra.add(client)
  await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
  return client
}

const CONNECTION_TYPES: Record<string, string> = {
  clean_start: 'boolean',
  client_id: 'string',
  conn_mod: 'string',
  connected_at: 'string',
  heap_size: 'integer',
  ipaddress: 'string',
  is_bridge: 'boolean',
  keepalive: 'integer',
  mailbox_len: 'integer',
  node: 'string',
  peercert: 'string',
  port: 'integer',
  proto_name: 'string',
  proto_ver: 'integer',
  recv_cnt: 'integer',
  recv_msg: 'integer',
  recv_oct: 'integer',
  recv_pkt: 'integer',
  reductions: 'integer',
  send_cnt: 'integer',
  send_msg: 'integer',
  send_oct: 'integer',
  send_pend: 'integer',
  send_pkt: 'integer',
  username: 'string',
  zone: 'string'
}

/** Asserts the spec's Connection fields, exactly, with their types. */
function expectConnection (c: any): void {
  expect(Object.keys(c).sort()).toEqual(Object.keys(CONNECTION_TYPES))
  for (const [key, type] of Object.entries(CONNECTION_TYPES)) {
    if (type === 'integer') expect([key, Number.isInteger(c[key])]).toEqual([key, true])
    else expect([key, typeof c[key]]).toEqual([key, type])
  }
  expect(c.connected_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  expect(c.zone).toBe('external')
  expect(c.node).toBe(node.name)
}

describe('GET /connections', () => {
  it('reports every Connection field of an MQTT 3.1.1 client with a username', async () => {
    const client = await connect(node, { clientId: 'conn-v4', username: 'alice', protocolVersion: 4, keepalive: 42, clean: true })
    await client.publishAsync('c/1', 'hello', { qos: 1 })
    const { status, body } = await api('/connections/')
    expect(status).toBe(200)
    expect(body.meta).toEqual({ page: 1, limit: 10000, count: 1 })
    const [c] = body.data
    expectConnection(c)
    expect(c).toMatchObject({
      client_id: 'conn-v4',
      username: 'alice',
      clean_start: true,
      conn_mod: 'starling_connection',
      ipaddress: '127.0.0.1',
      is_bridge: false,
      keepalive: 42,
      mailbox_len: 0,
      peercert: 'nossl',
      proto_name: 'MQTT',
      proto_ver: 4,
      recv_msg: 1,
      send_pend: 0
    })
    expect(c.port).toBe((client.stream as any).localPort)
    expect(c.recv_pkt).toBeGreaterThanOrEqual(2) // CONNECT, PUBLISH
    expect(c.recv_oct).toBeGreaterThan(0)
    expect(c.send_pkt).toBeGreaterThanOrEqual(2) // CONNACK, PUBACK
    expect(c.reductions).toBe(c.recv_pkt + c.send_pkt)
  })

  it('reports username as the text undefined and proto_ver 5 for an MQTT 5 client without one', async () => {
    await connect(node, { clientId: 'conn-v5', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 60 } })
    const [c] = (await api('/connections/conn-v5')).body.data
    expectConnection(c)
    expect(c).toMatchObject({ username: 'undefined', proto_ver: 5, clean_start: false })
  })

  it('reports WebSocket connections with conn_mod starling_ws_connection', async () => {
    await connectUrl(`ws://127.0.0.1:${node.port('mqtt:ws')}/mqtt`, { clientId: 'conn-ws', protocolVersion: 4 })
    const [c] = (await api('/connections/conn-ws')).body.data
    expectConnection(c)
    expect(c).toMatchObject({ conn_mod: 'starling_ws_connection', peercert: 'nossl' })
  })

  it('reports the client certificate subject of a TLS connection as peercert', async () => {
    await connectUrl(`mqtts://127.0.0.1:${node.port('mqtt:ssl')}`, {
      clientId: 'conn-tls',
      protocolVersion: 4,
      ca: readFileSync(join(certs, 'cacert.pem')),
      cert: readFileSync(join(certs, 'client-cert.pem')),
      key: readFileSync(join(certs, 'client-key.pem')),
      servername: 'localhost'
    })
    const [c] = (await api('/connections/conn-tls')).body.data
    expectConnection(c)
    expect(c.peercert).toBe('O=Starling, CN=starling-client')
  })

  it('reports the client certificate subject of a WebSocket/TLS connection as peercert', async () => {
    await connectUrl(`wss://127.0.0.1:${node.port('mqtt:wss')}/mqtt`, {
      clientId: 'conn-wss',
      protocolVersion: 4,
      ca: readFileSync(join(certs, 'cacert.pem')),
      cert: readFileSync(join(certs, 'client-cert.pem')),
      key: readFileSync(join(certs, 'client-key.pem')),
      servername: 'localhost'
    } as any)
    const [c] = (await api('/connections/conn-wss')).body.data
    expectConnection(c)
    expect(c).toMatchObject({ conn_mod: 'starling_ws_connection', peercert: 'O=Starling, CN=starling-client' })
  })

  it('pages through the connections with _page and _limit', async () => {
    for (let i = 0; i < 5; i++) await connect(node, { clientId: `page-${i}` })
    const all = (await api('/connections/')).body.data.map((c: any) => c.client_id)
    expect(all.sort()).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4'])
    const pages: string[] = []
    for (let page = 1; page <= 3; page++) {
      const { body } = await api(`/connections/?_page=${page}&_limit=2`)
      expect(body.meta).toEqual({ page, limit: 2, count: 5 })
      expect(body.data).toHaveLength(page === 3 ? 1 : 2)
      pages.push(...body.data.map((c: any) => c.client_id))
    }
    expect(pages.sort()).toEqual(all)
    expect((await api('/connections/?_page=4&_limit=2')).body).toEqual({ code: 0, data: [], meta: { page: 4, limit: 2, count: 5 } })
    const perNode = (await api(`/nodes/${node.name}/connections/?_page=2&_limit=3`)).body
    expect(perNode.meta).toEqual({ page: 2, limit: 3, count: 5 })
    expect(perNode.data).toHaveLength(2)
    perNode.data.forEach(expectConnection)
  })

  it('refuses a _limit that is not a positive integer with 108', async () => {
    const { status, body } = await api('/connections/?_limit=zero')
    expect(status).toBe(400)
    expect(body.code).toBe(108)
  })

  it('looks a client up by id, cluster-wide and on its node, as an array', async () => {
    await connect(node, { clientId: 'lookup-1' })
    expect((await api('/connections/lookup-1')).body.data.map((c: any) => c.client_id)).toEqual(['lookup-1'])
    const onNode = (await api(`/nodes/${node.name}/connections/lookup-1`)).body.data
    expect(onNode).toHaveLength(1)
    expectConnection(onNode[0])
    expect((await api('/connections/nobody')).body).toEqual({ code: 0, data: [] })
  })

  it('looks connections up by username, cluster-wide and on a node', async () => {
    await connect(node, { clientId: 'user-1', username: 'bob' })
    await connect(node, { clientId: 'user-2', username: 'bob' })
    await connect(node, { clientId: 'user-3', username: 'carol' })
    const bob = (await api('/connection/username/bob')).body.data
    expect(bob.map((c: any) => c.client_id).sort()).toEqual(['user-1', 'user-2'])
    bob.forEach(expectConnection)
    expect((await api(`/nodes/${node.name}/connection/username/carol`)).body.data.map((c: any) => c.client_id)).toEqual(['user-3'])
    expect((await api('/connection/username/nobody')).body.data).toEqual([])
  })

  it('answers the per-node paths for an unknown node with 404 and a clear message', async () => {
    for (const path of ['/nodes/ghost@host/connections/', '/nodes/ghost@host/connections/x', '/nodes/ghost@host/connection/username/u']) {
      const { status, body } = await api(path)
      expect(status).toBe(404)
      expect(body).toEqual({ code: 102, message: `unknown node ghost@host; running nodes: ${node.name}` })
    }
  })
})

describe('DELETE /connections/:clientid', () => {
  const kicked = (): number => {
    const info = node.listeners.find(l => l.spec.protocol === 'mqtt:tcp')!.info()
    return Array.isArray(info.shutdown_count) ? 0 : (info.shutdown_count.kicked ?? 0)
  }

  it('kicks an MQTT 5 client with DISCONNECT 0x98 and counts it as kicked', async () => {
    const before = kicked()
    const reasons: string[] = []
    const off = node.hooks.on('client.disconnected', (e) => { if (e.client_id === 'kick-v5') reasons.push(e.reason) })
    const client = await connect(node, { clientId: 'kick-v5', protocolVersion: 5 })
    const disconnect = new Promise<any>(resolve => client.once('disconnect', resolve))
    expect(await api('/connections/kick-v5', 'DELETE')).toEqual({ status: 200, body: { code: 0 } })
    expect((await disconnect).reasonCode).toBe(0x98)
    await waitFor(() => kicked() === before + 1, 'shutdown_count.kicked')
    off()
    expect(reasons).toEqual(['kicked'])
    expect((await api('/connections/kick-v5')).body.data).toEqual([])
    const listeners = (await api(`/nodes/${node.name}/listeners`)).body.data
    expect(listeners.find((l: any) => l.protocol === 'mqtt:tcp').shutdown_count.kicked).toBe(before + 1)
  })

  it('kicks an MQTT 3.1.1 client by closing its connection', async () => {
    const client = await connect(node, { clientId: 'kick-v4', protocolVersion: 4 })
    const closed = new Promise<void>(resolve => client.once('close', () => resolve()))
    expect((await api('/connections/kick-v4', 'DELETE')).body).toEqual({ code: 0 })
    await closed
    expect((await api('/connections/')).body.data).toEqual([])
  })

  it('answers 112 for a client that is not online, and changes nothing', async () => {
    await connect(node, { clientId: 'stays' })
    const { status, body } = await api('/connections/offline-client', 'DELETE')
    expect(status).toBe(404)
    expect(body).toEqual({ code: 112, message: 'client offline-client is not online' })
    expect((await api('/connections/')).body.data.map((c: any) => c.client_id)).toEqual(['stays'])
  })

  it('treats client ids named like object properties as any other id', async () => {
    for (const id of ['__proto__', 'constructor', 'toString']) {
      expect((await api(`/connections/${id}`)).body).toEqual({ code: 0, data: [] })
      expect((await api(`/sessions/${id}`)).body).toEqual({ code: 0, data: [] })
      expect((await api(`/subscriptions/${id}`)).body).toEqual({ code: 0, data: [] })
      expect((await api(`/connections/${id}`, 'DELETE')).body.code).toBe(112)
    }
  })
})
