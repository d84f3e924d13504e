/**
 * The cluster-wide services follow a change made on another node (docs/cluster-data.md).
 * A peer's change is simulated the way the cluster layer delivers it: `node.shared.apply`
 * with a stamp from another node's clock running a minute ahead, so it wins. The effect is
 * checked through the real interfaces: MQTT clients, the management API.
 */
import { bannedKey } from '../../node/banned/index.js'
import { hashPassword } from '../../plugins/auth/index.js'
import { APPS_TABLE } from '../../node/apps/apps.js'
import { Hlc, type SharedChange } from '../../node/store/shared.js'
import { RESOURCES_TABLE, RULES_TABLE } from '../../rules/engine.js'
import type { Resource, Rule } from '../../rules/types.js'
import { API_AUTH, closeClients, collect, connect, startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, refusedConnack } from '../helpers/mqtt.js'

/** The peer: another node whose clock is a minute ahead of this one. */
const peer = new Hlc('peer@127.0.0.1', () => Date.now() + 60_000)

let node: TestNode
/** Changes this node wrote (what its cluster layer would ship). */
const shipped: SharedChange[] = []

beforeAll(async () => {
  node = await startTestNode({ allow_anonymous: 'true', 'broker.sys_interval': '0' })
  node.shared.onLocalChange((change) => shipped.push(change))
})
afterEach(async () => {
  await closeClients()
  await closeOpened()
  shipped.length = 0
})
afterAll(async () => { await node.destroy() })

/** Applies a value (or, without one, a delete) as the peer wrote it just now. */
async function fromPeer (table: string, key: string, value?: unknown): Promise<void> {
  const applied = await node.shared.apply({ table, key, ...(value !== undefined ? { value } : {}), stamp: peer.next() })
  expect(applied).toBe(true)
}

/** Calls the node's management API with `auth` (default: the test application). */
async function api (method: string, path: string, body?: unknown, auth = API_AUTH): Promise<{ status: number, body: any }> {
  const port = node.api.server?.port
  const res = await fetch(`http://127.0.0.1:${port}/api/v3${path}`, {
    method,
    headers: { authorization: auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await res.text()
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
}

const basic = (user: string, secret: string): string => 'Basic ' + Buffer.from(`${user}:${secret}`).toString('base64')

describe('banned list', () => {
  it('refuses a client id banned on another node, and lets it in once the peer deletes the ban', async () => {
    const key = bannedKey('client_id', 'peer-banned')
    await fromPeer('banned', key, { who: 'peer-banned', as: 'client_id', reason: 'banned over there', desc: '', until: Math.floor(Date.now() / 1000) + 3600 })
    expect((await refusedConnack(node, { clientId: 'peer-banned', protocolVersion: 5 })).reasonCode).toBe(0x8a)
    expect((await api('GET', '/banned')).body.data).toEqual([expect.objectContaining({ who: 'peer-banned', as: 'client_id' })])

    await fromPeer('banned', key)
    await connect(node, { clientId: 'peer-banned', protocolVersion: 5 })
  })

  it('ships a ban added here to the cluster', async () => {
    await node.services.banned.add({ who: 'local-banned', as: 'client_id' })
    expect(shipped).toEqual([expect.objectContaining({ table: 'banned', key: bannedKey('client_id', 'local-banned'), value: expect.objectContaining({ who: 'local-banned' }) })])
    await node.services.banned.delete('local-banned', 'client_id')
  })
})

describe('built-in auth users', () => {
  beforeAll(async () => { await node.services.plugins.load('svc_auth_username') })
  afterAll(async () => { await node.services.plugins.unload('svc_auth_username') })

  it('logs in a user added on another node, and refuses its wrong password', async () => {
    const user = 'peer-user'
    await fromPeer('auth_username', user, { ...await hashPassword('sha256', 'from-peer'), created_at: Date.now() })
    await connect(node, { clientId: 'peer-user-1', username: user, password: 'from-peer' })
    expect((await refusedConnack(node, { clientId: 'peer-user-2', username: user, password: 'wrong', protocolVersion: 4 })).returnCode).toBe(4)

    // deleted on the peer: the username is unknown here again, so no password is checked (allow_anonymous)
    await fromPeer('auth_username', user)
    await connect(node, { clientId: 'peer-user-3', username: user, password: 'wrong' })
  })
})

describe('API applications', () => {
  it('lets an application added on another node call the API, until the peer deletes it', async () => {
    // as a peer of an older version stores it: the secret in clear (still accepted, hashed at start)
    const app = { app_id: 'peer-app', secret: 'peer-secret', name: 'peer', desc: '', status: true, expired: null }
    expect((await api('GET', '/brokers/', undefined, basic('peer-app', 'peer-secret'))).status).toBe(401)
    await fromPeer(APPS_TABLE, app.app_id, app)
    const ok = await api('GET', '/brokers/', undefined, basic('peer-app', 'peer-secret'))
    expect([ok.status, ok.body.code]).toEqual([200, 0])

    await fromPeer(APPS_TABLE, app.app_id, { ...app, status: false })
    expect((await api('GET', '/brokers/', undefined, basic('peer-app', 'peer-secret'))).status).toBe(401)
    await fromPeer(APPS_TABLE, app.app_id)
    expect((await api('GET', '/brokers/', undefined, basic('peer-app', 'peer-secret'))).status).toBe(401)
  })
})

describe('rules and resources', () => {
  /** A republish rule as the peer stores it (params with their defaults filled). */
  const republishRule = (id: string, rawsql: string, target: string): Rule => ({
    id,
    for: 'message.publish',
    rawsql,
    actions: [{ id: `republish_${id}_0`, name: 'built_in:republish_action', params: { target_topic: target, target_qos: 0, target_retain: false, payload_tmpl: '${payload}' } }],
    enabled: true,
    description: 'made on the peer',
    created_at: Date.now()
  })

  const rules = (): Rule[] => node.rules.rules.list()
  /** Waits for the engine to have followed a peer's change (it does so in its write queue, just after the apply). */
  const followed = async (done: () => boolean): Promise<void> => { await waitFor(done, 'the engine to follow the change', 5000) }

  /** Publishes `payload` to `topic` and resolves with what a subscriber of `out` got meanwhile. */
  async function republished (topic: string, out: string, expected: number): Promise<string[]> {
    const sub = await connect(node, { clientId: `sub-${out}` })
    await sub.subscribeAsync(out, { qos: 1 })
    const got = collect(sub)
    const pub = await connect(node, { clientId: `pub-${out}` })
    await pub.publishAsync(topic, 'hello', { qos: 1 })
    if (expected > 0) await waitFor(() => got.length >= expected, `${expected} republished messages on ${out}`)
    else await new Promise((resolve) => setTimeout(resolve, 200))
    return got.map((m) => m.payload.toString())
  }

  it('runs a rule created on another node, stops it when the peer disables it, and drops it when the peer deletes it', async () => {
    const rule = republishRule('peer_rule:1', 'SELECT payload FROM "peer/in"', 'peer/out')
    await fromPeer(RULES_TABLE, rule.id, rule)
    await followed(() => rules().some((r) => r.id === rule.id))
    const listed = (await api('GET', '/rules')).body.data.filter((r: any) => r.id === rule.id)
    expect(listed).toEqual([expect.objectContaining({ id: rule.id, rawsql: rule.rawsql, enabled: true })])
    expect(await republished('peer/in', 'peer/out', 1)).toEqual(['hello'])

    await fromPeer(RULES_TABLE, rule.id, { ...rule, enabled: false })
    await followed(() => rules().some((r) => r.id === rule.id && !r.enabled))
    expect(await republished('peer/in', 'peer/out', 0)).toEqual([])

    await fromPeer(RULES_TABLE, rule.id)
    await followed(() => !rules().some((r) => r.id === rule.id))
    await expect(api('GET', `/rules/${encodeURIComponent(rule.id)}`)).resolves.toMatchObject({ status: 404 })
    expect((await api('GET', '/rules')).body.data.map((r: any) => r.id)).not.toContain(rule.id)
  })

  it('keeps a rule from another node whose SQL does not compile out of the runtime, and goes on', async () => {
    const broken = republishRule('peer_broken:1', 'SELECT FROM WHERE "nope', 'broken/out')
    const good = republishRule('peer_good:1', 'SELECT payload FROM "good/in"', 'good/out')
    await fromPeer(RULES_TABLE, broken.id, broken)
    await fromPeer(RULES_TABLE, 'peer_junk:1', { not: 'a rule' })
    await fromPeer(RULES_TABLE, good.id, good)
    await followed(() => rules().some((r) => r.id === good.id))
    expect(await republished('good/in', 'good/out', 1)).toEqual(['hello'])
    const ids = (await api('GET', '/rules')).body.data.map((r: any) => r.id)
    expect(ids).toContain(broken.id) // stored, shown, not run (as a stored rule that no longer compiles)
    expect(ids).not.toContain('peer_junk:1')
    for (const id of [broken.id, good.id, 'peer_junk:1']) await fromPeer(RULES_TABLE, id)
  })

  it('follows resources created and deleted on another node', async () => {
    const resource: Resource = {
      id: 'web_hook:peer', name: 'peer', type: 'web_hook', config: { url: 'http://127.0.0.1:9/hook', headers: {}, method: 'POST' },
      description: 'made on the peer', attrs: 'undefined', created_at: Date.now()
    }
    const resources = (): Resource[] => node.rules.resources.list()
    await fromPeer(RESOURCES_TABLE, resource.id, resource)
    await followed(() => resources().some((r) => r.id === resource.id))
    const found = await api('GET', `/resources/${encodeURIComponent(resource.id)}`)
    expect(found.body.data).toMatchObject({ id: resource.id, type: 'web_hook', description: 'made on the peer' })
    expect((await api('GET', '/resources')).body.data.map((r: any) => r.id)).toContain(resource.id)

    await fromPeer(RESOURCES_TABLE, resource.id)
    await followed(() => !resources().some((r) => r.id === resource.id))
    expect((await api('GET', `/resources/${encodeURIComponent(resource.id)}`)).status).toBe(404)
  })

  it('ships rules and resources created here to the cluster', async () => {
    const created = await api('POST', '/rules', { rawsql: 'SELECT * FROM "local/in"', actions: [{ name: 'inspect', params: {} }] })
    expect(created.body.code).toBe(0)
    expect(shipped).toEqual([expect.objectContaining({ table: RULES_TABLE, key: created.body.data.id })])
    await api('DELETE', `/rules/${encodeURIComponent(created.body.data.id)}`)
    expect(shipped[1]).toEqual({ table: RULES_TABLE, key: created.body.data.id, stamp: expect.any(String) })

    const resource = await api('POST', '/resources', { name: 'local', type: 'web_hook', config: { url: 'http://127.0.0.1:9/hook' } })
    expect(resource.body.code).toBe(0)
    await api('DELETE', `/resources/${encodeURIComponent(resource.body.data.id)}`)
    expect(shipped.slice(2)).toEqual([
      expect.objectContaining({ table: RESOURCES_TABLE, key: resource.body.data.id, value: expect.objectContaining({ type: 'web_hook' }) }),
      { table: RESOURCES_TABLE, key: resource.body.data.id, stamp: expect.any(String) }
    ])
  })
})
