/**
 * A three-node cluster in one process (each node with its own store, listeners and mesh
 * port on 127.0.0.1), driven by real MQTT clients and real HTTP: join and status, routes,
 * forwarding at each QoS with MQTT 5 properties and no duplicates, shared subscriptions
 * across nodes, session takeover with queued messages, retained messages, cluster-wide
 * rules, and a node with another cookie refused. Process-level faults (SIGKILL, restart)
 * are in processes.test.ts.
 */
import { bannedKey } from '../../node/banned/index.js'
import { Hlc } from '../../node/store/shared.js'
import { startTestNode, connect, closeClients, waitFor, collect, nextMessage, type TestNode, apiRequest } from '../helpers/node.js'

let a: TestNode, b: TestNode, c: TestNode
/** What c's `cluster join` answered (the status `starling-ctl cluster join` prints). */
let joinedByC: Array<{ name: string, status: string }> = []
const extra: TestNode[] = []

const addr = (n: TestNode): string => `${n.name}:${n.cluster.mesh.port}`
const running = (n: TestNode): string[] => n.cluster.status().filter(m => m.status === 'running').map(m => m.name).sort()

const api = apiRequest

/** Waits until every node routes `topic` to `node` (the subscription announced cluster-wide). */
async function routed (topic: string, node: TestNode): Promise<void> {
  for (const n of [a, b, c]) {
    if (n === node) continue
    await waitFor(() => n.cluster.routing.table.match(topic).some(e => e.plain.has(node.name) || [...e.groups.values()].some(s => s.has(node.name))), `route of ${topic} to ${node.name} on ${n.name}`)
  }
}

beforeAll(async () => {
  const strategy = { 'broker.shared_subscription_strategy': 'round_robin', 'broker.sys_interval': '1s' }
  a = await startTestNode({ 'node.name': 'a@127.0.0.1', ...strategy })
  b = await startTestNode({ 'node.name': 'b@127.0.0.1', ...strategy })
  c = await startTestNode({ 'node.name': 'c@127.0.0.1', ...strategy })
  await b.cluster.join(addr(a))
  // c joins b only: it learns a from b and dials it itself
  joinedByC = await c.cluster.join(addr(b))
  const all = [a.name, b.name, c.name].sort()
  for (const n of [a, b, c]) await waitFor(() => running(n).join() === all.join(), `${n.name} to see three running nodes`)
})

afterEach(async () => { await closeClients() })

afterAll(async () => {
  for (const n of [...extra, c, b, a]) await n?.destroy()
})

test('a join answers once the members it learnt are linked: no running node among the stopped', () => {
  expect(joinedByC.map(m => [m.name, m.status]).sort()).toEqual([a.name, b.name, c.name].sort().map(n => [n, 'running']))
})

test('every node sees the three nodes running, and the API lists them', async () => {
  for (const n of [a, b, c]) expect(running(n)).toEqual([a.name, b.name, c.name].sort())
  const nodes = await api(c, '/nodes')
  expect(nodes.data.map((x: any) => x.node).sort()).toEqual([a.name, b.name, c.name].sort())
})

test('$SYS/brokers names every running node', async () => {
  const sub = await connect(c)
  const got = collect(sub)
  await sub.subscribeAsync('$SYS/brokers', { qos: 0 })
  const all = [a.name, b.name, c.name].sort().join()
  await waitFor(() => got.some(m => m.payload.toString().split(',').sort().join() === all), '$SYS/brokers with the three nodes')
})

test.each([0, 1, 2] as const)('a QoS %i message published on one node reaches wildcard subscribers on the others once, with its properties', async (qos) => {
  const onA = await connect(a, { protocolVersion: 5 })
  const onC = await connect(c, { protocolVersion: 5 })
  await onA.subscribeAsync(`q${qos}/+/x`, { qos: 2 })
  await onC.subscribeAsync(`q${qos}/#`, { qos: 2 })
  await routed(`q${qos}/1/x`, a)
  await routed(`q${qos}/1/x`, c)
  const gotA = collect(onA)
  const gotC = collect(onC)
  const pub = await connect(b, { protocolVersion: 5 })
  const forwardedBefore = b.metrics['messages/forward']
  const properties = {
    userProperties: { k: 'v' },
    contentType: 'text/plain',
    responseTopic: 'reply/here',
    correlationData: Buffer.from('corr'),
    payloadFormatIndicator: true,
    messageExpiryInterval: 60
  }
  await pub.publishAsync(`q${qos}/1/x`, 'hello', { qos, properties })
  // a second message after the first: once it is in, the first can no longer be duplicated
  await pub.publishAsync(`q${qos}/1/x`, 'end', { qos })
  await waitFor(() => gotA.length >= 2 && gotC.length >= 2, 'both messages on both nodes')
  // two messages, each sent once to a and once to c
  expect(b.metrics['messages/forward'] - forwardedBefore).toBe(4)
  for (const got of [gotA, gotC]) {
    expect(got.map(m => m.payload.toString())).toEqual(['hello', 'end'])
    const p = got[0].packet
    expect(p.qos).toBe(qos)
    expect(p.properties.userProperties).toEqual({ k: 'v' })
    expect(p.properties.contentType).toBe('text/plain')
    expect(p.properties.responseTopic).toBe('reply/here')
    expect(Buffer.from(p.properties.correlationData).toString()).toBe('corr')
    expect(p.properties.payloadFormatIndicator).toBe(true)
    expect(p.properties.messageExpiryInterval).toBeGreaterThan(0)
  }
})

test('messages of one publisher mixing QoS 0 and 1 reach a subscriber on another node all, each QoS in order', async () => {
  // QoS 0 takes the receiving node's fast path, QoS 1 its store-and-queue path; a subscriber
  // drops a message whose counter is below the last it got from that node, so the receiving
  // node must keep the origin's order. Across QoS levels MQTT asks no order [MQTT-4.6.0-5].
  const sub = await connect(a)
  const got: string[] = []
  sub.on('message', (_t, payload) => got.push(payload.toString()))
  await sub.subscribeAsync('mixed/t', { qos: 0 })
  await routed('mixed/t', a)
  const pub = await connect(b)
  const sent = Array.from({ length: 200 }, (_, i) => String(i))
  await Promise.all(sent.map((p, i) => pub.publishAsync('mixed/t', p, { qos: (i % 2) as 0 | 1 })))
  await pub.publishAsync('mixed/t', 'end', { qos: 1 })
  await waitFor(() => got.length >= sent.length + 1, 'every message').catch(() => {})
  expect([...got].sort()).toEqual([...sent, 'end'].sort())
  expect(got.filter(p => Number(p) % 2 === 0)).toEqual(sent.filter(p => Number(p) % 2 === 0))
  expect(got.filter(p => Number(p) % 2 === 1)).toEqual(sent.filter(p => Number(p) % 2 === 1))
})

test('the routes API shows each filter with the node that has its subscriber', async () => {
  const onC = await connect(c)
  await onC.subscribeAsync('routes/api/c', { qos: 0 })
  await routed('routes/api/c', c)
  const routes = await api(a, '/routes')
  expect(routes.data).toEqual(expect.arrayContaining([expect.objectContaining({ topic: 'routes/api/c', node: c.name })]))
})

test('a shared subscription with members on two nodes delivers each message to one member of the cluster', async () => {
  const onA = await connect(a, { clientId: 'shared-a' })
  const onC = await connect(c, { clientId: 'shared-c' })
  await onA.subscribeAsync('$share/g/shared/t', { qos: 1 })
  await onC.subscribeAsync('$share/g/shared/t', { qos: 1 })
  await routed('shared/t', a)
  await routed('shared/t', c)
  const gotA = collect(onA)
  const gotC = collect(onC)
  const pub = await connect(b)
  for (let i = 0; i < 20; i++) await pub.publishAsync('shared/t', String(i), { qos: 1 })
  await waitFor(() => gotA.length + gotC.length >= 20, '20 shared messages')
  const all = [...gotA, ...gotC].map(m => Number(m.payload.toString())).sort((x, y) => x - y)
  expect(all).toEqual(Array.from({ length: 20 }, (_, i) => i))
  // round robin between the two nodes
  expect(gotA.length).toBe(10)
  expect(gotC.length).toBe(10)
})

test('a client connecting on another node takes over the connection (MQTT 5: DISCONNECT 0x8E)', async () => {
  const first = await connect(a, { clientId: 'mover', protocolVersion: 5 })
  await waitFor(() => c.cluster.sessions.whereIs('mover') === a.name, 'registry entry of mover on c')
  const disconnected = new Promise<number>(resolve => first.on('disconnect', (packet) => resolve(packet.reasonCode ?? 0)))
  const second = await connect(c, { clientId: 'mover', protocolVersion: 5 })
  expect(await disconnected).toBe(0x8e)
  expect(second.connected).toBe(true)
  await waitFor(() => a.cluster.sessions.whereIs('mover') === c.name, 'registry entry of mover on a')
})

test('a persistent session moves to the node the client reconnects to, with its subscriptions and queued messages', async () => {
  const opts = { clientId: 'traveller', clean: false, protocolVersion: 5 as const, properties: { sessionExpiryInterval: 300 } }
  const first = await connect(a, opts)
  await first.subscribeAsync('travel/t', { qos: 1 })
  await routed('travel/t', a)
  await first.endAsync()
  const pub = await connect(b)
  for (let i = 0; i < 3; i++) await pub.publishAsync('travel/t', `queued ${i}`, { qos: 1 })
  await waitFor(() => a.services.stats !== undefined && [...a.broker.core.sessions.queuedOf('traveller')].length === 3, 'three messages queued on a')
  const second = mqttCollecting(c, opts)
  const { client, received } = await second
  await waitFor(() => received.length >= 3, 'queued messages delivered on c')
  expect(received.slice(0, 3).map(m => m.payload.toString())).toEqual(['queued 0', 'queued 1', 'queued 2'])
  // the subscription moved too: a new message reaches the client on c
  await routed('travel/t', c)
  await pub.publishAsync('travel/t', 'live', { qos: 1 })
  await waitFor(() => received.length >= 4, 'live message on c')
  expect(received[3].payload.toString()).toBe('live')
  expect([...a.broker.core.sessions.queuedOf('traveller')]).toHaveLength(0)
  await client.endAsync()
})

/** Connects with a message listener attached before CONNACK (queued messages come right after it). */
async function mqttCollecting (node: TestNode, opts: any): Promise<{ client: any, received: Array<{ payload: Buffer }> }> {
  const { default: mqtt } = await import('mqtt')
  const client = mqtt.connect({ host: '127.0.0.1', port: node.port('mqtt:tcp'), reconnectPeriod: 0, ...opts })
  const received: Array<{ payload: Buffer }> = []
  client.on('message', (_topic, payload) => received.push({ payload }))
  await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
  return { client, received }
}

test('a retained message published on one node is seen by a subscriber on another, and by a node that joins later', async () => {
  const pub = await connect(a)
  await pub.publishAsync('keep/t', 'kept', { qos: 1, retain: true })
  await waitFor(() => c.broker.core.sessions.hasRetained('keep/t'), 'retained on c')
  const sub = await connect(c)
  const got = nextMessage(sub)
  await sub.subscribeAsync('keep/#', { qos: 1 })
  expect((await got).payload.toString()).toBe('kept')

  const d = await startTestNode({ 'node.name': 'd@127.0.0.1' })
  extra.push(d)
  await d.cluster.join(addr(a))
  await waitFor(() => d.broker.core.sessions.hasRetained('keep/t'), 'retained copied to the joining node')
  const late = await connect(d)
  const gotLate = nextMessage(late)
  await late.subscribeAsync('keep/t', { qos: 1 })
  expect((await gotLate).payload.toString()).toBe('kept')
  await d.cluster.leave()
  for (const n of [a, b, c]) await waitFor(() => !n.cluster.status().some(m => m.name === d.name), `${n.name} to forget d`)
})

test('the $SYS rounds send nothing over the mesh once their retained messages are copied, and count nothing in messages/forward', async () => {
  // sys_interval is 1s here: two rounds on every node, observed on its own metrics topic
  const forwarded = (): number[] => [a, b, c].map(n => n.metrics['messages/forward'])
  const batches = [0, 0, 0]
  const restore = [a, b, c].map((n, i) => {
    const mesh = n.cluster.mesh as any
    const original = mesh.sendRaw
    mesh.sendRaw = function (...args: unknown[]) { batches[i]++; return original.apply(this, args) }
    return () => { mesh.sendRaw = original }
  })
  try {
    const rounds = [0, 0, 0]
    for (const [i, n] of [a, b, c].entries()) {
      // each node's own metrics topic, subscribed on that node: no route crosses the mesh
      const sub = await connect(n)
      sub.on('message', () => { rounds[i]++ })
      await sub.subscribeAsync(`$SYS/brokers/${n.name}/metrics/messages/forward`, { qos: 0 })
    }
    // a round may still copy what changed before (the running-nodes list, after d left above)
    await waitFor(() => rounds.every(r => r >= 1), 'one $SYS round on every node')
    const before = forwarded()
    batches.fill(0)
    const seen = [...rounds]
    await waitFor(() => rounds.every((r, i) => r >= seen[i] + 2), 'two more $SYS rounds on every node')
    expect(forwarded()).toEqual(before)
    expect(batches).toEqual([0, 0, 0])
  } finally {
    for (const r of restore) r()
  }
})

test('a retained message published again unchanged is not copied to the peers again; a changed one is', async () => {
  const pub = await connect(b)
  await pub.publishAsync('copy/t', 'v1', { qos: 1, retain: true })
  await waitFor(() => a.broker.core.sessions.hasRetained('copy/t') && c.broker.core.sessions.hasRetained('copy/t'), 'retained on a and c')
  const mesh = b.cluster.mesh as any
  const original = mesh.sendRaw
  const sentTo: string[] = []
  mesh.sendRaw = function (name: string, ...rest: unknown[]) { sentTo.push(name); return original.call(this, name, ...rest) }
  try {
    await pub.publishAsync('copy/t', 'v1', { qos: 1, retain: true })
    await pub.publishAsync('copy/t', 'v2', { qos: 1, retain: true })
    const onC = await connect(c)
    const got = nextMessage(onC)
    await waitFor(() => sentTo.length >= 2, 'the changed message copied to a and c')
    await onC.subscribeAsync('copy/t', { qos: 1 })
    expect((await got).payload.toString()).toBe('v2')
    expect(sentTo.sort()).toEqual([a.name, c.name].sort())
  } finally {
    mesh.sendRaw = original
  }
})

test('a rule created on one node is present on the others and fires for events on them', async () => {
  const created = await api(a, '/rules', 'POST', {
    rawsql: 'SELECT payload FROM "rule/in"',
    actions: [{ name: 'republish', params: { target_topic: 'rule/out', target_qos: 0, payload_tmpl: 'from rule: ${payload}' } }]
  })
  expect(created.code).toBe(0)
  const id = created.data.id
  await waitFor(() => c.shared.table('rules').has(id), 'rule replicated to c', 10000)
  const onC = await api(c, `/rules/${id}`)
  expect(onC.data.rawsql).toBe('SELECT payload FROM "rule/in"')
  const sub = await connect(c)
  await sub.subscribeAsync('rule/out', { qos: 0 })
  const got = nextMessage(sub)
  const pub = await connect(c)
  await pub.publishAsync('rule/in', 'x', { qos: 0 })
  expect((await got).payload.toString()).toBe('from rule: x')
  await api(b, `/rules/${id}`, 'DELETE')
  await waitFor(() => !a.shared.table('rules').has(id) && !c.shared.table('rules').has(id), 'rule deleted everywhere')
})

test('a node with another cookie cannot join', async () => {
  const stranger = await startTestNode({ 'node.name': 'x@127.0.0.1', 'node.cookie': 'another cookie' })
  extra.push(stranger)
  await expect(stranger.cluster.join(addr(a))).rejects.toThrow(/cannot join.*cookie/)
  expect(running(stranger)).toEqual([stranger.name])
  expect(a.cluster.status().some(m => m.name === stranger.name)).toBe(false)
})

test('a node with static seeds (its own among them, with ports) joins by itself, also with autoheal off', async () => {
  const d = await startTestNode({
    'node.name': 'd@127.0.0.1',
    'cluster.discovery': 'static',
    'cluster.static.seeds': `d@127.0.0.1:1, ${addr(a)}`,
    'cluster.autoheal': 'off'
  })
  extra.push(d)
  const all = [a.name, b.name, c.name, d.name].sort()
  await waitFor(() => running(d).join() === all.join(), 'd to join the three nodes')
  expect(d.cluster.status().filter(m => m.status === 'stopped')).toEqual([])
  await d.cluster.leave()
  for (const n of [a, b, c]) await waitFor(() => !n.cluster.status().some(m => m.name === d.name), `${n.name} to forget d`)
})

test('a change that reached one node without its delta (as if the frame was lost) is repaired by anti-entropy', async () => {
  const key = bannedKey('client_id', 'missed-delta')
  const entry = { who: 'missed-delta', as: 'client_id', reason: 'repaired', desc: '', until: Math.floor(Date.now() / 1000) + 3600 }
  // applied as if it came from a peer: a node never forwards a peer's change, so b and c can
  // only learn it from a's heartbeat digests
  await a.shared.apply({ table: 'banned', key, value: entry, stamp: new Hlc('elsewhere@127.0.0.1').next() })
  for (const n of [b, c]) await waitFor(() => n.shared.table('banned').has(key), `anti-entropy to bring the entry to ${n.name}`, 15000)
  const refused = await connect(c, { clientId: 'missed-delta', protocolVersion: 5 }).then(() => false, () => true)
  expect(refused).toBe(true)
})
