/**
 * A data import is cluster-wide: two `bin/starling` processes joined with `starling-ctl
 * cluster join`; an EMQ X 4.4 backup imported through one node's starling-ctl is served and
 * applied by the other (its rule runs there, its banned client and auth entries apply at that
 * node's CONNECT, its dashboard user signs in there). Needs `dist/` (`npm run build`).
 */
import mqtt, { type MqttClient } from 'mqtt'
import { spawnNode, killAllNodes, tempDir, PROJECT_ROOT, type NodeProcess } from '../helpers/process.js'
import { runCtlOn } from '../helpers/ctl.js'
import { API_AUTH, freePort } from '../helpers/node.js'
import { join } from 'node:path'

interface Member { name: string, port: number, dataDir: string, proc?: NodeProcess }

const members: Member[] = []
const clients: MqttClient[] = []

async function eventually (check: () => Promise<boolean>, what: string, timeoutMs = 20000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

function portOf (m: Member, protocol: string): number {
  return m.proc!.logLines().find(l => l.msg === 'listener started' && l.protocol === protocol)!.port
}

async function api (m: Member, path: string, method = 'GET', body?: unknown): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${portOf(m, 'http:management')}/api/v3${path}`, {
    method, headers: { authorization: API_AUTH, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body)
  })
  return await res.json()
}

/** Whether a CONNECT with `opts` is accepted by `m`. */
async function connects (m: Member, opts: mqtt.IClientOptions): Promise<boolean> {
  const c = mqtt.connect({ host: '127.0.0.1', port: m.proc!.port('mqtt:tcp'), reconnectPeriod: 0, connectTimeout: 5000, ...opts })
  clients.push(c)
  return await new Promise<boolean>(resolve => {
    c.once('connect', () => resolve(true))
    c.once('error', () => resolve(false))
    c.once('close', () => resolve(false))
  })
}

async function client (m: Member, clientId: string): Promise<MqttClient> {
  const c = mqtt.connect({ host: '127.0.0.1', port: m.proc!.port('mqtt:tcp'), reconnectPeriod: 0, clientId })
  clients.push(c)
  await new Promise<void>((resolve, reject) => { c.once('connect', () => resolve()); c.once('error', reject) })
  return c
}

beforeAll(async () => {
  for (const name of ['da@127.0.0.1', 'db@127.0.0.1']) members.push({ name, port: await freePort(), dataDir: tempDir() })
  await Promise.all(members.map(async m => {
    m.proc = await spawnNode({ dataDir: m.dataDir, env: { STARLING_NODE__NAME: m.name, STARLING_CLUSTER__LISTEN: `127.0.0.1:${m.port}` } })
  }))
  const [a, b] = members
  expect((await runCtlOn({ dataDir: b.dataDir }, ['cluster', 'join', `${a.name}:${a.port}`])).code).toBe(0)
  expect((await runCtlOn({ dataDir: b.dataDir }, ['plugins', 'load', 'svc_auth_username'])).code).toBe(0)
}, 60000)

afterAll(async () => {
  for (const c of clients) c.end(true)
  await killAllNodes()
})

test('an import through one node is served and applied by the other', async () => {
  const [a, b] = members
  const run = await runCtlOn({ dataDir: a.dataDir }, ['data', 'import', join(PROJECT_ROOT, 'test/fixtures/backup/emqx44-backup.json')])
  expect(run.err).toBe('')
  expect(run.out).toContain('The data has been imported successfully.')

  await eventually(async () => (await api(b, '/rules/rule:republish44')).code === 0, 'the imported rule on the other node')
  await eventually(async () => (await api(b, '/banned/')).data.length === 3, 'the banned entries on the other node')
  expect(await connects(b, { clientId: 'banned-client' })).toBe(false)
  expect(await connects(b, { clientId: 'b1', username: 'alice', password: 'alice-pass' })).toBe(true)
  expect(await connects(b, { clientId: 'b2', username: 'alice', password: 'wrong' })).toBe(false)
  const dash = await fetch(`http://127.0.0.1:${portOf(b, 'http:dashboard')}/api/v3/users`, {
    headers: { authorization: 'Basic ' + Buffer.from('viewer44:viewer44-pass').toString('base64') }
  })
  expect(dash.status).toBe(200)

  // the rule runs on the other node: a message to t/in there is republished to t/out
  const sub = await client(b, 'b-sub')
  await sub.subscribeAsync('t/out', { qos: 1 })
  const got = new Promise<string>(resolve => sub.once('message', (_t, p) => resolve(p.toString())))
  const pub = await client(b, 'b-pub')
  await pub.publishAsync('t/in', 'from b', { qos: 1 })
  expect(await got).toBe('from b')
}, 60000)

test('GET /data/export lists the files of every node, and POST /data/import with "node" imports a file of that node', async () => {
  const [a, b] = members
  const made = (await api(b, '/data/export', 'POST', {})).data
  expect(made.node).toBe(b.name)
  const listed = (await api(a, '/data/export')).data
  expect(listed).toContainEqual(expect.objectContaining({ filename: made.filename, node: b.name }))
  // the file is b's: a has none of that name
  expect((await api(a, '/data/import', 'POST', { filename: made.filename })).code).toBe(102)
  const report = await api(a, '/data/import', 'POST', { filename: made.filename, node: b.name })
  expect(report.code).toBe(0)
  expect(report.data.imported.rules).toBe(2)
}, 30000)
