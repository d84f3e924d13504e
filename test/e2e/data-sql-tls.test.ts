/**
 * data_to_pgsql and data_to_mysql over TLS (the resource's `ssl`, `verify`, `cacertfile`,
 * read by rules/resource-tls.ts): a real PostgreSQL and a real MariaDB from the harness with
 * `tls: true, requireTls: true` (plain TCP logins refused), a node with the backend's plugin,
 * the resource and the rule created over the HTTP API, a real MQTT publisher.
 *
 * - `ssl` on, `verify` on, `cacertfile` = the server's CA: created, and every message of a
 *   QoS 1 stream is a row.
 * - `ssl` off against the TLS-only server, or `verify` on with a CA that did not sign the
 *   server's certificate: the resource is refused at creation (102, it cannot connect).
 * - `verify` off (the default) accepts that certificate.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { closeClients, connect, startTestNode, type TestNode } from '../helpers/node.js'
import { describeWithServer, makeTestCa, startMariadb, startPostgres, type ServerKind, type TestCertificate } from '../helpers/servers/index.js'
import { apiOf } from './api-actions-client.js'
import { actionTotals, clearRulesAndResources, until } from './data-actions-client.js'

/** What differs between the two databases. */
interface SqlTlsCase {
  kind: ServerKind
  plugin: string
  type: string
  action: string
  start: () => Promise<{
    host: string, port: number, user: string, password: string, database: string, caCertFile: string | undefined
    query: (sql: string) => Promise<unknown>, close: () => Promise<void>
  }>
  table: string
  count: (rows: unknown) => number
}

const CASES: SqlTlsCase[] = [
  {
    kind: 'postgres',
    plugin: 'svc_backend_pgsql',
    type: 'backend_pgsql',
    action: 'data_to_pgsql',
    start: async () => await startPostgres({ tls: true, requireTls: true }),
    table: 'CREATE TABLE tls_rows (id serial PRIMARY KEY, clientid text, seq int)',
    count: (rows) => Number((rows as Array<{ n: unknown }>)[0].n)
  },
  {
    kind: 'mariadb',
    plugin: 'svc_backend_mysql',
    type: 'backend_mysql',
    action: 'data_to_mysql',
    start: async () => await startMariadb({ tls: true, requireTls: true }),
    table: 'CREATE TABLE tls_rows (id int AUTO_INCREMENT PRIMARY KEY, clientid varchar(64), seq int)',
    count: (rows) => Number((rows as Array<{ n: unknown }>)[0].n)
  }
]

for (const c of CASES) {
  describeWithServer(c.kind, `${c.action} over TLS`, () => {
    let db: Awaited<ReturnType<SqlTlsCase['start']>>
    let node: TestNode
    let certDir: string
    let wrongCa: TestCertificate
    const api = apiOf(() => node)

    beforeAll(async () => {
      db = await c.start()
      await db.query(c.table)
      certDir = mkdtempSync(join(tmpdir(), 'st-data-tls-'))
      wrongCa = await makeTestCa(certDir, 'other-ca', 'Starling test other CA')
      node = await startTestNode({ 'broker.sys_interval': '0' }, undefined, { plugins: [c.plugin] })
    }, 60_000)
    afterEach(async () => {
      await closeClients()
      await clearRulesAndResources(api)
    })
    afterAll(async () => {
      await node?.destroy()
      await db?.close()
      if (certDir !== undefined) rmSync(certDir, { recursive: true, force: true })
    })

    const config = (extra: Record<string, unknown>): Record<string, unknown> => ({
      server: `${db.host}:${db.port}`, database: db.database, username: db.user, password: db.password, ...extra
    })

    it('writes every message as a row over a verified TLS connection', async () => {
      const created = await api('POST', '/resources', { name: 'tls', type: c.type, config: config({ ssl: true, verify: true, cacertfile: db.caCertFile }) })
      expect([created.body.code, created.body.message]).toEqual([0, undefined])
      const rule = await api('POST', '/rules', {
        rawsql: 'SELECT clientid, payload.seq as seq FROM "tls/#"',
        actions: [{ name: c.action, params: { $resource: created.body.data.id, sql: 'insert into tls_rows (clientid, seq) values (${clientid}, ${seq})' } }]
      })
      expect(rule.body.code).toBe(0)
      const pub = await connect(node, { clientId: 'tls-pub' })
      await Promise.all(Array.from({ length: 50 }, async (_, i) => await pub.publishAsync('tls/a', JSON.stringify({ seq: i }), { qos: 1 })))
      await until(async () => (await actionTotals(api, rule.body.data.id)).success === 50, '50 rows written')
      expect(c.count(await db.query('select count(*) as n from tls_rows'))).toBe(50)
      expect((await actionTotals(api, rule.body.data.id)).failed).toBe(0)
    })

    it('refuses a resource without TLS, or whose server certificate its CA did not sign, and takes it with verify off', async () => {
      const plain = await api('POST', '/resources', { name: 'plain', type: c.type, config: config({ ssl: false }) })
      expect(plain.body.code).toBe(102)
      expect(plain.body.message).toMatch(new RegExp(`resource type ${c.type}: cannot connect`))
      const wrong = await api('POST', '/resources', { name: 'wrong', type: c.type, config: config({ ssl: true, verify: true, cacertfile: wrongCa.certFile }) })
      expect(wrong.body.code).toBe(102)
      expect(wrong.body.message).toMatch(/certificate/i)
      const unchecked = await api('POST', '/resources', { name: 'unchecked', type: c.type, config: config({ ssl: true, verify: false, cacertfile: wrongCa.certFile }) })
      expect([unchecked.body.code, unchecked.body.message]).toEqual([0, undefined])
    })
  })
}
