/**
 * What the data-integration suites (test/e2e/data-*.test.ts, data-sql-suite.ts) ask of a node
 * over its API, and their polling: a resource's `is_alive` per node, an action's metrics summed
 * over the nodes.
 */
import type { ApiCall } from './api-actions-client.js'
import { startTestNode, type TestNode } from '../helpers/node.js'

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
