/**
 * Every listener can be turned off (`off`), the cluster port included, and a node with all
 * of them off listens on no TCP port at all; the generated API secret of a first start is
 * printed once on stderr, and an API 401 says where the secret comes from.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { startTestNode, waitFor, API_AUTH, type TestNode } from '../helpers/node.js'
import { spawnNode, stopNode, killAllNodes, tempDir, type NodeProcess } from '../helpers/process.js'
import { startDashNode } from '../helpers/dashboard.js'

const ALL_OFF: Record<string, string> = {
  'listener.tcp.external': 'off',
  'listener.ssl.external': 'off',
  'listener.ws.external': 'off',
  'listener.wss.external': 'off',
  'management.listener.http': 'off',
  'dashboard.listener.http': 'off',
  'cluster.listen': 'off'
}

/** The same keys as the STARLING_* variables a process reads. */
const ALL_OFF_ENV: Record<string, string> = Object.fromEntries(Object.entries(ALL_OFF)
  .map(([key, value]) => [`STARLING_${key.toUpperCase().replace(/\./g, '__')}`, value]))

/** TCP ports process `pid` listens on: its socket inodes matched against /proc/net/tcp{,6} rows in state LISTEN (0A). */
function listeningPorts (pid: number): number[] {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m !== null) inodes.add(m[1])
    } catch { /* closed meanwhile */ }
  }
  const ports: number[] = []
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const row of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/)
      if (cols.length < 10 || cols[3] !== '0A' || !inodes.has(cols[9])) continue
      ports.push(parseInt(cols[1].split(':')[1], 16))
    }
  }
  return ports
}

/** Waits until the spawned node says it is running. */
async function running (node: NodeProcess): Promise<void> {
  await waitFor(() => node.stdout().includes('is running now!'), 'the node to start', 20000)
}

describe('listeners turned off', () => {
  let node: TestNode | undefined
  afterEach(async () => { await node?.destroy(); node = undefined })
  afterAll(killAllNodes)

  it('starts a node with every listener off: no MQTT listener, no API server, no mesh port', async () => {
    node = await startTestNode(ALL_OFF)
    expect(node.listeners).toEqual([])
    expect(node.port('mqtt:tcp')).toBe(0)
    expect(node.api.server).toBeUndefined()
    expect(node.cluster.mesh.listenOn).toBe('off')
    expect(node.cluster.mesh.port).toBe(0)
    // still a working node: its operations answer
    expect((await node.rpc.local('listeners.list', {}) as unknown[]).length).toBe(0)
  })

  it('turns one MQTT listener off and leaves the others on', async () => {
    node = await startTestNode({ 'listener.ws.external': 'off' })
    expect(node.listeners.map(l => l.spec.protocol)).toEqual(['mqtt:tcp', 'mqtt:ssl', 'mqtt:wss'])
    expect(node.port('mqtt:tcp')).toBeGreaterThan(0)
  })

  it('refuses cluster join on a node whose cluster.listen is off, saying why', async () => {
    node = await startTestNode({ 'cluster.listen': 'off' })
    await expect(node.cluster.join('other@127.0.0.1:4370')).rejects.toThrow(/cluster.listen is off on this node/)
  })

  it('does not join static seeds when cluster.listen is off, and says so', async () => {
    const dash = await startDashNode({ 'cluster.listen': 'off', 'cluster.discovery': 'static', 'cluster.static.seeds': 'other@127.0.0.1:1' })
    try {
      expect(dash.lines.join('')).toContain('cluster.discovery = static, but cluster.listen is off: the seeds are not joined')
      expect(dash.node.cluster.status().map(m => m.name)).toEqual([dash.node.name])
    } finally {
      await dash.destroy()
    }
  })

  it('serves the management API over HTTPS only when management.listener.http is off', async () => {
    node = await startTestNode({ 'management.listener.http': 'off', 'management.listener.https': '127.0.0.1:0' })
    const server = node.api.server!
    expect(server.protocol).toBe('https:management')
    const listed = await node.rpc.local('listeners.list', {}) as Array<{ protocol: string }>
    expect(listed.map(l => l.protocol)).toContain('https:management')
  })

  it('a node process with every listener off opens no TCP port', async () => {
    const proc = await spawnNode({ env: ALL_OFF_ENV })
    await running(proc)
    expect(listeningPorts(proc.pid)).toEqual([])
    expect(proc.stdout()).not.toContain('Start cluster listener')
    expect((await stopNode(proc)).code).toBe(0)
  })

  it('the default node opens its cluster port', async () => {
    const proc = await spawnNode()
    await running(proc)
    await waitFor(() => proc.stdout().includes('Start cluster listener'), 'the cluster banner')
    const port = Number(/Start cluster listener on [^\s]+:(\d+) successfully/.exec(proc.stdout())![1])
    expect(listeningPorts(proc.pid)).toContain(port)
    expect((await stopNode(proc)).code).toBe(0)
  })
})

describe('the generated API secret', () => {
  afterAll(killAllNodes)

  it('is printed once on stderr, on its own line, after the listeners are open; the restart prints none', async () => {
    const dataDir = tempDir()
    const env = { STARLING_MANAGEMENT__DEFAULT_APPLICATION__SECRET: '' }
    const first = await spawnNode({ env, dataDir })
    await running(first)
    await waitFor(() => first.stderr().endsWith('\n') && first.stderr().includes('generated secret'), 'the secret on stderr')
    const lines = first.stderr().trimEnd().split('\n')
    const secret = lines[lines.length - 1]
    expect(secret).toMatch(/^\S{16,}$/)
    expect(lines[lines.length - 2]).toMatch(/default application "admin" was created with this generated secret/)
    // the log names it, without the secret
    expect(first.stdout()).toContain('created the default application with a generated secret')
    expect(first.stdout()).not.toContain(secret)
    const port = first.port('http:management' as any)
    const auth = 'Basic ' + Buffer.from(`admin:${secret}`).toString('base64')
    expect((await fetch(`http://127.0.0.1:${port}/api/v3/brokers/`, { headers: { authorization: auth } })).status).toBe(200)
    // a 401 says where the secret comes from
    const denied = await fetch(`http://127.0.0.1:${port}/api/v3/brokers/`, { headers: { authorization: API_AUTH } })
    expect(denied.status).toBe(401)
    expect(((await denied.json()) as { message: string }).message).toMatch(/management.default_application.secret.*standard error at its first start/)
    const none = await fetch(`http://127.0.0.1:${port}/api/v3/brokers/`)
    expect(((await none.json()) as { message: string }).message).toMatch(/standard error at its first start/)
    expect((await stopNode(first)).code).toBe(0)

    const second = await spawnNode({ env, dataDir })
    await running(second)
    expect(second.stderr()).not.toContain('generated secret')
    expect((await stopNode(second)).code).toBe(0)
  })
})
