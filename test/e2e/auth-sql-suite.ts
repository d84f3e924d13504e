/**
 * The end-to-end tests svc_auth_mysql and svc_auth_pgsql share (auth-mysql.test.ts,
 * auth-pgsql.test.ts): both plugins run EMQ X 4.4's queries on EMQ X's mqtt_user and mqtt_acl
 * tables (plugins/auth/sql/), so one list of tests serves both, run by each file against its own
 * server. What differs between the databases is a field of {@link SqlBackendSuite}: the
 * tables, the bound-parameter marks, is_superuser's type, and the injections its quoting
 * invites.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { closeClients, connect, waitFor, apiRequest, type TestNode } from '../helpers/node.js'
import { closeOpened, open, suback } from '../helpers/mqtt.js'
import { PROJECT_ROOT } from '../helpers/process.js'
import { describeWithServer, type ServerProcess } from '../helpers/servers/index.js'
import {
  SQL_INJECTIONS, expectMosquittoPub, expectNeverAuthenticated, expectOutageAndRecovery, itWithMosquitto, refusedCode,
  startBackendNode, type BackendNode
} from '../helpers/auth-backend.js'
import { loadPluginConfig, parseConfText } from '../../node/config/index.js'
import { computePasswordHash, parsePasswordHash } from '../../plugins/auth/backend/index.js'
import type { PluginDefinition } from '../../node/plugins/types.js'

/** EMQ X 4.4's seed rows of mqtt_acl (mqtt.sql of emqx_auth_mysql, pgsql.sql of emqx_auth_pgsql). */
const EMQX_ACL_SEED = `INSERT INTO mqtt_acl (id, allow, ipaddr, username, clientid, access, topic) VALUES
  (1,1,NULL,'$all',NULL,2,'#'),
  (2,0,NULL,'$all',NULL,1,'$SYS/#'),
  (3,0,NULL,'$all',NULL,1,'eq #'),
  (4,1,'127.0.0.1',NULL,NULL,2,'$SYS/#'),
  (5,1,'127.0.0.1',NULL,NULL,2,'#'),
  (6,1,NULL,'dashboard',NULL,1,'$SYS/#')`

/** A database server of the harness, as the suite uses it. */
export interface SqlTestServer extends ServerProcess {
  user: string
  password: string
  database: string
  query: (sql: string, params?: unknown[]) => Promise<any>
}

/** One SQL plugin and its database. */
export interface SqlBackendSuite {
  plugin: 'svc_auth_mysql' | 'svc_auth_pgsql'
  definition: PluginDefinition
  /** The plugin's key prefix (`auth.mysql`). */
  prefix: string
  server: 'mariadb' | 'postgres'
  /** The product's name in the suite's title (`MariaDB`). */
  product: string
  /** Starts the server with EMQ X's tables created (password wide enough for a sha512 hex digest). */
  start: () => Promise<SqlTestServer>
  /** `n` bound-parameter marks: `?, ?` or `$1, $2`. */
  marks: (n: number) => string
  /** is_superuser's value for a superuser, and for anyone else. */
  superuser: [yes: number | boolean, no: number | boolean]
  /** The query counting mqtt_user's rows as a number `n`. */
  countUsers: string
  /** Usernames beyond {@link SQL_INJECTIONS} that this database's quoting invites. */
  injections: string[]
}

/** Defines the shipped-config test and the tests against the real server, for `s`. */
export function sqlBackendSuite (s: SqlBackendSuite): void {
  const { plugin, prefix } = s
  const schema = s.definition.configSchema

  describe(`shipped etc/plugins/${plugin}.conf`, () => {
    it('sets every key of the schema at its default, and marks the password secret', () => {
      const file = join(PROJECT_ROOT, 'etc/plugins', `${plugin}.conf`)
      const keys = parseConfText(readFileSync(file, 'utf8'), file).map(e => e.key)
      expect(keys.sort()).toEqual(Object.keys(schema).sort())
      expect(loadPluginConfig(file, schema, { env: {} }))
        .toEqual(loadPluginConfig(join(PROJECT_ROOT, 'etc/plugins/none.conf'), schema, { env: {}, optional: true }))
      expect(schema[`${prefix}.password`].secret).toBe(true)
    })
  })

  describeWithServer(s.server, `${plugin} against ${s.product}`, () => {
    let db: SqlTestServer
    let backend: BackendNode
    let node: TestNode

    beforeAll(async () => {
      db = await s.start()
      backend = await startBackendNode(plugin, { allow_anonymous: 'false' })
      node = backend.node
    }, 60_000)
    afterAll(async () => {
      await backend?.destroy()
      await db?.close()
    })
    afterEach(async () => {
      await backend.unload()
      await closeClients()
      await closeOpened()
      await db.query('DELETE FROM mqtt_user; DELETE FROM mqtt_acl')
    })

    /** Loads the plugin on the test database with `keys` (short names: `timeout` is `<prefix>.timeout`) over the shipped file. */
    async function load (keys: Record<string, string> = {}): Promise<void> {
      await backend.load({
        [`${prefix}.server`]: `${db.host}:${db.port}`,
        [`${prefix}.username`]: db.user,
        [`${prefix}.password`]: db.password,
        [`${prefix}.database`]: db.database,
        [`${prefix}.timeout`]: '2s',
        ...Object.fromEntries(Object.entries(keys).map(([k, v]) => [`${prefix}.${k}`, v]))
      })
    }
    /** Adds a user whose password column holds what `password_hash` = `hash` stores. */
    async function addUser (username: string, password: string, hash = 'sha256', salt: string | null = null, superuser = false): Promise<void> {
      // unsalted bcrypt keeps its salt in the hash itself: none in the salt column
      const hashSalt = hash === 'bcrypt' ? '$2b$10$0123456789abcdefghijkl' : salt ?? undefined
      const stored = computePasswordHash(parsePasswordHash(hash, 'test').spec, Buffer.from(password), hashSalt)
      await db.query(`INSERT INTO mqtt_user (username, password, salt, is_superuser) VALUES (${s.marks(4)})`, [username, stored, salt, s.superuser[superuser ? 0 : 1]])
    }
    async function acl (allow: number, who: { ipaddr?: string, username?: string, clientid?: string }, access: number, topic: string): Promise<void> {
      await db.query(`INSERT INTO mqtt_acl (allow, ipaddr, username, clientid, access, topic) VALUES (${s.marks(6)})`,
        [allow, who.ipaddr ?? null, who.username ?? null, who.clientid ?? null, access, topic])
    }

    it('accepts the right password and refuses a wrong one (0x86 / 4), with the default sha256', async () => {
      await load()
      await addUser('alice', 'wonderland')
      const before = { ...node.metrics }
      for (const protocolVersion of [4, 5] as const) await connect(node, { protocolVersion, username: 'alice', password: 'wonderland' })
      expect(await refusedCode(node, { protocolVersion: 5, username: 'alice', password: 'wrong' })).toBe(0x86)
      expect(await refusedCode(node, { protocolVersion: 4, username: 'alice', password: 'wrong' })).toBe(4)
      expect(node.metrics['client.auth.success'] - before['client.auth.success']).toBe(2)
      expect(node.metrics['client.auth.failure'] - before['client.auth.failure']).toBe(2)
    })

    itWithMosquitto('answers mosquitto_pub (MQTT 3.1.1 and 5): accepted, and refused with a wrong password', async () => {
      await load()
      await addUser('mosq', 'pw')
      await expectMosquittoPub(node, { username: 'mosq', password: 'pw', wrongPassword: 'nope', topic: 't/mosq', versions: ['mqttv311', 'mqttv5'], refusal: /not authori[sz]ed|bad user name or password/i })
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
      await load({ password_hash: hash, ...(query === undefined ? {} : { auth_query: query }) })
      await addUser('hashed', 'p@ss', hash, salt)
      await connect(node, { protocolVersion: 5, username: 'hashed', password: 'p@ss' })
      expect(await refusedCode(node, { protocolVersion: 5, username: 'hashed', password: 'p@sS' })).toBe(0x86)
    })

    it('ignores an unknown user: allow_anonymous decides (false: 0x87 / 5; true: accepted)', async () => {
      await load()
      expect(await refusedCode(node, { protocolVersion: 5, username: 'stranger', password: 'x' })).toBe(0x87)
      expect(await refusedCode(node, { protocolVersion: 4, username: 'stranger', password: 'x' })).toBe(5)
      await backend.setAnonymous(true)
      try {
        await connect(node, { protocolVersion: 5, username: 'stranger', password: 'x' })
        await connect(node, { protocolVersion: 4, username: 'stranger', password: 'x' })
      } finally {
        await backend.setAnonymous(false)
      }
    })

    it('never authenticates an injected username, and the query is left as it was', async () => {
      await load({ password_hash: 'plain' })
      await db.query("INSERT INTO mqtt_user (username, password) VALUES ('victim', 'secret')")
      await expectNeverAuthenticated(node, [...SQL_INJECTIONS, ...s.injections], 'secret')
      // the table is intact and the victim still logs in
      expect((await db.query(s.countUsers))[0].n).toBe(1)
      await connect(node, { protocolVersion: 5, username: 'victim', password: 'secret' })
    })

    it(`makes is_superuser = ${String(s.superuser[0])} a superuser who bypasses the ACL`, async () => {
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
      const res = await apiRequest(node, `/nodes/${node.name}/plugin_configs/${plugin}?format=object`)
      expect(JSON.stringify(res)).not.toContain(db.password)
      expect(res.data[`${prefix}.password`]).toBe('******')
    })

    it('loads with the server down, answers ignore within the timeout with an alarm, and recovers when it is back', async () => {
      await addUser('dora', 'd')
      await acl(0, { username: 'dora' }, 1, 'down/t')
      await expectOutageAndRecovery({
        backend,
        down: async () => { await db.kill() },
        up: async () => { await db.restart() },
        whileDown: async () => { await load({ timeout: '1s' }) },
        // the chain decides: allow_anonymous = false refuses with 0x87
        refused: [[{ protocolVersion: 5, username: 'dora', password: 'd' }, 0x87]],
        withinMs: 1500,
        alarm: 'at once',
        listed: true,
        recovered: async () => { await connect(node, { protocolVersion: 5, username: 'dora', password: 'd' }) }
      })
    })

    it('answers ignore when the server dies under a loaded plugin, and recovers on restart', async () => {
      await load({ timeout: '1s' })
      await addUser('eve', 'e')
      await connect(node, { protocolVersion: 5, username: 'eve', password: 'e' }) // pool connected
      await expectOutageAndRecovery({
        backend,
        down: async () => { await db.kill() },
        up: async () => { await db.restart() },
        refused: [[{ protocolVersion: 5, username: 'eve', password: 'e' }, 0x87]],
        withinMs: 1500,
        alarm: 'at once',
        listed: false,
        anonymous: { protocolVersion: 5, username: 'eve', password: 'wrong-but-ignored' },
        recovered: async () => { await connect(node, { protocolVersion: 5, username: 'eve', password: 'e' }) }
      })
      expect(await refusedCode(node, { protocolVersion: 5, username: 'eve', password: 'wrong' })).toBe(0x86)
    })

    it('can run ACL-only (empty auth_query) and authentication-only (empty acl_query)', async () => {
      await load({ auth_query: '', super_query: '' })
      expect(node.broker.authenticators.map(a => a.name)).not.toContain(plugin)
      await backend.unload()
      await load({ acl_query: '' })
      expect(node.broker.authenticators.map(a => a.name)).toContain(plugin)
    })
  })
}
