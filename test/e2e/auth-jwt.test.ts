/**
 * svc_auth_jwt end to end: tokens signed in the test with jose (HS256 with the secret,
 * RS256 with a generated key pair whose public key is a PEM file, ES256 through a JWKS
 * served by an in-process HTTP server that the test rotates and stops), a node loading the
 * plugin with the shipped etc/plugins/svc_auth_jwt.conf plus the test's keys, and real
 * clients (mqtt.js, MQTT 3.1.1 and 5, and mosquitto_pub / mosquitto_sub).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from 'jose'
import { collect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, open, pubackCode, suback } from '../helpers/mqtt.js'
import {
  StoppableHttpServer, connackCode, expectAlarmKept, expectMosquittoPub, expectMosquittoSubDenied, startBackendNode, type BackendNode
} from '../helpers/auth-backend.js'

const SECRET = 'test-secret-of-this-suite'

/** A JWKS endpoint whose key set the test changes, stops and starts again. */
class JwksServer extends StoppableHttpServer {
  keys: JWK[] = []
  fetches = 0
  constructor () {
    super((_req, res) => {
      this.fetches++
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: this.keys }))
    })
  }

  get url (): string { return `http://127.0.0.1:${this.port}/jwks` }
}

interface KeyPair { publicKey: CryptoKey, privateKey: CryptoKey }
const jwks = new JwksServer()
let rsa: KeyPair
let otherRsa: KeyPair
const ec: Record<string, KeyPair> = {}
let backend: BackendNode
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
  backend = await startBackendNode('svc_auth_jwt', { allow_anonymous: 'false', acl_file: join(dir, 'acl.conf') })
  node = backend.node
})
afterAll(async () => {
  await backend?.destroy()
  await jwks.stop().catch(() => undefined)
  rmSync(dir, { recursive: true, force: true })
})
afterEach(async () => {
  await backend.unload()
  await closeOpened()
})

/** Loads svc_auth_jwt with the shipped file, this suite's secret, public key and JWKS, and `overrides`. */
async function load (overrides: Record<string, string> = {}): Promise<void> {
  await backend.load({
    'auth.jwt.secret': SECRET,
    'auth.jwt.pubkey': join(dir, 'public.pem'),
    'auth.jwt.jwks': jwks.url,
    ...overrides
  })
}

/** A token with `claims` (expiring in an hour unless they say otherwise). */
async function token (claims: JWTPayload, how: { alg: 'HS256' | 'RS256' | 'ES256', key?: CryptoKey | Uint8Array, kid?: string } = { alg: 'HS256' }): Promise<string> {
  const key = how.key ?? (how.alg === 'HS256' ? new TextEncoder().encode(SECRET) : how.alg === 'RS256' ? rsa.privateKey : ec[how.kid ?? 'k1'].privateKey)
  const jwt = new SignJWT({ exp: Math.floor(Date.now() / 1000) + 3600, ...claims }).setProtectedHeader({ alg: how.alg, ...(how.kid === undefined ? {} : { kid: how.kid }) })
  return await jwt.sign(key)
}

const alarmActive = (): boolean => backend.alarmActive()

describe('svc_auth_jwt authentication', () => {
  it('accepts an HS256 token signed with the secret and refuses one signed with another (0x86, 4); a password that is no token is ignored', async () => {
    await load()
    const good = await token({ sub: 'alice' })
    expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: good })).toBe(0)
    expect(await connackCode(node, { protocolVersion: 4, username: 'alice', password: good })).toBe(0)
    const forged = await token({ sub: 'alice' }, { alg: 'HS256', key: new TextEncoder().encode('guessed') })
    expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: forged })).toBe(0x86)
    expect(await connackCode(node, { protocolVersion: 4, username: 'alice', password: forged })).toBe(4)
    // not a JWT: no opinion, allow_anonymous = false refuses
    expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: 'plain-password' })).toBe(0x87)
  })

  it('accepts an RS256 token verified with the public key file and refuses one of another key pair', async () => {
    await load()
    expect(await connackCode(node, { protocolVersion: 5, username: 'r', password: await token({}, { alg: 'RS256' }) })).toBe(0)
    expect(await connackCode(node, { protocolVersion: 5, username: 'r', password: await token({}, { alg: 'RS256', key: otherRsa.privateKey }) })).toBe(0x86)
  })

  it('accepts an ES256 token whose kid the JWKS has, and ignores a kid it does not have', async () => {
    await load()
    expect(await connackCode(node, { protocolVersion: 5, username: 'e', password: await token({}, { alg: 'ES256', kid: 'k1' }) })).toBe(0)
    expect(await connackCode(node, { protocolVersion: 5, username: 'e', password: await token({}, { alg: 'ES256', kid: 'k2' }) })).toBe(0x87)
  })

  it('refuses an expired token, one not yet valid (nbf) and one issued in the future (iat)', async () => {
    await load()
    const now = Math.floor(Date.now() / 1000)
    expect(await connackCode(node, { protocolVersion: 5, username: 'x', password: await token({ exp: now - 10 }) })).toBe(0x86)
    expect(await connackCode(node, { protocolVersion: 5, username: 'x', password: await token({ nbf: now + 600 }) })).toBe(0x86)
    expect(await connackCode(node, { protocolVersion: 5, username: 'x', password: await token({ iat: now + 600 }) })).toBe(0x86)
    expect(await connackCode(node, { protocolVersion: 5, username: 'x', password: await token({ exp: now - 10 }, { alg: 'ES256', kid: 'k1' }) })).toBe(0x86)
  })

  it('checks verify_claims against %u and %c', async () => {
    await load({ 'auth.jwt.verify_claims': 'on', 'auth.jwt.verify_claims.username': '%u', 'auth.jwt.verify_claims.clientid': '%c', 'auth.jwt.verify_claims.iss': 'starling-tests' })
    const claims = { username: 'alice', clientid: 'dev-1', iss: 'starling-tests' }
    expect(await connackCode(node, { protocolVersion: 5, clientId: 'dev-1', username: 'alice', password: await token(claims) })).toBe(0)
    expect(await connackCode(node, { protocolVersion: 5, clientId: 'dev-2', username: 'alice', password: await token(claims) })).toBe(0x86)
    expect(await connackCode(node, { protocolVersion: 5, clientId: 'dev-1', username: 'mallory', password: await token(claims) })).toBe(0x86)
    expect(await connackCode(node, { protocolVersion: 5, clientId: 'dev-1', username: 'alice', password: await token({ ...claims, iss: 'other' }) })).toBe(0x86)
    expect(await connackCode(node, { protocolVersion: 4, clientId: 'dev-1', username: 'alice', password: await token({ username: 'alice', clientid: 'dev-1' }) })).toBe(4)
  })

  it('reads the token from the username with auth.jwt.from = username', async () => {
    await load({ 'auth.jwt.from': 'username' })
    expect(await connackCode(node, { protocolVersion: 5, username: await token({}) })).toBe(0)
    expect(await connackCode(node, { protocolVersion: 4, username: await token({}), password: 'ignored' })).toBe(0)
    expect(await connackCode(node, { protocolVersion: 5, username: 'alice', password: await token({}) })).toBe(0x87)
  })

  it('accepts and refuses mosquitto_pub clients by their token', async () => {
    await load()
    const good = await token({})
    await expectMosquittoPub(node, { username: 'm', password: good, wrongPassword: good.slice(0, -4) + 'AAAA', topic: 't/1', versions: ['mqttv311', 'mqttv5'], refusal: /bad user name or password/i, quiet: true })
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
    await expectMosquittoSubDenied(node, { username: 'm', password: await token({ acl }) }, 'other/#', /All subscription requests were denied/)
  })
})

describe('svc_auth_jwt JWKS refresh', () => {
  it('picks up a rotated key set after the refresh interval, and drops the old key', async () => {
    await load({ 'auth.jwt.jwks.refresh_interval': '1s' })
    expect(await connackCode(node, { protocolVersion: 5, username: 'e', password: await token({}, { alg: 'ES256', kid: 'k1' }) })).toBe(0)
    jwks.keys = [await jwkOf('k2')]
    const k2 = await token({}, { alg: 'ES256', kid: 'k2' })
    // jose fetches the set again for an unknown kid once the cooldown (the interval) is over
    let code = -1
    const deadline = Date.now() + 5000
    while (code !== 0 && Date.now() < deadline) code = await connackCode(node, { protocolVersion: 5, username: 'e', password: k2 })
    expect(code).toBe(0)
    expect(await connackCode(node, { protocolVersion: 5, username: 'e', password: await token({}, { alg: 'ES256', kid: 'k1' }) })).toBe(0x87)
    jwks.keys = [await jwkOf('k1')]
  })

  it('answers ignore quickly with the alarm while the JWKS server is down, keeps it up through checks that do not fetch, and accepts again once it is back', async () => {
    await load({ 'auth.jwt.jwks.refresh_interval': '200ms', 'auth.jwt.timeout': '1s' })
    const k1 = await token({}, { alg: 'ES256', kid: 'k1' })
    expect(await connackCode(node, { protocolVersion: 5, username: 'e', password: k1 })).toBe(0)
    const port = jwks.port
    await jwks.stop()
    try {
      const deadline = Date.now() + 5000
      let code = 0
      while (code === 0 && Date.now() < deadline) {
        const started = Date.now()
        code = await connackCode(node, { protocolVersion: 5, username: 'e', password: k1 })
        expect(Date.now() - started).toBeLessThan(1500)
      }
      expect(code).toBe(0x87)
      expect(alarmActive()).toBe(true)
      // a token verified with the secret, and the ACL checks of its claims: the JWKS server is not asked
      await expectAlarmKept(backend, true, async () => {
        const hs = await open(node, { protocolVersion: 5, clientId: 'hs-while-down', username: 'h', password: await token({ acl: { all: ['t/#'] } }) })
        expect(await pubackCode(hs.client, 't/x')).toBe(0)
        expect(await pubackCode(hs.client, 'elsewhere')).toBe(0x87)
      })
    } finally {
      await jwks.start(port)
    }
    expect(await connackCode(node, { protocolVersion: 5, username: 'e', password: k1 })).toBe(0)
    expect(alarmActive()).toBe(false)
  })
})
