/**
 * svc_auth_jwt end to end: tokens signed in the test with jose (HS256 with the secret,
 * RS256 with a generated key pair whose public key is a PEM file, ES256 through a JWKS
 * served by an in-process HTTP server that the test rotates and stops), a node loading the
 * plugin with the shipped etc/plugins/svc_auth_jwt.conf plus the test's keys, and real
 * clients (mqtt.js, MQTT 3.1.1 and 5, and mosquitto_pub / mosquitto_sub).
 */
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type IClientOptions } from 'mqtt'
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from 'jose'
import { collect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, open, pubackCode, suback } from '../helpers/mqtt.js'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'

const SECRET = 'test-secret-of-this-suite'

/** A JWKS endpoint whose key set the test changes, stops and starts again. */
class JwksServer {
  keys: JWK[] = []
  fetches = 0
  port = 0
  private readonly server: Server
  private readonly sockets = new Set<Socket>()
  constructor () {
    this.server = createServer((_req, res) => {
      this.fetches++
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: this.keys }))
    })
    this.server.on('connection', (s) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)) })
  }

  async start (port = 0): Promise<void> {
    this.server.listen(port, '127.0.0.1')
    await once(this.server, 'listening')
    this.port = (this.server.address() as AddressInfo).port
  }

  async stop (): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()))
    for (const s of this.sockets) s.destroy()
    this.server.closeAllConnections()
    await closed
  }

  get url (): string { return `http://127.0.0.1:${this.port}/jwks` }
}

interface KeyPair { publicKey: CryptoKey, privateKey: CryptoKey }
const jwks = new JwksServer()
let rsa: KeyPair
let otherRsa: KeyPair
const ec: Record<string, KeyPair> = {}
let p: PluginNode
let node: TestNode
let dir: string

async function jwkOf (kid: string): Promise<JWK> {
  return { ...(await exportJWK(ec[kid].publicKey)), kid, alg: 'ES256', use: 'sig' }
}

beforeAll(async () => {
  rsa = await generateKeyPair('RS256', { extractable: true })
  otherRsa = await generateKeyPair('RS256')
  for (const kid of ['k1', 'k2']) ec[kid] = await generateKeyPair('ES256', { extractable: true })
  dir = mkdtempSync(join(tmpdir(), 'starling-jwt-'))
  writeFileSync(join(dir, 'public.pem'), await exportSPKI(rsa.publicKey))
  writeFileSync(join(dir, 'acl.conf'), '')
  jwks.keys = [await jwkOf('k1')]
  await jwks.start()
  p = await startPluginNode({ overrides: { allow_anonymous: 'false', acl_file: join(dir, 'acl.conf') } })
  node = p.node
})
afterAll(async () => {
  await p?.destroy()
  await jwks.stop().catch(() => undefined)
  rmSync(dir, { recursive: true, force: true })
})
afterEach(async () => {
  if (p.manager.isActive('svc_auth_jwt')) await p.manager.unload('svc_auth_jwt')
  await closeOpened()
})

/** Loads svc_auth_jwt with the shipped file, this suite's secret, public key and JWKS, and `overrides`. */
async function load (overrides: Record<string, string> = {}): Promise<void> {
  p.writeConf('svc_auth_jwt', shippedPluginConf('svc_auth_jwt', {
    'auth.jwt.secret': SECRET,
    'auth.jwt.pubkey': join(dir, 'public.pem'),
    'auth.jwt.jwks': jwks.url,
    ...overrides
  }))
  await p.manager.load('svc_auth_jwt')
}

/** A token with `claims` (expiring in an hour unless they say otherwise). */
async function token (claims: JWTPayload, how: { alg: 'HS256' | 'RS256' | 'ES256', key?: CryptoKey | Uint8Array, kid?: string } = { alg: 'HS256' }): Promise<string> {
  const key = how.key ?? (how.alg === 'HS256' ? new TextEncoder().encode(SECRET) : how.alg === 'RS256' ? rsa.privateKey : ec[how.kid ?? 'k1'].privateKey)
  const jwt = new SignJWT({ exp: Math.floor(Date.now() / 1000) + 3600, ...claims }).setProtectedHeader({ alg: how.alg, ...(how.kid === undefined ? {} : { kid: how.kid }) })
  return await jwt.sign(key)
}

/** Connects once and resolves with the CONNACK code (0 accepted) for either protocol version; the client is closed. */
async function connackCode (opts: IClientOptions): Promise<number> {
  const client = mqtt.connect({ host: '127.0.0.1', port: node.port('mqtt:tcp'), reconnectPeriod: 0, connectTimeout: 5000, ...opts })
  client.on('error', () => {})
  const connack = await new Promise<any>((resolve) => {
    client.on('packetreceive', (packet: any) => { if (packet.cmd === 'connack') resolve(packet) })
    client.once('close', () => resolve(null))
  })
  client.end(true)
  if (connack === null) throw new Error('no CONNACK')
  return opts.protocolVersion === 5 ? connack.reasonCode ?? 0 : connack.returnCode
}

const alarmActive = (): boolean => node.services.alarms.isActive('svc_auth_jwt_unreachable')

/** Runs a mosquitto client without blocking the event loop (the node runs in this process). */
async function mosquitto (program: string, args: string[]): Promise<{ code: number, out: string }> {
  return await new Promise((resolve) => {
    execFile(program, ['-h', '127.0.0.1', '-p', String(node.port('mqtt:tcp')), ...args], { timeout: 10000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, out: stdout + stderr })
    })
  })
}

describe('svc_auth_jwt authentication', () => {
  it('accepts an HS256 token signed with the secret and refuses one signed with another (0x86, 4); a password that is no token is ignored', async () => {
    await load()
    const good = await token({ sub: 'alice' })
    expect(await connackCode({ protocolVersion: 5, username: 'alice', password: good })).toBe(0)
    expect(await connackCode({ protocolVersion: 4, username: 'alice', password: good })).toBe(0)
    const forged = await token({ sub: 'alice' }, { alg: 'HS256', key: new TextEncoder().encode('guessed') })
    expect(await connackCode({ protocolVersion: 5, username: 'alice', password: forged })).toBe(0x86)
    expect(await connackCode({ protocolVersion: 4, username: 'alice', password: forged })).toBe(4)
    // not a JWT: no opinion, allow_anonymous = false refuses
    expect(await connackCode({ protocolVersion: 5, username: 'alice', password: 'plain-password' })).toBe(0x87)
  })

  it('accepts an RS256 token verified with the public key file and refuses one of another key pair', async () => {
    await load()
    expect(await connackCode({ protocolVersion: 5, username: 'r', password: await token({}, { alg: 'RS256' }) })).toBe(0)
    expect(await connackCode({ protocolVersion: 5, username: 'r', password: await token({}, { alg: 'RS256', key: otherRsa.privateKey }) })).toBe(0x86)
  })

  it('accepts an ES256 token whose kid the JWKS has, and ignores a kid it does not have', async () => {
    await load()
    expect(await connackCode({ protocolVersion: 5, username: 'e', password: await token({}, { alg: 'ES256', kid: 'k1' }) })).toBe(0)
    expect(await connackCode({ protocolVersion: 5, username: 'e', password: await token({}, { alg: 'ES256', kid: 'k2' }) })).toBe(0x87)
  })

  it('refuses an expired token, one not yet valid (nbf) and one issued in the future (iat)', async () => {
    await load()
    const now = Math.floor(Date.now() / 1000)
    expect(await connackCode({ protocolVersion: 5, username: 'x', password: await token({ exp: now - 10 }) })).toBe(0x86)
    expect(await connackCode({ protocolVersion: 5, username: 'x', password: await token({ nbf: now + 600 }) })).toBe(0x86)
    expect(await connackCode({ protocolVersion: 5, username: 'x', password: await token({ iat: now + 600 }) })).toBe(0x86)
    expect(await connackCode({ protocolVersion: 5, username: 'x', password: await token({ exp: now - 10 }, { alg: 'ES256', kid: 'k1' }) })).toBe(0x86)
  })

  it('checks verify_claims against %u and %c', async () => {
    await load({ 'auth.jwt.verify_claims': 'on', 'auth.jwt.verify_claims.username': '%u', 'auth.jwt.verify_claims.clientid': '%c', 'auth.jwt.verify_claims.iss': 'starling-tests' })
    const claims = { username: 'alice', clientid: 'dev-1', iss: 'starling-tests' }
    expect(await connackCode({ protocolVersion: 5, clientId: 'dev-1', username: 'alice', password: await token(claims) })).toBe(0)
    expect(await connackCode({ protocolVersion: 5, clientId: 'dev-2', username: 'alice', password: await token(claims) })).toBe(0x86)
    expect(await connackCode({ protocolVersion: 5, clientId: 'dev-1', username: 'mallory', password: await token(claims) })).toBe(0x86)
    expect(await connackCode({ protocolVersion: 5, clientId: 'dev-1', username: 'alice', password: await token({ ...claims, iss: 'other' }) })).toBe(0x86)
    expect(await connackCode({ protocolVersion: 4, clientId: 'dev-1', username: 'alice', password: await token({ username: 'alice', clientid: 'dev-1' }) })).toBe(4)
  })

  it('reads the token from the username with auth.jwt.from = username', async () => {
    await load({ 'auth.jwt.from': 'username' })
    expect(await connackCode({ protocolVersion: 5, username: await token({}) })).toBe(0)
    expect(await connackCode({ protocolVersion: 4, username: await token({}), password: 'ignored' })).toBe(0)
    expect(await connackCode({ protocolVersion: 5, username: 'alice', password: await token({}) })).toBe(0x87)
  })

  it('accepts and refuses mosquitto_pub clients by their token', async () => {
    await load()
    const good = await token({})
    for (const version of ['mqttv311', 'mqttv5']) {
      const ok = await mosquitto('mosquitto_pub', ['-V', version, '-u', 'm', '-P', good, '-t', 't/1', '-m', 'hi', '-q', '1'])
      expect([version, ok.code, ok.out]).toEqual([version, 0, ''])
      const bad = await mosquitto('mosquitto_pub', ['-V', version, '-u', 'm', '-P', good.slice(0, -4) + 'AAAA', '-t', 't/1', '-m', 'hi'])
      expect(bad.code).not.toBe(0)
      expect(bad.out).toMatch(/bad user name or password/i)
    }
  })
})

describe('svc_auth_jwt ACL claims', () => {
  const acl = { pub: ['users/%u/#'], sub: ['news/#'], all: ['chat/%c'] }

  it('allows the topics of the acl claim and denies the others; a token without the claim leaves it to acl_nomatch', async () => {
    await load()
    const alice = await open(node, { protocolVersion: 5, clientId: 'acl-a', username: 'alice', password: await token({ acl }) })
    expect(await suback(alice.client, ['news/#', 'chat/acl-a', 'users/alice/#', 'other/#'])).toEqual([1, 1, 0x80, 0x80])
    const free = await open(node, { protocolVersion: 5, clientId: 'acl-free', username: 'free', password: await token({}) })
    expect(await suback(free.client, ['#'])).toEqual([1])
    const got = collect(free.client)
    expect(await pubackCode(alice.client, 'other/x')).toBe(0x87)
    expect(await pubackCode(alice.client, 'news/x')).toBe(0x87)
    expect(await pubackCode(alice.client, 'users/alice/x')).toBe(0)
    expect(await pubackCode(alice.client, 'chat/acl-a')).toBe(0)
    await waitFor(() => got.length >= 2, 'the allowed publishes')
    expect(got.map(m => m.topic)).toEqual(['users/alice/x', 'chat/acl-a'])
  })

  it('keeps the claims of the connection that took a client id over, after the old one is gone', async () => {
    await load()
    const first = await open(node, { protocolVersion: 5, clientId: 'same', username: 'alice', password: await token({ acl: { all: ['first/#'] } }) })
    const second = await open(node, { protocolVersion: 5, clientId: 'same', username: 'alice', password: await token({ acl: { all: ['second/#'] } }) })
    await waitFor(() => first.closed(), 'the first connection to be taken over')
    expect(await suback(second.client, ['second/#', 'first/#', 'other/#'])).toEqual([1, 0x80, 0x80])
  })

  it('denies a mosquitto_sub subscription outside the token\'s acl claim', async () => {
    await load()
    const denied = await mosquitto('mosquitto_sub', ['-V', 'mqttv5', '-u', 'm', '-P', await token({ acl }), '-t', 'other/#', '-C', '1', '-W', '3'])
    expect(denied.out).toMatch(/All subscription requests were denied/)
  })
})

describe('svc_auth_jwt JWKS refresh', () => {
  it('picks up a rotated key set after the refresh interval, and drops the old key', async () => {
    await load({ 'auth.jwt.jwks.refresh_interval': '1s' })
    expect(await connackCode({ protocolVersion: 5, username: 'e', password: await token({}, { alg: 'ES256', kid: 'k1' }) })).toBe(0)
    jwks.keys = [await jwkOf('k2')]
    const k2 = await token({}, { alg: 'ES256', kid: 'k2' })
    // jose fetches the set again for an unknown kid once the cooldown (the interval) is over
    let code = -1
    const deadline = Date.now() + 5000
    while (code !== 0 && Date.now() < deadline) code = await connackCode({ protocolVersion: 5, username: 'e', password: k2 })
    expect(code).toBe(0)
    expect(await connackCode({ protocolVersion: 5, username: 'e', password: await token({}, { alg: 'ES256', kid: 'k1' }) })).toBe(0x87)
    jwks.keys = [await jwkOf('k1')]
  })

  it('answers ignore quickly with the alarm while the JWKS server is down, and accepts again once it is back', async () => {
    await load({ 'auth.jwt.jwks.refresh_interval': '200ms', 'auth.jwt.timeout': '1s' })
    const k1 = await token({}, { alg: 'ES256', kid: 'k1' })
    expect(await connackCode({ protocolVersion: 5, username: 'e', password: k1 })).toBe(0)
    const port = jwks.port
    await jwks.stop()
    try {
      const deadline = Date.now() + 5000
      let code = 0
      while (code === 0 && Date.now() < deadline) {
        const started = Date.now()
        code = await connackCode({ protocolVersion: 5, username: 'e', password: k1 })
        expect(Date.now() - started).toBeLessThan(1500)
      }
      expect(code).toBe(0x87)
      expect(alarmActive()).toBe(true)
    } finally {
      await jwks.start(port)
    }
    expect(await connackCode({ protocolVersion: 5, username: 'e', password: k1 })).toBe(0)
    expect(alarmActive()).toBe(false)
  })
})
