/**
 * Client certificates on the dashboard's HTTPS listener, as EMQ X 4.4's
 * `dashboard.listener.https.cacertfile`, `.verify` and `.fail_if_no_peer_cert`, checked with
 * a real TLS client (Node's https) against real nodes: with verify_peer a certificate from
 * another CA is refused, a missing one only with fail_if_no_peer_cert, the development client
 * certificate signs in; with verify_none (the default) no certificate is asked for.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import https from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestNode, freePort, type TestNode } from '../../helpers/node.js'
import { PROJECT_ROOT } from '../../helpers/process.js'

const PASSWORD = 'https-admin-1'

interface Pem { ca: Buffer, clientCert: Buffer, clientKey: Buffer, dir: string }

/** A fresh development CA with its server and client certificates. */
function makeCerts (): Pem {
  const dir = mkdtempSync(join(tmpdir(), 'starling-dash-tls-'))
  execFileSync('bash', [join(PROJECT_ROOT, 'etc/certs/make-dev-certs.sh'), dir], { stdio: 'pipe' })
  const read = (name: string): Buffer => readFileSync(join(dir, name))
  return { ca: read('cacert.pem'), clientCert: read('client-cert.pem'), clientKey: read('client-key.pem'), dir }
}

let certs: Pem, other: Pem
const nodes: TestNode[] = []

beforeAll(() => {
  certs = makeCerts()
  other = makeCerts()
})

afterAll(async () => {
  for (const n of nodes) await n.destroy()
  for (const p of [certs, other]) if (p !== undefined) rmSync(p.dir, { recursive: true, force: true })
})

/** A node whose dashboard listens on HTTPS with `tls` keys; its HTTPS port. */
async function startHttpsNode (tls: Record<string, string>): Promise<number> {
  const port = await freePort()
  nodes.push(await startTestNode({
    'dashboard.default_user.password': PASSWORD,
    'dashboard.listener.https': `127.0.0.1:${port}`,
    'dashboard.listener.https.keyfile': join(certs.dir, 'key.pem'),
    'dashboard.listener.https.certfile': join(certs.dir, 'cert.pem'),
    'dashboard.listener.https.cacertfile': join(certs.dir, 'cacert.pem'),
    ...tls
  }))
  return port
}

/** Signs in over HTTPS with the given client certificate (or none): the answer's code, or `refused` when the TLS connection is closed. */
async function signIn (port: number, client: { cert?: Buffer, key?: Buffer }): Promise<number | 'refused'> {
  return await new Promise((resolve) => {
    const req = https.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/v3/auth', ca: certs.ca, ...client, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = ''
      res.on('data', (c) => { text += String(c) })
      res.on('end', () => { resolve(JSON.parse(text).code) })
    })
    req.on('error', () => { resolve('refused') })
    req.end(JSON.stringify({ username: 'admin', password: PASSWORD }))
  })
}

const mine = (): { cert: Buffer, key: Buffer } => ({ cert: certs.clientCert, key: certs.clientKey })
const foreign = (): { cert: Buffer, key: Buffer } => ({ cert: other.clientCert, key: other.clientKey })

describe('dashboard.listener.https.verify = verify_peer', () => {
  it('with fail_if_no_peer_cert = true: refuses no certificate and another CA\'s, signs in with a certificate of cacertfile\'s CA', async () => {
    const port = await startHttpsNode({ 'dashboard.listener.https.verify': 'verify_peer', 'dashboard.listener.https.fail_if_no_peer_cert': 'true' })
    expect(await signIn(port, {})).toBe('refused')
    expect(await signIn(port, foreign())).toBe('refused')
    expect(await signIn(port, mine())).toBe(0)
  })

  it('with fail_if_no_peer_cert = false (the default): lets a browser without a certificate in, still refuses another CA\'s', async () => {
    const port = await startHttpsNode({ 'dashboard.listener.https.verify': 'verify_peer' })
    expect(await signIn(port, {})).toBe(0)
    expect(await signIn(port, foreign())).toBe('refused')
    expect(await signIn(port, mine())).toBe(0)
  })
})

describe('dashboard.listener.https.verify = verify_none (the default)', () => {
  it('asks for no certificate: any browser signs in, and a cacertfile that does not exist is not read', async () => {
    const port = await startHttpsNode({ 'dashboard.listener.https.cacertfile': join(certs.dir, 'missing.pem') })
    expect(await signIn(port, {})).toBe(0)
    expect(await signIn(port, foreign())).toBe(0)
  })
})
