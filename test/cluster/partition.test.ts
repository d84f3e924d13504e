/**
 * A real network partition: two node processes in their own network namespaces, joined by
 * a veth pair that the test takes down and up again. Each namespace has a second veth to
 * this process's namespace, for the test's MQTT and HTTP clients, so cutting the nodes'
 * link leaves the clients connected. Needs root and `ip netns` (as in CI); elsewhere the
 * test is skipped and says why.
 */
import { execFileSync } from 'node:child_process'
import mqtt, { type MqttClient } from 'mqtt'
import { spawnNode, killAllNodes, tempDir, type NodeProcess } from '../helpers/process.js'
import { runCtlOn } from '../helpers/ctl.js'
import { API_AUTH } from '../helpers/node.js'

const NS = ['stp-pa', 'stp-pb']
/** The nodes' link, and each namespace's link to this one. */
const NODE_IP = ['10.78.0.1', '10.78.0.2']
const CLIENT_IP = ['10.78.1.1', '10.78.2.1']
const HOST_IP = ['10.78.1.254', '10.78.2.254']

function ip (...args: string[]): void {
  execFileSync('ip', args, { stdio: 'pipe' })
}

function canPartition (): string | null {
  if (process.getuid?.() !== 0) return 'not root'
  try {
    ip('netns', 'add', 'stp-probe')
    ip('netns', 'del', 'stp-probe')
    return null
  } catch (err: any) {
    return `ip netns unavailable: ${String(err.message).split('\n')[0]}`
  }
}

function cleanup (): void {
  for (const ns of NS) { try { ip('netns', 'del', ns) } catch { /* absent */ } }
  for (const dev of ['stp-h0', 'stp-h1']) { try { ip('link', 'del', dev) } catch { /* gone with its namespace */ } }
}

function setUpNetwork (): void {
  cleanup()
  for (const ns of NS) {
    ip('netns', 'add', ns)
    ip('-n', ns, 'link', 'set', 'lo', 'up')
  }
  ip('link', 'add', 'stp-ab', 'type', 'veth', 'peer', 'name', 'stp-ba')
  ip('link', 'set', 'stp-ab', 'netns', NS[0])
  ip('link', 'set', 'stp-ba', 'netns', NS[1])
  ip('-n', NS[0], 'addr', 'add', `${NODE_IP[0]}/24`, 'dev', 'stp-ab')
  ip('-n', NS[1], 'addr', 'add', `${NODE_IP[1]}/24`, 'dev', 'stp-ba')
  ip('-n', NS[0], 'link', 'set', 'stp-ab', 'up')
  ip('-n', NS[1], 'link', 'set', 'stp-ba', 'up')
  for (let i = 0; i < 2; i++) {
    ip('link', 'add', `stp-h${i}`, 'type', 'veth', 'peer', 'name', `stp-n${i}`)
    ip('link', 'set', `stp-n${i}`, 'netns', NS[i])
    ip('addr', 'add', `${HOST_IP[i]}/24`, 'dev', `stp-h${i}`)
    ip('link', 'set', `stp-h${i}`, 'up')
    ip('-n', NS[i], 'addr', 'add', `${CLIENT_IP[i]}/24`, 'dev', `stp-n${i}`)
    ip('-n', NS[i], 'link', 'set', `stp-n${i}`, 'up')
  }
}

const setLink = (up: boolean): void => { ip('-n', NS[0], 'link', 'set', 'stp-ab', up ? 'up' : 'down') }

const why = canPartition()
const maybe = why === null ? describe : describe.skip
if (why !== null) console.warn(`partition test skipped: ${why}`)

maybe('a network partition between two nodes', () => {
  interface PartNode { name: string, dataDir: string, proc?: NodeProcess, i: number }
  const nodes: PartNode[] = []
  const clients: MqttClient[] = []

  const status = async (n: PartNode): Promise<Record<string, string>> => {
    const { out } = await runCtlOn({ dataDir: n.dataDir }, ['cluster', 'status', '--json'])
    return Object.fromEntries((JSON.parse(out) as Array<{ name: string, status: string }>).map(m => [m.name, m.status]))
  }
  const port = (n: PartNode, protocol: string): number =>
    n.proc!.logLines().find(l => l.msg === 'listener started' && l.protocol === protocol)!.port
  const api = async (n: PartNode, path: string, method = 'GET', body?: unknown): Promise<any> => {
    const res = await fetch(`http://${CLIENT_IP[n.i]}:${port(n, 'http:management')}/api/v3${path}`, {
      method, headers: { authorization: API_AUTH, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body)
    })
    return await res.json()
  }
  const connect = async (n: PartNode, opts: mqtt.IClientOptions = {}): Promise<MqttClient> => {
    const c = mqtt.connect({ host: CLIENT_IP[n.i], port: port(n, 'mqtt:tcp'), reconnectPeriod: 0, ...opts })
    clients.push(c)
    await new Promise<void>((resolve, reject) => { c.once('connect', () => resolve()); c.once('error', reject) })
    return c
  }
  const eventually = async (check: () => Promise<boolean> | boolean, what: string, timeoutMs = 30000): Promise<void> => {
    const deadline = Date.now() + timeoutMs
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  }

  beforeAll(async () => {
    setUpNetwork()
    for (let i = 0; i < 2; i++) {
      const n: PartNode = { name: `p${i}@${NODE_IP[i]}`, dataDir: tempDir(), i }
      n.proc = await spawnNode({
        dataDir: n.dataDir,
        wrap: ['ip', 'netns', 'exec', NS[i]],
        env: {
          STARLING_NODE__NAME: n.name,
          STARLING_CLUSTER__LISTEN: `${NODE_IP[i]}:4370`,
          STARLING_LISTENER__TCP__EXTERNAL: '0.0.0.0:0',
          STARLING_MANAGEMENT__LISTENER__HTTP: '0.0.0.0:0'
        }
      })
      nodes.push(n)
    }
    const joined = await runCtlOn({ dataDir: nodes[1].dataDir }, ['cluster', 'join', nodes[0].name])
    expect(joined.code).toBe(0)
  }, 60000)

  afterAll(async () => {
    for (const c of clients) c.end(true)
    await killAllNodes()
    cleanup()
  })

  test('both sides see the other stopped, then converge when the link returns: nodes, client ids, data and routes', async () => {
    const [a, b] = nodes
    await eventually(async () => (await status(a))[b.name] === 'running', 'the cluster to form')
    const first = await connect(a, { clientId: 'twin', protocolVersion: 5 })
    const firstClosed = new Promise<void>(resolve => first.once('close', () => resolve()))

    setLink(false)
    await eventually(async () => (await status(a))[b.name] === 'stopped', 'a to see b stopped')
    await eventually(async () => (await status(b))[a.name] === 'stopped', 'b to see a stopped')
    expect(JSON.stringify((await api(a, '/alarms/present')).data)).toContain('partitioned')

    // each side goes on alone: the same client id connects on b, data changes on both sides
    const second = await connect(b, { clientId: 'twin', protocolVersion: 5 })
    expect((await api(a, '/banned', 'POST', { who: 'cut-off', as: 'clientid', reason: 'partition' })).code).toBe(0)
    const rule = await api(b, '/rules', 'POST', { rawsql: 'SELECT * FROM "p/in"', actions: [{ name: 'do_nothing', params: {} }] })
    expect(rule.code).toBe(0)
    const sub = await connect(b)
    await sub.subscribeAsync('heal/t', { qos: 1 })

    setLink(true)
    await eventually(async () => (await status(a))[b.name] === 'running' && (await status(b))[a.name] === 'running', 'the partition to heal')
    // the client id ends on one node: the older connection (on a) is closed
    await firstClosed
    expect(second.connected).toBe(true)
    // data made on either side is on both
    await eventually(async () => (await api(b, '/banned')).data.some((x: any) => x.who === 'cut-off'), 'the banned entry on b')
    await eventually(async () => (await api(a, `/rules/${rule.data.id as string}`)).code === 0, 'the rule on a')
    // routes: a message published on a reaches the subscriber on b
    const got = new Promise<string>(resolve => sub.once('message', (_t, p) => resolve(p.toString())))
    const pub = await connect(a)
    await eventually(async () => {
      await pub.publishAsync('heal/t', 'healed', { qos: 1 })
      return await Promise.race([got.then(() => true), new Promise<boolean>(resolve => setTimeout(() => resolve(false), 300))])
    }, 'a message across the healed link')
    expect(await got).toBe('healed')
    await eventually(async () => !JSON.stringify((await api(a, '/alarms/present')).data).includes('partitioned'), 'the partitioned alarm to clear')
  }, 90000)
})
