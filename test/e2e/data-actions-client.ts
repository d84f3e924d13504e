/**
 * What the data-integration suites (test/e2e/data-*.test.ts, data-sql-suite.ts) ask of a node
 * over its API, and their polling: a resource's `is_alive` per node, an action's metrics summed
 * over the nodes; the two-node cluster and the lifecycle a suite runs it in; the SIGKILL of a
 * node with a buffered action.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { apiOf, type ApiCall } from './api-actions-client.js'
import { envVarName } from '../../node/config/index.js'
import { API_AUTH, closeClients, startTestNode, type TestNode } from '../helpers/node.js'
import { connectTo, publishUntilClosed, spawnNode, stopNode, tempDir, type NodeProcess } from '../helpers/process.js'
import { freePort, type ServerProcess } from '../helpers/servers/index.js'

/** An action's counters, summed over the nodes. */
export interface ActionTotals { taken: number, success: number, failed: number }

/** Polls `check` (async) every 25 ms until it is true; throws naming `what` after `timeoutMs`. */
export async function until (check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}

/** `is_alive` of resource `id` by node name (`GET /resources/:id`). */
export async function resourceStatus (api: ApiCall, id: string): Promise<Record<string, boolean>> {
  const status: Array<{ node: string, is_alive: boolean }> = (await api('GET', `/resources/${id}`)).body.data.status
  return Object.fromEntries(status.map((x) => [x.node, x.is_alive]))
}

/** The first action's metrics of rule `id`, summed over the nodes (`GET /rules/:id`). */
export async function actionTotals (api: ApiCall, id: string): Promise<ActionTotals> {
  const per: ActionTotals[] = (await api('GET', `/rules/${id}`)).body.data.actions[0].metrics
  return per.reduce((a, m) => ({ taken: a.taken + m.taken, success: a.success + m.success, failed: a.failed + m.failed }), { taken: 0, success: 0, failed: 0 })
}

/**
 * Two test nodes named `<prefix>1@127.0.0.1` and `<prefix>2@127.0.0.1` with `plugin` loaded,
 * the second joined to the first: each data suite's cluster.
 */
export async function startDataCluster (prefix: string, plugin: string): Promise<[TestNode, TestNode]> {
  const init = { plugins: [plugin] }
  const n1 = await startTestNode({ 'node.name': `${prefix}1@127.0.0.1`, 'broker.sys_interval': '0' }, undefined, init)
  const n2 = await startTestNode({ 'node.name': `${prefix}2@127.0.0.1`, 'broker.sys_interval': '0' }, undefined, init)
  await n2.cluster.join(`${prefix}1@127.0.0.1:${n1.cluster.mesh.port as number}`)
  return [n1, n2]
}

/** Deletes every rule, then every resource (what a test made), through `api`. */
export async function clearRulesAndResources (api: ApiCall): Promise<void> {
  for (const rule of (await api('GET', '/rules')).body.data) await api('DELETE', `/rules/${rule.id as string}`)
  for (const res of (await api('GET', '/resources')).body.data) await api('DELETE', `/resources/${res.id as string}`)
}

/** The numbers `xs` as runs (`0-2,5,7-9`, in the order given): what a failed assertion shows of a backend's rows. */
export function seqRanges (xs: readonly number[]): string {
  const runs: string[] = []
  for (let i = 0; i < xs.length;) {
    let j = i
    while (j + 1 < xs.length && xs[j + 1] === xs[j] + 1) j++
    runs.push(j === i ? String(xs[i]) : `${xs[i]}-${xs[j]}`)
    i = j + 1
  }
  return runs.join(',')
}

/** What {@link useDataCluster} hands a suite: its server and nodes once started, and each node's API. */
export interface DataCluster<S extends ServerProcess> {
  readonly server: S
  readonly n1: TestNode
  readonly n2: TestNode
  /** The API of the first node, of the second. */
  readonly api: ApiCall
  readonly api2: ApiCall
  /** Stops the second node and starts it again on its data directory, joined to the first. */
  restartSecond: () => Promise<void>
}

/**
 * The lifecycle of a data suite (call inside its `describe`): the server (`start`) and a
 * {@link startDataCluster} before all; after each test the clients closed, a killed server
 * restarted and the rules and resources cleared; after all, everything stopped.
 */
export function useDataCluster<S extends ServerProcess> (prefix: string, plugin: string, start: () => Promise<S>): DataCluster<S> {
  let server: S | undefined
  let nodes: [TestNode, TestNode] | undefined
  const started = <T>(value: T | undefined): T => { if (value === undefined) throw new Error('the data cluster has not started'); return value }
  const cluster: DataCluster<S> = {
    get server () { return started(server) },
    get n1 () { return started(nodes)[0] },
    get n2 () { return started(nodes)[1] },
    api: apiOf(() => cluster.n1),
    api2: apiOf(() => cluster.n2),
    async restartSecond () {
      const [n1, n2] = started(nodes)
      const dataDir = n2.dataDir
      await n2.stop()
      const again = await startTestNode({ 'node.name': `${prefix}2@127.0.0.1`, 'broker.sys_interval': '0' }, dataDir, { plugins: [plugin] })
      nodes = [n1, again]
      await again.cluster.join(`${prefix}1@127.0.0.1:${n1.cluster.mesh.port as number}`)
    }
  }
  beforeAll(async () => {
    server = await start()
    nodes = await startDataCluster(prefix, plugin)
  }, 60_000)
  afterEach(async () => {
    await closeClients()
    if (server !== undefined && server.pid === undefined) await server.restart()
    await clearRulesAndResources(cluster.api)
  })
  afterAll(async () => {
    await nodes?.[1].destroy()
    await nodes?.[0].destroy()
    await server?.close()
  })
  return cluster
}

/** What {@link ackedRowsSurviveSigkill} needs of one backend. */
export interface SigkillCase {
  /** The backend's plugin, loaded on the spawned node. */
  plugin: string
  /**
   * Creates (over the node's API) a resource with `local_buffer` on and a rule whose action
   * writes the payload of each `crash/#` message (a number) as one row, with a `batch_time`
   * of at least 100 ms so that an unheld PUBACK would go out before its row is on disk.
   */
  setUp: (api: ApiCall) => Promise<void>
  /** Stops and starts the backend's server. */
  stopServer: () => Promise<void>
  restartServer: () => Promise<void>
  /** The numbers written so far, in the order the server keeps them. */
  rows: () => Promise<number[]>
}

/**
 * The usual {@link SigkillCase.setUp}: a resource of `type` with `config` and `local_buffer`
 * on, and a rule running `action` with `params` (batched by 1,000 rows or 150 ms) on `seq`,
 * the payload of every `crash/#` message.
 */
export async function crashRule (api: ApiCall, name: string, type: string, config: Record<string, unknown>, action: string, params: Record<string, unknown>): Promise<void> {
  const created = await api('POST', '/resources', { name, type, config: { ...config, local_buffer: true } })
  expect([created.body.code, created.body.message]).toEqual([0, undefined])
  const rule = await api('POST', '/rules', {
    rawsql: 'SELECT payload as seq FROM "crash/#"',
    actions: [{ name: action, params: { $resource: created.body.data.id, batch_size: 1000, batch_time: 150, ...params } }]
  })
  expect([rule.body.code, rule.body.message]).toEqual([0, undefined])
}

/**
 * docs/integrations.md, "A publisher's acknowledgement means the row is on disk": a real node
 * process with `c.plugin`, the backend stopped, one publisher with 50 QoS 1 messages in flight,
 * the node SIGKILLed once 1,000 were acknowledged; once the node restarted and the backend is
 * back, every acknowledged number is written, the first arrivals in publish order (at least
 * once: a batch written just before the kill may come twice). Resolves with what it counted.
 */
export async function ackedRowsSurviveSigkill (c: SigkillCase): Promise<{ acked: number, sent: number }> {
  const dataDir = tempDir()
  writeFileSync(join(dataDir, 'loaded_plugins'), `{svc_rule_engine, true}.\n{${c.plugin}, true}.\n`)
  const apiPort = await freePort()
  const env = { [envVarName('management.listener.http')]: `127.0.0.1:${apiPort}` }
  let node: NodeProcess | undefined = await spawnNode({ env, dataDir })
  let stopped = false
  try {
    await c.setUp(apiAt(apiPort))
    await c.stopServer()
    stopped = true
    const pub = await connectTo(node.port('mqtt:tcp'), { reconnectPeriod: 0 })
    pub.on('error', () => {})
    const { acked, sent } = await publishUntilClosed(pub, 'crash/a', 50, (_n, count) => { if (count >= 1000) node!.kill('SIGKILL') })
    await node.exited
    node = await spawnNode({ env, dataDir })
    await c.restartServer()
    stopped = false
    await until(async () => { const got = new Set(await c.rows()); return acked.every((n) => got.has(n)) }, `the ${acked.length} acknowledged rows`, 30_000)
    const ackedSet = new Set(acked)
    const order = [...new Set(await c.rows())].filter((n) => ackedSet.has(n))
    expect(order).toEqual([...acked].sort((a, b) => a - b))
    return { acked: acked.length, sent }
  } finally {
    if (node !== undefined) await stopNode(node, 'SIGKILL')
    if (stopped) await c.restartServer()
  }
}

/** An {@link ApiCall} on the management listener at `port` (a spawned node's). */
export function apiAt (port: number): ApiCall {
  return async (method, path, body) => {
    const headers: Record<string, string> = { authorization: API_AUTH }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`http://127.0.0.1:${port}/api/v3${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
  }
}
