/**
 * Nothing a client sends after its CONNECT is acted on before the CONNECT is answered
 * [MQTT-3.2.0-1]: packets that come in a later read than the CONNECT, while the node is still
 * processing it, wait for the CONNACK. aedes queues only those of the CONNECT's own read; a
 * later read re-entered its read loop and handled them at once, before authentication: a
 * PUBLISH was authorized with no client id and answered before the CONNACK (and over TLS,
 * whose records arrive in separate reads, such QoS 2 PUBLISHes of many connections counted
 * against one `mqtt.max_awaiting_rel` and closed later connections without a word).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import tls from 'node:tls'
import mqttPacket from 'mqtt-packet'
import { startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import { PROJECT_ROOT } from '../helpers/process.js'

let node: TestNode
let certsDir: string
const sockets = new Set<tls.TLSSocket>()

beforeAll(async () => {
  certsDir = mkdtempSync(join(tmpdir(), 'starling-certs-'))
  execFileSync('bash', [join(PROJECT_ROOT, 'etc/certs/make-dev-certs.sh'), certsDir], { stdio: 'pipe' })
  node = await startTestNode({
    'listener.ssl.external.keyfile': join(certsDir, 'key.pem'),
    'listener.ssl.external.certfile': join(certsDir, 'cert.pem'),
    'listener.ssl.external.cacertfile': join(certsDir, 'cacert.pem')
  })
})
afterAll(async () => {
  for (const s of sockets) s.destroy()
  await node.destroy()
  rmSync(certsDir, { recursive: true, force: true })
})

/** One MQTT 5 client over TLS: its CONNECT, then, each in a write of its own a turn later, a QoS 1 and a QoS 2 PUBLISH. */
async function connectThenPublish (i: number): Promise<{ packets: any[], done: () => boolean }> {
  const socket = tls.connect({ host: '127.0.0.1', port: node.port('mqtt:ssl'), ca: readFileSync(join(certsDir, 'cacert.pem')), servername: 'localhost' })
  sockets.add(socket)
  socket.on('error', () => {})
  socket.setNoDelay(true)
  const packets: any[] = []
  const parser = mqttPacket.parser({ protocolVersion: 5 })
  parser.on('packet', (p: any) => packets.push(p))
  socket.on('data', (d: Buffer) => parser.parse(d))
  await new Promise<void>(resolve => socket.once('secureConnect', () => resolve()))
  const gen = (p: any): Buffer => mqttPacket.generate(p, { protocolVersion: 5 })
  socket.write(gen({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, keepalive: 0, clientId: `bc-${i}` }))
  await new Promise(resolve => setImmediate(resolve))
  socket.write(gen({ cmd: 'publish', topic: `bc/${i}`, payload: 'one', qos: 1, messageId: 1 }))
  await new Promise(resolve => setImmediate(resolve))
  socket.write(gen({ cmd: 'publish', topic: `bc/${i}`, payload: 'two', qos: 2, messageId: 2 }))
  return { packets, done: () => packets.some(p => p.cmd === 'pubrec') && packets.some(p => p.cmd === 'puback') }
}

describe('packets behind a CONNECT, in later reads', () => {
  it('are answered after the CONNACK, on every one of 300 TLS connections', async () => {
    const clients = await Promise.all(Array.from({ length: 300 }, async (_, i) => await connectThenPublish(i)))
    await waitFor(() => clients.every(c => c.done()), 'a PUBACK and a PUBREC on every connection', 30_000)
    const firsts = clients.map(c => c.packets[0]?.cmd)
    expect(firsts.filter(cmd => cmd !== 'connack')).toEqual([])
    for (const c of clients) expect(c.packets.map(p => p.cmd)).toEqual(['connack', 'puback', 'pubrec'])
  }, 60_000)
})
