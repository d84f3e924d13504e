/**
 * The cluster as users run it: three `bin/starling` processes on 127.0.0.1 with their own
 * MQTT, API and cluster ports, joined with `starling-ctl cluster join`. A node killed with
 * SIGKILL is seen as stopped (alarm `partitioned`), comes back by itself when restarted,
 * and the data created through one node survives a restart of the whole cluster.
 */
import mqtt, { type MqttClient } from 'mqtt'
import { spawnNode, killAllNodes, stopNode, tempDir, type NodeProcess } from '../helpers/process.js'
import { runCtlOn } from '../helpers/ctl.js'
import { waitFor, API_AUTH, freePort } from '../helpers/node.js'

interface Member { name: string, port: number, dataDir: string, proc?: NodeProcess }

const members: Member[] = []
const clients: MqttClient[] = []

async function start (m: Member): Promise<NodeProcess> {
  m.proc = await spawnNode({
    dataDir: m.dataDir,
    env: { STARLING_NODE__NAME: m.name, STARLING_CLUSTER__LISTEN: `127.0.0.1:${m.port}` }
  })
  return m.proc
}

async function ctl (m: Member, ...argv: string[]): Promise<{ code: number, out: string, err: string }> {
  return await runCtlOn({ dataDir: m.dataDir }, argv)
}

/** `cluster status` of `m`: the running and stopped node names. */
async function status (m: Member): Promise<{ running: string[], stopped: string[] }> {
  const { out } = await ctl(m, 'cluster', 'status', '--json')
  const list = JSON.parse(out) as Array<{ name: string, status: string }>
  return {
    running: list.filter(x => x.status === 'running').map(x => x.name).sort(),
    stopped: list.filter(x => x.status === 'stopped').map(x => x.name).sort()
  }
}

async function eventually (check: () => Promise<boolean>, what: string, timeoutMs = 20000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

function apiPort (m: Member): number {
  const line = m.proc!.logLines().find(l => l.msg === 'listener started' && l.protocol === 'http:management')
  return line!.port
}

async function api (m: Member, path: string, method = 'GET', body?: unknown): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${apiPort(m)}/api/v3${path}`, {
    method, headers: { authorization: API_AUTH, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body)
  })
  return await res.json()
}

async function client (m: Member, opts: mqtt.IClientOptions = {}): Promise<MqttClient> {
  const c = mqtt.connect({ host: '127.0.0.1', port: m.proc!.port('mqtt:tcp'), reconnectPeriod: 0, ...opts })
  clients.push(c)
  await new Promise<void>((resolve, reject) => { c.once('connect', () => resolve()); c.once('error', reject) })
  return c
}

const names = (): string[] => members.map(m => m.name).sort()

beforeAll(async () => {
  for (const name of ['pa@127.0.0.1', 'pb@127.0.0.1', 'pc@127.0.0.1']) members.push({ name, port: await freePort(), dataDir: tempDir() })
  await Promise.all(members.map(start))
}, 60000)

afterAll(async () => {
  for (const c of clients) c.end(true)
  await killAllNodes()
})

test('starling-ctl cluster join builds the cluster and cluster status shows it on every node', async () => {
  const [a, b, c] = members
  const joined = await ctl(b, 'cluster', 'join', `${a.name}:${a.port}`)
  expect(joined.code).toBe(0)
  expect(joined.out).toContain('Join the cluster successfully.')
  expect((await ctl(c, 'cluster', 'join', `${b.name}:${b.port}`)).code).toBe(0)
  for (const m of members) await eventually(async () => (await status(m)).running.join() === names().join(), `${m.name} to see three running nodes`)
  const text = await ctl(a, 'cluster', 'status')
  expect(text.out).toMatch(/^Cluster status: #\{running_nodes => \['p[abc]@127\.0\.0\.1','p[abc]@127\.0\.0\.1','p[abc]@127\.0\.0\.1'\]\}/)
  const bad = await ctl(a, 'cluster', 'join', 'nobody@127.0.0.1:1')
  expect(bad.code).not.toBe(0)
  expect(bad.err).toMatch(/cannot join nobody@127\.0\.0\.1:1/)
}, 60000)

test('a node killed with SIGKILL is marked stopped with the partitioned alarm, and rejoins by itself when restarted', async () => {
  const [a, b, c] = members
  const killed = b.proc!
  killed.kill('SIGKILL')
  await killed.exited
  await eventually(async () => (await status(a)).stopped.includes(b.name), 'a to see b stopped')
  await eventually(async () => (await status(c)).stopped.includes(b.name), 'c to see b stopped')
  const alarms = await api(a, '/alarms/present')
  expect(JSON.stringify(alarms.data)).toContain('partitioned')

  await start(b)
  for (const m of members) await eventually(async () => (await status(m)).running.join() === names().join(), `${m.name} to see b back`)
  await eventually(async () => !JSON.stringify((await api(a, '/alarms/present')).data).includes('partitioned'), 'the partitioned alarm to clear on a')
  // messages flow through the restarted node again
  const sub = await client(b)
  await new Promise<void>((resolve, reject) => sub.subscribe('after/restart', { qos: 1 }, (err) => err ? reject(err) : resolve()))
  const got = new Promise<string>(resolve => sub.once('message', (_t, p) => resolve(p.toString())))
  const pub = await client(c)
  await eventually(async () => {
    pub.publish('after/restart', 'back', { qos: 1 })
    return await Promise.race([got.then(() => true), new Promise<boolean>(resolve => setTimeout(() => resolve(false), 500))])
  }, 'a message from c to the restarted b')
  expect(await got).toBe('back')
}, 90000)

test('data created through one node survives a restart of the whole cluster', async () => {
  const [a, , c] = members
  const rule = await api(a, '/rules', 'POST', {
    rawsql: 'SELECT payload FROM "restart/in"',
    actions: [{ name: 'republish', params: { target_topic: 'restart/out', target_qos: 1, payload_tmpl: 'ruled ${payload}' } }]
  })
  expect(rule.code).toBe(0)
  expect((await api(a, '/banned', 'POST', { who: 'banned-everywhere', as: 'clientid', reason: 'test' })).code).toBe(0)
  await eventually(async () => (await api(c, `/rules/${rule.data.id as string}`)).code === 0, 'the rule on c')

  for (const m of members) await stopNode(m.proc!)
  await Promise.all(members.map(start))
  for (const m of members) await eventually(async () => (await status(m)).running.join() === names().join(), `${m.name} to see the cluster back`)

  expect((await api(c, `/rules/${rule.data.id as string}`)).data.rawsql).toBe('SELECT payload FROM "restart/in"')
  const banned = await api(c, '/banned')
  expect(banned.data.map((x: any) => x.who)).toContain('banned-everywhere')
  const sub = await client(c)
  await new Promise<void>((resolve, reject) => sub.subscribe('restart/out', { qos: 1 }, (err) => err ? reject(err) : resolve()))
  const got = new Promise<string>(resolve => sub.once('message', (_t, p) => resolve(p.toString())))
  const pub = await client(c)
  pub.publish('restart/in', 'x', { qos: 1 })
  expect(await got).toBe('ruled x')
}, 120000)

test('a node with another cookie is refused', async () => {
  const [a] = members
  const stranger: Member = { name: 'px@127.0.0.1', port: await freePort(), dataDir: tempDir() }
  stranger.proc = await spawnNode({
    dataDir: stranger.dataDir,
    env: { STARLING_NODE__NAME: stranger.name, STARLING_CLUSTER__LISTEN: `127.0.0.1:${stranger.port}`, STARLING_NODE__COOKIE: 'not the cookie' }
  })
  const joined = await ctl(stranger, 'cluster', 'join', `${a.name}:${a.port}`)
  expect(joined.code).not.toBe(0)
  expect(joined.err).toMatch(/cookie/)
  expect((await status(a)).running).not.toContain(stranger.name)
  await stopNode(stranger.proc)
}, 60000)

void waitFor
