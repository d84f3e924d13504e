/**
 * Secrets are shown once, when created, and never served, printed or stored in clear after:
 * the configs API redacts node.cookie and the default application's secret, `starling-ctl
 * mgmt list` prints no secret, API application secrets are kept as salted SHA-256 hashes
 * (records of an older version are hashed at start), and a node whose mesh listens beyond
 * loopback with the default cookie says so at start.
 */
import { APPS_TABLE } from '../../node/apps/apps.js'
import { startTestNode, apiRequest, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { spawnNode, killAllNodes } from '../helpers/process.js'

let node: TestNode
beforeAll(async () => { node = await startTestNode({ 'node.cookie': 'a-cookie-of-ours' }) })
afterAll(async () => { await node.destroy(); await killAllNodes() })

const basic = (id: string, secret: string): string => 'Basic ' + Buffer.from(`${id}:${secret}`).toString('base64')
async function brokersAs (id: string, secret: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3/brokers/`, { headers: { authorization: basic(id, secret) } })
  return res.status
}

/** Every text the store holds for the applications table, as JSON. */
const storedApps = (): string => JSON.stringify([...node.shared.table(APPS_TABLE).entries()])

it('redacts node.cookie and the default application secret in the configs API, on every node entry', async () => {
  for (const path of ['/configs/', `/nodes/${node.name}/configs/`]) {
    const answer = await apiRequest(node, path)
    const configs = Array.isArray(answer.data) ? answer.data[0].configs : answer.data.configs
    expect(configs['node.cookie']).toBe('******')
    expect(configs['management.default_application.secret']).toBe('******')
    expect(JSON.stringify(answer)).not.toContain('a-cookie-of-ours')
  }
})

it('leaves a secret unchanged when a change sends the redacted value back', async () => {
  const answer = await apiRequest(node, `/nodes/${node.name}/configs/starling`, 'PUT', { 'node.cookie': '******', 'mqtt.max_topic_alias': '10' })
  expect(answer.code).toBe(0)
  expect(node.config['node.cookie']).toBe('a-cookie-of-ours')
})

it('shows an application secret once, at mgmt insert, and never in mgmt list or lookup', async () => {
  const inserted = await runCtlOn(node, ['mgmt', 'insert', 'reporting', 'Reporting'])
  expect(inserted.code).toBe(0)
  const secret = /^AppSecret: (\S+)\n$/.exec(inserted.out)![1]
  expect(secret.length).toBeGreaterThanOrEqual(32)
  expect(await brokersAs('reporting', secret)).toBe(200)
  expect(await brokersAs('reporting', secret + 'x')).toBe(401)
  for (const argv of [['mgmt', 'list'], ['mgmt', 'lookup', 'reporting'], ['--json', 'mgmt', 'list']]) {
    const run = await runCtlOn(node, argv)
    expect(run.code).toBe(0)
    expect(run.out).toContain('reporting')
    expect(run.out).not.toContain(secret)
    if (argv[0] !== '--json') expect(run.out).toContain('******')
  }
})

it('keeps application secrets only as salted SHA-256 hashes', async () => {
  const { code, out } = await runCtlOn(node, ['mgmt', 'insert', 'hashed', 'Hashed'])
  expect(code).toBe(0)
  const secret = out.trim().split(' ')[1]
  const record = node.shared.table(APPS_TABLE).get('hashed') as Record<string, unknown>
  expect(record.secret).toBeUndefined()
  expect(record.secret_hash).toMatch(/^sha256:[0-9a-f]{32}:[0-9a-f]{64}$/)
  expect(storedApps()).not.toContain(secret)
  expect(storedApps()).not.toContain('public') // the default application's configured secret
  expect(await brokersAs('admin', 'public')).toBe(200)
})

it('hashes, at start, the clear secrets an older version stored, and they still authenticate', async () => {
  const dir = node.dataDir
  await node.shared.table(APPS_TABLE).put('legacy', { app_id: 'legacy', secret: 'legacy-secret', name: 'old', desc: '', status: true, expired: null })
  await node.stop()
  node = Object.assign(await startTestNode({ 'node.cookie': 'a-cookie-of-ours' }, dir), { dataDir: dir })
  const record = node.shared.table(APPS_TABLE).get('legacy') as Record<string, unknown>
  expect(record.secret).toBeUndefined()
  expect(record.secret_hash).toMatch(/^sha256:/)
  expect(storedApps()).not.toContain('legacy-secret')
  expect(await brokersAs('legacy', 'legacy-secret')).toBe(200)
})

it('warns at start when the mesh listens beyond loopback with the default cookie, and not otherwise', async () => {
  const exposed = await spawnNode({ env: { STARLING_CLUSTER__LISTEN: '0.0.0.0:0' } })
  expect(exposed.logLines().some(l => l.key === 'node.cookie' && /default node.cookie/.test(l.msg))).toBe(true)
  const local = await spawnNode()
  expect(local.logLines().some(l => l.key === 'node.cookie')).toBe(false)
})
