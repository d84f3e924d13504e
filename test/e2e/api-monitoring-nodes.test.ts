/**
 * `/api/v3/` brokers, nodes, listeners, metrics, stats and alarms over real HTTP against a
 * node with real MQTT clients: every field name and type of the spec, the cluster and
 * per-node forms, and unknown nodes.
 */
import { startTestNode, connect, closeClients, API_AUTH, type TestNode } from '../helpers/node.js'
import { METRIC_NAMES as CORE_METRIC_NAMES } from '../../node/metrics.js'
import { BRIDGE_METRIC_NAMES } from '../../plugins/bridge_mqtt/sys.js'

/** The core's counters, then those svc_bridge_mqtt adds (attached on every node). */
const METRIC_NAMES = [...CORE_METRIC_NAMES, ...BRIDGE_METRIC_NAMES]
import { STAT_NAMES } from '../../node/stats.js'

let node: TestNode
let base: string
beforeAll(async () => {
  // the machine's real load raises no alarm here (a long jest worker can pass 5% of memory)
  node = await startTestNode({
    'broker.sys_interval': '0',
    'os_mon.procmem_high_watermark': '100%',
    'os_mon.sysmem_high_watermark': '100%',
    'os_mon.cpu_high_watermark': '100%'
  })
  base = `http://127.0.0.1:${node.api.server!.port}/api/v3`
})
afterAll(async () => { await node.destroy() })
afterEach(async () => { await closeClients() })

/** GETs `path` under /api/v3 with the test credentials. */
async function get (path: string): Promise<{ status: number, body: any }> {
  const res = await fetch(base + path, { headers: { authorization: API_AUTH } })
  return { status: res.status, body: await res.json() }
}

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/
const BROKER_FIELDS = ['datetime', 'node', 'node_status', 'otp_release', 'sysdescr', 'uptime', 'version']
const NODE_FIELDS = ['connections', 'load1', 'load15', 'load5', 'max_fds', 'memory_total', 'memory_used', 'name', 'node',
  'node_status', 'otp_release', 'process_available', 'process_used', 'uptime', 'version']

function expectBroker (b: any): void {
  expect(b.datetime).toMatch(DATETIME)
  expect(b.node_status).toBe('Running')
  expect(b.otp_release).toBe(`Node.js ${process.version}`)
  expect(b.sysdescr).toBe('Starling MQTT Broker')
  expect(b.uptime).toMatch(/^\d+ seconds$|minutes/)
  expect(b.version).toMatch(/^v\d+\.\d+\.\d+/)
}

describe('brokers', () => {
  it('GET /brokers/ lists every node as a Node object', async () => {
    const { status, body } = await get('/brokers/')
    expect(status).toBe(200)
    expect(body.code).toBe(0)
    expect(body.data).toHaveLength(1)
    expect(Object.keys(body.data[0]).sort()).toEqual(BROKER_FIELDS)
    expect(body.data[0].node).toBe(node.name)
    expectBroker(body.data[0])
  })

  it('GET /brokers/:node answers the single form, without node', async () => {
    const { body } = await get(`/brokers/${node.name}`)
    expect(Object.keys(body.data).sort()).toEqual(BROKER_FIELDS.filter(f => f !== 'node'))
    expectBroker(body.data)
  })

  it('answers an unknown node with 404 and a message naming it and the running nodes', async () => {
    const { status, body } = await get('/brokers/nobody@nowhere')
    expect(status).toBe(404)
    expect(body.code).toBe(102)
    expect(body.message).toBe(`unknown node nobody@nowhere; running nodes: ${node.name}`)
  })
})

describe('nodes', () => {
  it('GET /nodes/ reports the monitoring data with memory as text with a unit', async () => {
    await connect(node, { clientId: 'nodes-1' })
    const { body } = await get('/nodes/')
    expect(body.data).toHaveLength(1)
    const n = body.data[0]
    expect(Object.keys(n).sort()).toEqual(NODE_FIELDS)
    expect(n.connections).toBe(1)
    for (const key of ['load1', 'load5', 'load15']) expect(n[key]).toMatch(/^\d+\.\d{2}$/)
    expect(n.memory_total).toMatch(/^\d+\.\d{2}[GMK]$/)
    expect(n.memory_used).toMatch(/^\d+\.\d{2}[GMK]$/)
    expect(n.name).toBe(node.name)
    expect(n.node).toBe(node.name)
    for (const key of ['max_fds', 'process_available', 'process_used']) expect(Number.isInteger(n[key])).toBe(true)
    expect(n.max_fds).toBeGreaterThan(0)
    expect(n.process_available).toBe(n.max_fds)
    expect(n.process_used).toBeGreaterThan(0)
    expect(n).toMatchObject({ node_status: 'Running', otp_release: `Node.js ${process.version}` })
    expect(n.uptime).toMatch(/seconds$/)
    expect(n.version).toMatch(/^v\d+\.\d+\.\d+/)
  })

  it('GET /nodes/:node reports memory in integer bytes', async () => {
    const { body } = await get(`/nodes/${encodeURIComponent(node.name)}`)
    expect(Object.keys(body.data).sort()).toEqual(NODE_FIELDS)
    expect(Number.isInteger(body.data.memory_total)).toBe(true)
    expect(Number.isInteger(body.data.memory_used)).toBe(true)
    expect(body.data.memory_total).toBeGreaterThan(1024 * 1024)
  })

  it('answers GET /nodes/:node for an unknown node with 404', async () => {
    const { status, body } = await get('/nodes/ghost@host')
    expect(status).toBe(404)
    expect(body.message).toMatch(/unknown node ghost@host/)
  })
})

const LISTENER_FIELDS = ['acceptors', 'current_conns', 'listen_on', 'max_conns', 'protocol', 'shutdown_count']

describe('listeners', () => {
  it('GET /listeners/ lists each node with its MQTT listeners, http:management and http:dashboard', async () => {
    const { body } = await get('/listeners/')
    expect(body.data).toHaveLength(1)
    expect(Object.keys(body.data[0]).sort()).toEqual(['listeners', 'node'])
    expect(body.data[0].node).toBe(node.name)
    const listeners = body.data[0].listeners
    expect(listeners.map((l: any) => l.protocol)).toEqual(['mqtt:tcp', 'mqtt:ssl', 'mqtt:ws', 'mqtt:wss', 'http:management', 'http:dashboard'])
    for (const l of listeners) {
      expect(Object.keys(l).sort()).toEqual(LISTENER_FIELDS)
      for (const key of ['acceptors', 'current_conns', 'max_conns']) expect(Number.isInteger(l[key])).toBe(true)
      expect(typeof l.listen_on).toBe('string')
    }
    const http = listeners.find((l: any) => l.protocol === 'http:management')
    expect(http.listen_on).toBe(`127.0.0.1:${node.api.server!.port}`)
    expect(http.current_conns).toBeGreaterThanOrEqual(1) // this request
    expect(http.shutdown_count).toEqual([])
  })

  it('GET /nodes/:node/listeners counts current MQTT connections', async () => {
    await connect(node, { clientId: 'listeners-1' })
    const { body } = await get(`/nodes/${node.name}/listeners`)
    expect(body.data.find((l: any) => l.protocol === 'mqtt:tcp').current_conns).toBe(1)
  })

  it('answers /nodes/:node/listeners for an unknown node with 404', async () => {
    expect((await get('/nodes/ghost@host/listeners')).status).toBe(404)
  })
})

describe('metrics and stats', () => {
  it('GET /metrics/ gives each node with every spec counter as an integer', async () => {
    const client = await connect(node, { clientId: 'metrics-1' })
    await client.publishAsync('m/1', 'x', { qos: 1 })
    const { body } = await get('/metrics/')
    expect(body.data).toHaveLength(1)
    expect(Object.keys(body.data[0]).sort()).toEqual(['metrics', 'node'])
    const metrics = body.data[0].metrics
    expect(Object.keys(metrics)).toEqual([...METRIC_NAMES])
    for (const name of METRIC_NAMES) expect(Number.isInteger(metrics[name])).toBe(true)
    expect(metrics['packets/connect']).toBeGreaterThanOrEqual(1)
    expect(metrics['messages/qos1/received']).toBeGreaterThanOrEqual(1)
  })

  it('GET /nodes/:node/metrics/ gives the Metrics object', async () => {
    const { body } = await get(`/nodes/${node.name}/metrics/`)
    expect(Object.keys(body.data)).toEqual([...METRIC_NAMES])
  })

  it('GET /stats/ gives Stats objects each with node', async () => {
    const client = await connect(node, { clientId: 'stats-1' })
    await client.subscribeAsync('s/#')
    const { body } = await get('/stats/')
    expect(body.data).toHaveLength(1)
    expect(Object.keys(body.data[0]).sort()).toEqual([...STAT_NAMES, 'node'].sort())
    expect(body.data[0].node).toBe(node.name)
    for (const name of STAT_NAMES) expect(Number.isInteger(body.data[0][name])).toBe(true)
    expect(body.data[0]['connections/count']).toBe(1)
    expect(body.data[0]['subscriptions/count']).toBe(1)
    expect(body.data[0]['topics/count']).toBe(body.data[0]['routes/count'])
  })

  it('GET /nodes/:node/stats/ gives the Stats object without node', async () => {
    const { body } = await get(`/nodes/${node.name}/stats/`)
    expect(Object.keys(body.data)).toEqual([...STAT_NAMES])
  })

  it('answers /nodes/:node/metrics/ and /nodes/:node/stats/ for an unknown node with 404', async () => {
    expect((await get('/nodes/ghost@host/metrics/')).status).toBe(404)
    expect((await get('/nodes/ghost@host/stats/')).status).toBe(404)
  })
})

describe('alarms', () => {
  afterEach(async () => {
    node.services.alarms.deactivate('too_many_processes')
    await node.services.alarms.flushed()
  })

  it('lists a raised alarm under /alarms/present, /alarms/present/:node and the index aliases', async () => {
    node.services.alarms.activate('too_many_processes', 'test alarm', { open: 1 })
    const all = (await get('/alarms/present')).body.data
    expect(all).toEqual([{ node: node.name, alarms: [expect.objectContaining({ id: 'too_many_processes', desc: 'test alarm', level: 'system' })] }])
    expect(all[0].alarms[0].activate_at).toMatch(DATETIME)
    expect((await get(`/alarms/present/${node.name}`)).body.data).toEqual(all[0].alarms)
    expect((await get('/alarms/')).body.data).toEqual(all)
    expect((await get(`/alarms/${node.name}`)).body.data).toEqual(all[0].alarms)
  })

  it('moves a cleared alarm to /alarms/history and /alarms/history/:node with clear_at', async () => {
    node.services.alarms.activate('too_many_processes', 'history alarm')
    node.services.alarms.deactivate('too_many_processes')
    await node.services.alarms.flushed()
    expect((await get('/alarms/present')).body.data).toEqual([{ node: node.name, alarms: [] }])
    const history = (await get('/alarms/history')).body.data
    expect(history).toHaveLength(1)
    expect(history[0].node).toBe(node.name)
    const entry = history[0].alarms[0]
    expect(entry).toMatchObject({ id: 'too_many_processes', desc: 'history alarm' })
    expect(entry.clear_at).toMatch(DATETIME)
    expect((await get(`/alarms/history/${node.name}`)).body.data).toEqual(history[0].alarms)
  })

  it('answers per-node alarm paths for an unknown node with 404', async () => {
    for (const path of ['/alarms/present/ghost@host', '/alarms/history/ghost@host', '/alarms/ghost@host']) {
      const { status, body } = await get(path)
      expect(status).toBe(404)
      expect(body.message).toMatch(/unknown node ghost@host/)
    }
  })
})
