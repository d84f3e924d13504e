/**
 * A web_hook resource's pool (rules/actions/web-hook-pool.ts) against real servers on
 * ephemeral ports: connections reused up to `pool_size` under 200 concurrent sends, HTTP/1.1
 * pipelining on and off, `request_timeout` against a server that accepts and never answers,
 * `connect_timeout` against one that never completes the TLS handshake, TLS with a CA, a
 * client certificate and `verify` (a wrong CA refused), and failures that show no credential
 * of the URL.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import net, { type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TLSSocket } from 'node:tls'
import { openWebHookPool, webHookSettings, webHookTlsOptions, type WebHookInstance, type WebHookRequest } from '../../rules/actions/web-hook-pool.js'
import { requestPath } from '../../rules/actions/web-hook.js'
import { makeTestCa, makeTestCert, type TestCertificate } from '../helpers/servers/index.js'

/** The certificates come from the openssl CLI (Debian package `openssl`); on CI a missing one fails. */
const hasOpenssl = spawnSync('openssl', ['version']).status === 0 || process.env.CI !== undefined

const POST: WebHookRequest = { method: 'POST', path: '/hook', headers: { 'content-type': 'application/json' }, body: '{"n":1}' }

/** A server's port once listening on 127.0.0.1, port 0. */
async function listen (server: net.Server): Promise<number> {
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

async function close (server: net.Server): Promise<void> {
  if (server instanceof http.Server) server.closeAllConnections()
  await new Promise<void>(resolve => server.close(() => resolve()))
}

/** Instances opened by a test, closed after it. */
const opened: WebHookInstance[] = []
async function pool (config: Record<string, unknown>): Promise<WebHookInstance> {
  const instance = await openWebHookPool('web_hook:t', webHookSettings(config))
  opened.push(instance)
  return instance
}
afterEach(async () => {
  for (const instance of opened.splice(0)) await instance.close()
})

describe('the pool', () => {
  /** An HTTP server counting the connections opened; answers each request after a short hold, so that requests overlap. */
  let server: http.Server
  let url: string
  let connections = 0
  let received = 0
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => { received++; setTimeout(() => res.end('ok'), 2) })
    })
    server.on('connection', () => { connections++ })
    url = `http://127.0.0.1:${await listen(server)}/hook`
  })
  afterAll(async () => { await close(server) })
  beforeEach(() => { connections = 0; received = 0 })

  for (const pipelining of [true, false]) {
    it(`opens at most pool_size connections for 200 concurrent sends, and reuses them (enable_pipelining ${String(pipelining)})`, async () => {
      const hook = await pool({ url, pool_size: 4, enable_pipelining: pipelining })
      await Promise.all(Array.from({ length: 200 }, async () => await hook.send(POST)))
      expect(received).toBe(200)
      expect(connections).toBeGreaterThan(0)
      expect(connections).toBeLessThanOrEqual(4)
      expect(hook.pending).toBe(0)
      // the next sends go over the same connections
      await Promise.all(Array.from({ length: 20 }, async () => await hook.send(POST)))
      expect(connections).toBeLessThanOrEqual(4)
    })
  }

  it('keeps EMQ X 4.4\'s default of 8 connections', async () => {
    const hook = await pool({ url })
    await Promise.all(Array.from({ length: 200 }, async () => await hook.send(POST)))
    expect(received).toBe(200)
    expect(connections).toBeLessThanOrEqual(8)
  })
})

describe('enable_pipelining', () => {
  /**
   * A raw HTTP/1.1 server: counts the requests that arrived on each connection and are not
   * answered yet; answers them all once `batch` are waiting on the connection.
   */
  let server: net.Server
  let port: number
  let batch = 1
  let mostWaiting = 0
  beforeAll(async () => {
    server = net.createServer((socket) => {
      let text = ''
      let waiting = 0
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1')
        let at: number
        // each request is a head and a body of its content-length (the bodies hold no "POST ")
        while ((at = text.indexOf('\r\n\r\n')) >= 0) {
          const length = Number(/content-length: (\d+)/i.exec(text.slice(0, at))?.[1] ?? 0)
          if (text.length < at + 4 + length) break
          text = text.slice(at + 4 + length)
          waiting++
        }
        mostWaiting = Math.max(mostWaiting, waiting)
        if (waiting >= batch) {
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'.repeat(waiting))
          waiting = 0
        }
      })
      socket.on('error', () => {})
    })
    port = await listen(server)
  })
  afterAll(async () => { await close(server) })
  beforeEach(() => { mostWaiting = 0 })

  it('on: further requests go out on the one connection before the first is answered', async () => {
    batch = 3
    const hook = await pool({ url: `http://127.0.0.1:${port}/p`, pool_size: 1, enable_pipelining: true })
    await Promise.all([hook.send(POST), hook.send(POST), hook.send(POST)])
    expect(mostWaiting).toBe(3)
  })

  it('off: one request at a time on a connection', async () => {
    batch = 1
    const hook = await pool({ url: `http://127.0.0.1:${port}/p`, pool_size: 1, enable_pipelining: false })
    await Promise.all([hook.send(POST), hook.send(POST), hook.send(POST)])
    expect(mostWaiting).toBe(1)
  })
})

describe('timeouts', () => {
  /** Accepts connections and never writes a byte: no HTTP answer, no TLS handshake. */
  let silent: net.Server
  let port: number
  const sockets = new Set<net.Socket>()
  beforeAll(async () => {
    silent = net.createServer((socket) => {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => sockets.delete(socket))
    })
    port = await listen(silent)
  })
  afterAll(async () => {
    for (const s of sockets) s.destroy()
    await close(silent)
  })

  it('request_timeout: a server that accepts and never answers fails the send within it', async () => {
    const hook = await pool({ url: `http://127.0.0.1:${port}/hook`, request_timeout: '300ms', connect_timeout: '5s' })
    const began = Date.now()
    await expect(hook.send(POST)).rejects.toThrow(`web_hook web_hook:t: POST http://127.0.0.1:${port}/hook: no answer within 300 ms (request_timeout)`)
    expect(Date.now() - began).toBeGreaterThanOrEqual(250)
    expect(Date.now() - began).toBeLessThan(3000)
    expect(hook.pending).toBe(0)
  })

  it('request_timeout as a number is milliseconds (resources stored by earlier versions)', async () => {
    const hook = await pool({ url: `http://127.0.0.1:${port}/hook`, request_timeout: 300 })
    await expect(hook.send(POST)).rejects.toThrow(/no answer within 300 ms \(request_timeout\)$/)
  })

  it('connect_timeout: a TLS server that never completes the handshake fails the send within it', async () => {
    const hook = await pool({ url: `https://127.0.0.1:${port}/hook`, connect_timeout: '300ms', request_timeout: '10s' })
    const began = Date.now()
    await expect(hook.send(POST)).rejects.toThrow(`web_hook web_hook:t: POST https://127.0.0.1:${port}/hook: no connection within 300 ms (connect_timeout)`)
    expect(Date.now() - began).toBeLessThan(5000)
  })

  it('a full pool: a send waiting for a connection counts against request_timeout', async () => {
    const hook = await pool({ url: `http://127.0.0.1:${port}/hook`, pool_size: 1, enable_pipelining: false, request_timeout: '400ms' })
    const results = await Promise.allSettled([hook.send(POST), hook.send(POST)])
    expect(results.map(r => r.status)).toEqual(['rejected', 'rejected'])
    expect(hook.pending).toBe(0)
  })
})

describe('failures show no credential', () => {
  let server: http.Server
  let port: number
  const authorizations: Array<string | undefined> = []
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      authorizations.push(req.headers.authorization)
      req.resume()
      res.statusCode = 500
      res.end('no')
    })
    port = await listen(server)
  })
  afterAll(async () => { await close(server) })

  it('an error status names the URL with its userinfo and token masked; the userinfo is sent as Basic', async () => {
    const hook = await pool({ url: `http://hook:pa55word@127.0.0.1:${port}/h?token=T0KEN&x=1` })
    await expect(hook.send({ ...POST, path: '/h?token=T0KEN&x=1', headers: hook.settings.headers })).rejects.toThrow(`web_hook web_hook:t: POST http://******@127.0.0.1:${port}/h?token=******&x=1 answered HTTP 500`)
    expect(authorizations).toEqual(['Basic ' + Buffer.from('hook:pa55word').toString('base64')])
  })

  it('a refused connection names the URL masked', async () => {
    const gone = http.createServer()
    const deadPort = await listen(gone)
    await close(gone)
    const hook = await pool({ url: `http://hook:pa55word@127.0.0.1:${deadPort}/h?password=pa55word` })
    const err: Error = await hook.send({ ...POST, path: '/h?password=pa55word' }).then(() => new Error('sent'), (e: Error) => e)
    expect(err.message).toMatch(new RegExp(`^web_hook web_hook:t: POST http://\\*{6}@127\\.0\\.0\\.1:${deadPort}/h\\?password=\\*{6} failed: .*ECONNREFUSED`))
    expect(err.message).not.toContain('pa55word')
  })
})

describe('the request path', () => {
  it('joins the URL\'s path and the action\'s with one slash, their query strings in that order', () => {
    const at = (url: string, path: string): string => requestPath(new URL(url), path)
    expect(at('http://h/hook?a=1', '')).toBe('/hook?a=1')
    expect(at('http://h', '')).toBe('/')
    expect(at('http://h', 'x')).toBe('/x')
    expect(at('http://h/', '/x')).toBe('/x')
    expect(at('http://h/v1/', '//x/y')).toBe('/v1/x/y')
    expect(at('http://h/v1?a=1', 'x?b=2')).toBe('/v1/x?a=1&b=2')
    expect(at('http://h/v1', '?b=2')).toBe('/v1?b=2')
  })
})

describe('settings', () => {
  it('refuses a config that cannot work with 108, naming the key', () => {
    const code = (config: Record<string, unknown>): unknown => {
      try {
        webHookTlsOptions(webHookSettings({ url: 'https://127.0.0.1:1/x', ...config }))
        return 'accepted'
      } catch (err) {
        return [(err as { code?: number }).code, (err as Error).message]
      }
    }
    expect(code({ pool_size: 0 })).toEqual([108, 'resource type web_hook config: parameter pool_size must be a whole number of 1 or more, got 0'])
    expect(code({ connect_timeout: '0s' })).toEqual([108, 'resource type web_hook config: parameter connect_timeout must be more than 0'])
    expect(code({ request_timeout: 'later' })).toEqual([108, 'resource type web_hook config: parameter request_timeout must be a duration such as 5s or 500ms, got "later"'])
    expect(code({ cacertfile: '/nonexistent/ca.pem' })).toEqual([108, 'resource type web_hook config: parameter cacertfile names a file that cannot be read (/nonexistent/ca.pem: ENOENT)'])
    expect(code({ connect_timeout: '1m', request_timeout: 2500, pool_size: 1, enable_pipelining: false })).toBe('accepted')
  })

  it('reads EMQ X 4.4\'s defaults, and TLS only for https', () => {
    expect(webHookSettings({ url: 'http://h/x' })).toMatchObject({ connectTimeoutMs: 5000, requestTimeoutMs: 5000, poolSize: 8, pipelining: true, tls: undefined, headers: {}, method: undefined })
    expect(webHookSettings({ url: 'https://h/x', verify: true, server_name_indication: 'hooks.example.com' }).tls).toMatchObject({ verify: true, serverName: 'hooks.example.com' })
    expect(webHookSettings({ url: 'http://h/x', headers: { 'X-K': 'v' }, method: 'put' })).toMatchObject({ headers: { 'x-k': 'v' }, method: 'PUT' })
  })
})

if (!hasOpenssl) console.warn('skipping "web_hook over https": install the Debian package `openssl`')
;(hasOpenssl ? describe : describe.skip)('web_hook over https', () => {
  let dir: string
  let serverCa: TestCertificate
  let wrongCa: TestCertificate
  let clientCert: TestCertificate
  let plain: https.Server
  let mtls: https.Server
  /** The client certificate's CN each request came with (undefined: none). */
  const seen: Array<string | undefined> = []
  /** The SNI each request came with. */
  const snis: Array<string | undefined> = []

  function service (opts: https.ServerOptions): https.Server {
    const server = https.createServer(opts, (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate()
      seen.push(peer?.subject?.CN === undefined ? undefined : String(peer.subject.CN))
      snis.push((req.socket as TLSSocket & { servername?: string | false }).servername || undefined)
      req.resume()
      res.end('ok')
    })
    server.on('tlsClientError', () => {}) // a client distrusting us, or without a certificate
    return server
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'starling-webhook-tls-'))
    serverCa = await makeTestCa(dir, 'server-ca', 'Starling test hook CA')
    wrongCa = await makeTestCa(dir, 'wrong-ca', 'Starling test hook CA') // same name, other key
    const clientCa = await makeTestCa(dir, 'client-ca', 'Starling test client CA')
    const serverCert = await makeTestCert(dir, serverCa, 'server')
    clientCert = await makeTestCert(dir, clientCa, 'client', { cn: 'starling-node', san: 'DNS:starling-node' })
    const key = await readFile(serverCert.keyFile, 'utf8')
    plain = service({ cert: serverCert.cert, key })
    mtls = service({ cert: serverCert.cert, key, ca: clientCa.cert, requestCert: true, rejectUnauthorized: true })
    await listen(plain)
    await listen(mtls)
  }, 60_000)
  afterAll(async () => {
    if (plain !== undefined) await close(plain)
    if (mtls !== undefined) await close(mtls)
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })
  beforeEach(() => { seen.length = 0; snis.length = 0 })

  const urlOf = (server: https.Server, host = '127.0.0.1'): string => `https://${host}:${(server.address() as AddressInfo).port}/hook`

  it('verify with the CA that signed the server\'s certificate: sent', async () => {
    const hook = await pool({ url: urlOf(plain), verify: true, cacertfile: serverCa.certFile })
    await hook.send(POST)
    expect(seen).toEqual([undefined])
  })

  it('verify with another CA (same name, other key): refused, nothing sent', async () => {
    const hook = await pool({ url: urlOf(plain), verify: true, cacertfile: wrongCa.certFile })
    await expect(hook.send(POST)).rejects.toThrow(new RegExp(`^web_hook web_hook:t: POST ${urlOf(plain).replace(/\./g, '\\.')} failed: .*(certificate|signature)`, 'i'))
    expect(seen).toEqual([])
  })

  it('verify false (EMQ X 4.4\'s default) accepts a certificate no CA given signed', async () => {
    const hook = await pool({ url: urlOf(plain), cacertfile: wrongCa.certFile })
    await hook.send(POST)
    expect(seen).toEqual([undefined])
  })

  it('verify checks the name: the server\'s certificate names 127.0.0.1 and localhost, not another host given as server_name_indication', async () => {
    const named = await pool({ url: urlOf(plain, 'localhost'), verify: true, cacertfile: serverCa.certFile })
    await named.send(POST)
    const other = await pool({ url: urlOf(plain), verify: true, cacertfile: serverCa.certFile, server_name_indication: 'hooks.example.com' })
    await expect(other.send(POST)).rejects.toThrow(/hooks\.example\.com/)
    expect(seen).toEqual([undefined])
  })

  it('server_name_indication disable: the URL\'s host name is still sent (undici sends it for a host name) and checked', async () => {
    const hook = await pool({ url: urlOf(plain, 'localhost'), verify: true, cacertfile: serverCa.certFile, server_name_indication: 'disable' })
    await hook.send(POST)
    expect(seen).toEqual([undefined])
    expect(snis).toEqual(['localhost'])
  })

  it('a server that asks for a client certificate gets certfile and keyfile; without them the handshake is refused', async () => {
    const withCert = await pool({ url: urlOf(mtls), verify: true, cacertfile: serverCa.certFile, certfile: clientCert.certFile, keyfile: clientCert.keyFile })
    await withCert.send(POST)
    expect(seen).toEqual(['starling-node'])
    const without = await pool({ url: urlOf(mtls), verify: true, cacertfile: serverCa.certFile })
    await expect(without.send(POST)).rejects.toThrow(/^web_hook web_hook:t: POST https:\/\/127\.0\.0\.1:\d+\/hook failed: /)
    expect(seen).toEqual(['starling-node'])
  })
})
