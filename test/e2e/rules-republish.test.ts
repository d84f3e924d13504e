/**
 * The republish action end to end with real mqtt.js clients: `${key}` templates in topic
 * and payload, `target_qos` -1 keeping the message's QoS, the selected data as JSON with an
 * empty template, and the loop guard (a rule republishing to its own topic, deliver and
 * acked rules republishing what triggers them, a two-rule cycle) as EMQ X 4 behaved:
 * the original plus one copy, then nothing.
 */
import { startTestNode, closeClients, connect, collect, waitFor, type TestNode } from '../helpers/node.js'
import { apiOf, settle } from './api-actions-client.js'

let node: TestNode
const api = apiOf(() => node)

beforeAll(async () => { node = await startTestNode({ 'broker.sys_interval': '0' }) })
afterEach(async () => {
  await closeClients()
  for (const rule of (await api('GET', '/rules')).body.data) await api('DELETE', `/rules/${rule.id}`)
})
afterAll(async () => { await node.destroy() })

/** Creates a rule whose only action is republish with `params`; resolves with its id. */
async function republishRule (rawsql: string, params: Record<string, unknown>): Promise<string> {
  const res = await api('POST', '/rules', { rawsql, actions: [{ name: 'built_in:republish_action', params }] })
  expect(res.body.code).toBe(0)
  return res.body.data.id
}

describe('republish', () => {
  it('fills ${key} placeholders in topic and payload, and keeps the QoS with target_qos -1', async () => {
    await republishRule('SELECT payload.x as x, clientid FROM "rp/in"', { target_topic: 'rp/out/${clientid}', target_qos: -1, payload_tmpl: 'x=${x} from ${clientid}' })
    const sub = await connect(node, { clientId: 'rp-sub' })
    await sub.subscribeAsync('rp/out/#', { qos: 2 })
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'rp-pub' })
    await pub.publishAsync('rp/in', '{"x":42}', { qos: 2 })
    await pub.publishAsync('rp/in', '{"x":7}', { qos: 1 })
    await waitFor(() => got.length === 2, 'two republished messages')
    expect(got.map(m => [m.topic, m.payload.toString(), m.packet.qos])).toEqual([
      ['rp/out/rp-pub', 'x=42 from rp-pub', 2],
      ['rp/out/rp-pub', 'x=7 from rp-pub', 1]
    ])
  })

  it('publishes at target_qos, with the retain flag, and ${payload} by default', async () => {
    await republishRule('SELECT * FROM "message.publish" WHERE topic = \'rp/spec\'', { target_topic: 'rp/spec/out', target_qos: 1, target_retain: true })
    const pub = await connect(node, { clientId: 'rp-pub2' })
    await pub.publishAsync('rp/spec', 'plain text', { qos: 0 })
    await settle()
    const late = await connect(node, { clientId: 'rp-late' })
    const got = collect(late)
    await late.subscribeAsync('rp/spec/out', { qos: 1 })
    await waitFor(() => got.length === 1, 'the retained republished message')
    expect([got[0].payload.toString(), got[0].packet.qos, got[0].packet.retain]).toEqual(['plain text', 1, true])
    await pub.publishAsync('rp/spec/out', '', { qos: 0, retain: true })
  })

  it('publishes the selected data as JSON with an empty payload template', async () => {
    await republishRule('SELECT clientid, payload.n + 1 as next FROM "rp/json"', { target_topic: 'rp/json/out', payload_tmpl: '' })
    const sub = await connect(node, { clientId: 'rp-json-sub' })
    await sub.subscribeAsync('rp/json/out')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'rp-json' })
    await pub.publishAsync('rp/json', '{"n":1}')
    await waitFor(() => got.length === 1, 'the JSON output')
    expect(JSON.parse(got[0].payload.toString())).toEqual({ clientid: 'rp-json', next: 2 })
  })
})

describe('the republish loop guard', () => {
  it('a rule republishing to its own topic delivers the original and one copy (EMQ X t_sqlselect_2)', async () => {
    const id = await republishRule('SELECT * FROM "t2"', { target_topic: 't2', payload_tmpl: '${payload}' })
    const sub = await connect(node, { clientId: 'loop-sub' })
    await sub.subscribeAsync('t2')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'loop-pub' })
    await pub.publishAsync('t2', 'once')
    await waitFor(() => got.length === 2, 'original and copy')
    await settle(300)
    expect(got.map(m => m.payload.toString())).toEqual(['once', 'once'])
    const rule = (await api('GET', `/rules/${id}`)).body.data
    expect(rule.metrics[0].matched).toBe(1)
    expect(rule.actions[0].metrics[0]).toMatchObject({ success: 1, failed: 0 })
  })

  it('the same in the spec dialect', async () => {
    await republishRule('SELECT * FROM "message.publish" WHERE topic = \'loop/spec\'', { target_topic: 'loop/spec' })
    const sub = await connect(node, { clientId: 'loop-spec-sub' })
    await sub.subscribeAsync('loop/spec')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'loop-spec-pub' })
    await pub.publishAsync('loop/spec', 'once')
    await waitFor(() => got.length === 2, 'original and copy')
    await settle(300)
    expect(got).toHaveLength(2)
  })

  it('a message.delivered rule republishing to the delivered topic: 2 messages then nothing', async () => {
    await republishRule('SELECT * FROM "$events/message_delivered" WHERE topic = \'dl\'', { target_topic: 'dl' })
    const sub = await connect(node, { clientId: 'dl-sub' })
    await sub.subscribeAsync('dl')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'dl-pub' })
    await pub.publishAsync('dl', 'x')
    await waitFor(() => got.length === 2, 'original and copy')
    await settle(300)
    expect(got).toHaveLength(2)
  })

  it('a message.acked rule republishing at QoS 1 to the acked topic: 2 messages then nothing', async () => {
    await republishRule('SELECT * FROM "$events/message_acked" WHERE topic = \'ak\'', { target_topic: 'ak', target_qos: 1 })
    const sub = await connect(node, { clientId: 'ak-sub' })
    await sub.subscribeAsync('ak', { qos: 1 })
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'ak-pub' })
    await pub.publishAsync('ak', 'x', { qos: 1 })
    await waitFor(() => got.length === 2, 'original and copy')
    await settle(300)
    expect(got).toHaveLength(2)
  })

  it('two rules republishing to each other stop once the cycle comes back', async () => {
    await republishRule('SELECT * FROM "cy/1"', { target_topic: 'cy/2' })
    await republishRule('SELECT * FROM "cy/2"', { target_topic: 'cy/1' })
    const sub = await connect(node, { clientId: 'cy-sub' })
    await sub.subscribeAsync('cy/#')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'cy-pub' })
    await pub.publishAsync('cy/1', 'x')
    await waitFor(() => got.length === 3, 'cy/1, cy/2, cy/1')
    await settle(300)
    expect(got.map(m => m.topic)).toEqual(['cy/1', 'cy/2', 'cy/1'])
  })

  it('other rules still see republished messages (chains work)', async () => {
    await republishRule('SELECT * FROM "ch/a"', { target_topic: 'ch/b' })
    await republishRule('SELECT * FROM "ch/b"', { target_topic: 'ch/c' })
    const sub = await connect(node, { clientId: 'ch-sub' })
    await sub.subscribeAsync('ch/c')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'ch-pub' })
    await pub.publishAsync('ch/a', 'hop')
    await waitFor(() => got.length === 1, 'the message after two hops')
    expect(got[0].payload.toString()).toBe('hop')
  })
})
