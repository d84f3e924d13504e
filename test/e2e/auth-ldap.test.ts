/**
 * svc_auth_ldap against a real OpenLDAP (the harness's slapd, with EMQ X's schema from
 * etc/ldap/emqx.schema, plain and ldaps) with real clients: mqtt.js (MQTT 3.1.1 and 5) and
 * mosquitto_pub / mosquitto_sub. One slapd and one node for the file; the plugin is loaded
 * through the node's plugin manager with the shipped etc/plugins/svc_auth_ldap.conf plus the
 * keys a test sets.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { IClientOptions } from 'mqtt'
import { closeClients, connect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, open, suback } from '../helpers/mqtt.js'
import { PROJECT_ROOT } from '../helpers/process.js'
import { describeWithServer, startLdap, type LdapServer } from '../helpers/servers/index.js'
import {
  QUERY_INJECTIONS, expectAclCached, expectMosquittoPub, expectMosquittoSubDenied, expectNeverAuthenticated, expectOutageAndRecovery,
  expectPublishes, expectUnknownUserToChain, itWithMosquitto, refusedCode, startBackendNode, type BackendNode
} from '../helpers/auth-backend.js'
import { formatLdapPassword } from '../../plugins/auth/ldap/password.js'

const PLUGIN = 'svc_auth_ldap'
/** One device entry as EMQ X's schema has them. */
function device (uid: string, attrs: Record<string, string | string[]>): string {
  const lines = [`dn: uid=${uid},ou=device,dc=emqx,dc=io`, 'objectClass: top', 'objectClass: mqttDevice', 'objectClass: mqttUser', 'objectClass: mqttSecurity', `uid: ${uid}`]
  for (const [k, v] of Object.entries(attrs)) for (const one of Array.isArray(v) ? v : [v]) lines.push(`${k}: ${one}`)
  return lines.join('\n') + '\n'
}

describeWithServer('ldap', 'svc_auth_ldap', () => {
  let ldap: LdapServer
  let backend: BackendNode
  let node: TestNode
  let tmp: string
  const v5 = (o: IClientOptions): IClientOptions => ({ protocolVersion: 5, ...o })
  const alice = v5({ username: 'alice', password: 'wonderland' })
  const plain = (): Record<string, string> => ({
    'auth.ldap.servers': '127.0.0.1',
    'auth.ldap.port': String(ldap.port),
    'auth.ldap.bind_dn': ldap.bindDn,
    'auth.ldap.bind_password': ldap.password,
    'auth.ldap.pool': '2',
    'auth.ldap.timeout': '1s'
  })
  const reload = async (overrides: Record<string, string>): Promise<void> => { await backend.reload(overrides) }

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
    backend = await startBackendNode(PLUGIN, { allow_anonymous: 'false', acl_nomatch: 'deny', acl_file: join(tmp, 'acl.conf') })
    node = backend.node
    await reload(plain())
  })
  afterAll(async () => {
    await backend?.destroy()
    await ldap?.close()
    if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true })
  })
  afterEach(async () => {
    await closeClients()
    await closeOpened()
    await backend.setAnonymous(false)
  })

  it('accepts the right password (MQTT 3.1.1 and 5, {SHA} and {SSHA}) and refuses a wrong one with 0x86 / 4', async () => {
    await connect(node, { protocolVersion: 4, username: 'mqttuser0001', password: 'mqttuser0001' })
    await connect(node, v5({ username: 'alice', password: 'wonderland' }))
    expect(await refusedCode(node, v5({ username: 'alice', password: 'wrong' }))).toBe(0x86)
    expect(await refusedCode(node, { protocolVersion: 4, username: 'alice', password: 'wrong' })).toBe(4)
    expect(await refusedCode(node, { protocolVersion: 4, username: 'alice' })).toBe(4)
    // isEnabled: FALSE refuses even the right password (EMQ X: username_disabled)
    expect(await refusedCode(node, v5({ username: 'disabled', password: 'pw' }))).toBe(0x86)
  })

  itWithMosquitto('accepts and refuses mosquitto_pub the same way', async () => {
    await expectMosquittoPub(node, { username: 'alice', password: 'wonderland', wrongPassword: 'nope', topic: 'alice/pub/m', versions: ['5', '311'], refusedWith: ['5'], refusal: /bad user ?name or password/i })
  })

  it('ignores an unknown user and an entry without a password: allow_anonymous decides', async () => {
    expect(await refusedCode(node, v5({ username: 'nopass', password: 'x' }))).toBe(0x87)
    await expectUnknownUserToChain(backend, { username: 'alice', password: 'wrong' })
  })

  it('applies mqttPublishTopic / mqttSubscriptionTopic / mqttPubSubTopic; a superuser (isSuperuser TRUE) bypasses the ACL', async () => {
    const root = await open(node, v5({ clientId: 'root-1', username: 'root', password: 'toor' }))
    expect(await suback(root.client, ['#', 'anything/at/all'])).toEqual([1, 1])
    const a = await connect(node, { ...alice, clientId: 'alice-1' })
    expect(await suback(a, ['alice/sub/x', 'sub/only', 'both/a/b', 'pub/only', 'alice/sub/x/y', 'elsewhere'])).toEqual([1, 1, 1, 0x80, 0x80, 0x80])
    await expectPublishes(a, root, { allowed: ['pub/only', 'both/z', 'alice/pub/y'], denied: ['sub/only', 'elsewhere'] })
  })

  itWithMosquitto('refuses mosquitto_sub a denied subscription', async () => {
    await expectMosquittoSubDenied(node, { username: 'alice', password: 'wonderland' }, 'elsewhere', /denied/i)
  })

  it('keeps a cached ACL decision for the client; a new client sees the directory\'s change', async () => {
    const { Change, Attribute } = await import('ldapts')
    const dn = 'uid=alice,ou=device,dc=emqx,dc=io'
    const cacheTopic = (operation: 'add' | 'delete'): InstanceType<typeof Change> =>
      new Change({ operation, modification: new Attribute({ type: 'mqttPubSubTopic', values: ['cache/t'] }) })
    await expectAclCached({
      node,
      watcher: v5({ clientId: 'root-2', username: 'root', password: 'toor' }),
      user: { ...alice, clientId: 'alice' },
      topic: 'cache/t',
      revoke: async () => {
        const c = await ldap.client()
        await c.modify(dn, cacheTopic('delete'))
        return async () => {
          await c.modify(dn, cacheTopic('add'))
          await c.unbind()
        }
      }
    })
  })

  it('never lets a username alter the search (filter and DN injection)', async () => {
    const injections = ['*)(uid=*', '*', 'alice)(|(uid=*', 'alice,ou=device', 'uid=alice,ou=device,dc=emqx,dc=io', 'alice\\2a', ...QUERY_INJECTIONS]
    await expectNeverAuthenticated(node, injections, 'wonderland')
    // with the username in the filter (auth.ldap.filters) rather than the base DN
    await reload({ ...plain(), 'auth.ldap.custom_base_dn': '${device_dn}', 'auth.ldap.filters.1.key': 'objectClass', 'auth.ldap.filters.1.value': 'mqttUser', 'auth.ldap.filters.2.key': 'uid', 'auth.ldap.filters.2.value': '${user}' })
    try {
      await connect(node, v5({ username: 'alice', password: 'wonderland' }))
      await expectNeverAuthenticated(node, injections, 'wonderland')
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
      expect(await refusedCode(node, v5({ username: 'alice', password: 'wrong' }))).toBe(0x86)
      expect(await refusedCode(node, v5({ username: 'alice', password: '' }))).toBe(0x86)
      expect(await refusedCode(node, v5({ username: 'stranger', password: 'x' }))).toBe(0x87)
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
      expect(await refusedCode(node, v5({ username: 'alice', password: 'wrong' }))).toBe(0x86)
      // without the CA the certificate cannot be verified: the backend is unreachable, the chain decides
      await reload(ldaps)
      expect(await refusedCode(node, v5({ username: 'alice', password: 'wonderland' }))).toBe(0x87)
      await waitFor(() => backend.alarmActive(), 'the unreachable alarm')
    } finally {
      await reload(plain())
    }
    expect(backend.alarmActive()).toBe(false)
  })

  it('answers within the timeout while slapd is down (alarm raised, chain decides) and recovers after a restart (alarm cleared)', async () => {
    await connect(node, alice) // the pool is connected
    await expectOutageAndRecovery({
      backend,
      down: async () => { await ldap.kill() },
      up: async () => { await ldap.restart() },
      refused: [[alice, 0x87]],
      withinMs: 1500,
      alarm: 'eventually',
      listed: true,
      anonymous: v5({ username: 'alice', password: 'anything' }), // allow_anonymous decides
      recovered: async () => { await connect(node, alice) },
      timings: ['svc_auth_ldap', 'slapd']
    })
  })

  it('loads with the directory unreachable (lazy connect), refuses fast, and unloads cleanly', async () => {
    await backend.unload()
    const began = Date.now()
    await backend.load({ ...plain(), 'auth.ldap.port': '1' })
    expect(Date.now() - began).toBeLessThan(1000)
    expect(await refusedCode(node, v5({ username: 'alice', password: 'wonderland' }))).toBe(0x87)
    await backend.unload()
    expect(backend.alarmActive()).toBe(false)
  })
})
