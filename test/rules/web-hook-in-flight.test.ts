/**
 * The web_hook limit of pending requests ({@link MAX_IN_FLIGHT}) holds per resource and
 * node: two nodes in one process, each with a web_hook resource of the same id, against a
 * real HTTP server that holds every request until the test releases it. One node filling
 * its limit neither refuses the other's requests nor lets its own go past the limit.
 * (Regression: the count was a module-level map by resource id, shared by every node in
 * the process.)
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { MAX_IN_FLIGHT } from '../../rules/actions/web-hook.js'
import { closeClients, connect, startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import { apiOf, type ApiCall } from '../e2e/api-actions-client.js'

/** An HTTP server that answers nothing until `release()`. */
interface HoldingServer {
  url: string
  /** Requests received so far (answered or not). */
  received: number
  /** Answers every held request 200, and the next ones at once. */
  release: () => void
  close: () => Promise<void>
}

async function startHoldingServer (): Promise<HoldingServer> {
  const held: http.ServerResponse[] = []
  let holding = true
  const server = http.createServer((req, res) => {
    holder.received++
    req.resume()
    if (holding) held.push(res)
    else res.end('ok')
  })
  const holder: HoldingServer = {
    url: '',
    received: 0,
    release: () => {
      holding = false
      for (const res of held.splice(0)) res.end('ok')
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>(resolve => server.close(() => resolve()))
    }
  }
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  holder.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  return holder
}

/** A node with a rule sending every message on `wh/limit` to web_hook resource `web_hook:limit`. */
interface HookNode { node: TestNode, api: ApiCall, ruleId: string }

async function startHookNode (url: string): Promise<HookNode> {
  const node = await startTestNode({ 'broker.sys_interval': '0' })
  const api = apiOf(() => node)
  // one connection per pending request, so that each of them reaches the server (a request
  // queued in the pool or pipelined behind a held one is pending as well, but unseen)
  const config = { url, request_timeout: 30000, pool_size: MAX_IN_FLIGHT, enable_pipelining: false }
  const resource = await api('POST', '/resources', { name: 'limit', type: 'web_hook', config, description: 'held hook' })
  expect(resource.body.data.id).toBe('web_hook:limit')
  const rule = await api('POST', '/rules', { rawsql: 'SELECT payload FROM "wh/limit"', actions: [{ name: 'data_to_webserver', params: { $resource: 'web_hook:limit' } }] })
  expect(rule.body.code).toBe(0)
  return { node, api, ruleId: rule.body.data.id }
}

interface ActionCounters { taken: number, success: number, failed: number }

/** The action's counters on the node, once `ready` holds (polled: actions run asynchronously; 10 s at most). */
async function countersWhen (n: HookNode, ready: (c: ActionCounters) => boolean): Promise<ActionCounters> {
  const deadline = Date.now() + 10000
  for (;;) {
    const counters: ActionCounters = (await n.api('GET', `/rules/${n.ruleId}`)).body.data.actions[0].metrics[0]
    if (ready(counters) || Date.now() > deadline) return counters
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

describe('web_hook pending requests', () => {
  let server: HoldingServer
  let a: HookNode
  let b: HookNode
  beforeAll(async () => {
    server = await startHoldingServer()
    a = await startHookNode(server.url)
    b = await startHookNode(server.url)
  })
  afterAll(async () => {
    await closeClients()
    server.release()
    await a?.node.destroy()
    await b?.node.destroy()
    await server.close()
  })

  it('are limited per node: a resource of the same id on another node in the process keeps its own limit', async () => {
    const pubA = await connect(a.node)
    for (let i = 0; i < MAX_IN_FLIGHT; i++) pubA.publish('wh/limit', String(i))
    await waitFor(() => server.received === MAX_IN_FLIGHT, `${MAX_IN_FLIGHT} held requests from node a`, 20000)

    // node a is at its limit: its next run fails at once, without a request
    pubA.publish('wh/limit', 'over the limit')
    expect(await countersWhen(a, c => c.failed > 0)).toEqual({ node: a.node.name, taken: MAX_IN_FLIGHT + 1, success: 0, failed: 1 })

    // node b has nothing pending: its request goes out
    const pubB = await connect(b.node)
    pubB.publish('wh/limit', 'from b')
    const countersB = await countersWhen(b, c => c.failed > 0 || server.received === MAX_IN_FLIGHT + 1)
    expect(countersB).toEqual({ node: b.node.name, taken: 1, success: 0, failed: 0 })
    expect(server.received).toBe(MAX_IN_FLIGHT + 1)

    server.release()
    expect(await countersWhen(a, c => c.success === MAX_IN_FLIGHT)).toEqual({ node: a.node.name, taken: MAX_IN_FLIGHT + 1, success: MAX_IN_FLIGHT, failed: 1 })
    expect(await countersWhen(b, c => c.success === 1)).toEqual({ node: b.node.name, taken: 1, success: 1, failed: 0 })
  })
})
