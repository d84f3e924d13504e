/**
 * The MQTT listeners over real sockets: WebSocket (each sub-protocol), TLS, WSS, mutual
 * TLS, `max_conns`, and the counters a listener reports.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import net from 'node:net'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import WebSocket from 'ws'
import { startTestNode, connect, closeClients, nextMessage, waitFor, type TestNode } from '../helpers/node.js'
import { PROJECT_ROOT } from '../helpers/process.js'

const MAKE_CERTS = join(PROJECT_ROOT, 'etc/certs/make-dev-certs.sh')

/** Development CA, server and client certificates made by etc/certs/make-dev-certs.sh. */
interface Certs { dir: string, ca: Buffer, clientCert: Buffer, clientKey: Buffer }

function makeCerts (): Certs {
  const dir = mkdtempSync(join(tmpdir(), 'starling-certs-'))
  execFileSync('bash', [MAKE_CERTS, dir], { stdio: 'pipe' })
  return {
    dir,
    ca: readFileSync(join(dir, 'cacert.pem')),
    clientCert: readFileSync(join(dir, 'client-cert.pem')),
    clientKey: readFileSync(join(dir, 'client-key.pem'))
  }
}

/** Config pointing the `ssl` and `wss` listeners at `certs`. */
function tlsOverrides (certs: Certs, extra: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {}
  for (const kind of ['ssl', 'wss']) {
    out[`listener.${kind}.external.keyfile`] = join(certs.dir, 'key.pem')
    out[`listener.${kind}.external.certfile`] = join(certs.dir, 'cert.pem')
    out[`listener.${kind}.external.cacertfile`] = join(certs.dir, 'cacert.pem')
  }
  return { ...out, ...extra }
}

let certs: Certs
let otherCerts: Certs
const nodes: TestNode[] = []
const clients = new Set<MqttClient>()
const sockets = new Set<net.Socket | WebSocket>()

beforeAll(() => {
  certs = makeCerts()
  otherCerts = makeCerts()
})
afterEach(async () => {
  await closeClients()
  await Promise.all([...clients].map(c => new Promise<void>(resolve => c.end(true, {}, () => resolve()))))
  clients.clear()
  for (const s of sockets) {
    if (s instanceof WebSocket) s.terminate()
    else s.destroy()
  }
  sockets.clear()
})
afterAll(async () => {
  await Promise.all(nodes.map(n => n.destroy()))
  for (const c of [certs, otherCerts]) if (c !== undefined) rmSync(c.dir, { recursive: true, force: true })
})

async function startNode (overrides: Record<string, string> = {}): Promise<TestNode> {
  const node = await startTestNode(tlsOverrides(certs, overrides))
  nodes.push(node)
  return node
}

/** Connects an mqtt.js client to `url`; resolves after CONNACK, rejects if the connection fails first. */
async function connectUrl (url: string, opts: IClientOptions = {}): Promise<MqttClient> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...opts })
  clients.add(client)
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve())
    client.once('error', reject)
    client.once('close', () => reject(new Error('connection closed before CONNACK')))
  })
  client.on('error', () => {})
  return client
}

/** Whether connecting with `opts` fails: resolves 'refused' when it closes or errors before CONNACK. */
async function outcome (url: string, opts: IClientOptions = {}): Promise<'connected' | 'refused'> {
  try {
    await connectUrl(url, opts)
    return 'connected'
  } catch {
    return 'refused'
  }
}

/** A message from `from` reaches `to` (both ways make a round trip). */
async function delivers (from: MqttClient, to: MqttClient, topic: string): Promise<void> {
  await to.subscribeAsync(topic, { qos: 1 })
  const arrived = nextMessage(to)
  await from.publishAsync(topic, `to ${topic}`, { qos: 1 })
  const msg = await arrived
  expect(msg.topic).toBe(topic)
  expect(msg.payload.toString()).toBe(`to ${topic}`)
}

function tcpListener (node: TestNode) {
  const listener = node.listeners.find(l => l.spec.protocol === 'mqtt:tcp')
  if (listener === undefined) throw new Error('no mqtt:tcp listener')
  return listener
}

describe('WebSocket listener', () => {
  let node: TestNode
  beforeAll(async () => { node = await startNode() })

  it.each([
    ['mqtt', 'MQTT 5', { protocolVersion: 5 }],
    ['mqtt', 'MQTT 3.1.1', { protocolVersion: 4 }],
    ['mqttv3.1.1', 'MQTT 3.1.1', { protocolVersion: 4 }],
    ['mqttv3.1', 'MQTT 3.1', { protocolId: 'MQIsdp', protocolVersion: 3 }]
  ] as Array<[string, string, IClientOptions]>)('accepts sub-protocol %s (%s) at /mqtt and carries messages both ways with a TCP client', async (subProtocol, _name, version) => {
    let socket: WebSocket | undefined
    const ws = await connectUrl(`ws://127.0.0.1:${node.port('mqtt:ws')}/mqtt`, {
      ...version,
      // mqtt.js would ask for 'mqtt' (or 'mqttv3.1' for MQIsdp); ask for exactly the one under test
      createWebsocket: (url: string) => {
        socket = new WebSocket(url, [subProtocol])
        sockets.add(socket)
        return socket
      }
    })
    expect(socket!.protocol).toBe(subProtocol)
    const tcp = await connect(node, { protocolVersion: 4 })
    await delivers(tcp, ws, `ws/${subProtocol}/${version.protocolVersion}/in`)
    await delivers(ws, tcp, `ws/${subProtocol}/${version.protocolVersion}/out`)
  })

  it('refuses a WebSocket upgrade on another path', async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${node.port('mqtt:ws')}/not-mqtt`, ['mqtt'])
    sockets.add(socket)
    const result = await new Promise<string>(resolve => {
      socket.once('open', () => resolve('open'))
      socket.once('unexpected-response', (_req, res) => resolve(`refused ${res.statusCode}`))
      socket.once('error', () => resolve('refused'))
    })
    expect(result).toMatch(/^refused/)
  })

  it('closes a connection that sends MQTT in a text frame, without answering it [MQTT-6.0.0-1]', async () => {
    // found by the fuzzer's ws door: the CONNECT was taken and answered like a binary one
    const socket = new WebSocket(`ws://127.0.0.1:${node.port('mqtt:ws')}/mqtt`, ['mqtt'])
    sockets.add(socket)
    await new Promise<void>((resolve, reject) => { socket.once('open', () => resolve()); socket.once('error', reject) })
    const received: Buffer[] = []
    socket.on('message', (data: Buffer) => received.push(data))
    const closed = new Promise<number>(resolve => socket.once('close', (code: number) => resolve(code)))
    // CONNECT, MQTT 3.1.1, clean session, keep alive 60, client id "t"
    const connectPacket = Buffer.from([0x10, 0x0d, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x01, 0x74])
    socket.send(connectPacket, { binary: false })
    expect(await closed).toBe(1003)
    expect(received).toEqual([])
  })

  it('answers a plain HTTP request on the MQTT path with 426 Upgrade Required', async () => {
    const res = await fetch(`http://127.0.0.1:${node.port('mqtt:ws')}/mqtt`)
    expect(res.status).toBe(426)
    await res.text()
  })
})

describe('TLS listeners (server certificate only)', () => {
  let node: TestNode
  beforeAll(async () => { node = await startNode() })

  it('carries messages between an mqtts:// client trusting the development CA and a TCP client', async () => {
    const secure = await connectUrl(`mqtts://127.0.0.1:${node.port('mqtt:ssl')}`, { ca: certs.ca, servername: 'localhost', protocolVersion: 5 })
    const tcp = await connect(node, { protocolVersion: 5 })
    await delivers(tcp, secure, 'tls/in')
    await delivers(secure, tcp, 'tls/out')
  })

  it('carries messages between a wss:// client at /mqtt and a TCP client', async () => {
    const secure = await connectUrl(`wss://127.0.0.1:${node.port('mqtt:wss')}/mqtt`, {
      protocolVersion: 4,
      // ws hands these to tls.connect, which takes servername; ws's own type does not list it
      wsOptions: { ca: certs.ca, servername: 'localhost' } as WebSocket.ClientOptions
    })
    const tcp = await connect(node, { protocolVersion: 4 })
    await delivers(tcp, secure, 'wss/in')
    await delivers(secure, tcp, 'wss/out')
  })
})

describe('TLS handshake_timeout', () => {
  it('closes a connection whose bytes start a TLS record that never completes, once the handshake timeout is up', async () => {
    const node = await startNode({ 'listener.ssl.external.handshake_timeout': '300ms' })
    // content type 0x13 (none), version 3.1, length 32, then 20 bytes: OpenSSL reads the header
    // and waits for the 12 bytes still to come (Node's own timeout would wait 120 s)
    const socket = net.connect(node.port('mqtt:ssl'), '127.0.0.1')
    sockets.add(socket)
    socket.on('error', () => {})
    let closed = false
    socket.on('close', () => { closed = true })
    await new Promise<void>(resolve => socket.once('connect', () => resolve()))
    const started = Date.now()
    socket.write(Buffer.concat([Buffer.from('1303010020', 'hex'), Buffer.alloc(20, 7)]))
    await waitFor(() => closed, 'the listener closing the connection', 10_000)
    expect(Date.now() - started).toBeGreaterThanOrEqual(250)
  })
})

describe('mutual TLS: verify_peer with fail_if_no_peer_cert = true', () => {
  let node: TestNode
  beforeAll(async () => {
    node = await startNode({
      'listener.ssl.external.verify': 'verify_peer',
      'listener.ssl.external.fail_if_no_peer_cert': 'true',
      'listener.wss.external.verify': 'verify_peer',
      'listener.wss.external.fail_if_no_peer_cert': 'true'
    })
  })

  const urls = {
    ssl: (n: TestNode) => `mqtts://127.0.0.1:${n.port('mqtt:ssl')}`,
    wss: (n: TestNode) => `wss://127.0.0.1:${n.port('mqtt:wss')}/mqtt`
  }
  /** TLS options for mqtt.js: top level for mqtts, `wsOptions` for wss. */
  function tlsOpts (kind: 'ssl' | 'wss', o: { cert?: Buffer, key?: Buffer }): IClientOptions {
    const t = { ca: certs.ca, servername: 'localhost', ...o }
    return kind === 'ssl' ? { ...t, protocolVersion: 4 } : { protocolVersion: 4, wsOptions: t as WebSocket.ClientOptions }
  }

  describe.each(['ssl', 'wss'] as const)('%s', (kind) => {
    it('refuses a client that sends no certificate', async () => {
      expect(await outcome(urls[kind](node), tlsOpts(kind, {}))).toBe('refused')
    })

    it('refuses a client certificate from another CA', async () => {
      expect(await outcome(urls[kind](node), tlsOpts(kind, { cert: otherCerts.clientCert, key: otherCerts.clientKey }))).toBe('refused')
    })

    it('accepts a client with the development client certificate and carries its messages', async () => {
      const secure = await connectUrl(urls[kind](node), tlsOpts(kind, { cert: certs.clientCert, key: certs.clientKey }))
      const tcp = await connect(node, { protocolVersion: 4 })
      await delivers(tcp, secure, `mtls/${kind}/in`)
      await delivers(secure, tcp, `mtls/${kind}/out`)
    })
  })
})

describe('max_conns', () => {
  let node: TestNode
  beforeAll(async () => { node = await startNode({ 'listener.tcp.external.max_conns': '2' }) })

  it('closes a third connection while the first two keep working, and accepts again once one leaves', async () => {
    const first = await connect(node, { protocolVersion: 4, clientId: 'max-1' })
    const second = await connect(node, { protocolVersion: 4, clientId: 'max-2' })
    await expect(connect(node, { protocolVersion: 4, clientId: 'max-3' })).rejects.toThrow()
    await delivers(first, second, 'max/a')
    await delivers(second, first, 'max/b')
    expect(tcpListener(node).info().current_conns).toBe(2)

    await first.endAsync()
    await waitFor(() => tcpListener(node).info().current_conns === 1, 'current_conns = 1')
    const again = await connect(node, { protocolVersion: 4, clientId: 'max-4' })
    await delivers(again, second, 'max/c')
  })
})

describe('listener info', () => {
  let node: TestNode
  beforeAll(async () => { node = await startNode() })

  it('reports the bound address and limits, no connections and shutdown_count [] before anything closed', () => {
    const info = tcpListener(node).info()
    expect(info).toMatchObject({
      protocol: 'mqtt:tcp',
      listen_on: `127.0.0.1:${node.port('mqtt:tcp')}`,
      current_conns: 0,
      shutdown_count: []
    })
    expect(info.max_conns).toBeGreaterThan(0)
    expect(info.acceptors).toBeGreaterThan(0)
  })

  it('counts current_conns up and down and records a disconnect as closed', async () => {
    const a = await connect(node, { protocolVersion: 4 })
    const b = await connect(node, { protocolVersion: 5 })
    expect(tcpListener(node).info().current_conns).toBe(2)
    await a.endAsync()
    await waitFor(() => tcpListener(node).info().current_conns === 1, 'current_conns = 1')
    expect(tcpListener(node).info().shutdown_count).toEqual({ closed: 1 })
    await b.endAsync()
    await waitFor(() => tcpListener(node).info().current_conns === 0, 'current_conns = 0')
    expect(tcpListener(node).info().shutdown_count).toEqual({ closed: 2 })
  })

  it('counts a connection on the WebSocket listener on that listener only', async () => {
    const ws = await connectUrl(`ws://127.0.0.1:${node.port('mqtt:ws')}/mqtt`, { protocolVersion: 4 })
    const wsListener = node.listeners.find(l => l.spec.protocol === 'mqtt:ws')!
    expect(wsListener.info().current_conns).toBe(1)
    expect(tcpListener(node).info().current_conns).toBe(0)
    await ws.endAsync()
    await waitFor(() => wsListener.info().current_conns === 0, 'ws current_conns = 0')
    expect(wsListener.info().shutdown_count).toEqual({ closed: 1 })
  })
})
