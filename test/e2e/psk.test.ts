/**
 * svc_psk_file over the wire: TLS-PSK handshakes on the node's MQTT SSL listener from Node's
 * tls (with `pskCallback`, TLS 1.2 PSK suites and TLS 1.3) carrying mqtt.js, and from
 * mosquitto_pub --psk; loaded and unloaded at run time.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import tls from 'node:tls'
import mqtt, { type MqttClient } from 'mqtt'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'
import { parsePskFile, svcPskFile } from '../../plugins/auth/psk/plugin.js'
import { loadPluginConfig, parseConfText } from '../../node/config/index.js'
import { PROJECT_ROOT } from '../helpers/process.js'

const PLUGIN = 'svc_psk_file'
const hasMosquitto = spawnSync('mosquitto_pub', ['--help']).status !== null

async function mosquittoPub (args: string[]): Promise<{ code: number | null, out: string }> {
  return await new Promise((resolve) => {
    const child = spawn('mosquitto_pub', args)
    let out = ''
    child.stdout.on('data', (d) => { out += String(d) })
    child.stderr.on('data', (d) => { out += String(d) })
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, out }) })
  })
}

interface PskAttempt { identity: string, key: Buffer, version: 'TLSv1.2' | 'TLSv1.3' }

describe('svc_psk_file', () => {
  let p: PluginNode
  let dir: string
  const clients: MqttClient[] = []
  const port = (): number => p.node.port('mqtt:ssl')

  /**
   * A TLS-PSK connection carrying an MQTT CONNECT: resolves with the negotiated suite once
   * CONNACK came; rejects when the handshake fails or the listener closes the connection. The
   * client accepts any server certificate, so that a TLS 1.3 server going on with its
   * certificate (an identity it does not know) is refused by the listener's verify_peer +
   * fail_if_no_peer_cert, not by the client.
   */
  async function handshake (a: PskAttempt): Promise<string> {
    const client = await mqttOverPsk(a, `hs-${Math.random().toString(16).slice(2)}`)
    const cipher = ((client as any).stream as tls.TLSSocket).getCipher().name
    client.end(true)
    return cipher
  }

  /** mqtt.js over a TLS-PSK connection; resolves with the CONNACK's client once connected. */
  async function mqttOverPsk (a: PskAttempt, clientId: string): Promise<MqttClient> {
    const client = mqtt.connect({
      protocol: 'mqtts',
      host: '127.0.0.1',
      port: port(),
      clientId,
      protocolVersion: 5,
      reconnectPeriod: 0,
      connectTimeout: 5000,
      minVersion: a.version,
      maxVersion: a.version,
      ciphers: a.version === 'TLSv1.2' ? 'PSK-AES128-CBC-SHA' : 'TLS_AES_128_GCM_SHA256',
      pskCallback: () => ({ identity: a.identity, psk: a.key }),
      rejectUnauthorized: false
    } as any)
    clients.push(client)
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve())
      client.once('error', reject)
      client.once('close', () => reject(new Error('closed before CONNACK')))
    })
    return client
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'starling-psk-'))
    writeFileSync(join(dir, 'psk.txt'), 'client1:1234\nclient2:abcd\n# a comment\nbroken line\nlong:' + 'k'.repeat(64) + '\r\n')
    // only PSK or a client certificate gets in: a TLS 1.3 fallback to the server's certificate does not
    p = await startPluginNode({
      overrides: {
        allow_anonymous: 'true',
        'listener.ssl.external.verify': 'verify_peer',
        'listener.ssl.external.fail_if_no_peer_cert': 'true',
        'listener.ssl.external.cacertfile': join(PROJECT_ROOT, 'etc/certs/cacert.pem')
      }
    })
  })
  afterAll(async () => {
    for (const c of clients) c.end(true)
    await p?.destroy()
    rmSync(dir, { recursive: true, force: true })
  })

  const load = async (extra: Record<string, string> = {}): Promise<void> => {
    p.writeConf(PLUGIN, shippedPluginConf(PLUGIN, { 'psk.file.path': join(dir, 'psk.txt'), ...extra }))
    await p.manager.load(PLUGIN)
  }

  it('ships etc/plugins/svc_psk_file.conf with every key at its default, and EMQ X\'s sample etc/psk.txt', () => {
    const file = join(PROJECT_ROOT, 'etc/plugins/svc_psk_file.conf')
    expect(parseConfText(readFileSync(file, 'utf8'), file).map((e) => e.key).sort()).toEqual(Object.keys(svcPskFile.configSchema).sort())
    expect(loadPluginConfig(file, svcPskFile.configSchema, { env: {} })).toEqual(loadPluginConfig(join(dir, 'none.conf'), svcPskFile.configSchema, { env: {}, optional: true }))
    const keys = parsePskFile(readFileSync(join(PROJECT_ROOT, 'etc/psk.txt'), 'utf8'), ':', 'text')
    expect([...keys.entries()].map(([id, k]) => `${id}=${k.toString()}`)).toEqual(['client1=1234', 'client2=abcd'])
    expect(parsePskFile('a:0a0b\nb:xyz\n', ':', 'hex').get('a')).toEqual(Buffer.from([10, 11]))
    expect(parsePskFile('a:0a0b\nb:xyz\n', ':', 'hex').has('b')).toBe(false)
  })

  it('refuses PSK handshakes while the plugin is not loaded', async () => {
    await expect(handshake({ identity: 'client1', key: Buffer.from('1234'), version: 'TLSv1.2' })).rejects.toThrow()
  })

  it('accepts the file\'s identities over TLS 1.2 PSK suites and TLS 1.3, with MQTT on top', async () => {
    await load()
    try {
      expect(await handshake({ identity: 'client1', key: Buffer.from('1234'), version: 'TLSv1.2' })).toMatch(/^PSK-AES(128|256)-CBC-SHA$/)
      expect(await handshake({ identity: 'client2', key: Buffer.from('abcd'), version: 'TLSv1.3' })).toBe('TLS_AES_128_GCM_SHA256')
      // a CRLF line: the key is what precedes the \r
      await handshake({ identity: 'long', key: Buffer.from('k'.repeat(64)), version: 'TLSv1.2' })
      const c12 = await mqttOverPsk({ identity: 'client1', key: Buffer.from('1234'), version: 'TLSv1.2' }, 'psk-12')
      const c13 = await mqttOverPsk({ identity: 'client2', key: Buffer.from('abcd'), version: 'TLSv1.3' }, 'psk-13')
      await c13.subscribeAsync('psk/t', { qos: 1 })
      const got = new Promise<string>((resolve) => c13.once('message', (_t, payload) => resolve(payload.toString())))
      await c12.publishAsync('psk/t', 'over psk', { qos: 1 })
      expect(await got).toBe('over psk')
    } finally {
      await p.manager.unload(PLUGIN)
    }
  })

  it('fails the handshake for a wrong key or an unknown identity (TLS 1.2 and 1.3)', async () => {
    await load()
    try {
      for (const version of ['TLSv1.2', 'TLSv1.3'] as const) {
        await expect(handshake({ identity: 'client1', key: Buffer.from('4321'), version })).rejects.toThrow()
        await expect(handshake({ identity: 'nobody', key: Buffer.from('1234'), version })).rejects.toThrow()
      }
    } finally {
      await p.manager.unload(PLUGIN)
    }
  })

  ;(hasMosquitto ? it : it.skip)('lets mosquitto_pub --psk in (the key in hex) and refuses a wrong one', async () => {
    await load()
    try {
      // mosquitto-clients 2 negotiates TLS 1.3 in PSK mode, offering TLS_AES_256_GCM_SHA384 first
      const base = ['-h', '127.0.0.1', '-p', String(port()), '-t', 'psk/m', '-m', 'hi', '-q', '1', '--psk-identity']
      expect(await mosquittoPub([...base, 'client1', '--psk', Buffer.from('1234').toString('hex')])).toEqual({ code: 0, out: '' })
      expect((await mosquittoPub([...base, 'client1', '--psk', '1234'])).code).not.toBe(0)
      expect((await mosquittoPub([...base, 'nobody', '--psk', '31323334'])).code).not.toBe(0)
    } finally {
      await p.manager.unload(PLUGIN)
    }
  })

  it('stops PSK at unload while certificate TLS goes on, and starts it again at the next load', async () => {
    await load()
    await handshake({ identity: 'client1', key: Buffer.from('1234'), version: 'TLSv1.2' })
    await p.manager.unload(PLUGIN)
    for (const version of ['TLSv1.2', 'TLSv1.3'] as const) {
      await expect(handshake({ identity: 'client1', key: Buffer.from('1234'), version })).rejects.toThrow()
    }
    const cert = mqtt.connect({
      protocol: 'mqtts', host: '127.0.0.1', port: port(), rejectUnauthorized: false, reconnectPeriod: 0,
      key: readFileSync(join(PROJECT_ROOT, 'etc/certs/client-key.pem')), cert: readFileSync(join(PROJECT_ROOT, 'etc/certs/client-cert.pem'))
    })
    clients.push(cert)
    await new Promise<void>((resolve, reject) => { cert.once('connect', () => resolve()); cert.once('error', reject) })
    // hex keys from a reload with key_encoding = hex
    writeFileSync(join(dir, 'psk-hex.txt'), 'dev9:00ff10\n')
    await load({ 'psk.file.path': join(dir, 'psk-hex.txt'), 'psk.file.key_encoding': 'hex' })
    try {
      await handshake({ identity: 'dev9', key: Buffer.from([0, 0xff, 0x10]), version: 'TLSv1.3' })
      await expect(handshake({ identity: 'client1', key: Buffer.from('1234'), version: 'TLSv1.3' })).rejects.toThrow()
    } finally {
      await p.manager.unload(PLUGIN)
    }
  })
})
