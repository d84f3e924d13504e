/**
 * svc_auth_http against an https service, end to end: an in-process node:https auth service
 * (certificates from the openssl CLI: a CA and a server certificate for 127.0.0.1 and
 * localhost; a second CA for client certificates), a node loading the plugin with the shipped
 * etc/plugins/svc_auth_http.conf plus `auth.http.ssl.*`, and real clients (mqtt.js, MQTT
 * 3.1.1 and 5).
 *
 * - `ssl.verify = true` with `ssl.cacertfile` = the service's CA: auth and ACL requests
 *   answered over https.
 * - a CA that did not sign the service's certificate: no answer, so ignore (the chain
 *   decides) with the alarm `svc_auth_http_unreachable`, within `auth.http.timeout`.
 * - `ssl.verify = false` (EMQ X's default) accepts that certificate.
 * - a service that requires a client certificate: `ssl.certfile`/`ssl.keyfile` are presented
 *   (the service sees their CN); without them the service refuses the handshake: ignore + alarm.
 * - `ssl.server_name_indication`: sent as SNI and checked against the certificate.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:https'
import type { TLSSocket } from 'node:tls'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { apiRequest, connect, type TestNode } from '../helpers/node.js'
import { closeOpened, open, refusedConnack, suback } from '../helpers/mqtt.js'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'
import { makeTestCa, makeTestCert, type TestCertificate } from '../helpers/servers/index.js'
import { StoppableHttpServer } from '../helpers/auth-backend.js'

const PLUGIN = 'svc_auth_http'
const ALARM = 'svc_auth_http_unreachable'
const TIMEOUT_MS = 1000
/** The certificates come from the openssl CLI (Debian package `openssl`); on CI a missing one fails. */
const hasOpenssl = spawnSync('openssl', ['version']).status === 0 || process.env.CI !== undefined

/** What the service saw of one request. */
interface Seen { path: string, params: Record<string, string>, clientCn: string | undefined, sni: string | undefined }

/** An https auth service: alice/pw; `ignored` → ignore; ACL: `ok/...` allowed, the rest denied. */
class HttpsAuthService extends StoppableHttpServer {
  seen: Seen[] = []

  /** `cert` and `key` PEM; with `clientCa` the service requires a client certificate it signed. */
  constructor (opts: { cert: string, key: string, clientCa?: string }) {
    super(createServer({
      cert: opts.cert,
      key: opts.key,
      ...(opts.clientCa !== undefined ? { ca: opts.clientCa, requestCert: true, rejectUnauthorized: true } : {})
    }, (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'https://x')
        const params = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()))
        const socket = req.socket as TLSSocket
        const peer = socket.getPeerCertificate()
        this.seen.push({ path: url.pathname, params, clientCn: peer?.subject?.CN === undefined ? undefined : String(peer.subject.CN), sni: (socket as TLSSocket & { servername?: string | false }).servername || undefined })
        const [status, body] = this.answer(url.pathname, params)
        res.writeHead(status, { 'content-type': 'text/plain' }).end(body)
      })
    }))
    this.server.on('tlsClientError', () => {}) // a client without a certificate, or distrusting ours
  }

  private answer (path: string, p: Record<string, string>): [number, string] {
    if (path === '/mqtt/auth') {
      if (p.username === 'ignored' || p.username !== 'alice') return [200, 'ignore']
      return p.password === 'pw' ? [200, 'ok'] : [401, 'bad password']
    }
    if (path === '/mqtt/acl') return (p.topic ?? '').startsWith('ok/') ? [200, 'ok'] : [403, 'no']
    return [404, 'no such path']
  }

  url (path: string): string { return `https://127.0.0.1:${this.port}${path}` }
}

if (!hasOpenssl) console.warn('skipping "svc_auth_http over https": install the Debian package `openssl`')
;(hasOpenssl ? describe : describe.skip)('svc_auth_http over https', () => {
  let dir: string
  let serverCa: TestCertificate
  let wrongCa: TestCertificate
  let clientCa: TestCertificate
  let clientCert: TestCertificate
  let service: HttpsAuthService
  let mtlsService: HttpsAuthService
  let p: PluginNode
  let node: TestNode

  beforeAll(async () => {
    const began = Date.now()
    dir = mkdtempSync(join(tmpdir(), 'starling-http-tls-'))
    serverCa = await makeTestCa(dir, 'server-ca', 'Starling test service CA')
    wrongCa = await makeTestCa(dir, 'wrong-ca', 'Starling test service CA') // same name, other key
    clientCa = await makeTestCa(dir, 'client-ca', 'Starling test client CA')
    const serverCert = await makeTestCert(dir, serverCa, 'server')
    clientCert = await makeTestCert(dir, clientCa, 'client', { cn: 'starling-node', san: 'DNS:starling-node' })
    const key = await readFile(serverCert.keyFile, 'utf8')
    service = new HttpsAuthService({ cert: serverCert.cert, key })
    mtlsService = new HttpsAuthService({ cert: serverCert.cert, key, clientCa: clientCa.cert })
    await service.start()
    await mtlsService.start()
    p = await startPluginNode({ overrides: { allow_anonymous: 'false' } })
    node = p.node
    console.log(`svc_auth_http over https: certificates, services and node ready in ${Date.now() - began} ms`)
  }, 60_000)
  afterAll(async () => {
    await p?.destroy()
    await service?.stop().catch(() => undefined)
    await mtlsService?.stop().catch(() => undefined)
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })
  afterEach(async () => {
    if (p.manager.isActive(PLUGIN)) await p.manager.unload(PLUGIN)
    await closeOpened()
    service.seen = []
    mtlsService.seen = []
  })

  async function load (on: HttpsAuthService, keys: Record<string, string>): Promise<void> {
    p.writeConf(PLUGIN, shippedPluginConf(PLUGIN, {
      'auth.http.auth_req.url': on.url('/mqtt/auth'),
      'auth.http.super_req.url': '',
      'auth.http.acl_req.url': on.url('/mqtt/acl'),
      'auth.http.timeout': `${TIMEOUT_MS}ms`,
      'auth.http.connect_timeout': `${TIMEOUT_MS}ms`,
      ...keys
    }))
    await p.manager.load(PLUGIN)
  }
  /** The CONNECT refused by the chain (0x87) within the timeout, the alarm up with an error matching `why`. */
  async function expectUnreachable (why: RegExp): Promise<void> {
    const before = node.metrics['client.auth.ignore']
    const began = Date.now()
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'alice', password: 'pw' })).reasonCode).toBe(0x87)
    const took = Date.now() - began
    expect(took).toBeLessThan(TIMEOUT_MS + 500)
    expect(node.metrics['client.auth.ignore'] - before).toBe(1)
    expect(node.services.alarms.isActive(ALARM)).toBe(true)
    expect(String(node.services.alarms.present().find((a) => a.id === ALARM)?.details.error)).toMatch(why)
    expect(JSON.stringify(await apiRequest(node, '/alarms/present'))).toContain(ALARM)
    console.log(`svc_auth_http over https: unreachable service (${why.source}) answered in ${took} ms`)
  }

  it('ssl.verify with the service\'s CA in ssl.cacertfile: auth and ACL over https', async () => {
    await load(service, { 'auth.http.ssl.verify': 'true', 'auth.http.ssl.cacertfile': serverCa.certFile })
    await connect(node, { protocolVersion: 5, username: 'alice', password: 'pw' })
    await connect(node, { protocolVersion: 4, username: 'alice', password: 'pw' })
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'alice', password: 'no' })).reasonCode).toBe(0x86)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'alice', password: 'no' })).returnCode).toBe(4)
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'ignored', password: 'x' })).reasonCode).toBe(0x87)
    const c = await open(node, { protocolVersion: 5, username: 'alice', password: 'pw' })
    expect(await suback(c.client, ['ok/a', 'no/a'])).toEqual([1, 0x80])
    expect(service.seen.filter((s) => s.path === '/mqtt/auth').length).toBeGreaterThanOrEqual(5)
    expect(service.seen.filter((s) => s.path === '/mqtt/acl').map((s) => s.params.topic).sort()).toEqual(['no/a', 'ok/a'])
    // no client certificate was configured, none was sent; an IP address is no SNI name
    expect(service.seen.every((s) => s.clientCn === undefined && s.sni === undefined)).toBe(true)
    expect(node.services.alarms.isActive(ALARM)).toBe(false)
  })

  it('a CA that did not sign the service\'s certificate: ignore + alarm within the timeout; cleared at unload', async () => {
    await load(service, { 'auth.http.ssl.verify': 'true', 'auth.http.ssl.cacertfile': wrongCa.certFile })
    await expectUnreachable(/certificate|signature/i)
    expect(service.seen).toHaveLength(0)
    await p.manager.unload(PLUGIN)
    expect(node.services.alarms.isActive(ALARM)).toBe(false)
  })

  it('ssl.verify = false (EMQ X\'s default) accepts a certificate the configured CA did not sign', async () => {
    await load(service, { 'auth.http.ssl.verify': 'false', 'auth.http.ssl.cacertfile': wrongCa.certFile })
    await connect(node, { protocolVersion: 5, username: 'alice', password: 'pw' })
    expect(node.services.alarms.isActive(ALARM)).toBe(false)
  })

  it('a service that requires a client certificate gets ssl.certfile/keyfile; without them: ignore + alarm', async () => {
    await load(mtlsService, {
      'auth.http.ssl.verify': 'true',
      'auth.http.ssl.cacertfile': serverCa.certFile,
      'auth.http.ssl.certfile': clientCert.certFile,
      'auth.http.ssl.keyfile': clientCert.keyFile
    })
    await connect(node, { protocolVersion: 5, username: 'alice', password: 'pw' })
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'alice', password: 'no' })).reasonCode).toBe(0x86)
    const c = await open(node, { protocolVersion: 5, username: 'alice', password: 'pw' })
    expect(await suback(c.client, ['ok/b', 'no/b'])).toEqual([1, 0x80])
    expect(mtlsService.seen.length).toBeGreaterThanOrEqual(4)
    expect(new Set(mtlsService.seen.map((s) => s.clientCn))).toEqual(new Set(['starling-node']))
    await p.manager.unload(PLUGIN)

    await load(mtlsService, { 'auth.http.ssl.verify': 'true', 'auth.http.ssl.cacertfile': serverCa.certFile })
    const before = mtlsService.seen.length
    await expectUnreachable(/certificate|socket|reset|closed|alert/i)
    expect(mtlsService.seen).toHaveLength(before)
  })

  it('ssl.server_name_indication is sent and checked: a name of the certificate passes, another fails', async () => {
    await load(service, { 'auth.http.ssl.verify': 'true', 'auth.http.ssl.cacertfile': serverCa.certFile, 'auth.http.ssl.server_name_indication': 'localhost' })
    await connect(node, { protocolVersion: 5, username: 'alice', password: 'pw' })
    expect(service.seen.map((s) => s.sni)).toContain('localhost')
    await p.manager.unload(PLUGIN)
    await load(service, { 'auth.http.ssl.verify': 'true', 'auth.http.ssl.cacertfile': serverCa.certFile, 'auth.http.ssl.server_name_indication': 'auth.example.com' })
    await expectUnreachable(/altnames|host ?name|does not match/i)
  })
})
