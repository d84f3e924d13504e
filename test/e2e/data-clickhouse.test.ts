/**
 * svc_backend_clickhouse against a real ClickHouse (Debian's 18.16, test/helpers/servers/):
 * two clustered nodes with the plugin loaded, rules created over the HTTP API, a real MQTT
 * publisher, rows selected back. What each mode guarantees (docs/integrations.md) with the
 * server killed (SIGKILL) mid-stream and restarted, and with the node SIGKILLed (no
 * acknowledged row lost); templates that are not a plain insert.
 */
import { connect, type TestNode } from '../helpers/node.js'
import { apiOf } from './api-actions-client.js'
import { ackedRowsSurviveSigkill, actionTotals, crashRule, resourceStatus, until, useDataCluster, type ActionTotals } from './data-actions-client.js'
import { describeWithServer, freePort, startClickhouse, type ClickhouseServer } from '../helpers/servers/index.js'

const SQL = 'SELECT clientid, topic, payload.seq as seq, payload.temp as temp, payload.v as v, payload.meta as meta FROM "sensors/#"'


let server: ClickhouseServer
let n1: TestNode
const api = apiOf(() => n1)
const plugins = { plugins: ['svc_backend_clickhouse'] }
let tables = 0

/** Publishes `n` messages (seq `from`..) at QoS 1 from one client; resolves once all are acknowledged. */
async function publish (node: TestNode, n: number, clientId = 'sensor-1', from = 0, payload?: (seq: number) => Record<string, unknown>): Promise<void> {
  const pub = await connect(node, { clientId })
  await Promise.all(Array.from({ length: n }, (_, i) => pub.publishAsync(`sensors/${clientId}`, JSON.stringify(payload?.(from + i) ?? { seq: from + i, temp: 20.5 + from + i, meta: { i: from + i } }), { qos: 1 })))
}

const statusOf = async (resource: string): Promise<Record<string, boolean>> => await resourceStatus(api, resource)

const metricsOf = async (rule: string): Promise<ActionTotals> => await actionTotals(api, rule)

/** Rows of `t`. */
async function count (t: string): Promise<number> {
  return Number((await server.query<{ n: string }>(`SELECT count() AS n FROM ${t}`))[0].n)
}

/** The seq column of `t`, in order. */
async function seqs (t: string): Promise<number[]> {
  return (await server.query<{ seq: number }>(`SELECT seq FROM ${t} ORDER BY seq`)).map((r) => Number(r.seq))
}

const config = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  server: server.url, user: server.user, key: server.password, database: server.database, ...extra
})

/** A fresh table, a resource and a rule writing every `sensors/#` message into it. */
async function setUp (resourceConfig: Record<string, unknown>, actionParams: Record<string, unknown> = {}): Promise<{ t: string, resource: string, rule: string }> {
  const t = `msgs_${++tables}`
  await server.query(`CREATE TABLE ${t} (seq UInt32, clientid String, topic String, temp Float64, meta String, source String) ENGINE = MergeTree() ORDER BY seq`)
  const created = await api('POST', '/resources', { name: `ch${tables}`, type: 'backend_clickhouse', config: resourceConfig })
  expect(created.body).toMatchObject({ code: 0 })
  const resource = created.body.data.id as string
  const rule = await api('POST', '/rules', {
    rawsql: SQL,
    actions: [{
      name: 'data_to_clickhouse',
      params: { $resource: resource, sql: `insert into ${t}(seq, clientid, topic, temp, meta, source) values (\${seq}, '\${clientid}', \${topic}, \${temp}, \${meta}, 'mqtt ''x''')`, ...actionParams }
    }]
  })
  expect(rule.body).toMatchObject({ code: 0 })
  return { t, resource, rule: rule.body.data.id as string }
}

describeWithServer('clickhouse', 'svc_backend_clickhouse: data_to_clickhouse', () => {
  // the data suites' lifecycle: the server and two clustered nodes, cleared after each test
  const d = useDataCluster('c', plugins.plugins[0], async () => await startClickhouse())
  beforeAll(() => { server = d.server; n1 = d.n1 })

  it('lists the resource type and the action while the plugin is loaded', async () => {
    const type = (await api('GET', '/resource_types')).body.data.find((t: { name: string }) => t.name === 'backend_clickhouse')
    expect(Object.keys(type.params)).toEqual(expect.arrayContaining(['server', 'user', 'key', 'database', 'pool_size', 'auto_reconnect', 'local_buffer', 'cacertfile', 'verify']))
    const action = (await api('GET', '/actions')).body.data.find((a: { name: string }) => a.name === 'data_to_clickhouse')
    expect(action.types).toEqual(['backend_clickhouse'])
    expect(Object.keys(action.params)).toEqual(expect.arrayContaining(['sql', 'enable_batch', 'batch_size', 'batch_time']))
  })

  it('refuses a server that cannot be reached or a wrong key (102), and an SQL template that is not a plain insert (108)', async () => {
    const port = await freePort()
    const refused = await api('POST', '/resources', { name: 'nowhere', type: 'backend_clickhouse', config: config({ server: `http://127.0.0.1:${port}` }) })
    expect(refused.status).toBe(400)
    expect(refused.body.code).toBe(102)
    expect(refused.body.message).toMatch(/resource type backend_clickhouse: cannot connect: .*; start the server or correct the config/)
    const wrong = await api('POST', '/resources', { name: 'wrong', type: 'backend_clickhouse', config: config({ key: 'not-it' }) })
    expect(wrong.body.code).toBe(102)
    expect(wrong.body.message).not.toContain(server.password)
    expect(wrong.body.message).toMatch(/cannot connect: clickhouse http:\/\/127\.0\.0\.1:\d+: Wrong password for user starling/)
    expect((await api('GET', '/resources')).body.data).toEqual([])
    const badServer = await api('POST', '/resources', { name: 'p', type: 'backend_clickhouse', config: config({ server: '127.0.0.1:8123' }) })
    expect(badServer.body).toMatchObject({ code: 108, message: expect.stringMatching(/parameter server must be the HTTP interface's URL, such as http:\/\/127.0.0.1:8123/) })

    const ok = await api('POST', '/resources', { name: 'here', type: 'backend_clickhouse', config: config() })
    expect(ok.body).toMatchObject({ code: 0 })
    const bad = async (sql: string): Promise<{ status: number, body: { code: number, message: string } }> =>
      await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_clickhouse', params: { $resource: ok.body.data.id, sql } }] })
    for (const [sql, why] of [
      ['insert into t values (${seq})', /it has no column list/],
      ['insert into t(a) values (now())', /a function call \(now\(\.\.\.\)\) is not a value/],
      ['insert into t(a) values (\'id-${seq}\')', /cannot be bound as a parameter/],
      ['insert into t(a) select ${seq}', /expected VALUES but found select/],
      ['delete from t where a = ${seq}', /expected INSERT but found delete/],
      ['insert into t(a, b) values (${seq})', /it names 2 columns but gives 1 values/]
    ] as const) {
      const res = await bad(sql)
      expect(res.status).toBe(400)
      expect(res.body.code).toBe(108)
      expect(res.body.message).toMatch(why)
      expect(res.body.message).toMatch(/written as one JSONEachRow insert whose rows carry the values as data, never as SQL text/)
    }
  })

  it('writes 1,000 messages as rows with the selected fields; the key is never shown; alive on both nodes (GET /ping)', async () => {
    const { t, resource, rule } = await setUp(config())
    const shown = (await api('GET', `/resources/${resource}`)).body.data
    expect(shown.config).toMatchObject({ key: '******', pool_size: 8, local_buffer: false })
    await until(async () => Object.values(await statusOf(resource)).filter(Boolean).length === 2, 'alive on both nodes')
    expect(await statusOf(resource)).toEqual({ 'c1@127.0.0.1': true, 'c2@127.0.0.1': true })

    await publish(n1, 1000, 'sensor \'1\'; drop table x')
    await until(async () => (await metricsOf(rule)).success === 1000, 'success 1000')
    expect(await metricsOf(rule)).toEqual({ taken: 1000, success: 1000, failed: 0 })
    expect(await count(t)).toBe(1000)
    expect(await seqs(t)).toEqual(Array.from({ length: 1000 }, (_, i) => i))
    const [row] = await server.query(`SELECT * FROM ${t} WHERE seq = 7`)
    expect(row).toEqual({ seq: 7, clientid: 'sensor \'1\'; drop table x', topic: 'sensors/sensor \'1\'; drop table x', temp: 27.5, meta: '{"i":7}', source: 'mqtt \'x\'' })
  }, 60_000)

  it('counts the rows ClickHouse refuses (a value of the wrong type) as failed, and writes the rest of their batch', async () => {
    const { t, rule } = await setUp(config(), { batch_size: 100, batch_time: 50 })
    // every third temp is text: refused for good, the others written
    await publish(n1, 30, 'sensor-1', 0, (seq) => ({ seq, temp: seq % 3 === 0 ? 'hot' : seq + 0.5 }))
    await until(async () => { const x = await metricsOf(rule); return x.success + x.failed === 30 }, 'every row counted')
    expect(await metricsOf(rule)).toEqual({ taken: 30, success: 20, failed: 10 })
    expect(await seqs(t)).toEqual(Array.from({ length: 30 }, (_, i) => i).filter((q) => q % 3 !== 0))
  }, 30_000)

  it('counts the rows for a table that does not exist as failed, not retried', async () => {
    const created = await api('POST', '/resources', { name: 'nt', type: 'backend_clickhouse', config: config() })
    const rule = await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_clickhouse', params: { $resource: created.body.data.id, sql: 'insert into no_such_table(seq) values (${seq})' } }] })
    await publish(n1, 5)
    await until(async () => (await metricsOf(rule.body.data.id as string)).failed === 5, 'failed 5')
    expect(await metricsOf(rule.body.data.id as string)).toEqual({ taken: 5, success: 0, failed: 5 })
  }, 30_000)

  it('with the local buffer, loses none while the server is killed mid-stream, and reports is_alive per node', async () => {
    const { t, resource } = await setUp(config({ local_buffer: true }), { batch_size: 20 })
    const first = publish(n1, 400)
    await until(async () => await count(t) >= 300, '300 rows before the kill')
    await server.kill()
    await first
    await publish(n1, 600, 'sensor-1', 400)
    await until(async () => Object.values(await statusOf(resource)).every((a) => !a), 'not alive on both nodes')
    await server.restart()
    await until(async () => await count(t) >= 1000, 'every row after the restart', 40_000)
    // a batch whose answer the kill lost may be written twice: every seq is there, in order
    expect([...new Set(await seqs(t))]).toEqual(Array.from({ length: 1000 }, (_, i) => i))
    await until(async () => Object.values(await statusOf(resource)).filter(Boolean).length === 2, 'alive again on both nodes')
  }, 90_000)

  it('with the local buffer, a SIGKILL of the node loses no row whose publisher had a PUBACK', async () => {
    // a Log table keeps its rows in the order they were inserted (a MergeTree sorts them)
    const t = `crash_${++tables}`
    await server.query(`CREATE TABLE ${t} (seq String) ENGINE = Log`)
    const { acked } = await ackedRowsSurviveSigkill({
      plugin: plugins.plugins[0],
      setUp: async (nodeApi) => { await crashRule(nodeApi, `ch${tables}`, 'backend_clickhouse', config(), 'data_to_clickhouse', { sql: `insert into ${t}(seq) values (\${seq})` }) },
      stopServer: async () => { await server.stop() },
      restartServer: async () => { await server.restart() },
      rows: async () => (await server.query<{ seq: string }>(`SELECT seq FROM ${t}`)).map((r) => Number(r.seq))
    })
    expect(acked).toBeGreaterThanOrEqual(1000)
  }, 90_000)

  it('without the local buffer, counts every row the killed server could not take as failed: success + failed = 1000, rows = success', async () => {
    const { t, resource, rule } = await setUp(config({ retry_timeout: 500 }))
    const first = publish(n1, 400)
    await until(async () => await count(t) >= 300, '300 rows before the kill')
    await server.kill()
    await first
    await publish(n1, 300, 'sensor-1', 400)
    // every row so far settled, those sent while down failed at their deadline; not "failed
    // >= 300": the write in flight at the kill may fail 300 of its own while those sent
    // after it still wait within retry_timeout, to be written once the server is back
    await until(async () => { const x = await metricsOf(rule); return x.success + x.failed === 700 }, 'every row sent so far settled')
    await server.restart()
    await until(async () => (await statusOf(resource))['c1@127.0.0.1'] === true, 'alive again on the publishing node')
    await publish(n1, 300, 'sensor-1', 700)
    await until(async () => { const x = await metricsOf(rule); return x.success + x.failed === 1000 }, 'every row counted')
    const x = await metricsOf(rule)
    expect(x.taken).toBe(1000)
    expect(x.failed).toBeGreaterThanOrEqual(300)
    expect(await count(t)).toBe(x.success)
    const written = await seqs(t)
    expect(written.filter((q) => q >= 400 && q < 700)).toEqual([])
    expect(written.filter((q) => q >= 700)).toEqual(Array.from({ length: 300 }, (_, i) => 700 + i))
  }, 90_000)
})
