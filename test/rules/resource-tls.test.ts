/** rules/resource-tls.ts: the TLS params resource types declare and the settings read from a resource's config. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildTlsOptions } from '../../node/tls-options.js'
import { resourceTls, resourceTlsParams } from '../../rules/resource-tls.js'

test('the params carry EMQ X 4.4\'s names; the ssl switch only where the type has one', () => {
  expect(Object.keys(resourceTlsParams({ sslSwitch: true, verifyDefault: false }))).toEqual(['ssl', 'cacertfile', 'certfile', 'keyfile', 'verify', 'server_name_indication', 'tls_version'])
  const https = resourceTlsParams({ sslSwitch: false, verifyDefault: false })
  expect(https.ssl).toBeUndefined()
  expect(https.verify.default).toBe(false)
})

test('a config is read into settings the one builder takes; off means none', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rtls-'))
  try {
    writeFileSync(path.join(dir, 'ca.pem'), 'CA PEM')
    const config = { ssl: true, cacertfile: path.join(dir, 'ca.pem'), certfile: '', verify: true, server_name_indication: 'db.example.com', tls_version: 'tlsv1.2, tlsv1.3' }
    const tls = resourceTls(config)!
    expect(tls).toEqual({ cacertfile: path.join(dir, 'ca.pem'), certfile: undefined, keyfile: undefined, verify: true, serverName: 'db.example.com', versions: ['tlsv1.2', 'tlsv1.3'] })
    expect(buildTlsOptions(tls, { rule: 'sni' })).toMatchObject({ ca: Buffer.from('CA PEM'), rejectUnauthorized: true, servername: 'db.example.com', minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' })
    expect(resourceTls({ ...config, ssl: false })).toBeUndefined()
    // web_hook: TLS follows from the URL's scheme, not from a switch
    expect(resourceTls({ verify: false }, true)).toMatchObject({ verify: false })
    expect(resourceTls({ verify: true }, false)).toBeUndefined()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a TLS version that does not exist is refused with 108, naming the key', () => {
  expect(() => resourceTls({ ssl: true, tls_version: 'sslv3' })).toThrow(expect.objectContaining({ code: 108, message: expect.stringMatching(/^tls_version: sslv3 is not a TLS version/) }))
})

test('server_name_indication auto (what EMQ X 4.4 exports write) is the host connected to', () => {
  const tls = resourceTls({ ssl: true, server_name_indication: 'auto' })!
  expect(tls.serverName).toBeUndefined()
  expect(buildTlsOptions(tls, { rule: 'sni' })).not.toHaveProperty('servername')
})
