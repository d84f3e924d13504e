/**
 * svc_auth_http end to end: a real HTTP auth service in-process (node:http on an ephemeral
 * port, EMQ X's example service: users, a superuser, topic rules), a node loading the plugin
 * with the shipped etc/plugins/svc_auth_http.conf plus the test's keys, and real clients
 * (mqtt.js, MQTT 3.1.1 and 5, and mosquitto_pub / mosquitto_sub).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { collect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, open, pubackCode, suback } from '../helpers/mqtt.js'
import {
  StoppableHttpServer, connackCode, expectMosquittoPub, expectMosquittoSubDenied, expectOutageAndRecovery, startBackendNode, type BackendNode
} from '../helpers/auth-backend.js'

/** One request the service received. */
interface Seen { path: string, method: string, headers: IncomingMessage['headers'], params: Record<string, string> }

/** EMQ X's example auth service: what it answers is set per username. */
class AuthService extends StoppableHttpServer {
  seen: Seen[] = []
  /** Added to every answer's time (ms). */
  delayMs = 0
  readonly users = new Map([['alice', 'pw'], ['bob', 'pw'], ['root', 'pw'], ['sensor 1', 'pw']])
  readonly superusers = new Set(['root'])

  constructor () {
    super((req, res) => { void this.handle(req, res) })
  }

  url (path: string): string { return `http://127.0.0.1:${this.port}${path}` }
  requests (path: string): Seen[] { return this.seen.filter(s => s.path === path) }

  private async handle (req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks).toString()
    const url = new URL(req.url ?? '/', 'http://x')
    const params: Record<string, string> = req.method === 'GET'
      ? Object.fromEntries(url.searchParams)
      : (req.headers['content-type'] ?? '').startsWith('application/json') ? JSON.parse(body) : Object.fromEntries(new URLSearchParams(body))
    this.seen.push({ path: url.pathname, method: req.method ?? '', headers: req.headers, params })
    if (this.delayMs > 0) await new Promise(resolve => setTimeout(resolve, this.delayMs).unref())
    const [status, text] = this.answer(url.pathname, params)
    if (!res.destroyed) res.writeHead(status, { 'content-type': 'text/plain' }).end(text)
  }

  private answer (path: string, p: Record<string, string>): [number, string] {
    const status = /^status-(\d{3})$/.exec(p.username ?? '')
    if (path === '/mqtt/auth') {
      if (status !== null) return [Number(status[1]), 'x']
      if (p.username === 'ignored') return [200, 'ignore']
      const password = this.users.get(p.username)
      if (password === undefined) return [200, 'ignore']
      return password === p.password ? [200, 'ok'] : [401, 'bad password']
    }
    if (path === '/mqtt/superuser') return this.superusers.has(p.username) ? [200, 'ok'] : [403, 'no']
    if (path === '/mqtt/acl') {
      if (p.topic.startsWith(`users/${p.username}/`)) return [200, 'ok']
      if (p.topic.startsWith('free/')) return [200, 'ignore']
      if (p.topic.startsWith('pub-only/')) return p.access === '2' ? [200, 'ok'] : [403, 'no']
      return [403, 'no']
    }
    return [404, 'no such path']
  }
}

const service = new AuthService()
let backend: BackendNode
let node: TestNode
const dirs: string[] = []

beforeAll(async () => {
  await service.start()
  // no ACL file rules: what the plugin does not decide falls to acl_nomatch (allow)
  const dir = mkdtempSync(join(tmpdir(), 'starling-acl-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'acl.conf'), '')
  // the WebSocket listener's clients have a mountpoint (the %m of acl_req)
  backend = await startBackendNode('svc_auth_http', { allow_anonymous: 'false', acl_file: join(dir, 'acl.conf'), 'listener.ws.external.mountpoint': 'ws/%c/' })
  node = backend.node
})
afterAll(async () => {
  await backend?.destroy()
  await service.stop().catch(() => undefined)
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})
afterEach(async () => {
  await backend.unload()
  await closeOpened()
  service.delayMs = 0
  service.seen = []
})

/** Loads svc_auth_http with the shipped file, the service's URLs and `overrides`. */
async function load (overrides: Record<string, string> = {}): Promise<void> {
  await backend.load({
    'auth.http.auth_req.url': service.url('/mqtt/auth'),
    'auth.http.super_req.url': service.url('/mqtt/superuser'),
    'auth.http.acl_req.url': service.url('/mqtt/acl'),
    ...overrides
  })
}

const COUNTED = ['client.auth.success', 'client.auth.failure', 'client.auth.ignore', 'client.acl.allow', 'client.acl.deny'] as const
/** The node's auth and ACL counters now; `since(before)` gives what changed. */
function counters (): Record<string, number> {
  return Object.fromEntries(COUNTED.map(k => [k, node.metrics[k]]))
}
function since (before: Record<string, number>): Record<string, number> {
  const now = counters()
  return Object.fromEntries(COUNTED.map(k => [k, now[k] - before[k]]))
}

const alarmActive = (): boolean => backend.alarmActive()

describe('svc_auth_http authentication', () => {
  it('accepts the right password and refuses a wrong one (MQTT 5 0x86, MQTT 3.1.1 4), by a POST form with the configured headers', async () => {
    await load({ 'auth.http.auth_req.headers.x-api-key': 'k1' })
    expect(await connackCode(node, { protocolVersion: 5, clientId: 'a5', username: 'alice', password: 'pw' })).toBe(0)
    expect(await connackCode(node, { protocolVersion: 4, clientId: 'a4', username: 'alice', password: 'pw' })).toBe(0)
    expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: 'nope' })).toBe(0x86)
    expect(await connackCode(node, { protocolVersion: 4, username: 'alice', password: 'nope' })).toBe(4)
    const first = service.requests('/mqtt/auth')[0]
    expect(first.method).toBe('POST')
    expect(first.headers['content-type']).toBe('application/x-www-form-urlencoded')
    expect(first.headers['x-api-key']).toBe('k1')
    expect(first.params).toEqual({ clientid: 'a5', username: 'alice', password: 'pw' })
  })

  it('sends GET params as the query string and POST params as JSON with content-type application/json', async () => {
    await load({ 'auth.http.auth_req.method': 'get', 'auth.http.auth_req.params': 'clientid=%c,username=%u,password=%P,ip=%a,port=%p,proto=%r' })
    expect(await connackCode(node, { protocolVersion: 5, clientId: 'g1', username: 'alice', password: 'pw' })).toBe(0)
    const get = service.requests('/mqtt/auth')[0]
    expect(get.method).toBe('GET')
    expect(get.params).toEqual({ clientid: 'g1', username: 'alice', password: 'pw', ip: '127.0.0.1', port: String(node.port('mqtt:tcp')), proto: 'mqtt' })
    await backend.unload()
    await load({ 'auth.http.auth_req.headers.content-type': 'application/json' })
    expect(await connackCode(node, { protocolVersion: 5, clientId: 'j1', username: 'bob', password: 'pw' })).toBe(0)
    expect(await connackCode(node, { protocolVersion: 5, clientId: 'j2', username: 'bob', password: 'no' })).toBe(0x86)
    const json = service.requests('/mqtt/auth').filter(s => s.method === 'POST')
    expect(json[0].headers['content-type']).toBe('application/json')
    expect(json[0].params).toEqual({ clientid: 'j1', username: 'bob', password: 'pw' })
  })

  it('maps each status: 4xx deny, 5xx ignore with the alarm, which the next answer clears', async () => {
    await load()
    const before = counters()
    for (const status of [400, 401, 403, 404, 429]) {
      expect([status, await connackCode(node, { protocolVersion: 5, username: `status-${status}`, password: 'x' })]).toEqual([status, 0x86])
    }
    expect(await connackCode(node, { protocolVersion: 4, username: 'status-403', password: 'x' })).toBe(4)
    expect(alarmActive()).toBe(false)
    for (const status of [500, 503]) {
      expect([status, await connackCode(node, { protocolVersion: 5, username: `status-${status}`, password: 'x' })]).toEqual([status, 0x87])
    }
    expect(alarmActive()).toBe(true)
    expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: 'pw' })).toBe(0)
    expect(alarmActive()).toBe(false)
    // 6 denied, 2 ignored (then refused by allow_anonymous = false), 1 accepted
    expect(since(before)).toMatchObject({ 'client.auth.success': 1, 'client.auth.failure': 8, 'client.auth.ignore': 2 })
  })

  it('passes a 200 "ignore" and an unknown user to allow_anonymous: refused when false, accepted when true', async () => {
    await load()
    expect(await connackCode(node, { protocolVersion: 5, username: 'ignored', password: 'x' })).toBe(0x87)
    expect(await connackCode(node, { protocolVersion: 4, username: 'stranger', password: 'x' })).toBe(5)
    await backend.setAnonymous(true)
    try {
      expect(await connackCode(node, { protocolVersion: 5, username: 'ignored', password: 'x' })).toBe(0)
      expect(await connackCode(node, { protocolVersion: 4, username: 'stranger', password: 'x' })).toBe(0)
      expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: 'bad' })).toBe(0x86)
    } finally {
      await backend.setAnonymous(false)
    }
  })

  it('keeps a username with &password= one value: it never authenticates and never adds a parameter', async () => {
    await load()
    for (const method of ['post', 'get']) {
      await backend.unload()
      await load({ 'auth.http.auth_req.method': method })
      service.seen = []
      expect(await connackCode(node, { protocolVersion: 5, username: 'alice&password=pw', password: 'x' })).toBe(0x87)
      expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: 'x&password=pw' })).toBe(0x86)
      const [first, second] = service.requests('/mqtt/auth')
      expect(first.params).toEqual({ clientid: expect.any(String), username: 'alice&password=pw', password: 'x' })
      expect(second.params).toEqual({ clientid: expect.any(String), username: 'alice', password: 'x&password=pw' })
    }
  })

  it('answers a CONNECT within the timeout while the service is slow, with the alarm (ignore, then allow_anonymous)', async () => {
    await load({ 'auth.http.timeout': '400ms' })
    service.delayMs = 3000
    const started = Date.now()
    expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: 'pw' })).toBe(0x87)
    const took = Date.now() - started
    expect(took).toBeGreaterThanOrEqual(350)
    expect(took).toBeLessThan(1500)
    expect(alarmActive()).toBe(true)
    service.delayMs = 0
    expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: 'pw' })).toBe(0)
    expect(alarmActive()).toBe(false)
  })

  it('loads with the service down, answers ignore fast with the alarm, and works again once the service is back', async () => {
    const port = service.port
    await expectOutageAndRecovery({
      backend,
      down: async () => { await service.stop() },
      up: async () => { await service.start(port) },
      whileDown: load,
      refused: [[{ protocolVersion: 5, username: 'alice', password: 'pw' }, 0x87], [{ protocolVersion: 4, username: 'alice', password: 'pw' }, 5]],
      withinMs: 2000,
      alarm: 'at once',
      listed: true,
      recovered: async () => { expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: 'pw' })).toBe(0) }
    })
  })

  it('refuses and accepts mosquitto_pub clients (MQTT 3.1.1 and 5)', async () => {
    await load()
    await expectMosquittoPub(node, { username: 'alice', password: 'pw', wrongPassword: 'wrong', topic: 'users/alice/m', versions: ['mqttv311', 'mqttv5'], refusal: /bad user name or password/i, quiet: true })
  })
})

describe('svc_auth_http superuser and ACL', () => {
  it('allows and denies publishes and subscribes per the ACL answer; ignore falls to acl_nomatch', async () => {
    await load()
    const alice = await open(node, { protocolVersion: 5, clientId: 'acl-alice', username: 'alice', password: 'pw' })
    expect(await suback(alice.client, ['users/alice/#', 'other/#', 'free/#', 'pub-only/#'])).toEqual([1, 0x80, 1, 0x80])
    const watcher = await open(node, { protocolVersion: 5, clientId: 'acl-root', username: 'root', password: 'pw' })
    expect(await suback(watcher.client, '#')).toEqual([1])
    const got = collect(watcher.client)
    const before = counters()
    expect(await pubackCode(alice.client, 'other/x')).toBe(0x87)
    await alice.client.publishAsync('pub-only/x', 'allowed', { qos: 1 })
    await alice.client.publishAsync('free/x', 'nomatch-allowed', { qos: 1 })
    await alice.client.publishAsync('users/alice/x', 'allowed', { qos: 1 })
    await waitFor(() => got.some(m => m.topic === 'users/alice/x'), 'the last publish')
    expect(got.map(m => m.topic)).toEqual(['pub-only/x', 'free/x', 'users/alice/x'])
    const acl = service.requests('/mqtt/acl')
    expect(acl.find(s => s.params.topic === 'other/x')?.params).toEqual({ access: '2', username: 'alice', clientid: 'acl-alice', ipaddr: '127.0.0.1', topic: 'other/x', mountpoint: '' })
    expect(acl.find(s => s.params.topic === 'other/#')?.params.access).toBe('1')
    // publishes: other/x denied; pub-only/x, free/x (acl_nomatch) and users/alice/x allowed
    expect(since(before)).toMatchObject({ 'client.acl.allow': 3, 'client.acl.deny': 1 })
  })

  it('sends the client\'s mountpoint as %m and its own topic, before the mountpoint, as %t', async () => {
    await load()
    const alice = await open(node, { protocol: 'ws', port: node.port('mqtt:ws'), path: '/mqtt', protocolVersion: 5, clientId: 'acl-ws', username: 'alice', password: 'pw' })
    await alice.client.publishAsync('users/alice/ws', 'x', { qos: 1 })
    const acl = service.requests('/mqtt/acl')
    expect(acl.find(s => s.params.clientid === 'acl-ws')?.params).toMatchObject({ topic: 'users/alice/ws', mountpoint: 'ws/acl-ws/' })
  })

  it('makes a client the super_req accepts a superuser: no ACL request, every topic allowed', async () => {
    await load()
    const root = await open(node, { protocolVersion: 5, clientId: 'su', username: 'root', password: 'pw' })
    expect(await suback(root.client, ['other/#'])).toEqual([1])
    await root.client.publishAsync('other/y', 'x', { qos: 1 })
    await waitFor(() => root.messages.some(m => m.topic === 'other/y'), 'the superuser\'s own publish')
    expect(service.requests('/mqtt/acl')).toEqual([])
    expect(service.requests('/mqtt/superuser').map(s => s.params)).toEqual([{ clientid: 'su', username: 'root' }])
  })

  it('asks once per topic while the ACL cache holds the answer', async () => {
    await load()
    const bob = await open(node, { protocolVersion: 5, clientId: 'cache-bob', username: 'bob', password: 'pw' })
    for (let i = 0; i < 3; i++) await bob.client.publishAsync('users/bob/t', String(i), { qos: 1 })
    for (let i = 0; i < 3; i++) expect(await pubackCode(bob.client, 'other/t')).toBe(0x87)
    expect(service.requests('/mqtt/acl').map(s => s.params.topic)).toEqual(['users/bob/t', 'other/t'])
  })

  it('answers ignore on an ACL request with no answer (acl_nomatch decides), with the alarm', async () => {
    await load({ 'auth.http.acl_req.url': 'http://127.0.0.1:1/mqtt/acl' })
    const alice = await open(node, { protocolVersion: 5, clientId: 'down-acl', username: 'alice', password: 'pw' })
    expect(await suback(alice.client, ['other/#'])).toEqual([1])
    expect(alarmActive()).toBe(true)
  })

  it('denies a mosquitto_sub subscription the service refuses', async () => {
    await load()
    // mosquitto_sub 2.0 reports it and exits (with status 0)
    await expectMosquittoSubDenied(node, { username: 'alice', password: 'pw' }, 'other/#', /All subscription requests were denied/)
  })
})
