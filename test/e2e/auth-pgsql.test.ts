/**
 * svc_auth_pgsql end to end: a real PostgreSQL (test/helpers/servers), EMQ X 4.4's mqtt_user and
 * mqtt_acl tables, a node loading the plugin with the shipped etc/plugins/svc_auth_pgsql.conf
 * (plus the keys a test sets), and real clients: mqtt.js (MQTT 3.1.1 and 5) and mosquitto_pub.
 */
import { execFile, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { closeClients, connect, waitFor, apiRequest, type TestNode } from '../helpers/node.js'
import { closeOpened, open, refusedConnack, suback } from '../helpers/mqtt.js'
import { PROJECT_ROOT } from '../helpers/process.js'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'
import { describeWithServer, startPostgres, type PostgresServer } from '../helpers/servers/index.js'
import { loadPluginConfig, parseConfText } from '../../node/config/index.js'
import { computePasswordHash, parsePasswordHash } from '../../node/auth/backend/index.js'
import { svcAuthPgsql } from '../../node/auth/pgsql/plugin.js'

const PLUGIN = 'svc_auth_pgsql'

/**
 * EMQ X 4.4's tables, from emqx_auth_pgsql's pgsql.sql (apps/emqx_auth_pgsql, EMQ X v4.4):
 * mqtt_user(id, is_superuser boolean, username, password, salt) and
 * mqtt_acl(id, allow, ipaddr, username, clientid, access, topic), as written there
 * (password widened to 128 for sha512 hex digests).
 */
const EMQX_PGSQL_SQL = `
CREATE TABLE mqtt_user (
  id SERIAL primary key,
  is_superuser boolean,
  username character varying(100),
  password character varying(128),
  salt character varying(40)
);
CREATE TABLE mqtt_acl (
  id SERIAL primary key,
  allow integer,
  ipaddr character varying(60),
  username character varying(100),
  clientid character varying(100),
  access integer,
  topic character varying(100)
);`

/** EMQ X 4.4's seed rows of mqtt_acl (same file). */
const EMQX_ACL_SEED = `INSERT INTO mqtt_acl (id, allow, ipaddr, username, clientid, access, topic) VALUES
  (1,1,NULL,'$all',NULL,2,'#'),
  (2,0,NULL,'$all',NULL,1,'$SYS/#'),
  (3,0,NULL,'$all',NULL,1,'eq #'),
  (4,1,'127.0.0.1',NULL,NULL,2,'$SYS/#'),
  (5,1,'127.0.0.1',NULL,NULL,2,'#'),
  (6,1,NULL,'dashboard',NULL,1,'$SYS/#')`

const hasMosquitto = spawnSync('mosquitto_pub', ['--help']).status !== null

describe('shipped etc/plugins/svc_auth_pgsql.conf', () => {
  it('sets every key of the schema at its default, and marks the password secret', () => {
    const file = join(PROJECT_ROOT, 'etc/plugins', `${PLUGIN}.conf`)
    const keys = parseConfText(readFileSync(file, 'utf8'), file).map(e => e.key)
    expect(keys.sort()).toEqual(Object.keys(svcAuthPgsql.configSchema).sort())
    expect(loadPluginConfig(file, svcAuthPgsql.configSchema, { env: {} }))
      .toEqual(loadPluginConfig(join(PROJECT_ROOT, 'etc/plugins/none.conf'), svcAuthPgsql.configSchema, { env: {}, optional: true }))
    expect(svcAuthPgsql.configSchema['auth.pgsql.password'].secret).toBe(true)
  })
})

describeWithServer('postgres', 'svc_auth_pgsql against PostgreSQL', () => {
  let db: PostgresServer
  let p: PluginNode
  let node: TestNode

  beforeAll(async () => {
    db = await startPostgres()
    await db.query(EMQX_PGSQL_SQL)
    p = await startPluginNode({ overrides: { allow_anonymous: 'false' } })
    node = p.node
  }, 60_000)
  afterAll(async () => {
    await p?.destroy()
    await db?.close()
  })
  afterEach(async () => {
    if (p.manager.isActive(PLUGIN)) await p.manager.unload(PLUGIN)
    await closeClients()
    await closeOpened()
    await db.query('DELETE FROM mqtt_user; DELETE FROM mqtt_acl')
  })

  /** Loads the plugin on the test database with `keys` over the shipped file. */
  async function load (keys: Record<string, string> = {}): Promise<void> {
    p.writeConf(PLUGIN, shippedPluginConf(PLUGIN, {
      'auth.pgsql.server': `${db.host}:${db.port}`,
      'auth.pgsql.username': db.user,
      'auth.pgsql.password': db.password,
      'auth.pgsql.database': db.database,
      'auth.pgsql.timeout': '2s',
      ...keys
    }))
    await p.manager.load(PLUGIN)
  }
  /** Adds a user whose password column holds what `password_hash` = `hash` stores. */
  async function addUser (username: string, password: string, hash = 'sha256', salt: string | null = null, superuser = false): Promise<void> {
    // unsalted bcrypt keeps its salt in the hash itself: none in the salt column
    const hashSalt = hash === 'bcrypt' ? '$2b$10$0123456789abcdefghijkl' : salt ?? undefined
    const stored = computePasswordHash(parsePasswordHash(hash, 'test').spec, Buffer.from(password), hashSalt)
    await db.query('INSERT INTO mqtt_user (username, password, salt, is_superuser) VALUES ($1, $2, $3, $4)', [username, stored, salt, superuser])
  }
  async function acl (allow: number, who: { ipaddr?: string, username?: string, clientid?: string }, access: number, topic: string): Promise<void> {
    await db.query('INSERT INTO mqtt_acl (allow, ipaddr, username, clientid, access, topic) VALUES ($1, $2, $3, $4, $5, $6)',
      [allow, who.ipaddr ?? null, who.username ?? null, who.clientid ?? null, access, topic])
  }
  const setAnonymous = async (allow: boolean): Promise<void> => {
    expect((await apiRequest(node, '/configs/starling', 'PUT', { allow_anonymous: allow })).code).toBe(0)
  }
  /** mosquitto_pub's exit status and output (it exits non-zero when the CONNECT is refused); async: the node runs in this process. */
  const mosquittoPub = async (version: 'mqttv311' | 'mqttv5', username: string, password: string, topic = 't/mosq'): Promise<{ status: number, out: string }> =>
    await new Promise((resolve) => {
      execFile('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(node.port('mqtt:tcp')), '-V', version, '-u', username, '-P', password, '-t', topic, '-m', 'x', '-q', '1'],
        { encoding: 'utf8', timeout: 10_000 }, (err, stdout, stderr) => {
          resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, out: stdout + stderr })
        })
    })

  it('accepts the right password and refuses a wrong one (0x86 / 4), with the default sha256', async () => {
    await load()
    await addUser('alice', 'wonderland')
    const before = { ...node.metrics }
    for (const protocolVersion of [4, 5] as const) await connect(node, { protocolVersion, username: 'alice', password: 'wonderland' })
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'alice', password: 'wrong' })).reasonCode).toBe(0x86)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'alice', password: 'wrong' })).returnCode).toBe(4)
    expect(node.metrics['client.auth.success'] - before['client.auth.success']).toBe(2)
    expect(node.metrics['client.auth.failure'] - before['client.auth.failure']).toBe(2)
  })

  ;(hasMosquitto ? it : it.skip)('answers mosquitto_pub (MQTT 3.1.1 and 5): accepted, and refused with a wrong password', async () => {
    await load()
    await addUser('mosq', 'pw')
    for (const v of ['mqttv311', 'mqttv5'] as const) {
      expect((await mosquittoPub(v, 'mosq', 'pw')).status).toBe(0)
      const bad = await mosquittoPub(v, 'mosq', 'nope')
      expect(bad.status).not.toBe(0)
      expect(bad.out).toMatch(/not authori[sz]ed|bad user name or password/i)
    }
  })

  it.each([
    ['plain', null],
    ['md5', null],
    ['sha', null],
    ['sha512', null],
    ['salt,sha256', 'pepper'],
    ['sha256,salt', 'pepper'],
    ['bcrypt', null],
    ['salt,bcrypt', '$2b$10$abcdefghijklmnopqrstuu'],
    ['pbkdf2,sha256,1000,20', 'NaCl']
  ])('checks password_hash = %s through the database (salt column %s)', async (hash, salt) => {
    const query = salt === null ? undefined : "select password, salt from mqtt_user where username = '%u' limit 1"
    await load({ 'auth.pgsql.password_hash': hash, ...(query === undefined ? {} : { 'auth.pgsql.auth_query': query }) })
    await addUser('hashed', 'p@ss', hash, salt)
    await connect(node, { protocolVersion: 5, username: 'hashed', password: 'p@ss' })
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'hashed', password: 'p@sS' })).reasonCode).toBe(0x86)
  })

  it('ignores an unknown user: allow_anonymous decides (false: 0x87 / 5; true: accepted)', async () => {
    await load()
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'stranger', password: 'x' })).reasonCode).toBe(0x87)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'stranger', password: 'x' })).returnCode).toBe(5)
    await setAnonymous(true)
    try {
      await connect(node, { protocolVersion: 5, username: 'stranger', password: 'x' })
      await connect(node, { protocolVersion: 4, username: 'stranger', password: 'x' })
    } finally {
      await setAnonymous(false)
    }
  })

  it('never authenticates an injected username, and the query is left as it was', async () => {
    await load({ 'auth.pgsql.password_hash': 'plain' })
    await db.query("INSERT INTO mqtt_user (username, password) VALUES ('victim', 'secret')")
    for (const username of ["' OR 1=1 --", "x' OR '1'='1", 'x" || true', "victim' -- ", "$1' OR 1=1 --", "victim'; DROP TABLE mqtt_user; --"]) {
      expect((await refusedConnack(node, { protocolVersion: 5, username, password: 'secret' })).reasonCode).toBe(0x87)
    }
    // the table is intact and the victim still logs in
    expect((await db.query('SELECT count(*)::int AS n FROM mqtt_user'))[0].n).toBe(1)
    await connect(node, { protocolVersion: 5, username: 'victim', password: 'secret' })
  })

  it('makes is_superuser = true a superuser who bypasses the ACL', async () => {
    await load()
    await addUser('root', 'r', 'sha256', null, true)
    await addUser('plain', 'p')
    await acl(0, { username: '$all' }, 3, 'secret/#')
    const su = await connect(node, { protocolVersion: 5, username: 'root', password: 'r' })
    const pl = await connect(node, { protocolVersion: 5, username: 'plain', password: 'p' })
    expect(await suback(su, 'secret/a')).toEqual([1])
    expect(await suback(pl, 'secret/a')).toEqual([0x80])
  })

  it('decides publish and subscribe per row (user, client id, ip, $all, eq, %u), a denied publish never delivered', async () => {
    await load()
    await addUser('bob', 'b')
    // matched last (EMQ X's order: the last row returned first): everything else is denied
    await acl(0, { username: '$all' }, 3, '#')
    await acl(1, { username: 'bob' }, 1, 'room/%u/#')
    await acl(1, { clientid: 'bob-dev' }, 2, 'dev/out')
    await acl(0, { ipaddr: '127.0.0.1' }, 2, 'blocked/#')
    await acl(0, { username: '$all' }, 1, 'eq #')
    await acl(0, { username: 'bob', clientid: 'other' }, 1, 'room/bob/x') // AND: not this client
    const bob = await open(node, { protocolVersion: 5, clientId: 'bob-dev', username: 'bob', password: 'b' })
    expect(await suback(bob.client, ['room/bob/x', 'room/alice/x', '#'])).toEqual([1, 0x80, 0x80])
    // a subscriber that may read everything: a superuser (bypasses the ACL)
    await addUser('watch', 'w', 'sha256', null, true)
    const watcher = await open(node, { protocolVersion: 5, clientId: 'watch', username: 'watch', password: 'w' })
    expect(await suback(watcher.client, ['dev/#', 'blocked/#'])).toEqual([1, 1])
    await bob.client.publishAsync('blocked/x', 'no', { qos: 0 })
    await bob.client.publishAsync('dev/out', 'yes', { qos: 1 })
    await waitFor(() => watcher.messages.some(m => m.topic === 'dev/out'), 'dev/out delivered')
    expect(watcher.messages.map(m => m.topic)).toEqual(['dev/out'])
  })

  it('matches the last row returned first, as EMQ X 4.4 (its seed rows rely on it)', async () => {
    await load()
    await db.query(EMQX_ACL_SEED)
    await addUser('dashboard', 'd')
    await addUser('someone', 's')
    const dash = await connect(node, { protocolVersion: 5, username: 'dashboard', password: 'd' })
    const other = await connect(node, { protocolVersion: 5, username: 'someone', password: 's' })
    // row 6 (dashboard may subscribe $SYS/#) comes before row 2 (everyone denied $SYS/#)
    expect(await suback(dash, '$SYS/brokers/+/version')).toEqual([1])
    expect(await suback(other, '$SYS/brokers/+/version')).toEqual([0x80])
    expect(await suback(other, '#')).toEqual([0x80])
  })

  it('keeps an ACL decision in the ACL cache: a row changed later applies to new clients', async () => {
    await load()
    await addUser('carl', 'c')
    await acl(1, { username: 'carl' }, 1, 'cache/t')
    const first = await connect(node, { protocolVersion: 5, clientId: 'carl-1', username: 'carl', password: 'c' })
    expect(await suback(first, 'cache/t')).toEqual([1])
    await db.query('UPDATE mqtt_acl SET allow = 0')
    expect(await suback(first, 'cache/t')).toEqual([1]) // cached for this client
    const second = await connect(node, { protocolVersion: 5, clientId: 'carl-2', username: 'carl', password: 'c' })
    expect(await suback(second, 'cache/t')).toEqual([0x80])
  })

  it('keeps the password secret in the plugin_configs API', async () => {
    await load()
    const res = await apiRequest(node, `/nodes/${node.name}/plugin_configs/${PLUGIN}?format=object`)
    expect(JSON.stringify(res)).not.toContain(db.password)
    expect(res.data['auth.pgsql.password']).toBe('******')
  })

  it('loads with the server down, answers ignore within the timeout with an alarm, and recovers when it is back', async () => {
    await addUser('dora', 'd')
    await acl(0, { username: 'dora' }, 1, 'down/t')
    await db.kill()
    try {
      await load({ 'auth.pgsql.timeout': '1s' })
      const start = Date.now()
      // the chain decides: allow_anonymous = false refuses with 0x87
      expect((await refusedConnack(node, { protocolVersion: 5, username: 'dora', password: 'd' })).reasonCode).toBe(0x87)
      const took = Date.now() - start
      expect(took).toBeLessThan(1500)
      expect(node.services.alarms.isActive('svc_auth_pgsql_unreachable')).toBe(true)
      const alarms = await apiRequest(node, '/alarms/present')
      expect(JSON.stringify(alarms)).toContain('svc_auth_pgsql_unreachable')
    } finally {
      await db.restart()
    }
    await connect(node, { protocolVersion: 5, username: 'dora', password: 'd' })
    expect(node.services.alarms.isActive('svc_auth_pgsql_unreachable')).toBe(false)
  })

  it('answers ignore when the server dies under a loaded plugin, and recovers on restart', async () => {
    await load({ 'auth.pgsql.timeout': '1s' })
    await addUser('eve', 'e')
    await connect(node, { protocolVersion: 5, username: 'eve', password: 'e' }) // pool connected
    await db.kill()
    try {
      const start = Date.now()
      expect((await refusedConnack(node, { protocolVersion: 5, username: 'eve', password: 'e' })).reasonCode).toBe(0x87)
      expect(Date.now() - start).toBeLessThan(1500)
      await setAnonymous(true)
      await connect(node, { protocolVersion: 5, username: 'eve', password: 'wrong-but-ignored' })
      await setAnonymous(false)
      expect(node.services.alarms.isActive('svc_auth_pgsql_unreachable')).toBe(true)
    } finally {
      await db.restart()
    }
    await connect(node, { protocolVersion: 5, username: 'eve', password: 'e' })
    expect(node.services.alarms.isActive('svc_auth_pgsql_unreachable')).toBe(false)
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'eve', password: 'wrong' })).reasonCode).toBe(0x86)
  })

  it('can run ACL-only (empty auth_query) and authentication-only (empty acl_query)', async () => {
    await load({ 'auth.pgsql.auth_query': '', 'auth.pgsql.super_query': '' })
    expect(node.broker.authenticators.map(a => a.name)).not.toContain(PLUGIN)
    await p.manager.unload(PLUGIN)
    await load({ 'auth.pgsql.acl_query': '' })
    expect(node.broker.authenticators.map(a => a.name)).toContain(PLUGIN)
  })
})
