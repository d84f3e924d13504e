import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect, createSecureContext, createServer, type TLSSocket } from 'node:tls'
import { fileURLToPath } from 'node:url'
import type { AddressInfo } from 'node:net'
import { ensureDevCertificates } from '../../../node/config/index.js'

const script = fileURLToPath(new URL('../../../etc/certs/make-dev-certs.sh', import.meta.url))
let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'starling-certs-'))
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

const read = (name: string): Buffer => readFileSync(join(dir, name))

describe('make-dev-certs.sh', () => {
  it('creates a CA, a server pair and a client pair that load into a TLS context', () => {
    execFileSync('bash', [script, dir], { stdio: 'pipe' })
    for (const f of ['cacert.pem', 'cakey.pem', 'key.pem', 'cert.pem', 'client-key.pem', 'client-cert.pem']) {
      expect(existsSync(join(dir, f))).toBe(true)
    }
    expect(() => createSecureContext({ key: read('key.pem'), cert: read('cert.pem'), ca: read('cacert.pem') })).not.toThrow()
    expect(() => createSecureContext({ key: read('client-key.pem'), cert: read('client-cert.pem') })).not.toThrow()
    expect(statSync(join(dir, 'key.pem')).mode & 0o077).toBe(0)
  })

  it('issues a server certificate for localhost and 127.0.0.1 that a client verifies with mutual TLS', async () => {
    execFileSync('bash', [script, dir], { stdio: 'pipe' })
    const server = createServer({
      key: read('key.pem'), cert: read('cert.pem'), ca: read('cacert.pem'), requestCert: true, rejectUnauthorized: true
    }, (socket) => { socket.end(String(socket.getPeerCertificate().subject.CN)) })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const { port } = server.address() as AddressInfo
      for (const servername of ['localhost', undefined]) {
        const socket: TLSSocket = connect({
          port, host: '127.0.0.1', servername, ca: read('cacert.pem'), key: read('client-key.pem'), cert: read('client-cert.pem')
        })
        await once(socket, 'secureConnect')
        expect(socket.authorized).toBe(true)
        const [data] = await once(socket, 'data') as [Buffer]
        expect(data.toString()).toBe('starling-client')
        socket.destroy()
      }
    } finally {
      server.close()
    }
  })

  it('does nothing when cert.pem exists, unless --force is given', () => {
    execFileSync('bash', [script, dir], { stdio: 'pipe' })
    const first = read('cert.pem')
    execFileSync('bash', [script, dir], { stdio: 'pipe' })
    expect(read('cert.pem').equals(first)).toBe(true)
    execFileSync('bash', [script, '--force', dir], { stdio: 'pipe' })
    expect(read('cert.pem').equals(first)).toBe(false)
  })
})

describe('ensureDevCertificates', () => {
  it('generates the certificates when they are missing and not again once present', () => {
    expect(ensureDevCertificates(dir)).toBe(true)
    expect(existsSync(join(dir, 'cert.pem'))).toBe(true)
    expect(ensureDevCertificates(dir)).toBe(false)
  })

  it('never writes over certificate files an operator put there', () => {
    writeFileSync(join(dir, 'cert.pem'), 'operator cert')
    expect(ensureDevCertificates(dir)).toBe(false)
    expect(readFileSync(join(dir, 'cert.pem'), 'utf8')).toBe('operator cert')
  })

  it('reports a failing generator with its output', () => {
    const broken = join(dir, 'broken.sh')
    writeFileSync(broken, 'echo "no openssl here" >&2; exit 3\n')
    expect(() => ensureDevCertificates(join(dir, 'out'), undefined, { script: broken })).toThrow(/no openssl here/)
  })
})
