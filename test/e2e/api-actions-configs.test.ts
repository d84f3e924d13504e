/**
 * `/api/v3/configs/` and `/nodes/:node/configs/...` over real HTTP with real mqtt.js clients:
 * reading the node's settings, changing the ones applied at run time (shared subscription
 * strategy, packet size limit, ACL, anonymous access) and seeing the effect, the
 * `restart_required` list for the others, and the bad inputs, each changing nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestNode, closeClients, connect, collect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, open, refusedConnack, suback } from '../helpers/mqtt.js'
import { configKeys } from '../../node/config/index.js'
import { apiOf, expectError } from './api-actions-client.js'

let node: TestNode
let tmp: string
const api = apiOf(() => node)
const nodePath = (): string => `/nodes/${node.name}/configs`

beforeAll(async () => {
  node = await startTestNode()
  tmp = mkdtempSync(join(tmpdir(), 'starling-acl-'))
})
afterEach(async () => { await closeClients(); await closeOpened() })
afterAll(async () => {
  await node.destroy()
  rmSync(tmp, { recursive: true, force: true })
})

describe('GET configs', () => {
  it('lists every node key with its value text and the keys applied at run time, per node', async () => {
    const all = await api('GET', '/configs/')
    expect(all.status).toBe(200)
    expect(all.body.data).toHaveLength(1)
    const [entry] = all.body.data
    expect(Object.keys(entry).sort()).toEqual(['configs', 'live', 'node'])
    expect(entry.node).toBe(node.name)
    expect(Object.keys(entry.configs)).toEqual(configKeys().map(k => k.key))
    expect(entry.configs['mqtt.max_packet_size']).toBe('1MB')
    expect(entry.configs.allow_anonymous).toBe('true')
    expect(entry.live).toEqual(expect.arrayContaining(['acl_nomatch', 'allow_anonymous', 'mqtt.max_packet_size', 'log.level', 'broker.shared_subscription_strategy']))
    expect(entry.live).not.toContain('listener.tcp.external')
    expect((await api('GET', `${nodePath()}/`)).body).toEqual({ code: 0, data: { configs: entry.configs, live: entry.live } })
  })
})

describe('PUT configs', () => {
  it('applies broker.shared_subscription_strategy on every node: round_robin alternates', async () => {
    const res = await api('PUT', '/configs/starling', { 'broker.shared_subscription_strategy': 'round_robin' })
    expect(res.body).toEqual({ code: 0, data: [{ node: node.name, applied: ['broker.shared_subscription_strategy'], restart_required: [] }] })
    const a = await connect(node, { clientId: 'rr-a' })
    const b = await connect(node, { clientId: 'rr-b' })
    const gotA = collect(a)
    const gotB = collect(b)
    await a.subscribeAsync('$share/g/rr/t', { qos: 1 })
    await b.subscribeAsync('$share/g/rr/t', { qos: 1 })
    for (let i = 0; i < 6; i++) await api('POST', '/mqtt/publish', { topic: 'rr/t', payload: String(i), qos: 1 })
    await waitFor(() => gotA.length + gotB.length === 6, 'six deliveries')
    const seen = [gotA, gotB].map(got => got.map(m => Number(m.payload.toString())).sort())
    expect(seen.sort()).toEqual([[0, 2, 4], [1, 3, 5]])
    await api('PUT', '/configs/starling', { 'broker.shared_subscription_strategy': 'random' })
  })

  it('applies mqtt.max_packet_size to clients at once', async () => {
    const res = await api('PUT', `${nodePath()}/starling`, { 'mqtt.max_packet_size': '200' })
    expect(res.body).toEqual({ code: 0, data: { applied: ['mqtt.max_packet_size'], restart_required: [] } })
    expect((await api('GET', `${nodePath()}/`)).body.data.configs['mqtt.max_packet_size']).toBe('200')
    const small = await open(node, { clientId: 'small-packets', protocolVersion: 5 })
    await small.client.publishAsync('size/t', 'x'.repeat(50), { qos: 1 })
    const big = await open(node, { clientId: 'big-packets', protocolVersion: 5 })
    big.client.publish('size/t', 'x'.repeat(500), { qos: 0 })
    await waitFor(() => big.closed(), 'the oversized client to be dropped')
    expect(small.closed()).toBe(false)
    expect((await api('PUT', `${nodePath()}/starling`, { 'mqtt.max_packet_size': '1MB' })).body.code).toBe(0)
  })

  it('applies acl_nomatch and acl_file (the ACL is reloaded), and refuses an ACL file that does not load', async () => {
    const file = join(tmp, 'acl.conf')
    writeFileSync(file, '{allow, all, publish, ["only/this"]}.\n')
    const res = await api('PUT', `${nodePath()}/starling`, { acl_file: file, acl_nomatch: 'deny' })
    expect(res.body.data).toEqual({ applied: ['acl_file', 'acl_nomatch'], restart_required: [] })
    const client = await connect(node, { clientId: 'acl-client', protocolVersion: 4 })
    expect(await suback(client, 'acl/t')).toEqual([0x80])
    // a subscribe through the API meets the same ACL
    expectError(await api('POST', '/mqtt/subscribe', { topic: 'acl/api', qos: 0, client_id: 'acl-client' }), 102, 403)
    expect(Object.keys(node.broker.core.client('acl-client')!.subscriptions)).toEqual([])

    const bad = await api('PUT', `${nodePath()}/starling`, { acl_file: join(tmp, 'missing.conf'), acl_nomatch: 'allow' })
    expectError(bad, 108, 400)
    expect(bad.body.message).toMatch(/missing\.conf/)
    const configs = (await api('GET', `${nodePath()}/`)).body.data.configs
    expect([configs.acl_file, configs.acl_nomatch]).toEqual([file, 'deny'])
    expect(await suback(client, 'acl/t2')).toEqual([0x80])

    expect((await api('PUT', `${nodePath()}/starling`, { acl_file: 'etc/acl.conf', acl_nomatch: 'allow' })).body.code).toBe(0)
    expect(await suback(client, 'acl/t3')).toEqual([1])
  })

  it('applies allow_anonymous and lists the keys that need a restart without changing them', async () => {
    const res = await api('PUT', '/configs/starling', { allow_anonymous: false, 'listener.tcp.external': '127.0.0.1:1999', 'node.cookie': 'other' })
    expect(res.body.data).toEqual([{ node: node.name, applied: ['allow_anonymous'], restart_required: ['listener.tcp.external', 'node.cookie'] }])
    expect((await refusedConnack(node, { clientId: 'anonymous', protocolVersion: 4 }))?.returnCode).toBe(5)
    const configs = (await api('GET', `${nodePath()}/`)).body.data.configs
    expect(configs.allow_anonymous).toBe('false')
    expect(configs['listener.tcp.external']).toBe('127.0.0.1:0')
    // the cookie kept its value, and is never served back
    expect(node.config['node.cookie']).not.toBe('other')
    expect(configs['node.cookie']).toBe('******')
    expect((await api('PUT', '/configs/starling', { allow_anonymous: 'true' })).body.code).toBe(0)
    await connect(node, { clientId: 'anonymous', protocolVersion: 4 })
  })

  it('refuses bad input with its code and changes nothing', async () => {
    const before = (await api('GET', `${nodePath()}/`)).body.data
    const cases: Array<[string, unknown, number, number, boolean?]> = [
      [`${nodePath()}/starling`, '{"acl_nomatch": ', 109, 400, true],
      [`${nodePath()}/starling`, {}, 107, 400],
      [`${nodePath()}/starling`, ['acl_nomatch'], 108, 400],
      [`${nodePath()}/starling`, { acl_nomatch: { value: 'deny' } }, 108, 400],
      [`${nodePath()}/starling`, { acl_nomatch: 'maybe' }, 108, 400],
      [`${nodePath()}/starling`, { allow_anonymous: 'false', 'mqtt.max_packet_size': 'huge' }, 108, 400],
      [`${nodePath()}/starling`, { 'mqtt.max_packet_sise': '2MB' }, 108, 400],
      [`${nodePath()}/starling`, { 'retainer.max_payload_size': '2MB' }, 108, 400],
      ['/configs/starling', { allow_anonymous: 'false', 'mqtt.max_qos_allowed': '3' }, 108, 400],
      ['/configs/emqx', { allow_anonymous: 'false' }, 102, 404],
      [`${nodePath()}/emqx`, { allow_anonymous: 'false' }, 102, 404],
      ['/nodes/nobody@nowhere/configs/starling', { allow_anonymous: 'false' }, 102, 404]
    ]
    for (const [path, body, code, status, raw] of cases) expectError(await api('PUT', path, body, { raw }), code, status)
    const typo = await api('PUT', `${nodePath()}/starling`, { 'mqtt.max_packet_sise': '2MB' })
    expect(typo.body.message).toMatch(/did you mean mqtt\.max_packet_size/)
    const badValue = await api('PUT', `${nodePath()}/starling`, { 'mqtt.max_packet_size': 'huge' })
    expect(badValue.body.message).toMatch(/bad value "huge" for mqtt\.max_packet_size/)
    expectError(await api('GET', '/nodes/nobody@nowhere/configs/'), 102, 404)
    expect((await api('GET', `${nodePath()}/`)).body.data).toEqual(before)
    await connect(node, { clientId: 'still-anonymous', protocolVersion: 4 })
  })
})
