/**
 * `$SYS` topics (spec: "System topics") as a local subscriber sees them: the periodic
 * broker, stats and metrics messages, client presence at the moment it changes, and the
 * sysmon warnings of the runtime.
 */
import { startTestNode, connect, closeClients, collect, waitFor, type Received, type TestNode } from '../helpers/node.js'
import { STAT_NAMES } from '../../node/stats.js'
import { METRIC_NAMES } from '../../node/metrics.js'
import { VERSION } from '../../node/version.js'
import { SYSDESCR, SYSMON_CHECK_MS, SYSMON_SUPPRESS_MS } from '../../node/sys/index.js'

afterEach(async () => { await closeClients() })

describe('$SYS/brokers/<node>/... every broker.sys_interval', () => {
  let node: TestNode
  // the node starts its own $SYS publisher (and the stats it publishes) with these periods
  beforeAll(async () => {
    node = await startTestNode({ 'broker.sys_interval': '1s', 'broker.sys_heartbeat': '1s' })
  })
  afterAll(async () => {
    await node.destroy()
  })
  const prefix = (): string => `$SYS/brokers/${node.name}/`
  const last = (messages: Received[], topic: string): Received | undefined => messages.filter(m => m.topic === topic).pop()

  it('publishes version, uptime, datetime, sysdescr, every stat and every metric', async () => {
    const c = await connect(node, { clientId: 'sys-watch' })
    const messages = collect(c)
    await c.subscribeAsync('$SYS/brokers/+/#')
    const p = prefix()
    const wanted = ['version', 'uptime', 'datetime', 'sysdescr', ...STAT_NAMES.map(s => `stats/${s}`), ...METRIC_NAMES.map(m => `metrics/${m}`)]
    await waitFor(() => wanted.every(t => last(messages, p + t) !== undefined), 'a full round', 5000)
    expect(last(messages, p + 'version')!.payload.toString()).toBe(VERSION)
    expect(VERSION).toMatch(/^v\d+\.\d+\.\d+$/)
    expect(last(messages, p + 'sysdescr')!.payload.toString()).toBe(SYSDESCR)
    expect(last(messages, p + 'uptime')!.payload.toString()).toMatch(/^\d+ seconds$|^\d+ minutes, \d+ seconds$/)
    expect(last(messages, p + 'datetime')!.payload.toString()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    for (const t of wanted.filter(w => w.startsWith('stats/') || w.startsWith('metrics/'))) {
      expect(last(messages, p + t)!.payload.toString()).toMatch(/^\d+$/)
    }
    // the round after the subscription counts the watcher itself
    await waitFor(() => Number(last(messages, p + 'stats/connections/count')?.payload) >= 1, 'connections/count >= 1', 3000)
    expect(Number(last(messages, p + 'metrics/packets/subscribe')!.payload)).toBeGreaterThanOrEqual(1)
  })

  it('keeps version, sysdescr and $SYS/brokers retained; the rest is not', async () => {
    await waitFor(() => node.broker.core.sessions.retainedCount() >= 3, 'retained $SYS', 3000)
    const c = await connect(node, { clientId: 'sys-late' })
    const messages = collect(c)
    await c.subscribeAsync(['$SYS/brokers', '$SYS/brokers/+/version', '$SYS/brokers/+/sysdescr', '$SYS/brokers/+/uptime'])
    await waitFor(() => messages.length >= 3, 'retained messages')
    const retained = messages.filter(m => m.packet.retain === true)
    expect(retained.map(m => m.topic).sort()).toEqual(['$SYS/brokers', prefix() + 'sysdescr', prefix() + 'version'])
    expect(retained.find(m => m.topic === '$SYS/brokers')!.payload.toString()).toBe(node.name)
  })

  it('publishes clients/<clientid>/connected and /disconnected with the spec fields when they happen', async () => {
    const watcher = await connect(node, { clientId: 'sys-presence' })
    const messages = collect(watcher)
    await watcher.subscribeAsync(prefix() + 'clients/#')
    const other = await connect(node, { clientId: 'sys-guest', username: 'guest', keepalive: 42, protocolVersion: 4 })
    await waitFor(() => last(messages, prefix() + 'clients/sys-guest/connected') !== undefined, 'connected')
    const connected = JSON.parse(last(messages, prefix() + 'clients/sys-guest/connected')!.payload.toString())
    expect(connected).toMatchObject({
      clientid: 'sys-guest', username: 'guest', ipaddress: '127.0.0.1', connack: 0,
      proto_ver: 4, proto_name: 'MQTT', clean_start: true, keepalive: 42
    })
    expect(Math.abs(connected.ts - Date.now())).toBeLessThan(5000)
    await other.endAsync()
    await waitFor(() => last(messages, prefix() + 'clients/sys-guest/disconnected') !== undefined, 'disconnected')
    const disconnected = JSON.parse(last(messages, prefix() + 'clients/sys-guest/disconnected')!.payload.toString())
    expect(disconnected).toEqual({ clientid: 'sys-guest', username: 'guest', reason: 'normal', ts: expect.any(Number) })
    expect(last(messages, prefix() + 'clients/sys-guest/connected')!.packet.retain).toBe(false)
  })

  it('writes username as undefined for a client without one', async () => {
    const watcher = await connect(node, { clientId: 'sys-presence-2' })
    const messages = collect(watcher)
    await watcher.subscribeAsync(prefix() + 'clients/sys-anon/connected')
    await connect(node, { clientId: 'sys-anon' })
    await waitFor(() => messages.length === 1, 'connected')
    expect(JSON.parse(messages[0].payload.toString()).username).toBe('undefined')
  })
  it('publishes presence to whoever can receive it: a listener, a shared subscriber, a subscriber after the last one left', async () => {
    // the presence message is not even built while nothing could receive it (issue 22): each
    // kind of receiver must still get it
    const heard: string[] = []
    const off = node.hooks.on('message.publish', (e) => { if (e.topic.includes('/clients/sys-heard-')) heard.push(e.topic) })
    await connect(node, { clientId: 'sys-heard-1' })
    await waitFor(() => heard.includes(prefix() + 'clients/sys-heard-1/connected'), 'message.publish of the presence')
    off()
    const watcher = await connect(node, { clientId: 'sys-heard-watch' })
    const messages = collect(watcher)
    const shared = '$share/g/' + prefix() + 'clients/+/connected'
    await watcher.subscribeAsync(shared)
    await connect(node, { clientId: 'sys-heard-2' })
    await waitFor(() => messages.some(m => m.topic === prefix() + 'clients/sys-heard-2/connected'), 'the shared subscriber')
    await watcher.unsubscribeAsync(shared)
    await connect(node, { clientId: 'sys-heard-3' })
    await watcher.subscribeAsync(prefix() + 'clients/sys-heard-4/connected')
    await connect(node, { clientId: 'sys-heard-4' })
    await waitFor(() => messages.some(m => m.topic === prefix() + 'clients/sys-heard-4/connected'), 'the later subscriber')
    expect(messages.map(m => m.topic)).toEqual([prefix() + 'clients/sys-heard-2/connected', prefix() + 'clients/sys-heard-4/connected'])
  })
})

describe('$SYS/brokers/<node>/sysmon/...', () => {
  let node: TestNode
  // the node starts its own sysmon with these thresholds
  beforeAll(async () => {
    node = await startTestNode({ 'broker.sys_interval': '0', 'broker.sys_heartbeat': '0', 'sysmon.long_schedule': '1ms', 'sysmon.large_heap': '1' })
  })
  afterAll(async () => {
    await node.destroy()
  })

  it('publishes long_schedule after the event loop was blocked longer than sysmon.long_schedule', async () => {
    const c = await connect(node, { clientId: 'sysmon-watch' })
    const messages = collect(c)
    await c.subscribeAsync('$SYS/brokers/+/sysmon/long_schedule')
    const blocked = (): boolean => messages.some(m => JSON.parse(m.payload.toString()).duration_ms >= 50)
    // With a 1 ms threshold the node warns all the time, and a warning suppresses the next
    // for SYSMON_SUPPRESS_MS while the check that saw a block forgets it: so block the event
    // loop the node runs on (120 ms) at every turn until a warning reports such a block.
    await waitFor(() => {
      if (blocked()) return true
      const until = Date.now() + 120
      while (Date.now() < until) { /* block */ }
      return false
    }, 'long_schedule after a block', SYSMON_SUPPRESS_MS + 5 * SYSMON_CHECK_MS)
    const w = messages.map(m => JSON.parse(m.payload.toString())).find(p => p.duration_ms >= 50)
    expect(w).toEqual({ node: node.name, duration_ms: expect.any(Number), threshold_ms: 1, ts: expect.any(Number) })
    expect(messages[0].topic).toBe(`$SYS/brokers/${node.name}/sysmon/long_schedule`)
  })

  it('publishes large_heap while the heap in use is above sysmon.large_heap', async () => {
    const c = await connect(node, { clientId: 'sysmon-heap' })
    const messages = collect(c)
    await c.subscribeAsync('$SYS/brokers/+/sysmon/large_heap')
    await waitFor(() => messages.length > 0, 'large_heap', 5000)
    const w = JSON.parse(messages[0].payload.toString())
    expect(w).toEqual({ node: node.name, heap_used: expect.any(Number), heap_total: expect.any(Number), heap_limit: expect.any(Number), threshold: 1, ts: expect.any(Number) })
    expect(w.heap_used).toBeGreaterThan(1)
  })
})
