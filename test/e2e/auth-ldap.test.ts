/**
 * svc_auth_ldap against a real OpenLDAP (the harness's slapd, with EMQ X's schema from
 * etc/ldap/emqx.schema, plain and ldaps) with real clients: mqtt.js (MQTT 3.1.1 and 5) and
 * mosquitto_pub / mosquitto_sub. One slapd and one node for the file; the plugin is loaded
 * through the node's plugin manager with the shipped etc/plugins/svc_auth_ldap.conf plus the
 * keys a test sets.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { IClientOptions } from 'mqtt'
import { apiRequest, closeClients, connect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, open, pubackCode, refusedConnack, suback } from '../helpers/mqtt.js'
import { PROJECT_ROOT } from '../helpers/process.js'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'
import { describeWithServer, startLdap, type LdapServer } from '../helpers/servers/index.js'
import { formatLdapPassword } from '../../node/auth/ldap/password.js'

const PLUGIN = 'svc_auth_ldap'
const ALARM = 'svc_auth_ldap_unreachable'
const hasMosquitto = spawnSync('mosquitto_pub', ['--help']).status !== null

/** Runs a mosquitto client; resolves with its exit code and output. */
async function mosquitto (cmd: 'mosquitto_pub' | 'mosquitto_sub', args: string[]): Promise<{ code: number | null, out: string }> {
  return await new Promise((resolve) => {
    const child = spawn(cmd, args)
    let out = ''
    child.stdout.on('data', (d) => { out += String(d) })
    child.stderr.on('data', (d) => { out += String(d) })
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, out }) })
  })
}

/** One device entry as EMQ X's schema has them. */
function device (uid: string, attrs: Record<string, string | string[]>): string {
  const lines = [`dn: uid=${uid},ou=device,dc=emqx,dc=io`, 'objectClass: top', 'objectClass: mqttDevice', 'objectClass: mqttUser', 'objectClass: mqttSecurity', `uid: ${uid}`]
  for (const [k, v] of Object.entries(attrs)) for (const one of Array.isArray(v) ? v : [v]) lines.push(`${k}: ${one}`)
  return lines.join('\n') + '\n'
}

describeWithServer('ldap', 'svc_auth_ldap', () => {
  let ldap: LdapServer
  let p: PluginNode
  let node: TestNode
  let tmp: string
  const v5 = (o: IClientOptions): IClientOptions => ({ protocolVersion: 5, ...o })
  const setAnonymous = async (allow: boolean): Promise<void> => {
    await apiRequest(node, '/configs/starling', 'PUT', { allow_anonymous: allow })
    expect(node.config.allow_anonymous).toBe(allow)
  }
  const plain = (): Record<string, string> => ({
    'auth.ldap.servers': '127.0.0.1',
    'auth.ldap.port': String(ldap.port),
    'auth.ldap.bind_dn': ldap.bindDn,
    'auth.ldap.bind_password': ldap.password,
    'auth.ldap.pool': '2',
    'auth.ldap.timeout': '1s'
  })
  const reload = async (overrides: Record<string, string>): Promise<void> => {
    if (p.manager.isActive(PLUGIN)) await p.manager.unload(PLUGIN)
    p.writeConf(PLUGIN, shippedPluginConf(PLUGIN, overrides))
    await p.manager.load(PLUGIN)
  }

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'starling-ldap-'))
    ldap = await startLdap({ schemas: [join(PROJECT_ROOT, 'etc/ldap/emqx.schema')], tls: true })
    await ldap.addLdif([
      'dn: ou=device,dc=emqx,dc=io\nobjectClass: top\nobjectClass: organizationalUnit\nou: device\n',
      // EMQ X's documented sample: password mqttuser0001 as {SHA}
      device('mqttuser0001', { userPassword: '{SHA}mlb3fat40MKBTXUVZwCKmL73R/0=' }),
      device('alice', {
        userPassword: formatLdapPassword('SSHA', 'wonderland', Buffer.from('s4lt')),
        mqttPublishTopic: ['alice/pub/#', 'pub/only'],
        mqttSubscriptionTopic: ['alice/sub/+', 'sub/only'],
        mqttPubSubTopic: ['both/#', 'cache/t']
      }),
      device('root', { userPassword: formatLdapPassword('SSHA', 'toor', Buffer.from('pepper')), isSuperuser: 'TRUE' }),
      device('disabled', { userPassword: formatLdapPassword('SHA', 'pw'), isEnabled: 'FALSE' }),
      device('nopass', {})
    ].join('\n'))
    // the ACL file denies what the directory does not allow (the shipped one ends with {allow, all})
    writeFileSync(join(tmp, 'acl.conf'), '{deny, all}.\n')
    p = await startPluginNode({ overrides: { allow_anonymous: 'false', acl_nomatch: 'deny', acl_file: join(tmp, 'acl.conf') } })
    node = p.node
    await reload(plain())
  })
  afterAll(async () => {
    await p?.destroy()
    await ldap?.close()
    if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true })
  })
  afterEach(async () => {
    await closeClients()
    await closeOpened()
    await setAnonymous(false)
  })

  it('accepts the right password (MQTT 3.1.1 and 5, {SHA} and {SSHA}) and refuses a wrong one with 0x86 / 4', async () => {
    await connect(node, { protocolVersion: 4, username: 'mqttuser0001', password: 'mqttuser0001' })
    await connect(node, v5({ username: 'alice', password: 'wonderland' }))
    expect((await refusedConnack(node, v5({ username: 'alice', password: 'wrong' }))).reasonCode).toBe(0x86)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'alice', password: 'wrong' })).returnCode).toBe(4)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'alice' })).returnCode).toBe(4)
    // isEnabled: FALSE refuses even the right password (EMQ X: username_disabled)
    expect((await refusedConnack(node, v5({ username: 'disabled', password: 'pw' }))).reasonCode).toBe(0x86)
  })

  ;(hasMosquitto ? it : it.skip)('accepts and refuses mosquitto_pub the same way', async () => {
    const base = ['-h', '127.0.0.1', '-p', String(node.port('mqtt:tcp')), '-t', 'alice/pub/m', '-m', 'hi', '-q', '1']
    expect((await mosquitto('mosquitto_pub', [...base, '-u', 'alice', '-P', 'wonderland', '-V', '5'])).code).toBe(0)
    expect((await mosquitto('mosquitto_pub', [...base, '-u', 'alice', '-P', 'wonderland', '-V', '311'])).code).toBe(0)
    const bad = await mosquitto('mosquitto_pub', [...base, '-u', 'alice', '-P', 'nope', '-V', '5'])
    expect(bad.code).not.toBe(0)
    expect(bad.out).toMatch(/bad user ?name or password/i)
  })

  it('ignores an unknown user and an entry without a password: allow_anonymous decides', async () => {
    expect((await refusedConnack(node, v5({ username: 'stranger', password: 'x' }))).reasonCode).toBe(0x87)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'stranger', password: 'x' })).returnCode).toBe(5)
    expect((await refusedConnack(node, v5({ username: 'nopass', password: 'x' }))).reasonCode).toBe(0x87)
    await setAnonymous(true)
    await connect(node, v5({ username: 'stranger', password: 'x' }))
    await connect(node, { protocolVersion: 4 })
    expect((await refusedConnack(node, v5({ username: 'alice', password: 'wrong' }))).reasonCode).toBe(0x86)
  })

  it('applies mqttPublishTopic / mqttSubscriptionTopic / mqttPubSubTopic; a superuser (isSuperuser TRUE) bypasses the ACL', async () => {
    const root = await open(node, v5({ clientId: 'root-1', username: 'root', password: 'toor' }))
    expect(await suback(root.client, ['#', 'anything/at/all'])).toEqual([1, 1])
    const alice = await connect(node, v5({ clientId: 'alice-1', username: 'alice', password: 'wonderland' }))
    expect(await suback(alice, ['alice/sub/x', 'sub/only', 'both/a/b', 'pub/only', 'alice/sub/x/y', 'elsewhere'])).toEqual([1, 1, 1, 0x80, 0x80, 0x80])
    expect(await pubackCode(alice, 'pub/only')).toBe(0)
    expect(await pubackCode(alice, 'alice/pub/y')).toBe(0)
    expect(await pubackCode(alice, 'both/z')).toBe(0)
    expect(await pubackCode(alice, 'sub/only')).toBe(0x87)
    expect(await pubackCode(alice, 'elsewhere')).toBe(0x87)
    await waitFor(() => root.messages.some(m => m.topic === 'alice/pub/y'), 'the allowed publish')
    expect(root.messages.map(m => m.topic)).not.toContain('sub/only')
    expect(root.messages.map(m => m.topic)).not.toContain('elsewhere')
  })

  ;(hasMosquitto ? it : it.skip)('refuses mosquitto_sub a denied subscription', async () => {
    const r = await mosquitto('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(node.port('mqtt:tcp')), '-V', '5',
      '-u', 'alice', '-P', 'wonderland', '-t', 'elsewhere', '-W', '3'])
    expect(r.out).toMatch(/denied/i)
  })

  it('keeps a cached ACL decision for the client; a new client sees the directory\'s change', async () => {
    const root = await open(node, v5({ clientId: 'root-2', username: 'root', password: 'toor' }))
    await root.client.subscribeAsync('cache/t', { qos: 1 })
    const a = await connect(node, v5({ clientId: 'alice-cache', username: 'alice', password: 'wonderland' }))
    expect(await pubackCode(a, 'cache/t')).toBe(0)
    const c = await ldap.client()
    const { Change, Attribute } = await import('ldapts')
    const dn = 'uid=alice,ou=device,dc=emqx,dc=io'
    await c.modify(dn, new Change({ operation: 'delete', modification: new Attribute({ type: 'mqttPubSubTopic', values: ['cache/t'] }) }))
    try {
      expect(await pubackCode(a, 'cache/t')).toBe(0) // cached allow
      const b = await connect(node, v5({ clientId: 'alice-fresh', username: 'alice', password: 'wonderland' }))
      expect(await pubackCode(b, 'cache/t')).toBe(0x87)
      await waitFor(() => root.messages.filter(m => m.topic === 'cache/t').length === 2, 'two cached-allowed messages')
    } finally {
      await c.modify(dn, new Change({ operation: 'add', modification: new Attribute({ type: 'mqttPubSubTopic', values: ['cache/t'] }) }))
      await c.unbind()
    }
  })

  it('never lets a username alter the search (filter and DN injection)', async () => {
    const injections = ['*)(uid=*', '*', 'alice)(|(uid=*', 'alice,ou=device', 'uid=alice,ou=device,dc=emqx,dc=io', 'alice\\2a', "' OR 1=1 --", 'x" || true']
    for (const username of injections) {
      expect((await refusedConnack(node, v5({ username, password: 'wonderland' }))).reasonCode).toBe(0x87)
    }
    // with the username in the filter (auth.ldap.filters) rather than the base DN
    await reload({ ...plain(), 'auth.ldap.custom_base_dn': '${device_dn}', 'auth.ldap.filters.1.key': 'objectClass', 'auth.ldap.filters.1.value': 'mqttUser', 'auth.ldap.filters.2.key': 'uid', 'auth.ldap.filters.2.value': '${user}' })
    try {
      await connect(node, v5({ username: 'alice', password: 'wonderland' }))
      for (const username of injections) {
        expect((await refusedConnack(node, v5({ username, password: 'wonderland' }))).reasonCode).toBe(0x87)
      }
    } finally {
      await reload(plain())
    }
    expect((await ldap.search('(uid=alice)')).length).toBe(1)
  })

  it('binds as the user with bind_as_user = true (an empty password never binds)', async () => {
    await reload({ ...plain(), 'auth.ldap.bind_as_user': 'true' })
    try {
      // slapd checks the {SSHA}/{SHA} userPassword values itself on a bind ({SHA256} needs its pw-sha2 module)
      await connect(node, v5({ username: 'alice', password: 'wonderland' }))
      await connect(node, { protocolVersion: 4, username: 'mqttuser0001', password: 'mqttuser0001' })
      expect((await refusedConnack(node, v5({ username: 'alice', password: 'wrong' }))).reasonCode).toBe(0x86)
      expect((await refusedConnack(node, v5({ username: 'alice', password: '' }))).reasonCode).toBe(0x86)
      expect((await refusedConnack(node, v5({ username: 'stranger', password: 'x' }))).reasonCode).toBe(0x87)
      const root = await open(node, v5({ username: 'root', password: 'toor' }))
      expect(await suback(root.client, ['anything'])).toEqual([1])
    } finally {
      await reload(plain())
    }
  })

  it('talks ldaps with the server\'s CA (verify_peer) and refuses a server it cannot verify', async () => {
    const ca = join(tmp, 'ldap-ca.pem')
    writeFileSync(ca, ldap.caCert as string)
    const ldaps = { ...plain(), 'auth.ldap.port': String(ldap.ldapsPort), 'auth.ldap.ssl.enable': 'true', 'auth.ldap.ssl.verify': 'verify_peer' }
    await reload({ ...ldaps, 'auth.ldap.ssl.cacertfile': ca })
    try {
      await connect(node, v5({ username: 'alice', password: 'wonderland' }))
      expect((await refusedConnack(node, v5({ username: 'alice', password: 'wrong' }))).reasonCode).toBe(0x86)
      // without the CA the certificate cannot be verified: the backend is unreachable, the chain decides
      await reload(ldaps)
      expect((await refusedConnack(node, v5({ username: 'alice', password: 'wonderland' }))).reasonCode).toBe(0x87)
      await waitFor(() => node.services.alarms.isActive(ALARM), 'the unreachable alarm')
    } finally {
      await reload(plain())
    }
    expect(node.services.alarms.isActive(ALARM)).toBe(false)
  })

  it('answers within the timeout while slapd is down (alarm raised, chain decides) and recovers after a restart (alarm cleared)', async () => {
    await connect(node, v5({ username: 'alice', password: 'wonderland' })) // the pool is connected
    await ldap.kill()
    try {
      const began = Date.now()
      expect((await refusedConnack(node, v5({ username: 'alice', password: 'wonderland' }))).reasonCode).toBe(0x87)
      const refusedInMs = Date.now() - began
      expect(refusedInMs).toBeLessThan(1500)
      await waitFor(() => node.services.alarms.isActive(ALARM), 'the unreachable alarm')
      expect(JSON.stringify(await apiRequest(node, '/alarms/present'))).toContain(ALARM)
      await setAnonymous(true)
      await connect(node, v5({ username: 'alice', password: 'anything' })) // allow_anonymous decides
      await setAnonymous(false)
      console.log(`svc_auth_ldap: CONNECT with slapd down refused in ${refusedInMs} ms`)
    } finally {
      await ldap.restart()
    }
    const back = Date.now()
    await connect(node, v5({ username: 'alice', password: 'wonderland' }))
    console.log(`svc_auth_ldap: auth works again ${Date.now() - back} ms after slapd restarted`)
    expect(node.services.alarms.isActive(ALARM)).toBe(false)
  })

  it('loads with the directory unreachable (lazy connect), refuses fast, and unloads cleanly', async () => {
    await p.manager.unload(PLUGIN)
    p.writeConf(PLUGIN, shippedPluginConf(PLUGIN, { ...plain(), 'auth.ldap.port': '1' }))
    const began = Date.now()
    await p.manager.load(PLUGIN)
    expect(Date.now() - began).toBeLessThan(1000)
    expect((await refusedConnack(node, v5({ username: 'alice', password: 'wonderland' }))).reasonCode).toBe(0x87)
    await p.manager.unload(PLUGIN)
    expect(node.services.alarms.isActive(ALARM)).toBe(false)
  })
})
