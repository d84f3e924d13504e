/**
 * schema_decode and schema_encode in rules, end to end with real MQTT clients: a binary
 * payload in, decoded fields selected and tested in WHERE, re-encoded binary republished;
 * for avro, protobuf (message type as the third argument) and 3rd-party services over
 * HTTP and TCP (the reference codec service, in a child process). Data a schema cannot
 * decode, and a codec service that goes down, make the rule not match and count as failed.
 */
import { isUtf8 } from 'node:buffer'
import { startTestNode, closeClients, connect, collect, waitFor, nextMessage, type TestNode } from '../helpers/node.js'
import { apiOf, settle } from '../e2e/api-actions-client.js'
import { ALERT_AVSC, SENSOR_AVSC, SENSOR_PROTO, avroAlert, avroSensor, pbAlert, pbEncode, pbSensor, xorK } from './fixtures.js'
import { removeCodecBuild, startCodecProcess, type CodecProcess } from './codec-process.js'

let node: TestNode
let service: CodecProcess
const api = apiOf(() => node)

beforeAll(async () => {
  node = await startTestNode({ 'broker.sys_interval': '0' })
  service = await startCodecProcess()
})
afterEach(async () => {
  await closeClients()
  for (const rule of (await api('GET', '/rules')).body.data) await api('DELETE', `/rules/${rule.id}`)
  for (const res of (await api('GET', '/resources')).body.data) await api('DELETE', `/resources/${res.id}`)
  for (const schema of (await api('GET', '/schemas')).body.data) await api('DELETE', `/schemas/${schema.name}`)
})
afterAll(async () => {
  await node.destroy()
  await service.stop()
  removeCodecBuild()
})

async function createSchema (body: Record<string, unknown>): Promise<void> {
  const res = await api('POST', '/schemas', body)
  expect(res.body).toMatchObject({ code: 0 })
}

/** Creates a rule republishing `payload_tmpl` to `target`; resolves with its id. */
async function republishRule (rawsql: string, target: string, payloadTmpl = '${out}'): Promise<string> {
  const res = await api('POST', '/rules', { rawsql, actions: [{ name: 'republish', params: { target_topic: target, payload_tmpl: payloadTmpl } }] })
  expect(res.body).toMatchObject({ code: 0 })
  return res.body.data.id
}

async function ruleMetrics (id: string): Promise<{ matched: number, failed: number }> {
  return (await api('GET', `/rules/${id}`)).body.data.metrics[0]
}

/** Waits until the rule's metrics satisfy `ok` (a 3rd-party call settles after the publish). */
async function metricsReach (id: string, ok: (m: { matched: number, failed: number }) => boolean, timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!ok(await ruleMetrics(id))) {
    if (Date.now() > deadline) throw new Error(`rule ${id}: metrics did not reach the expected values; now ${JSON.stringify(await ruleMetrics(id))}`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

describe('avro', () => {
  it('decodes a binary payload, selects on a decoded field, and republishes it re-encoded', async () => {
    await createSchema({ name: 'sensor', parser_type: 'avro', schema: SENSOR_AVSC })
    await createSchema({ name: 'alert', parser_type: 'avro', schema: ALERT_AVSC })
    const id = await republishRule(
      "SELECT schema_decode('sensor', payload) as d, schema_encode('alert', d) as out FROM \"sensors/#\" WHERE d.temp > 30",
      'alerts/${d.id}'
    )
    const sub = await connect(node, { clientId: 'avro-sub' })
    await sub.subscribeAsync('alerts/#')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'avro-pub' })
    const hot = avroSensor.toBuffer({ id: 'kitchen', temp: 31.5, hum: 40 })
    expect(isUtf8(hot)).toBe(false) // a binary payload, not text
    await pub.publishAsync('sensors/kitchen', hot)
    await pub.publishAsync('sensors/cellar', avroSensor.toBuffer({ id: 'cellar', temp: 12.25, hum: 80 }))
    await waitFor(() => got.length === 1, 'the republished alert')
    await settle()
    expect(got).toHaveLength(1)
    expect(got[0].topic).toBe('alerts/kitchen')
    expect(avroAlert.fromBuffer(got[0].payload)).toEqual(expect.objectContaining({ id: 'kitchen', temp: 31.5 }))
    expect(await ruleMetrics(id)).toMatchObject({ matched: 1, failed: 0 })
  })

  it('gives the decoded map to SQL functions and templates in the spec dialect', async () => {
    await createSchema({ name: 'sensor', parser_type: 'avro', schema: SENSOR_AVSC })
    await republishRule(
      "SELECT schema_decode('sensor', payload) as d, d.hum * 2 as double_hum FROM \"message.publish\" WHERE topic =~ 'spec/#' and d.id = 'roof'",
      'spec/out', 'id=${d.id} temp=${d.temp} double_hum=${double_hum}'
    )
    const sub = await connect(node, { clientId: 'spec-sub' })
    await sub.subscribeAsync('spec/out')
    const pub = await connect(node, { clientId: 'spec-pub' })
    const next = nextMessage(sub)
    await pub.publishAsync('spec/roof', avroSensor.toBuffer({ id: 'roof', temp: 5.5, hum: 21 }))
    expect((await next).payload.toString()).toBe('id=roof temp=5.5 double_hum=42')
  })

  it('counts data the schema cannot decode as failed, not matched, and other rules still run', async () => {
    await createSchema({ name: 'sensor', parser_type: 'avro', schema: SENSOR_AVSC })
    const id = await republishRule("SELECT schema_decode('sensor', payload) as d FROM \"bad/#\" WHERE d.temp > 30", 'bad/out', '${d.id}')
    const other = (await api('POST', '/rules', { rawsql: 'SELECT * FROM "bad/#"', actions: [{ name: 'do_nothing', params: {} }] })).body.data.id
    const unknown = await republishRule("SELECT schema_decode('no_such_schema', payload) as d FROM \"bad/#\"", 'bad/out', 'x')
    const sub = await connect(node, { clientId: 'bad-sub' })
    await sub.subscribeAsync('bad/out')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'bad-pub' })
    await pub.publishAsync('bad/1', Buffer.from([0xff, 0xfe, 0x00]))
    await pub.publishAsync('bad/2', 'not avro at all')
    await settle(300)
    expect(got).toHaveLength(0)
    expect(await ruleMetrics(id)).toMatchObject({ matched: 0, failed: 2 })
    expect(await ruleMetrics(unknown)).toMatchObject({ matched: 0, failed: 2 })
    expect(await ruleMetrics(other)).toMatchObject({ matched: 2, failed: 0 })
  })
})

describe('binary payloads', () => {
  it('reach the SQL as bytes, and republish unchanged with the default ${payload} template', async () => {
    const bytes = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41])
    await republishRule('SELECT payload FROM "bin/in"', 'bin/out', '${payload}')
    await republishRule('SELECT base64_encode(payload) as b64 FROM "bin/in"', 'bin/b64', '${b64}')
    const sub = await connect(node, { clientId: 'bin-sub' })
    await sub.subscribeAsync('bin/+')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'bin-pub' })
    await pub.publishAsync('bin/in', bytes)
    await waitFor(() => got.length === 3, 'the message and both republished ones')
    const byTopic = Object.fromEntries(got.map(m => [m.topic, m.payload]))
    expect(byTopic['bin/out']).toEqual(bytes)
    expect(byTopic['bin/b64'].toString()).toBe(bytes.toString('base64'))
  })
})

describe('protobuf', () => {
  it('decodes with the message type as the third argument and re-encodes into another message', async () => {
    await createSchema({ name: 'pb', parser_type: 'protobuf', schema: SENSOR_PROTO })
    const id = await republishRule(
      "SELECT schema_decode('pb', payload, 'Sensor') as d, schema_encode('pb', d, 'Alert') as out FROM \"pb/#\" WHERE d.temp > 30",
      'pb/alerts'
    )
    const sub = await connect(node, { clientId: 'pb-sub' })
    await sub.subscribeAsync('pb/alerts')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'pb-pub' })
    await pub.publishAsync('pb/attic', pbEncode(pbSensor, { id: 'attic', temp: 35.5, hum: 10 }))
    await pub.publishAsync('pb/cellar', pbEncode(pbSensor, { id: 'cellar', temp: 10, hum: 90 }))
    await waitFor(() => got.length === 1, 'the republished alert')
    await settle()
    expect(got).toHaveLength(1)
    expect(pbAlert.toObject(pbAlert.decode(got[0].payload))).toEqual({ id: 'attic', temp: 35.5 })
    expect(await ruleMetrics(id)).toMatchObject({ matched: 1, failed: 0 })
  })

  it('fails (counted) without the message type when the file defines two messages', async () => {
    await createSchema({ name: 'pb', parser_type: 'protobuf', schema: SENSOR_PROTO })
    const id = await republishRule("SELECT schema_decode('pb', payload) as d FROM \"pb2/#\"", 'pb2/out', 'x')
    const pub = await connect(node, { clientId: 'pb2-pub' })
    await pub.publishAsync('pb2/a', pbEncode(pbSensor, { id: 'a', temp: 1 }))
    await settle(300)
    expect(await ruleMetrics(id)).toMatchObject({ matched: 0, failed: 1 })
  })
})

describe('3rd-party', () => {
  it.each([
    ['HTTP', (): Record<string, unknown> => ({ url: service.httpUrl })],
    ['TCP', (): Record<string, unknown> => ({ server: service.tcpAddress })]
  ])('decodes and encodes through the codec service over %s', async (kind, addr) => {
    await createSchema({ name: 'xor', parser_type: '3rd-party', parser_addr: addr(), parser_opts: { '3rd_party_opts': 'xor:k' } })
    const id = await republishRule(
      "SELECT schema_decode('xor', payload) as d, schema_encode('xor', d) as out FROM \"xor/#\" WHERE d.temp > 30",
      'xor/out/${d.id}'
    )
    const sub = await connect(node, { clientId: `xor-sub-${kind}` })
    await sub.subscribeAsync('xor/out/#')
    const got = collect(sub)
    const pub = await connect(node, { clientId: `xor-pub-${kind}` })
    const hot = xorK('{"id":"boiler","temp":80}')
    await pub.publishAsync('xor/in', hot)
    await pub.publishAsync('xor/in', xorK('{"id":"fridge","temp":4}'))
    await waitFor(() => got.length === 1, 'the republished message')
    await settle()
    expect(got.map(m => [m.topic, m.payload])).toEqual([['xor/out/boiler', hot]])
    expect(await ruleMetrics(id)).toMatchObject({ matched: 1, failed: 0 })
  })

  it('reaches the service through a resource', async () => {
    const resource = (await api('POST', '/resources', { name: 'codec', type: 'web_hook', config: { url: service.httpUrl } })).body.data
    await createSchema({ name: 'xor', parser_type: '3rd-party', parser_addr: { resource_id: resource.id }, parser_opts: { '3rd_party_opts': 'xor:k' } })
    await republishRule("SELECT schema_decode('xor', payload) as d FROM \"res/in\"", 'res/out', '${d}')
    const sub = await connect(node, { clientId: 'res-sub' })
    await sub.subscribeAsync('res/out')
    const pub = await connect(node, { clientId: 'res-pub' })
    const next = nextMessage(sub)
    await pub.publishAsync('res/in', xorK('plain text'))
    expect((await next).payload.toString()).toBe('plain text')
  })

  it('counts an error the service answers as failed', async () => {
    await createSchema({ name: 'broken', parser_type: '3rd-party', parser_addr: { server: service.tcpAddress }, parser_opts: { '3rd_party_opts': 'fail:corrupt frame' } })
    const id = await republishRule("SELECT schema_decode('broken', payload) as d FROM \"broken/in\"", 'broken/out', 'x')
    const pub = await connect(node, { clientId: 'broken-pub' })
    await pub.publishAsync('broken/in', 'abc')
    await pub.publishAsync('broken/in', 'def')
    await settle(300)
    expect(await ruleMetrics(id)).toMatchObject({ matched: 0, failed: 2 })
  })

  it('evaluates a rule again once the answer is in, with its own metadata, beside other rules of the same event', async () => {
    await createSchema({ name: 'xor', parser_type: '3rd-party', parser_addr: { server: service.tcpAddress }, parser_opts: { '3rd_party_opts': 'xor:k' } })
    // rules run in id order: `a_deferred:<n>` first, then `z_after:<n>` on the same columns
    const named = async (name: string, rawsql: string, target: string, tmpl: string): Promise<string> => {
      const res = await api('POST', '/rules', { name, rawsql, actions: [{ name: 'republish', params: { target_topic: target, payload_tmpl: tmpl } }] })
      expect(res.body).toMatchObject({ code: 0 })
      return res.body.data.id
    }
    const id = await named('a_deferred', "SELECT schema_decode('xor', payload) as d, metadata.rule_id as rid FROM \"meta/#\"", 'meta/out', '${rid}')
    await named('z_after', 'SELECT payload FROM "meta/#"', 'meta/other', 'other')
    const sub = await connect(node, { clientId: 'meta-sub' })
    await sub.subscribeAsync('meta/out')
    const got = nextMessage(sub)
    const pub = await connect(node, { clientId: 'meta-pub' })
    await pub.publishAsync('meta/in', xorK('{"a":1}'))
    expect((await got).payload.toString()).toBe(id)
  })

  it('fails the rule (counted) while the service is down, within parse_timeout when it hangs, and works again when it is back', async () => {
    const own = await startCodecProcess()
    const tcp = own.tcpAddress
    await createSchema({ name: 'flaky', parser_type: '3rd-party', parser_addr: { server: tcp }, parser_opts: { '3rd_party_opts': 'xor:k', connect_timeout: 1, parse_timeout: 1 } })
    await createSchema({ name: 'slow', parser_type: '3rd-party', parser_addr: { server: tcp }, parser_opts: { '3rd_party_opts': 'delay:3000', parse_timeout: 1 } })
    const id = await republishRule("SELECT schema_decode('flaky', payload) as d FROM \"flaky/in\"", 'flaky/out', '${d}')
    const slow = await republishRule("SELECT schema_decode('slow', payload) as d FROM \"slow/in\"", 'flaky/out', 'slow')
    const sub = await connect(node, { clientId: 'flaky-sub' })
    await sub.subscribeAsync('flaky/out')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'flaky-pub' })

    // the service answers after 3 s: a failure (not a match) means the rule gave up after
    // parse_timeout instead of waiting for the answer
    await pub.publishAsync('slow/in', 'x')
    // meanwhile the node is not blocked: another message goes through while the rule waits
    const other = await connect(node, { clientId: 'not-blocked' })
    await other.subscribeAsync('free/t')
    const free = nextMessage(other)
    await pub.publishAsync('free/t', 'through')
    expect((await free).payload.toString()).toBe('through')
    expect(await ruleMetrics(slow)).toMatchObject({ matched: 0, failed: 0 })
    await metricsReach(slow, m => m.failed === 1)
    expect(await ruleMetrics(slow)).toMatchObject({ matched: 0, failed: 1 })

    await own.stop()
    await pub.publishAsync('flaky/in', xorK('while down'))
    await pub.publishAsync('flaky/in', xorK('still down'))
    await metricsReach(id, m => m.failed === 2)
    expect(await ruleMetrics(id)).toMatchObject({ matched: 0, failed: 2 })

    const back = await startCodecProcess({ tcp })
    try {
      // the first failure backs off for 1 s; publish until a message comes through
      const deadline = Date.now() + 8000
      while (got.length === 0 && Date.now() < deadline) {
        await pub.publishAsync('flaky/in', xorK('back'))
        await settle(250)
      }
      expect(got.map(m => m.payload.toString())).toContain('back')
      expect((await ruleMetrics(id)).matched).toBeGreaterThanOrEqual(1)
    } finally {
      await back.stop()
    }
  }, 30_000)
})
