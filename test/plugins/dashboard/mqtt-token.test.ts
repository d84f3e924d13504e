/**
 * The dashboard's MQTT tokens (plugins/dashboard/mqtt-token.ts) on a real node with
 * `allow_anonymous = false` and an ACL file, through real mqtt.js clients: a token issued by
 * `POST /api/v3/mqtt_token` connects once over MQTT/WebSocket as `dashboard:<user>`, not over
 * TCP, not on another node, not twice, not after it expired; the `dashboard:` names need a
 * token; and the ACL applies to the connection as to any client.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { DASH_PASSWORD, startDashNode, type DashNode } from '../../helpers/dashboard.js'
import { startTestNode, type TestNode } from '../../helpers/node.js'
import { suback } from '../../helpers/mqtt.js'
import { createLogger } from '../../../node/logger.js'
import { createMqttTokens, registerMqttTokens, MQTT_TOKEN_TTL_MS, type IssuedMqttToken } from '../../../plugins/dashboard/mqtt-token.js'

const ADMIN_BASIC = 'Basic ' + Buffer.from(`admin:${DASH_PASSWORD}`).toString('base64')

/** Clients opened by a test, ended after it. */
const opened = new Set<MqttClient>()

/** The CONNACK code (0 when accepted) of a connection to `url`, and the client when it was accepted. */
async function attempt (url: string, opts: IClientOptions): Promise<{ code: number, client: MqttClient }> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 5, ...opts })
  opened.add(client)
  client.on('error', () => {})
  let code: number | undefined
  client.on('packetreceive', (p: any) => { if (p.cmd === 'connack') code = p.reasonCode ?? p.returnCode })
  await new Promise<void>((resolve) => {
    client.once('connect', () => resolve())
    client.once('close', () => resolve())
  })
  if (code === undefined) throw new Error(`no CONNACK from ${url}`)
  return { code, client }
}

afterEach(async () => {
  await Promise.all([...opened].map(c => new Promise<void>(resolve => c.end(true, {}, () => resolve()))))
  opened.clear()
})

describe('MQTT tokens for the dashboard user', () => {
  let dash: DashNode
  let other: TestNode
  let aclDir: string
  const wsUrl = (): string => `ws://127.0.0.1:${dash.node.port('mqtt:ws')}/mqtt`
  const tcpUrl = (): string => `mqtt://127.0.0.1:${dash.node.port('mqtt:tcp')}`

  /** A token issued to admin over the dashboard listener (HTTP Basic: no cookie, no CSRF header needed). */
  async function issue (): Promise<IssuedMqttToken> {
    const res = await fetch(`${dash.url}/api/v3/mqtt_token`, { method: 'POST', headers: { authorization: ADMIN_BASIC } })
    const body = await res.json() as { code: number, data: IssuedMqttToken }
    expect(body.code).toBe(0)
    return body.data
  }

  /** Sets allow_anonymous through the dashboard's /api/v3/configs (applied live). */
  async function setAnonymous (on: boolean): Promise<void> {
    const res = await fetch(`${dash.url}/api/v3/configs/starling`, {
      method: 'PUT', headers: { authorization: ADMIN_BASIC, 'content-type': 'application/json' }, body: JSON.stringify({ allow_anonymous: String(on) })
    })
    expect((await res.json() as { code: number }).code).toBe(0)
  }

  beforeAll(async () => {
    aclDir = mkdtempSync(join(tmpdir(), 'starling-token-acl-'))
    const aclFile = join(aclDir, 'acl.conf')
    writeFileSync(aclFile, '{deny, {user, "dashboard:admin"}, subscribe, ["secret/#"]}.\n{allow, all}.\n')
    dash = await startDashNode({ allow_anonymous: 'false', acl_file: aclFile })
    other = await startTestNode({ allow_anonymous: 'false' })
  }, 30_000)
  afterAll(async () => {
    await dash.destroy()
    await other.destroy()
    rmSync(aclDir, { recursive: true, force: true })
  })

  it('is issued to a signed-in user only, with the WebSocket listeners\' port and path', async () => {
    const refused = await fetch(`${dash.url}/api/v3/mqtt_token`, { method: 'POST' })
    expect(refused.status).toBe(401)
    const t = await issue()
    expect(t.username).toBe('dashboard:admin')
    expect(t.token).toMatch(/^[\w-]{32}$/)
    expect(t.ws).toEqual({ port: dash.node.port('mqtt:ws'), path: '/mqtt' })
    expect(t.wss).toEqual({ port: dash.node.port('mqtt:wss'), path: '/mqtt' })
    expect(t.expires_at * 1000).toBeGreaterThan(Date.now())
    expect(t.expires_at * 1000).toBeLessThanOrEqual(Date.now() + MQTT_TOKEN_TTL_MS + 1000)
    // not on the management listener: the API applications are not dashboard users
    const api = await fetch(`http://127.0.0.1:${dash.port('http:management')}/api/v3/mqtt_token`, {
      method: 'POST', headers: { authorization: 'Basic ' + Buffer.from('admin:public').toString('base64') }
    })
    expect(api.status).toBe(404)
  })

  it('connects over WebSocket with allow_anonymous = false (MQTT 5 and 3.1.1), and the connection lives on', async () => {
    for (const protocolVersion of [5, 4] as const) {
      const t = await issue()
      const { code, client } = await attempt(wsUrl(), { protocolVersion, username: t.username, password: t.token, clientId: `dash-ws-${protocolVersion}` })
      expect(code).toBe(0)
      expect(client.connected).toBe(true)
      const got = new Promise<string>(resolve => client.once('message', (_t, payload) => resolve(payload.toString())))
      await client.subscribeAsync('tokens/echo', { qos: 1 })
      await client.publishAsync('tokens/echo', `hello ${protocolVersion}`, { qos: 1 })
      expect(await got).toBe(`hello ${protocolVersion}`)
    }
  })

  it('is refused on TCP, on another node, and a second time', async () => {
    const t = await issue()
    expect((await attempt(tcpUrl(), { username: t.username, password: t.token })).code).toBe(0x86)
    // the refusal on TCP did not spend it; another node (with svc_dashboard of its own) does not know it
    expect((await attempt(`ws://127.0.0.1:${other.port('mqtt:ws')}/mqtt`, { username: t.username, password: t.token })).code).toBe(0x86)
    expect((await attempt(wsUrl(), { username: t.username, password: t.token })).code).toBe(0)
    expect((await attempt(wsUrl(), { username: t.username, password: t.token })).code).toBe(0x86)
  })

  it('keeps the dashboard: names to token holders, whatever allow_anonymous says', async () => {
    await setAnonymous(true)
    try {
      // anyone else gets in now
      expect((await attempt(wsUrl(), { username: 'someone', password: 'x' })).code).toBe(0)
      const t = await issue()
      expect((await attempt(wsUrl(), { username: 'dashboard:admin', password: 'guess' })).code).toBe(0x86)
      expect((await attempt(wsUrl(), { username: 'dashboard:someone', password: t.token })).code).toBe(0x86)
      expect((await attempt(wsUrl(), { username: 'dashboard:admin' })).code).toBe(0x86)
    } finally {
      await setAnonymous(false)
    }
  })

  it('is subject to the ACL: a topic the file denies to dashboard:admin is refused in SUBACK', async () => {
    const t = await issue()
    const { code, client } = await attempt(wsUrl(), { username: t.username, password: t.token })
    expect(code).toBe(0)
    expect(await suback(client, ['secret/plans', 'public/news'])).toEqual([0x80, 1])
  })

  // last: replaces the plugin's authenticator with one on a clock of the test's
  it('is refused once expired', async () => {
    let now = Date.now()
    const tokens = createMqttTokens(createLogger({ level: 'silent' }), () => now)
    registerMqttTokens(dash.node, tokens)
    const fresh = tokens.issue('admin')
    const stale = tokens.issue('admin')
    now += MQTT_TOKEN_TTL_MS - 1000
    expect((await attempt(wsUrl(), { username: fresh.username, password: fresh.token })).code).toBe(0)
    now += 2000
    expect((await attempt(wsUrl(), { username: stale.username, password: stale.token })).code).toBe(0x86)
    expect(tokens.size()).toBe(0)
  })
})
