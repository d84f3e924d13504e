/**
 * `starling-ctl broker | broker stats | broker metrics | clients | sessions | subscriptions |
 * routes` (runCtl, in process) against a node with mqtt.js clients: readable text, `--json`
 * with the API's objects, exit 1 with the message on failure.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { METRIC_NAMES as CORE_METRIC_NAMES } from '../../node/metrics.js'
import { BRIDGE_METRIC_NAMES } from '../../plugins/bridge_mqtt/sys.js'

/** The core's counters, then those svc_bridge_mqtt adds (attached on every node). */
const METRIC_NAMES = [...CORE_METRIC_NAMES, ...BRIDGE_METRIC_NAMES]
import { STAT_NAMES } from '../../node/stats.js'
import { startTestNode, connect, closeClients, waitFor, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'

let node: TestNode
let cwd: string
beforeAll(async () => {
  node = await startTestNode({ 'broker.sys_interval': '0' })
  cwd = mkdtempSync(join(tmpdir(), 'starling-ctl-cwd-'))
})
afterAll(async () => {
  await node.destroy()
  rmSync(cwd, { recursive: true, force: true })
})
afterEach(async () => { await closeClients() })

async function ctl (...argv: string[]): Promise<{ code: number, out: string, err: string }> {
  return await runCtlOn(node, argv, { cwd })
}

describe('starling-ctl broker', () => {
  it('prints sysdescr, version, uptime and datetime as EMQ X did', async () => {
    const { code, out, err } = await ctl('broker')
    expect({ code, err }).toEqual({ code: 0, err: '' })
    expect(out).toMatch(/^sysdescr {2}: Starling MQTT Broker\nversion {3}: v\d+\.\d+\.\d+\S*\nuptime {4}: \d+ seconds\ndatetime {2}: \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\n$/)
  })

  it('prints the Node object with --json', async () => {
    const { code, out } = await ctl('broker', '--json')
    expect(code).toBe(0)
    expect(JSON.parse(out)).toMatchObject({ node: node.name, node_status: 'Running', sysdescr: 'Starling MQTT Broker' })
  })

  it('prints every stat on its own line, and the Stats object with --json', async () => {
    await connect(node, { clientId: 'ctl-stats' })
    const { code, out } = await ctl('broker', 'stats')
    expect(code).toBe(0)
    expect(out.split('\n').filter(Boolean).map(l => l.split(':')[0].trim())).toEqual([...STAT_NAMES])
    expect(out).toMatch(/^connections\/count {13}: 1$/m)
    const json = JSON.parse((await ctl('broker', 'stats', '--json')).out)
    expect(Object.keys(json)).toEqual([...STAT_NAMES])
  })

  it('prints every metric on its own line', async () => {
    const { code, out } = await ctl('broker', 'metrics')
    expect(code).toBe(0)
    expect(out.split('\n').filter(Boolean).map(l => l.split(' : ')[0].trim())).toEqual([...METRIC_NAMES])
    expect(Object.keys(JSON.parse((await ctl('broker', 'metrics', '--json')).out))).toEqual([...METRIC_NAMES])
  })
})

describe('starling-ctl clients', () => {
  it('lists the connections as a table, and as Connection objects with --json', async () => {
    await connect(node, { clientId: 'ctl-c1', username: 'frank' })
    const { code, out } = await ctl('clients', 'list')
    expect(code).toBe(0)
    expect(out).toMatch(/client_id.*username.*peername.*proto_ver.*clean_start.*keepalive.*connected_at.*node/)
    expect(out).toMatch(new RegExp(`ctl-c1 .*frank .*127\\.0\\.0\\.1:\\d+ .*4 .*true .*60 .*${node.name.replace(/\./g, '\\.')}`))
    const json = JSON.parse((await ctl('clients', 'list', '--json')).out)
    expect(json).toHaveLength(1)
    expect(json[0]).toMatchObject({ client_id: 'ctl-c1', username: 'frank', node: node.name, zone: 'external' })
  })

  it('says so when no client is connected', async () => {
    expect(await ctl('clients', 'list')).toEqual({ code: 0, out: 'No clients\n', err: '' })
  })

  it('shows every field of one client, and fails for a client that is not online', async () => {
    await connect(node, { clientId: 'ctl-c2' })
    const { code, out } = await ctl('clients', 'show', 'ctl-c2')
    expect(code).toBe(0)
    expect(out).toMatch(/^client_id {11}: ctl-c2$/m)
    expect(out).toMatch(/^peercert {12}: nossl$/m)
    expect(out).toMatch(/^username {12}: undefined$/m)
    expect(await ctl('clients', 'show', 'nobody')).toEqual({ code: 1, out: '', err: 'client nobody is not online\n' })
  })

  it('kicks a client out, and fails with the message for a client that is not online', async () => {
    const client = await connect(node, { clientId: 'ctl-kick' })
    const closed = new Promise<void>(resolve => client.once('close', () => resolve()))
    expect(await ctl('clients', 'kick', 'ctl-kick')).toEqual({ code: 0, out: 'ok\n', err: '' })
    await closed
    expect(await ctl('clients', 'kick', 'ctl-kick')).toEqual({ code: 1, out: '', err: 'client ctl-kick is not online\n' })
  })
})

describe('starling-ctl sessions, subscriptions and routes', () => {
  beforeAll(async () => {
    const away = await connect(node, { clientId: 'ctl-away', protocolVersion: 4, clean: false })
    await away.subscribeAsync('ctl/away/#', { qos: 1 })
    await away.endAsync()
    await waitFor(() => node.broker.core.client('ctl-away') === undefined, 'ctl-away gone')
  })

  it('lists sessions, away ones included, and shows one', async () => {
    await connect(node, { clientId: 'ctl-s1' })
    const { code, out } = await ctl('sessions', 'list')
    expect(code).toBe(0)
    expect(out).toMatch(/client_id.*username.*clean_start.*expiry_interval.*subscriptions.*inflight.*mqueue.*created_at.*node/)
    expect(out).toMatch(/ctl-s1 .*true/)
    expect(out).toMatch(/ctl-away .*false .*7200 .*1 /)
    const show = await ctl('sessions', 'show', 'ctl-away')
    expect(show.code).toBe(0)
    expect(show.out).toMatch(/^subscriptions_count : 1$/m)
    expect(show.out).toMatch(/^binding {13}: local$/m)
    expect(JSON.parse((await ctl('sessions', 'show', 'ctl-away', '--json')).out)[0]).toMatchObject({ client_id: 'ctl-away', node: node.name })
    expect(await ctl('sessions', 'show', 'nobody')).toEqual({ code: 1, out: '', err: 'session of client nobody not found\n' })
  })

  it('lists subscriptions and shows those of one client', async () => {
    const client = await connect(node, { clientId: 'ctl-sub' })
    await client.subscribeAsync({ 'ctl/t/1': { qos: 2 } })
    const { code, out } = await ctl('subscriptions', 'list')
    expect(code).toBe(0)
    expect(out).toMatch(/client_id.*topic.*qos.*node/)
    expect(out).toMatch(/ctl-sub .*ctl\/t\/1 .*2 /)
    expect(out).toMatch(/ctl-away .*ctl\/away\/# .*1 /)
    expect(JSON.parse((await ctl('subscriptions', 'show', 'ctl-sub', '--json')).out)).toEqual([{ client_id: 'ctl-sub', node: node.name, qos: 2, topic: 'ctl/t/1' }])
    expect(await ctl('subscriptions', 'show', 'nobody')).toEqual({ code: 0, out: 'No subscriptions\n', err: '' })
  })

  it('lists routes and shows those of one topic filter', async () => {
    const client = await connect(node, { clientId: 'ctl-route' })
    await client.subscribeAsync('ctl/route/+')
    const { code, out } = await ctl('routes', 'list')
    expect(code).toBe(0)
    expect(out).toMatch(/topic.*node/)
    expect(out).toMatch(/ctl\/route\/\+ .*starling@/)
    expect(JSON.parse((await ctl('routes', 'show', 'ctl/route/+', '--json')).out)).toEqual([{ node: node.name, topic: 'ctl/route/+' }])
    expect(await ctl('routes', 'show', 'no/route')).toEqual({ code: 0, out: 'No routes\n', err: '' })
  })
})
