/**
 * `listener.ssl.external.peer_cert_as_username` over the wire: client certificates made by
 * the openssl CLI, signed by a test CA that the SSL listener verifies (verify_peer); the
 * certificate's CN (or DN) replaces the CONNECT's username before authentication, so the
 * built-in svc_auth_username and the ACL file's %u see it. mqtt.js and mosquitto_pub.
 */
import { spawn, spawnSync, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { apiRequest } from '../helpers/node.js'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'
import { createAuthUsers } from '../../plugins/auth/index.js'
import { PROJECT_ROOT } from '../helpers/process.js'

const hasMosquitto = spawnSync('mosquitto_pub', ['--help']).status !== null
const hasOpenssl = spawnSync('openssl', ['version']).status === 0

describe('peer_cert_as_username', () => {
  let dir: string
  const nodes: PluginNode[] = []
  const clients: MqttClient[] = []
  const file = (name: string): string => join(dir, name)
  const openssl = (...args: string[]): void => { execFileSync('openssl', args, { stdio: 'pipe' }) }

  /** A key and a certificate for `subject`, signed by the test CA. */
  function clientCert (name: string, subject: string): void {
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', file(`${name}-key.pem`), '-out', file(`${name}.csr`), '-subj', subject)
    openssl('x509', '-req', '-in', file(`${name}.csr`), '-CA', file('ca.pem'), '-CAkey', file('ca-key.pem'), '-CAcreateserial', '-days', '2', '-out', file(`${name}.pem`))
  }

  /** A node whose SSL listener verifies the test CA and takes the username from `mode`. */
  async function nodeWith (mode: string): Promise<PluginNode> {
    const p = await startPluginNode({
      overrides: {
        allow_anonymous: 'false',
        acl_nomatch: 'deny',
        acl_file: file('acl.conf'),
        'listener.ssl.external.verify': 'verify_peer',
        'listener.ssl.external.cacertfile': file('ca.pem'),
        'listener.ssl.external.peer_cert_as_username': mode
      }
    })
    nodes.push(p)
    p.writeConf('svc_auth_username', shippedPluginConf('svc_auth_username'))
    await p.manager.load('svc_auth_username')
    return p
  }

  async function connectTls (p: PluginNode, opts: IClientOptions & { certName?: string }): Promise<{ client: MqttClient, connack: any }> {
    const { certName, ...rest } = opts
    const client = mqtt.connect({
      protocol: 'mqtts',
      host: '127.0.0.1',
      port: p.node.port('mqtt:ssl'),
      protocolVersion: 5,
      reconnectPeriod: 0,
      connectTimeout: 5000,
      rejectUnauthorized: false,
      ...(certName !== undefined ? { key: readFileSync(file(`${certName}-key.pem`)), cert: readFileSync(file(`${certName}.pem`)) } : {}),
      ...rest
    })
    clients.push(client)
    client.on('error', () => {})
    let connack: any = null
    client.on('packetreceive', (pkt: any) => { if (pkt.cmd === 'connack') connack = pkt })
    await new Promise<void>((resolve) => {
      client.once('connect', () => resolve())
      client.once('close', () => resolve())
    })
    return { client, connack }
  }

  const usernameOf = async (p: PluginNode, clientId: string): Promise<string | undefined> =>
    (await apiRequest(p.node, `/connections/${encodeURIComponent(clientId)}`)).data?.[0]?.username

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'starling-peercert-'))
    if (!hasOpenssl) return
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', file('ca-key.pem'), '-out', file('ca.pem'), '-days', '2', '-subj', '/CN=Starling Test CA')
    clientCert('device7', '/C=SE/O=Starling/CN=device-7')
    // the ACL file: each certificate user may publish under its own name only
    writeFileSync(file('acl.conf'), '{allow, all, publish, ["dev/%u/#"]}.\n{deny, all}.\n')
  })
  afterAll(async () => {
    for (const c of clients) c.end(true)
    for (const p of nodes) await p.destroy()
    rmSync(dir, { recursive: true, force: true })
  })

  ;(hasOpenssl ? it : it.skip)('cn: the certificate\'s CN is the username for auth and for %u in the ACL file', async () => {
    const p = await nodeWith('cn')
    await createAuthUsers(p.node.store).add('device-7', 'secret')
    // the CONNECT says "someone-else": the certificate wins
    const { client, connack } = await connectTls(p, { certName: 'device7', clientId: 'cn-1', username: 'someone-else', password: 'secret' })
    expect(connack?.reasonCode).toBe(0)
    expect(await usernameOf(p, 'cn-1')).toBe('device-7')
    await client.publishAsync('dev/device-7/t', 'x', { qos: 1 })
    await expect(client.publishAsync('dev/someone-else/t', 'x', { qos: 1 })).rejects.toThrow(/not authorized/i)
    // the password is still checked, for the certificate's user
    expect((await connectTls(p, { certName: 'device7', clientId: 'cn-2', username: 'device-7', password: 'wrong' })).connack?.reasonCode).toBe(0x86)
    // no client certificate (verify_peer without fail_if_no_peer_cert lets it in): the CONNECT's username stays
    await createAuthUsers(p.node.store).add('plain', 'pw')
    const plain = await connectTls(p, { clientId: 'cn-3', username: 'plain', password: 'pw' })
    expect(plain.connack?.reasonCode).toBe(0)
    expect(await usernameOf(p, 'cn-3')).toBe('plain')
  })

  ;(hasOpenssl && hasMosquitto ? it : it.skip)('cn with mosquitto_pub --cert/--key', async () => {
    const p = nodes[0] ?? await nodeWith('cn')
    const run = async (topic: string): Promise<number | null> => await new Promise((resolve) => {
      const child = spawn('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(p.node.port('mqtt:ssl')), '-V', '5', '-q', '1',
        '--cafile', join(PROJECT_ROOT, 'etc/certs/cacert.pem'), '--insecure', '--cert', file('device7.pem'), '--key', file('device7-key.pem'),
        '-u', 'whoever', '-P', 'secret', '-t', topic, '-m', 'hi'])
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      child.on('close', (code) => { clearTimeout(timer); resolve(code) })
    })
    expect(await run('dev/device-7/m')).toBe(0)
  })

  ;(hasOpenssl ? it : it.skip)('dn: the subject DN (the %d form) is the username', async () => {
    const p = await nodeWith('dn')
    const dn = 'C=SE, O=Starling, CN=device-7'
    await createAuthUsers(p.node.store).add(dn, 'secret')
    const { connack } = await connectTls(p, { certName: 'device7', clientId: 'dn-1', username: 'x', password: 'secret' })
    expect(connack?.reasonCode).toBe(0)
    expect(await usernameOf(p, 'dn-1')).toBe(dn)
  })
})
