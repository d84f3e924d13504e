/**
 * `listener.<tcp|ssl|ws|wss>.external.proxy_protocol = on` over real sockets: a load
 * balancer's PROXY header (v1 and v2) and then a real MQTT CONNECT from mqtt.js; the
 * client's address the header gives in the connections API and under the ACL's ipaddr
 * rules; connections without a valid header closed before MQTT, and the node unharmed.
 */
import net from 'node:net'
import tls from 'node:tls'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket, { createWebSocketStream } from 'ws'
import { MqttClient, type IClientOptions } from 'mqtt'
import { startTestNode, apiRequest, untilConnack, type TestNode } from '../helpers/node.js'
import { suback } from '../helpers/mqtt.js'
import { proxyV1, proxyV2 } from '../../bench/fuzz/proxy-headers.js'
import type { Duplex } from 'node:stream'

const PROXIED = {
  'listener.tcp.external.proxy_protocol': 'on',
  'listener.ssl.external.proxy_protocol': 'on',
  'listener.ws.external.proxy_protocol': 'on',
  'listener.wss.external.proxy_protocol': 'on',
  'listener.tcp.external.proxy_protocol_timeout': '500ms'
}

let node: TestNode
let dir: string
const opened = new Set<MqttClient>()
const sockets = new Set<net.Socket>()

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'starling-proxy-'))
  // the documentation network 203.0.113.0/24 may not subscribe to secret/#; everyone else may
  writeFileSync(join(dir, 'acl.conf'), '{deny, {ipaddr, "203.0.113.0/24"}, subscribe, ["secret/#"]}.\n{allow, all}.\n')
  node = await startTestNode({ ...PROXIED, acl_file: join(dir, 'acl.conf') })
})
afterEach(async () => {
  await Promise.all([...opened].map(c => new Promise<void>(resolve => c.end(true, {}, () => resolve()))))
  opened.clear()
  for (const s of sockets) s.destroy()
  sockets.clear()
})
afterAll(async () => {
  await node.destroy()
  rmSync(dir, { recursive: true, force: true })
})

/** A TCP connection to `port` that first sends `header` (as a load balancer would). */
function balancerSocket (port: number, header: Buffer): net.Socket {
  const socket = net.createConnection({ host: '127.0.0.1', port })
  sockets.add(socket)
  socket.write(header)
  return socket
}

/** An mqtt.js client over `stream` (built per connect), resolved at CONNACK. */
async function mqttOver (stream: () => Duplex, opts: IClientOptions = {}): Promise<MqttClient> {
  const client = new MqttClient(stream, { reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4, ...opts })
  opened.add(client)
  return await untilConnack(client)
}

/** The connections API's entry of `clientid`. */
async function connection (clientid: string): Promise<{ ipaddress: string, port: number }> {
  const body = await apiRequest(node, `/connections/${clientid}`)
  return body.data[0]
}

/** Whether the node closes `socket` (after what the test wrote) without answering a byte. */
async function closedUnanswered (socket: net.Socket): Promise<boolean> {
  return await new Promise<boolean>((resolve) => {
    let answered = false
    socket.on('data', () => { answered = true })
    socket.on('error', () => {})
    socket.on('close', () => resolve(!answered))
  })
}

describe('PROXY protocol on the MQTT listeners', () => {
  it('takes the client address of a v1 TCP4 header on mqtt:tcp', async () => {
    await mqttOver(() => balancerSocket(node.port('mqtt:tcp'), proxyV1('TCP4', '198.51.100.20', '192.0.2.1', 40001, 1883)), { clientId: 'pp-v1' })
    expect(await connection('pp-v1')).toMatchObject({ ipaddress: '198.51.100.20', port: 40001 })
  })

  it('takes the client address of a v2 IPv6 header on mqtt:tcp', async () => {
    const header = proxyV2({ family: 'inet6', source: '2001:db8::7', destination: '2001:db8::1', sourcePort: 50000, destinationPort: 1883 })
    await mqttOver(() => balancerSocket(node.port('mqtt:tcp'), header), { clientId: 'pp-v2', protocolVersion: 5 })
    expect(await connection('pp-v2')).toMatchObject({ ipaddress: '2001:db8::7', port: 50000 })
  })

  it('keeps the connection\'s own address for a v2 LOCAL header (a health check)', async () => {
    const header = proxyV2({ command: 0, family: 'inet', source: '10.9.9.9', destination: '10.0.0.1', sourcePort: 1, destinationPort: 2 })
    await mqttOver(() => balancerSocket(node.port('mqtt:tcp'), header), { clientId: 'pp-local' })
    expect((await connection('pp-local')).ipaddress).toBe('127.0.0.1')
  })

  it('reads a header sent a byte at a time', async () => {
    const header = proxyV1('TCP4', '198.51.100.21', '192.0.2.1', 40002, 1883)
    await mqttOver(() => {
      const socket = net.createConnection({ host: '127.0.0.1', port: node.port('mqtt:tcp') })
      sockets.add(socket)
      socket.setNoDelay(true)
      for (const byte of header) socket.write(Buffer.from([byte]))
      return socket
    }, { clientId: 'pp-bytes' })
    expect((await connection('pp-bytes')).ipaddress).toBe('198.51.100.21')
  })

  it('applies the ACL\'s ipaddr rules to the address of the header', async () => {
    const from = async (address: string, clientId: string): Promise<MqttClient> =>
      await mqttOver(() => balancerSocket(node.port('mqtt:tcp'), proxyV1('TCP4', address, '192.0.2.1', 40003, 1883)), { clientId })
    // both connections come from 127.0.0.1; only the header tells them apart
    expect(await suback(await from('203.0.113.7', 'pp-acl-denied'), 'secret/x')).toEqual([0x80])
    expect(await suback(await from('198.51.100.7', 'pp-acl-allowed'), 'secret/x')).toEqual([1])
  })

  it('writes the header\'s address in a client trace (clientid@address:port)', async () => {
    const file = join(dir, 'pp-trace.log')
    await node.services.traces.startTrace('client', 'pp-trace', file)
    const client = await mqttOver(() => balancerSocket(node.port('mqtt:tcp'), proxyV1('TCP4', '198.51.100.70', '192.0.2.1', 40010, 1883)), { clientId: 'pp-trace' })
    await new Promise<void>((resolve, reject) => client.publish('pp/t', 'x', { qos: 1 }, (err) => err === undefined || err === null ? resolve() : reject(err)))
    await node.services.traces.stopTrace('client', 'pp-trace')
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n')
    expect(lines.length).toBeGreaterThan(1)
    for (const line of lines) expect(line).toContain('pp-trace@198.51.100.70:40010 ')
  })

  it('takes the header before the TLS handshake on mqtt:ssl', async () => {
    const header = proxyV2({ family: 'inet', source: '198.51.100.30', destination: '192.0.2.1', sourcePort: 40004, destinationPort: 8883 })
    await mqttOver(() => tls.connect({ socket: balancerSocket(node.port('mqtt:ssl'), header), rejectUnauthorized: false }), { clientId: 'pp-ssl' })
    expect(await connection('pp-ssl')).toMatchObject({ ipaddress: '198.51.100.30', port: 40004 })
  })

  it.each([['mqtt:ws', 'ws'], ['mqtt:wss', 'wss']] as const)('takes the header before the HTTP upgrade on %s', async (protocol, scheme) => {
    const header = proxyV1('TCP4', '198.51.100.40', '192.0.2.1', 40005, 8083)
    const clientId = `pp-${scheme}`
    await mqttOver(() => {
      const ws = new WebSocket(`${scheme}://127.0.0.1:${node.port(protocol)}/mqtt`, 'mqtt', {
        rejectUnauthorized: false,
        createConnection: (options: any) => {
          const raw = balancerSocket(node.port(protocol), header)
          return scheme === 'wss' ? tls.connect({ ...options, socket: raw }) : raw
        }
      } as any)
      return createWebSocketStream(ws)
    }, { clientId })
    expect((await connection(clientId)).ipaddress).toBe('198.51.100.40')
  })

  it.each([
    ['a plain MQTT CONNECT', Buffer.from([0x10, 0x0c, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x00])],
    ['a malformed v1 line', Buffer.from('PROXY TCP4 999.1.1.1 192.0.2.1 1 2\r\n')],
    ['a v2 header of another version', Buffer.concat([proxyV2({ family: 'inet', source: '1.2.3.4', destination: '5.6.7.8' }).subarray(0, 12), Buffer.from([0x31, 0x11, 0, 12]), Buffer.alloc(12)])],
    ['HTTP', Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')]
  ])('closes a connection that starts with %s, unanswered', async (_what, bytes) => {
    const before = (node.listeners.find(l => l.spec.protocol === 'mqtt:tcp')!.info().shutdown_count as Record<string, number>).proxy_protocol ?? 0
    const socket = net.createConnection({ host: '127.0.0.1', port: node.port('mqtt:tcp') })
    sockets.add(socket)
    socket.write(bytes)
    expect(await closedUnanswered(socket)).toBe(true)
    const info = node.listeners.find(l => l.spec.protocol === 'mqtt:tcp')!.info()
    expect((info.shutdown_count as Record<string, number>).proxy_protocol).toBe(before + 1)
  })

  it('closes a connection that sends no header within proxy_protocol_timeout', async () => {
    const started = Date.now()
    const socket = net.createConnection({ host: '127.0.0.1', port: node.port('mqtt:tcp') })
    sockets.add(socket)
    expect(await closedUnanswered(socket)).toBe(true)
    expect(Date.now() - started).toBeGreaterThanOrEqual(400)
  })

  it('still serves clients after refusing', async () => {
    await mqttOver(() => balancerSocket(node.port('mqtt:tcp'), proxyV1('TCP4', '198.51.100.50', '192.0.2.1', 1, 1883)), { clientId: 'pp-after' })
    expect((await connection('pp-after')).ipaddress).toBe('198.51.100.50')
  })
})

describe('PROXY protocol off (the default)', () => {
  let plain: TestNode
  beforeAll(async () => { plain = await startTestNode() })
  afterAll(async () => { await plain.destroy() })

  it('treats a PROXY header as what it is to MQTT: not a CONNECT, closed', async () => {
    const socket = net.createConnection({ host: '127.0.0.1', port: plain.port('mqtt:tcp') })
    sockets.add(socket)
    socket.write(proxyV1('TCP4', '198.51.100.60', '192.0.2.1', 1, 1883))
    expect(await closedUnanswered(socket)).toBe(true)
  })
})
