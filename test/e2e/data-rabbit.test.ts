/**
 * svc_bridge_rabbit against a real RabbitMQ (test/helpers/servers/): `bridge_rabbit` with
 * `data_to_rabbit`, through the HTTP API and a real MQTT publisher on two clustered nodes,
 * the messages read with amqplib from a durable queue bound to the action's exchange. What
 * each mode guarantees (docs/integrations.md: publisher confirms, at least once) with the
 * broker killed (SIGKILL) mid-stream and restarted, and with the node SIGKILLed (no
 * acknowledged message lost).
 */
import type { ChannelModel } from 'amqplib'
import { closeClients, connect, type TestNode } from '../helpers/node.js'
import { apiOf } from './api-actions-client.js'
import { ackedRowsSurviveSigkill, actionTotals, crashRule, clearRulesAndResources, resourceStatus, seqRanges, startDataCluster, until as untilDone, type ActionTotals } from './data-actions-client.js'
import { describeWithServer, freePort, startRabbitmq, type RabbitmqServer } from '../helpers/servers/index.js'

const PLUGIN = 'svc_bridge_rabbit'
const SQL = 'SELECT clientid, topic, payload.seq as seq, payload.note as note FROM "sensors/#"'

/** Polls longer than the other data suites: RabbitMQ restarts in 3-5 s. */
const until = async (check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> => { await untilDone(check, what, timeoutMs) }

describeWithServer('rabbitmq', 'svc_bridge_rabbit: data_to_rabbit', () => {
  let server: RabbitmqServer
  let n1: TestNode, n2: TestNode
  const api = apiOf(() => n1)
  const plugins = { plugins: [PLUGIN] }
  let run = 0

  beforeAll(async () => {
    server = await startRabbitmq()
    ;[n1, n2] = await startDataCluster('q', plugins.plugins[0])
  }, 60_000)
  afterEach(async () => {
    await closeClients()
    if (server.pid === undefined) await server.restart()
    await clearRulesAndResources(api)
  }, 30_000)
  afterAll(async () => {
    await n2?.destroy()
    await n1?.destroy()
    await server?.close()
  })

  const config = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ server: `${server.host}:${server.port}`, ...extra })

  /** Runs `f` on a fresh amqplib connection to the broker. */
  async function amqp<T> (f: (c: ChannelModel) => Promise<T>): Promise<T> {
    const c = await server.connect()
    try {
      return await f(c)
    } finally {
      await c.close().catch(() => {})
    }
  }

  /** Exchange `exchange` (topic, durable) with a durable queue of the same name bound to it for `sensors.#`. */
  async function queueFor (exchange: string, durable = true): Promise<void> {
    await amqp(async (c) => {
      const ch = await c.createChannel()
      await ch.assertExchange(exchange, 'topic', { durable })
      await ch.assertQueue(exchange, { durable: true })
      await ch.bindQueue(exchange, exchange, 'sensors.#')
    })
  }

  async function depth (queue: string): Promise<number> {
    return await amqp(async (c) => (await (await c.createChannel()).checkQueue(queue)).messageCount)
  }

  /** Every message in `queue`, in order, parsed as JSON (taken off the queue). */
  async function drain (queue: string): Promise<Array<{ key: string, body: Record<string, unknown>, persistent: boolean }>> {
    return await amqp(async (c) => {
      const ch = await c.createChannel()
      const out: Array<{ key: string, body: Record<string, unknown>, persistent: boolean }> = []
      for (let m = await ch.get(queue, { noAck: true }); m !== false; m = await ch.get(queue, { noAck: true })) {
        out.push({ key: m.fields.routingKey, body: JSON.parse(m.content.toString('utf8')), persistent: m.properties.deliveryMode === 2 })
      }
      return out
    })
  }

  /** A resource and a rule publishing every `sensors/#` message to `exchange`. */
  async function setUp (resourceConfig: Record<string, unknown>, params: Record<string, unknown>): Promise<{ resource: string, rule: string }> {
    const created = await api('POST', '/resources', { name: `q${++run}`, type: 'bridge_rabbit', config: resourceConfig })
    expect([created.body.code, created.body.message]).toEqual([0, undefined])
    const resource = created.body.data.id as string
    const rule = await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_rabbit', params: { $resource: resource, exchange_type: 'topic', routing_key: 'sensors.${clientid}', durable: true, ...params } }] })
    expect(rule.body).toMatchObject({ code: 0 })
    return { resource, rule: rule.body.data.id as string }
  }

  const statusOf = async (resource: string): Promise<Record<string, boolean>> => await resourceStatus(api, resource)

  const metricsOf = async (rule: string): Promise<ActionTotals> => await actionTotals(api, rule)

  /** Publishes `n` messages (seq `from`..) at QoS 1 from one client; resolves once all are acknowledged. */
  async function publish (node: TestNode, n: number, clientId: string, from = 0): Promise<void> {
    const pub = await connect(node, { clientId })
    await Promise.all(Array.from({ length: n }, (_, i) => pub.publishAsync(`sensors/${clientId}`,
      JSON.stringify({ seq: from + i, note: `reading ${from + i} of ${clientId}` }), { qos: 1 })))
  }

  /** The distinct seqs in order of first arrival. */
  const firstArrivals = (msgs: Array<{ body: Record<string, unknown> }>): number[] => [...new Set(msgs.map((m) => m.body.seq as number))]

  it('refuses a broker that cannot be reached or a wrong password (102), and bad action params (108)', async () => {
    const port = await freePort()
    const refused = await api('POST', '/resources', { name: 'nowhere', type: 'bridge_rabbit', config: config({ server: `127.0.0.1:${port}` }) })
    expect(refused.status).toBe(400)
    expect(refused.body.code).toBe(102)
    expect(refused.body.message).toMatch(/resource type bridge_rabbit: cannot connect: .*ECONNREFUSED.*; start the server or correct the config/)
    const denied = await api('POST', '/resources', { name: 'denied', type: 'bridge_rabbit', config: config({ password: 'wrong' }) })
    expect(denied.body.code).toBe(102)
    expect(denied.body.message).toMatch(/ACCESS_REFUSED|403/)
    expect((await api('GET', '/resources')).body.data).toEqual([])

    const ok = await api('POST', '/resources', { name: 'here', type: 'bridge_rabbit', config: config() })
    for (const [params, why] of [
      [{ exchange: '' }, /parameter exchange must name an exchange/],
      [{ exchange: 'x.${clientid}' }, /parameter exchange cannot hold a placeholder/],
      [{ exchange: 'x', exchange_type: 'queue' }, /exchange_type/]
    ] as const) {
      const bad = await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_rabbit', params: { $resource: ok.body.data.id, routing_key: 'k', ...params } }] })
      expect(bad.status).toBe(400)
      expect(bad.body.code).toBe(108)
      expect(bad.body.message).toMatch(why)
    }
  })

  it('publishes 1,000 messages through one rule, confirmed, in order, with the selected fields; is_alive per node; the password is never shown', async () => {
    await queueFor('readings')
    const { resource, rule } = await setUp(config(), { exchange: 'readings' })
    const shown = (await api('GET', `/resources/${resource}`)).body.data
    expect(shown.config).toMatchObject({ password: '******', username: 'guest', virtual_host: '/', heartbeat: '30s', timeout: '5s', pool_size: 8, auto_reconnect: true, local_buffer: false, ssl: false })
    await until(async () => Object.values(await statusOf(resource)).filter(Boolean).length === 2, 'alive on both nodes')
    expect(await statusOf(resource)).toEqual({ 'q1@127.0.0.1': true, 'q2@127.0.0.1': true })

    await publish(n1, 1000, 'sensor-1')
    await until(async () => (await metricsOf(rule)).success === 1000, 'success 1000')
    expect(await metricsOf(rule)).toEqual({ taken: 1000, success: 1000, failed: 0 })
    const msgs = await drain('readings')
    expect(msgs.map((m) => m.body.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => i))
    expect(msgs[7]).toEqual({ key: 'sensors.sensor-1', body: { clientid: 'sensor-1', topic: 'sensors/sensor-1', seq: 7, note: 'reading 7 of sensor-1' }, persistent: true })
  }, 60_000)

  it('fills payload_tmpl, and counts messages to an exchange declared otherwise (PRECONDITION_FAILED) as failed', async () => {
    await queueFor('templated')
    const { rule } = await setUp(config(), { exchange: 'templated', durable: true, payload_tmpl: '{"n":${seq},"who":"${clientid}"}' })
    await publish(n1, 10, 'sensor-t')
    await until(async () => (await metricsOf(rule)).success === 10, 'success 10')
    expect((await drain('templated')).map((m) => m.body)).toEqual(Array.from({ length: 10 }, (_, n) => ({ n, who: 'sensor-t' })))

    // 'other' exists as a durable direct exchange; the action declares it topic and not durable
    await amqp(async (c) => { await (await c.createChannel()).assertExchange('other', 'direct', { durable: true }) })
    const mismatch = await api('POST', '/rules', { rawsql: SQL, actions: [{ name: 'data_to_rabbit', params: { $resource: (await api('GET', '/resources')).body.data[0].id, exchange: 'other', routing_key: 'k' } }] })
    const other = mismatch.body.data.id as string
    await publish(n1, 5, 'sensor-m')
    await until(async () => (await metricsOf(other)).failed === 5, 'failed 5')
    expect(await metricsOf(other)).toEqual({ taken: 5, success: 0, failed: 5 })
    // the first rule's messages still go through on the channel opened again
    await until(async () => (await metricsOf(rule)).success === 15, 'success 15')
  }, 60_000)

  it('counts a message the broker nacks (a full queue that rejects publishes) as failed for that message only', async () => {
    await amqp(async (c) => {
      const ch = await c.createChannel()
      await ch.assertExchange('capped', 'topic', { durable: true })
      await ch.assertQueue('capped', { durable: true, maxLength: 5, arguments: { 'x-overflow': 'reject-publish' } })
      await ch.bindQueue('capped', 'capped', 'sensors.#')
    })
    const { rule } = await setUp(config(), { exchange: 'capped', batch_size: 10, batch_time: 50 })
    await publish(n1, 10, 'sensor-capped')
    await until(async () => { const m = await metricsOf(rule); return m.success + m.failed === 10 }, 'every message counted')
    expect(await metricsOf(rule)).toEqual({ taken: 10, success: 5, failed: 5 })
    expect((await drain('capped')).map((m) => m.body.seq)).toEqual([0, 1, 2, 3, 4])
  }, 60_000)

  it('with the local buffer, loses none while the broker is killed mid-stream (at least once, first arrivals in order)', async () => {
    await queueFor('buffered')
    const { resource } = await setUp(config({ local_buffer: true }), { exchange: 'buffered', batch_size: 20 })
    const first = publish(n1, 400, 'sensor-buffered')
    await until(async () => await depth('buffered') >= 300, '300 messages before the kill')
    await server.kill()
    await first
    await publish(n1, 600, 'sensor-buffered', 400)
    await until(async () => Object.values(await statusOf(resource)).every((a) => !a), 'not alive on both nodes')
    await server.restart()
    await until(async () => Object.values(await statusOf(resource)).filter(Boolean).length === 2, 'alive again on both nodes')
    await until(async () => await depth('buffered') >= 1000, 'every message after the restart')
      .catch(async (err: Error) => { throw new Error(`${err.message}; the queue holds ${seqRanges(firstArrivals(await drain('buffered')))}`) })
    // at least once: a batch whose confirms the kill lost is published again
    expect(firstArrivals(await drain('buffered'))).toEqual(Array.from({ length: 1000 }, (_, i) => i))
  }, 90_000)

  it('with the local buffer, a SIGKILL of the node loses no message whose publisher had a PUBACK (at least once, first arrivals in order)', async () => {
    const queue = `crash${++run}`
    await amqp(async (c) => {
      const ch = await c.createChannel()
      await ch.assertExchange(queue, 'topic', { durable: true })
      await ch.assertQueue(queue, { durable: true })
      await ch.bindQueue(queue, queue, '#')
    })
    // a consumer opened once the broker is back: the seqs in the queue's order
    const got: number[] = []
    let consumer: Promise<ChannelModel> | undefined
    const consume = async (): Promise<ChannelModel> => {
      const c = await server.connect()
      const ch = await c.createChannel()
      await ch.consume(queue, (m) => { if (m !== null) got.push(Number(JSON.parse(m.content.toString('utf8')).seq)) }, { noAck: true })
      return c
    }
    try {
      const { acked } = await ackedRowsSurviveSigkill({
        plugin: PLUGIN,
        setUp: async (nodeApi) => { await crashRule(nodeApi, queue, 'bridge_rabbit', config(), 'data_to_rabbit', { exchange: queue, exchange_type: 'topic', routing_key: 'crash', durable: true }) },
        stopServer: async () => { await server.stop() },
        restartServer: async () => { await server.restart() },
        rows: async () => {
          consumer ??= consume()
          // the broker may still be starting: try again at the next poll
          await consumer.catch(() => { consumer = undefined })
          return got
        }
      })
      expect(acked).toBeGreaterThanOrEqual(1000)
    } finally {
      await consumer?.then(async (c) => { await c.close() }).catch(() => {})
    }
  }, 120_000)

  it('without the local buffer, success + failed = 1000 and every success is consumed', async () => {
    await queueFor('lossy')
    const { resource, rule } = await setUp(config({ retry_timeout: 500 }), { exchange: 'lossy' })
    const first = publish(n1, 400, 'sensor-lossy')
    await until(async () => await depth('lossy') >= 300, '300 messages before the kill')
    await server.kill()
    await first
    await publish(n1, 300, 'sensor-lossy', 400)
    // every message so far settled, those sent while down failed at their deadline; not "failed
    // >= 300": the write in flight at the kill may fail 300 of its own while those sent
    // after it still wait within retry_timeout, to be written once the server is back
    await until(async () => { const x = await metricsOf(rule); return x.success + x.failed === 700 }, 'every message sent so far settled')
    await server.restart()
    await until(async () => (await statusOf(resource))['q1@127.0.0.1'], 'alive again on the publishing node')
    // the broker answers before it has recovered its durable queue and binding: a message
    // published then is confirmed and routed nowhere (seen once in CI: 400 consumed, 700 successes)
    await until(async () => await depth('lossy').then((n) => n >= 300, () => false), 'the queue recovered with its messages')
    await publish(n1, 300, 'sensor-lossy', 700)
    await until(async () => { const m = await metricsOf(rule); return m.success + m.failed === 1000 }, 'every message counted')
    const m = await metricsOf(rule)
    expect(m.taken).toBe(1000)
    expect(m.failed).toBeGreaterThanOrEqual(300)
    const seqs = firstArrivals(await drain('lossy'))
    // every success is kept; a batch whose confirms the kill lost may be kept too, counted failed (docs/integrations.md)
    expect({ kept: seqs.length >= m.success, seqs: seqRanges(seqs), ...m }).toMatchObject({ kept: true })
    expect(seqs.filter((q) => q >= 400 && q < 700)).toEqual([])
    expect(seqs.filter((q) => q >= 700)).toEqual(Array.from({ length: 300 }, (_, i) => 700 + i))
  }, 90_000)
})
