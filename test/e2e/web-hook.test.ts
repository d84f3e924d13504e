/**
 * svc_web_hook end to end: a real web server (node:http, and node:https with a test CA, on
 * ephemeral ports) receives the hooks of real MQTT clients (mqtt.js) connecting, subscribing,
 * publishing, being delivered, acking and disconnecting. The node reads the plugin's file from
 * a temporary etc directory, rewritten and reloaded (`plugins reload`) per case.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { closeClients, collect, connect, startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import { StoppableHttpServer } from '../helpers/auth-backend.js'
import { makeTestCa, makeTestCert, type TestCertificate } from '../helpers/servers/certs.js'

/** One request the receiver got. */
interface Hook { path: string, method: string, headers: IncomingMessage['headers'], body: any, port: number }

/** The web server the hooks go to; `answer` picks the status (or none: the request hangs). */
class HookReceiver extends StoppableHttpServer {
  hooks: Hook[] = []
  answer: number | 'never' = 200

  /** `clientCa`: the server asks for a client certificate and accepts only those this CA signed. */
  constructor (tls?: { cert: TestCertificate, clientCa?: TestCertificate }) {
    const handler = (req: IncomingMessage, res: ServerResponse): void => { void this.handle(req, res) }
    super(tls === undefined
      ? handler
      : createHttpsServer({
        cert: tls.cert.cert,
        key: readFileSync(tls.cert.keyFile),
        ...(tls.clientCa === undefined ? {} : { ca: tls.clientCa.cert, requestCert: true, rejectUnauthorized: true })
      }, handler))
  }

  of (action: string, clientid?: string): any[] {
    return this.hooks.map(h => h.body).filter(b => b.action === action && (clientid === undefined || b.clientid === clientid || b.from_client_id === clientid))
  }

  private async handle (req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    this.hooks.push({ path: req.url ?? '', method: req.method ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()), port: req.socket.remotePort ?? 0 })
    if (this.answer !== 'never') res.writeHead(this.answer).end('ignored')
  }
}

const ALL_RULES = [
  'client.connect', 'client.connack', 'client.connected', 'client.disconnected', 'client.subscribe', 'client.unsubscribe',
  'session.subscribed', 'session.unsubscribed', 'session.terminated', 'message.delivered', 'message.acked', 'message.dropped'
].map(e => `web.hook.rule.${e}.1 = {"action": "on_${e.replace('.', '_')}"}`)

const receiver = new HookReceiver()
let etc: string
let node: TestNode

/** Writes the plugin's file (the receiver's URL, every rule, `extra` lines) and reloads the plugin. */
async function configure (extra: string[] = [], url = `http://127.0.0.1:${receiver.port}/hooks?src=starling`, requestTimeout = '1s'): Promise<void> {
  writeFileSync(join(etc, 'plugins', 'svc_web_hook.conf'), [
    `web.hook.url = ${url}`,
    'web.hook.headers.x-token = s3cret',
    `web.hook.request_timeout = ${requestTimeout}`,
    ...ALL_RULES,
    'web.hook.rule.message.publish.1 = {"action": "on_message_publish", "topic": "wh/#"}',
    'web.hook.rule.message.publish.2 = {"action": "on_message_publish", "topic": "other/+/x"}',
    ...extra
  ].join('\n') + '\n')
  if (node !== undefined) await node.services.plugins.reload('svc_web_hook')
}

beforeAll(async () => {
  await receiver.start()
  etc = mkdtempSync(join(tmpdir(), 'starling-wh-etc-'))
  mkdirSync(join(etc, 'plugins'))
  await configure()
  node = await startTestNode({ 'mqtt.max_clientid_len': '23' }, undefined, { etcDir: etc, plugins: ['svc_web_hook'] })
})

afterAll(async () => {
  await node?.destroy()
  await receiver.stop()
  rmSync(etc, { recursive: true, force: true })
})

afterEach(async () => {
  await closeClients()
  receiver.hooks = []
  receiver.answer = 200
})

const anyTime = expect.any(Number)

describe('svc_web_hook', () => {
  it('POSTs a client\'s connect, connack, connected, disconnected and session end as EMQ X 4.4\'s bodies, with the configured headers', async () => {
    const c = await connect(node, { clientId: 'wh-life', username: 'alice', keepalive: 30, protocolVersion: 5 })
    await waitFor(() => receiver.of('client_connected', 'wh-life').length === 1, 'client_connected')
    await new Promise<void>(resolve => c.end(false, {}, () => resolve()))
    await waitFor(() => receiver.of('session_terminated', 'wh-life').length === 1, 'session_terminated')
    const base = { node: node.name, clientid: 'wh-life', username: 'alice' }
    expect(receiver.of('client_connect', 'wh-life')).toEqual([{ action: 'client_connect', ...base, ipaddress: '127.0.0.1', keepalive: 30, proto_ver: 5 }])
    expect(receiver.of('client_connack', 'wh-life')).toEqual([{ action: 'client_connack', ...base, ipaddress: '127.0.0.1', keepalive: 30, proto_ver: 5, conn_ack: 'success', connected_at: anyTime }])
    expect(receiver.of('client_connected', 'wh-life')).toEqual([{ action: 'client_connected', ...base, ipaddress: '127.0.0.1', keepalive: 30, proto_ver: 5, connected_at: anyTime }])
    await waitFor(() => receiver.of('client_disconnected', 'wh-life').length === 1, 'client_disconnected')
    expect(receiver.of('client_disconnected', 'wh-life')).toEqual([{ action: 'client_disconnected', ...base, reason: 'normal', connected_at: anyTime, disconnected_at: anyTime }])
    expect(receiver.of('session_terminated', 'wh-life')).toEqual([{ action: 'session_terminated', ...base, reason: 'normal' }])
    const hook = receiver.hooks.find(h => h.body.action === 'client_connect')!
    expect(hook).toMatchObject({ method: 'POST', path: '/hooks?src=starling' })
    expect(hook.headers).toMatchObject({ 'content-type': 'application/json', 'x-token': 's3cret' })
  })

  it('POSTs session_terminated of a kept session when a Clean Start CONNECT discards it, and when it expires', async () => {
    const kept = await connect(node, { clientId: 'wh-kept', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 60 } })
    await new Promise<void>(resolve => kept.end(false, {}, () => resolve()))
    await waitFor(() => receiver.of('client_disconnected', 'wh-kept').length === 1, 'client_disconnected')
    // the session outlives its connection: not terminated yet
    expect(receiver.of('session_terminated', 'wh-kept')).toEqual([])
    await connect(node, { clientId: 'wh-kept', protocolVersion: 5, clean: true })
    await waitFor(() => receiver.of('session_terminated', 'wh-kept').length === 1, 'session_terminated (discarded)')
    expect(receiver.of('session_terminated', 'wh-kept')[0]).toEqual({ action: 'session_terminated', node: node.name, clientid: 'wh-kept', username: null, reason: 'discarded' })
    const brief = await connect(node, { clientId: 'wh-brief', username: 'bea', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 1 } })
    await new Promise<void>(resolve => brief.end(false, {}, () => resolve()))
    await waitFor(() => receiver.of('session_terminated', 'wh-brief').length === 1, 'session_terminated (expired)', 5000)
    expect(receiver.of('session_terminated', 'wh-brief')[0]).toEqual({ action: 'session_terminated', node: node.name, clientid: 'wh-brief', username: 'bea', reason: 'expired' })
  })

  it('reports a refused CONNECT in client_connack with EMQ X\'s reason name, and a missing username as null', async () => {
    const long = 'wh-a-client-id-too-long-for-23'
    await expect(connect(node, { clientId: long, protocolVersion: 5 })).rejects.toThrow()
    await waitFor(() => receiver.of('client_connack', long).length === 1, 'client_connack of the refused client')
    expect(receiver.of('client_connack', long)[0]).toEqual({ action: 'client_connack', node: node.name, clientid: long, username: null, ipaddress: '127.0.0.1', keepalive: 60, proto_ver: 5, conn_ack: 'client_identifier_not_valid' })
    await connect(node, { clientId: 'wh-anon', protocolVersion: 4 })
    await waitFor(() => receiver.of('client_connack', 'wh-anon').length === 1, 'client_connack')
    expect(receiver.of('client_connack', 'wh-anon')[0]).toMatchObject({ username: null, proto_ver: 4, conn_ack: 'success' })
  })

  it('POSTs one client_subscribe and session_subscribed per filter with its options, and the unsubscribes', async () => {
    const c = await connect(node, { clientId: 'wh-sub', protocolVersion: 5 })
    await c.subscribeAsync({ 'wh/a': { qos: 1, nl: true, rap: true, rh: 2 }, '$share/g/wh/b': { qos: 0 } })
    await waitFor(() => receiver.of('session_subscribed', 'wh-sub').length === 2, 'session_subscribed')
    const who = { node: node.name, clientid: 'wh-sub', username: null }
    expect(receiver.of('client_subscribe', 'wh-sub')).toEqual([
      { action: 'client_subscribe', ...who, topic: 'wh/a', opts: { qos: 1, rh: 2, rap: 1, nl: 1 } },
      { action: 'client_subscribe', ...who, topic: 'wh/b', opts: { qos: 0, rh: 0, rap: 0, nl: 0, share: 'g' } }
    ])
    expect(receiver.of('session_subscribed', 'wh-sub')).toEqual([
      { action: 'session_subscribed', ...who, topic: 'wh/a', opts: { qos: 1, rh: 2, rap: 1, nl: 1 } },
      { action: 'session_subscribed', ...who, topic: 'wh/b', opts: { qos: 0, rh: 0, rap: 0, nl: 0, share: 'g' } }
    ])
    await c.unsubscribeAsync('wh/a')
    await waitFor(() => receiver.of('session_unsubscribed', 'wh-sub').length === 1, 'session_unsubscribed')
    expect(receiver.of('client_unsubscribe', 'wh-sub')).toEqual([{ action: 'client_unsubscribe', ...who, topic: 'wh/a', opts: {} }])
    expect(receiver.of('session_unsubscribed', 'wh-sub')).toEqual([{ action: 'session_unsubscribed', ...who, topic: 'wh/a' }])
  })

  it('POSTs message_publish, message_delivered and message_acked of a QoS 1 message; publishes outside the rules\' topics are not sent', async () => {
    const sub = await connect(node, { clientId: 'wh-rcv', username: 'rita' })
    await sub.subscribeAsync('wh/m/#', { qos: 1 })
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'wh-snd', username: 'bob' })
    await pub.publishAsync('nothere/x', 'skipped', { qos: 0 })
    await pub.publishAsync('other/y/x', 'second rule', { qos: 0 })
    await pub.publishAsync('wh/m/1', 'hello', { qos: 1 })
    await waitFor(() => got.length === 1 && receiver.of('message_acked', 'wh-rcv').length === 1, 'message_acked')
    await waitFor(() => receiver.of('message_publish').length === 2, 'message_publish')
    const message = { topic: 'wh/m/1', qos: 1, retain: false, payload: 'hello', ts: anyTime }
    // requests go out on several connections: they may arrive in any order
    expect(receiver.of('message_publish').sort((a, b) => a.topic.localeCompare(b.topic))).toEqual([
      { action: 'message_publish', node: node.name, from_client_id: 'wh-snd', from_username: 'bob', topic: 'other/y/x', qos: 0, retain: false, payload: 'second rule', ts: anyTime },
      { action: 'message_publish', node: node.name, from_client_id: 'wh-snd', from_username: 'bob', ...message }
    ])
    expect(receiver.of('message_delivered', 'wh-rcv')).toEqual([{ action: 'message_delivered', node: node.name, clientid: 'wh-rcv', username: 'rita', from_client_id: 'wh-snd', from_username: 'bob', ...message }])
    expect(receiver.of('message_acked', 'wh-rcv')).toEqual([{ action: 'message_acked', node: node.name, clientid: 'wh-rcv', username: 'rita', from_client_id: 'wh-snd', from_username: 'bob', ...message }])
    // message.dropped has no topic filter: the message nobody subscribed to is sent
    await waitFor(() => receiver.of('message_dropped').some(b => b.topic === 'nothere/x'), 'message_dropped')
    expect(receiver.of('message_dropped').find(b => b.topic === 'nothere/x')).toEqual({
      action: 'message_dropped', node: node.name, from_client_id: 'wh-snd', from_username: 'bob', topic: 'nothere/x', qos: 0, retain: false, payload: 'skipped', ts: anyTime, reason: 'no_subscribers'
    })
    expect(node.metrics['webhook.message_publish']).toBeGreaterThanOrEqual(2)
  })

  it.each([
    ['base64', Buffer.from([0xff, 0x00, 0x41]).toString('base64')],
    ['base62', '9CwBB']
  ])('writes the payload field in %s', async (encoding, expected) => {
    await configure([`web.hook.body.encoding_of_payload_field = ${encoding}`])
    const pub = await connect(node, { clientId: `wh-enc-${encoding}` })
    await pub.publishAsync('wh/enc', Buffer.from([0xff, 0x00, 0x41]), { qos: 0 })
    await waitFor(() => receiver.of('message_publish', `wh-enc-${encoding}`).length === 1, 'message_publish')
    expect(receiver.of('message_publish', `wh-enc-${encoding}`)[0].payload).toBe(expected)
    await configure()
  })

  it('delivers without waiting for a receiver that never answers or is down: failures are counted', async () => {
    const sub = await connect(node, { clientId: 'wh-slow-sub' })
    await sub.subscribeAsync('wh/load', { qos: 1 })
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'wh-slow-pub' })
    // a receiver that accepts and never answers: every request waits request_timeout (5s)
    await configure([], undefined, '5s')
    receiver.answer = 'never'
    const failedBefore = node.metrics['webhook.failed']
    for (let i = 0; i < 200; i++) pub.publish('wh/load', `m${i}`, { qos: 1 })
    await waitFor(() => got.length === 200, '200 messages delivered while the receiver hangs')
    // every hook of those messages is still pending: delivery did not wait for one
    expect(node.metrics['webhook.failed']).toBe(failedBefore)
    expect(receiver.of('message_delivered', 'wh-slow-sub').length).toBeGreaterThan(0)
    // each settles as failed at its request_timeout (a delivered and an acked hook per message)
    await waitFor(() => node.metrics['webhook.failed'] >= failedBefore + 400, 'the hung requests counted as failed', 15000)
    await configure()
    // a receiver that is down: connections refused
    await receiver.stop()
    try {
      const failed = node.metrics['webhook.failed']
      for (let i = 0; i < 200; i++) pub.publish('wh/load', `n${i}`, { qos: 1 })
      await waitFor(() => got.length === 400, '200 more delivered while the receiver is down')
      await waitFor(() => node.metrics['webhook.failed'] >= failed + 400, 'refused requests counted as failed')
      expect(node.services.plugins.isActive('svc_web_hook')).toBe(true)
    } finally {
      await receiver.start(receiver.port)
    }
  })

  it('opens at most web.hook.pool_size connections', async () => {
    await configure(['web.hook.pool_size = 1', 'web.hook.enable_pipelining = false'])
    const pub = await connect(node, { clientId: 'wh-pool' })
    for (let i = 0; i < 50; i++) pub.publish('wh/pool', `p${i}`, { qos: 0 })
    await waitFor(() => receiver.of('message_publish', 'wh-pool').length === 50, '50 message_publish')
    expect(new Set(receiver.hooks.filter(h => h.body.from_client_id === 'wh-pool').map(h => h.port)).size).toBe(1)
    await configure()
  })

  it('refuses to load a rule whose action is not its event\'s, naming the key', async () => {
    await expect(configure(['web.hook.rule.client.connected.2 = {"action": "on_client_connect"}'])).rejects.toThrow(/web\.hook\.rule\.client\.connected\.2/)
    await configure()
    expect(node.services.plugins.isActive('svc_web_hook')).toBe(true)
  })

  it('unloaded, sends nothing', async () => {
    await node.services.plugins.unload('svc_web_hook')
    try {
      await connect(node, { clientId: 'wh-off' })
      await new Promise(resolve => setTimeout(resolve, 200))
      expect(receiver.of('client_connected', 'wh-off')).toEqual([])
    } finally {
      await node.services.plugins.load('svc_web_hook')
    }
  })
})

describe('svc_web_hook over TLS', () => {
  let dir: string
  let tlsReceiver: HookReceiver
  let mtlsReceiver: HookReceiver
  let ca: TestCertificate
  let client: TestCertificate

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'starling-wh-tls-'))
    ca = await makeTestCa(dir)
    const server = await makeTestCert(dir, ca, 'server')
    client = await makeTestCert(dir, ca, 'client', { cn: 'starling-node' })
    tlsReceiver = new HookReceiver({ cert: server })
    mtlsReceiver = new HookReceiver({ cert: server, clientCa: ca })
    await tlsReceiver.start()
    await mtlsReceiver.start()
  })

  afterAll(async () => {
    // the plugin away from the servers first: closing the test's clients sends hooks to them
    await configure()
    await tlsReceiver.stop()
    await mtlsReceiver.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('POSTs to an https URL whose certificate the configured CA signs, with verify on', async () => {
    await configure([`web.hook.ssl.cacertfile = ${ca.certFile}`, 'web.hook.ssl.verify = true'], `https://127.0.0.1:${tlsReceiver.port}/tls`)
    await connect(node, { clientId: 'wh-tls' })
    await waitFor(() => tlsReceiver.of('client_connected', 'wh-tls').length === 1, 'client_connected over TLS')
  })

  it('counts a failure when verify is on and the server\'s CA is not given', async () => {
    await configure(['web.hook.ssl.verify = true'], `https://127.0.0.1:${tlsReceiver.port}/tls`)
    const failed = node.metrics['webhook.failed']
    await connect(node, { clientId: 'wh-tls-bad' })
    await waitFor(() => node.metrics['webhook.failed'] > failed, 'a failed request')
    expect(tlsReceiver.of('client_connected', 'wh-tls-bad')).toEqual([])
  })

  it('sends the client certificate of ssl.certfile and ssl.keyfile to a server that asks for one', async () => {
    const url = `https://127.0.0.1:${mtlsReceiver.port}/mtls`
    await configure([`web.hook.ssl.cacertfile = ${ca.certFile}`, 'web.hook.ssl.verify = true'], url)
    const failed = node.metrics['webhook.failed']
    await connect(node, { clientId: 'wh-mtls-none' })
    await waitFor(() => node.metrics['webhook.failed'] > failed, 'refused without a client certificate')
    await configure([`web.hook.ssl.cacertfile = ${ca.certFile}`, 'web.hook.ssl.verify = true', `web.hook.ssl.certfile = ${client.certFile}`, `web.hook.ssl.keyfile = ${client.keyFile}`], url)
    await connect(node, { clientId: 'wh-mtls' })
    await waitFor(() => mtlsReceiver.of('client_connected', 'wh-mtls').length === 1, 'client_connected with a client certificate')
    expect(mtlsReceiver.of('client_connected', 'wh-mtls-none')).toEqual([])
  })

  it('reloads within request_timeout while requests fail on a certificate of another name (undici\'s close would wait forever)', async () => {
    const badName = [`web.hook.ssl.cacertfile = ${ca.certFile}`, 'web.hook.ssl.verify = true', 'web.hook.ssl.server_name_indication = elsewhere.example']
    await configure(badName, `https://127.0.0.1:${tlsReceiver.port}/tls`)
    const pub = await connect(node, { clientId: 'wh-tls-closing' })
    for (let i = 0; i < 200; i++) pub.publish('wh/closing', `c${i}`, { qos: 0 })
    await waitFor(() => node.metrics['webhook.message_publish'] > 0, 'requests under way')
    const started = Date.now()
    await configure(badName, `https://127.0.0.1:${tlsReceiver.port}/tls`)
    // request_timeout is 1s
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it('checks the certificate against ssl.server_name_indication when set', async () => {
    const url = `https://127.0.0.1:${tlsReceiver.port}/sni`
    await configure([`web.hook.ssl.cacertfile = ${ca.certFile}`, 'web.hook.ssl.verify = true', 'web.hook.ssl.server_name_indication = localhost'], url)
    await connect(node, { clientId: 'wh-sni' })
    await waitFor(() => tlsReceiver.of('client_connected', 'wh-sni').length === 1, 'client_connected with SNI localhost')
    await configure([`web.hook.ssl.cacertfile = ${ca.certFile}`, 'web.hook.ssl.verify = true', 'web.hook.ssl.server_name_indication = elsewhere.example'], url)
    const failed = node.metrics['webhook.failed']
    await connect(node, { clientId: 'wh-sni-bad' })
    await waitFor(() => node.metrics['webhook.failed'] > failed, 'a name the certificate does not carry fails')
    expect(tlsReceiver.of('client_connected', 'wh-sni-bad')).toEqual([])
  })
})

/** A TCP server that reads and never answers: counts the HTTP requests that arrive on each connection. */
class SilentServer {
  /** Requests per connection, in the order the connections opened (since the last reset). */
  requests: number[] = []
  private readonly sockets = new Set<Socket>()
  private readonly server: TcpServer = createTcpServer((socket) => {
    const counts = this.requests
    const i = counts.push(0) - 1
    this.sockets.add(socket)
    let text = ''
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1')
      counts[i] = text.split('POST /').length - 1
    })
    socket.on('close', () => this.sockets.delete(socket))
    socket.on('error', () => {})
  })

  get port (): number { return (this.server.address() as AddressInfo).port }

  async start (): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
  }

  /** Drops every connection (their requests fail at once) and forgets the counts. */
  reset (): void {
    for (const s of this.sockets) s.destroy()
    this.requests = []
  }

  async stop (): Promise<void> {
    this.reset()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

describe('svc_web_hook connections', () => {
  const silent = new SilentServer()
  beforeAll(async () => { await silent.start() })
  afterAll(async () => {
    await closeClients()
    await configure()
    await silent.stop()
  })

  it.each([
    ['true', (n: number) => expect(n).toBeGreaterThan(1)],
    ['false', (n: number) => expect(n).toBe(1)]
  ])('with enable_pipelining = %s, sends the next request on a connection before the answer (or not)', async (pipelining, check) => {
    await configure(['web.hook.pool_size = 1', `web.hook.enable_pipelining = ${pipelining}`], `http://127.0.0.1:${silent.port}/`, '2s')
    // only the connections of this pool (the previous one is closed: its requests settled)
    silent.reset()
    const pub = await connect(node, { clientId: `wh-pipe-${pipelining}` })
    for (let i = 0; i < 5; i++) pub.publish('wh/pipe', `p${i}`, { qos: 0 })
    await waitFor(() => silent.requests.length === 1 && silent.requests[0] >= 1, 'a request on the one connection')
    // give a pipelining pool the time to send the others
    await new Promise(resolve => setTimeout(resolve, 300))
    expect(silent.requests).toHaveLength(1)
    check(silent.requests[0])
  })

  it('counts a failure after connect_timeout when the TLS handshake never completes, well before request_timeout', async () => {
    await configure(['web.hook.connect_timeout = 300ms'], `https://127.0.0.1:${silent.port}/`, '20s')
    const failed = node.metrics['webhook.failed']
    const started = Date.now()
    await connect(node, { clientId: 'wh-connect-timeout' })
    await waitFor(() => node.metrics['webhook.failed'] > failed, 'the request failed for connect_timeout', 10000)
    expect(Date.now() - started).toBeLessThan(5000)
  })
})

