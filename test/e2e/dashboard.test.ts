/**
 * svc_dashboard over real HTTP (issue 21, server side): the dashboard listener, its default
 * user (configured or generated and shown once), sign-in with the spec's codes and the
 * backoff, sessions (cookie, bearer, sign-out, password change), HTTP Basic with dashboard
 * users, the dashboard users' endpoints, `starling-ctl admins`, every `/api/v3/` route behind
 * sign-in on 18083, the management listener unchanged, and no password in any answer or log.
 */
import { execFileSync } from 'node:child_process'
import https from 'node:https'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { loadConfig } from '../../node/config/index.js'
import { createLogger } from '../../node/logger.js'
import { startStarling, type Starling } from '../../bin/assemble.js'
import { API_AUTH, EPHEMERAL } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { PROJECT_ROOT } from '../helpers/process.js'
import { BACKOFF_BASE_MS } from '../../plugins/dashboard/backoff.js'
import { DASHBOARD_USERS_TABLE } from '../../plugins/dashboard/users.js'

const ADMIN_PASSWORD = 'configured-secret-1'

/** A node with its log lines captured (debug level), its dashboard port, and a cleanup. */
interface LoggedNode {
  node: Starling
  dataDir: string
  lines: string[]
  port: number
  destroy: () => Promise<void>
}

async function startLoggedNode (overrides: Record<string, string> = {}): Promise<LoggedNode> {
  const dataDir = overrides['node.data_dir'] ?? mkdtempSync(join(tmpdir(), 'starling-dash-'))
  const lines: string[] = []
  const destination = new Writable({ write (chunk, _enc, cb) { lines.push(String(chunk)); cb() } })
  const config = loadConfig({ env: {}, overrides: { ...EPHEMERAL, 'node.data_dir': dataDir, ...overrides } })
  const node = await startStarling(config, { logger: createLogger({ level: 'debug', destination }), env: {} })
  return {
    node,
    dataDir,
    lines,
    port: dashboardPort(node),
    destroy: async () => {
      await node.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

/** The bound port of a node's dashboard listener, from its listener board. */
function dashboardPort (node: Starling): number {
  const entry = node.listenerBoard.list().find(l => l.protocol === 'http:dashboard')
  if (entry === undefined) throw new Error('no http:dashboard listener')
  return Number(String(entry.listen_on).split(':').pop())
}

/** Every answer body seen, to check that no password is ever in one. */
const answers: string[] = []

interface Answer { status: number, body: any, headers: Headers }

async function call (port: number, method: string, path: string, opts: { body?: unknown, headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
  const text = await res.text()
  answers.push(text, res.headers.get('set-cookie') ?? '')
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: the start page
  }
  return { status: res.status, body, headers: res.headers }
}

const basic = (user: string, password: string): string => 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64')
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

async function signIn (port: number, username: string, password: string): Promise<Answer> {
  return await call(port, 'POST', '/api/v3/auth', { body: { username, password } })
}

async function tokenOf (port: number, username: string, password: string): Promise<string> {
  const res = await signIn(port, username, password)
  expect(res.body.code).toBe(0)
  return res.body.data.token
}

let n: LoggedNode

beforeAll(async () => {
  n = await startLoggedNode({ 'dashboard.default_user.password': ADMIN_PASSWORD })
})

afterAll(async () => {
  await n?.destroy()
})

describe('the dashboard listener', () => {
  it('listens on dashboard.listener.http and reports http:dashboard in /api/v3/listeners', async () => {
    const res = await fetch(`http://127.0.0.1:${n.node.api.server!.port}/api/v3/listeners/`, { headers: { authorization: API_AUTH } })
    const listeners = ((await res.json()) as any).data[0].listeners
    const dash = listeners.find((l: any) => l.protocol === 'http:dashboard')
    expect(dash).toMatchObject({ listen_on: `127.0.0.1:${n.port}`, acceptors: 1, max_conns: 512, shutdown_count: [] })
  })

  it('serves the start page unauthenticated, with the security headers', async () => {
    const res = await call(n.port, 'GET', '/')
    expect(res.status).toBe(200)
    expect(res.body).toContain('<div id="app"></div>')
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
  })
})

describe('sign-in (POST /api/v3/auth)', () => {
  it('signs the default user in with dashboard.default_user.password: a token, an HttpOnly SameSite=Strict cookie, and the change-password prompt', async () => {
    const res = await signIn(n.port, 'admin', ADMIN_PASSWORD)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      code: 0,
      data: { username: 'admin', tags: 'administrator', token: expect.any(String), expires_at: expect.any(Number), must_change_password: true }
    })
    const cookie = res.headers.get('set-cookie') ?? ''
    expect(cookie).toMatch(/^starling_dashboard_session=[\w.-]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict$/)
    expect(res.headers.get('cache-control')).toBe('no-store')
  })

  it('answers a wrong password or an unknown user with 103, and slows the next attempt down', async () => {
    const first = await signIn(n.port, 'nobody-here', 'wrong-1')
    expect(first.status).toBe(401)
    expect(first.body).toEqual({ code: 103, message: 'wrong username or password' })
    const started = Date.now()
    const second = await signIn(n.port, 'nobody-here', 'wrong-2')
    expect(second.body.code).toBe(103)
    expect(Date.now() - started).toBeGreaterThanOrEqual(BACKOFF_BASE_MS - 20)
    expect((await signIn(n.port, 'admin', 'not-the-password')).body.code).toBe(103)
    // a success clears the address's count
    expect((await signIn(n.port, 'admin', ADMIN_PASSWORD)).body.code).toBe(0)
  })

  it('answers an empty or missing user name or password with 104', async () => {
    for (const body of [{ username: '', password: 'x' }, { username: 'admin', password: '' }, { username: 'admin' }, {}]) {
      const res = await call(n.port, 'POST', '/api/v3/auth', { body })
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 400, code: 104 })
    }
    expect((await call(n.port, 'POST', '/api/v3/auth', { body: 'not an object' as unknown })).body.code).toBe(109)
  })
})

describe('sessions', () => {
  it('takes the token as Authorization: Bearer and as the cookie; a cookie write needs X-Requested-With', async () => {
    const res = await signIn(n.port, 'admin', ADMIN_PASSWORD)
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]
    expect((await call(n.port, 'GET', '/api/v3/nodes/', { headers: bearer(res.body.data.token) })).body.code).toBe(0)
    expect((await call(n.port, 'GET', '/api/v3/nodes/', { headers: { cookie } })).body.code).toBe(0)
    const write = { body: { topic: 't/1', payload: 'x', qos: 0, clientid: 'dash' } }
    const refused = await call(n.port, 'POST', '/api/v3/mqtt/publish', { ...write, headers: { cookie } })
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 403, code: 102 })
    expect(refused.body.message).toContain('x-requested-with')
    expect((await call(n.port, 'POST', '/api/v3/mqtt/publish', { ...write, headers: { cookie, 'x-requested-with': 'XMLHttpRequest' } })).body.code).toBe(0)
  })

  it('refuses a write whose Origin is another site, whatever its credentials', async () => {
    const token = await tokenOf(n.port, 'admin', ADMIN_PASSWORD)
    const res = await call(n.port, 'POST', '/api/v3/mqtt/publish', {
      body: { topic: 't/1', payload: 'x' }, headers: { ...bearer(token), origin: 'https://evil.example' }
    })
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 403, code: 102 })
    const same = await call(n.port, 'POST', '/api/v3/mqtt/publish', {
      body: { topic: 't/1', payload: 'x', clientid: 'dash' }, headers: { ...bearer(token), origin: `http://127.0.0.1:${n.port}` }
    })
    expect(same.body.code).toBe(0)
  })

  it('ends every token of the user at sign-out, and clears the cookie', async () => {
    const token = await tokenOf(n.port, 'admin', ADMIN_PASSWORD)
    const other = await tokenOf(n.port, 'admin', ADMIN_PASSWORD)
    const out = await call(n.port, 'POST', '/api/v3/logout', { headers: bearer(token) })
    expect(out.body).toEqual({ code: 0 })
    expect(out.headers.get('set-cookie')).toMatch(/^starling_dashboard_session=; Path=\/; Max-Age=0;/)
    for (const t of [token, other]) {
      const res = await call(n.port, 'GET', '/api/v3/nodes/', { headers: bearer(t) })
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 401, code: 104 })
    }
    expect((await call(n.port, 'GET', '/api/v3/nodes/', { headers: bearer('not.a.token') })).status).toBe(401)
  })
})

describe('HTTP Basic and the management listener', () => {
  it('takes HTTP Basic with a dashboard user on 18083 (103 when wrong) and refuses it on 8080', async () => {
    expect((await call(n.port, 'GET', '/api/v3/nodes/', { headers: { authorization: basic('admin', ADMIN_PASSWORD) } })).body.code).toBe(0)
    // verified credentials are cached: the second request is not slowed by bcrypt
    expect((await call(n.port, 'GET', '/api/v3/brokers/', { headers: { authorization: basic('admin', ADMIN_PASSWORD) } })).body.code).toBe(0)
    const wrong = await call(n.port, 'GET', '/api/v3/nodes/', { headers: { authorization: basic('admin', 'wrong') } })
    expect({ status: wrong.status, code: wrong.body.code }).toEqual({ status: 401, code: 103 })
    const mgmt = n.node.api.server!.port
    const onApi = await call(mgmt, 'GET', '/api/v3/nodes/', { headers: { authorization: basic('admin', ADMIN_PASSWORD) } })
    expect({ status: onApi.status, code: onApi.body.code }).toEqual({ status: 401, code: 103 })
    expect(onApi.headers.get('www-authenticate')).toBe('Basic realm="Starling management API"')
    expect((await call(mgmt, 'GET', '/api/v3/nodes/', { headers: { authorization: API_AUTH } })).body.code).toBe(0)
    // an API application is not a dashboard user
    expect((await call(n.port, 'GET', '/api/v3/nodes/', { headers: { authorization: API_AUTH } })).body.code).toBe(103)
    // the dashboard's endpoints are not on 8080
    expect((await call(mgmt, 'GET', '/api/v3/users', { headers: { authorization: API_AUTH } })).status).toBe(404)
    expect((await call(mgmt, 'POST', '/api/v3/auth', { body: { username: 'admin', password: ADMIN_PASSWORD } })).status).toBe(401)
  })

  it('refuses every /api/v3/ route on 18083 without sign-in (401, code 104), and serves them all signed in', async () => {
    const token = await tokenOf(n.port, 'admin', ADMIN_PASSWORD)
    const index = await call(n.port, 'GET', '/api/v3/', { headers: bearer(token) })
    const routes: Array<{ method: string, path: string, name: string }> = index.body.data
    // the management API's routes and the dashboard's own
    const names = routes.map(r => r.name)
    for (const name of ['list_nodes', 'list_apps', 'list_users', 'create_user', 'change_pwd', 'monitor_counters', 'monitor_current_metrics', 'create_mqtt_token']) expect(names).toContain(name)
    expect(routes.length).toBe(n.node.api.routes.all().length + 8)
    const refusals = await Promise.all([...routes, { method: 'GET', path: '/api/v3/', name: 'index' }, { method: 'GET', path: '/api/v3/openapi.json', name: 'openapi' }, { method: 'GET', path: '/api/v3/no/such/thing', name: 'none' }]
      .map(async r => {
        const res = await call(n.port, r.method, r.path.replace(/:(\w+)/g, 'x'), { body: r.method === 'GET' || r.method === 'DELETE' ? undefined : {} })
        return [r.method, r.path, res.status, res.body.code]
      }))
    expect(refusals.filter(([, , status, code]) => status !== 401 || code !== 104)).toEqual([])
  })
})

describe('dashboard users (/api/v3/users, /change_pwd)', () => {
  let token: string
  beforeAll(async () => { token = await tokenOf(n.port, 'admin', ADMIN_PASSWORD) })
  const as = (): Record<string, string> => bearer(token)

  it('adds, lists, updates and deletes users with the spec\'s codes 104, 105, 106, 113', async () => {
    expect((await call(n.port, 'POST', '/api/v3/users', { headers: as(), body: { username: 'bob', password: 'bob-pass-1', tags: 'viewer' } })).body).toEqual({ code: 0 })
    expect((await call(n.port, 'POST', '/api/v3/users', { headers: as(), body: { username: 'bob', password: 'other', tags: '' } })).body.code).toBe(113)
    expect((await call(n.port, 'POST', '/api/v3/users', { headers: as(), body: { username: 'carl', password: '' } })).body.code).toBe(104)
    expect((await call(n.port, 'POST', '/api/v3/users', { headers: as(), body: { username: '', password: 'x' } })).body.code).toBe(104)
    const list = await call(n.port, 'GET', '/api/v3/users', { headers: as() })
    expect(list.body).toEqual({ code: 0, data: expect.arrayContaining([{ username: 'admin', tags: 'administrator' }, { username: 'bob', tags: 'viewer' }]) })
    for (const u of list.body.data) expect(Object.keys(u).sort()).toEqual(['tags', 'username'])
    expect((await call(n.port, 'PUT', '/api/v3/users/bob', { headers: as(), body: { tags: 'ops' } })).body).toEqual({ code: 0 })
    expect((await call(n.port, 'GET', '/api/v3/users', { headers: as() })).body.data).toContainEqual({ username: 'bob', tags: 'ops' })
    const missing = await call(n.port, 'PUT', '/api/v3/users/nobody', { headers: as(), body: { tags: 'x' } })
    expect({ status: missing.status, code: missing.body.code }).toEqual({ status: 404, code: 105 })
    expect((await call(n.port, 'DELETE', '/api/v3/users/admin', { headers: as() })).body.code).toBe(106)
    // bob signs in, then is deleted: his token ends with him
    const bobToken = await tokenOf(n.port, 'bob', 'bob-pass-1')
    expect((await call(n.port, 'DELETE', '/api/v3/users/bob', { headers: as() })).body).toEqual({ code: 0 })
    expect((await call(n.port, 'GET', '/api/v3/users', { headers: bearer(bobToken) })).status).toBe(401)
    expect((await call(n.port, 'DELETE', '/api/v3/users/bob', { headers: as() })).body.code).toBe(105)
  })

  it('changes a password with the old one (114 when wrong, 105 for an unknown user), ending the user\'s sessions and the prompt', async () => {
    await call(n.port, 'POST', '/api/v3/users', { headers: as(), body: { username: 'dora', password: 'dora-old-1', tags: '' } })
    const doraToken = await tokenOf(n.port, 'dora', 'dora-old-1')
    const wrong = await call(n.port, 'PUT', '/api/v3/change_pwd/dora', { headers: as(), body: { old_pwd: 'nope', new_pwd: 'dora-new-1' } })
    expect({ status: wrong.status, body: wrong.body }).toEqual({ status: 400, body: { code: 114, message: 'old password wrong' } })
    expect((await call(n.port, 'PUT', '/api/v3/change_pwd/nobody', { headers: as(), body: { old_pwd: 'a', new_pwd: 'b' } })).body.code).toBe(105)
    expect((await call(n.port, 'PUT', '/api/v3/change_pwd/dora', { headers: as(), body: { old_pwd: 'dora-old-1', new_pwd: '' } })).body.code).toBe(104)
    expect((await call(n.port, 'PUT', '/api/v3/change_pwd/dora', { headers: as(), body: { old_pwd: 'dora-old-1', new_pwd: 'dora-new-1' } })).body).toEqual({ code: 0 })
    expect((await call(n.port, 'GET', '/api/v3/users', { headers: bearer(doraToken) })).status).toBe(401)
    expect((await signIn(n.port, 'dora', 'dora-old-1')).body.code).toBe(103)
    expect((await signIn(n.port, 'dora', 'dora-new-1')).body.data.must_change_password).toBe(false)
  })
})

describe('starling-ctl admins', () => {
  it('adds, changes the password of and deletes dashboard users as emqx_ctl admins', async () => {
    expect(await runCtlOn(n, ['admins', 'add', 'erin', 'erin-pass-1', 'ops'])).toEqual({ code: 0, out: 'ok\n', err: '' })
    const erinToken = await tokenOf(n.port, 'erin', 'erin-pass-1')
    const users = (await call(n.port, 'GET', '/api/v3/users', { headers: bearer(erinToken) })).body.data
    expect(users).toContainEqual({ username: 'erin', tags: 'ops' })
    const again = await runCtlOn(n, ['admins', 'add', 'erin', 'x'])
    expect(again.code).toBe(1)
    expect(again.err).toContain('dashboard user erin already exists')
    expect(await runCtlOn(n, ['admins', 'passwd', 'erin', 'erin-pass-2'])).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect((await call(n.port, 'GET', '/api/v3/users', { headers: bearer(erinToken) })).status).toBe(401)
    expect((await signIn(n.port, 'erin', 'erin-pass-2')).body.code).toBe(0)
    expect(await runCtlOn(n, ['admins', 'del', 'erin'])).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect((await runCtlOn(n, ['admins', 'del', 'erin'])).err).toContain('does not exist')
    expect((await runCtlOn(n, ['admins', 'del', 'admin'])).err).toContain('cannot be deleted')
    expect((await runCtlOn(n, ['admins', 'passwd', 'nobody', 'x'])).err).toContain('does not exist')
  })
})

describe('a node started without dashboard.default_user.password', () => {
  it('generates the default user\'s password (dashboard.default_user.login), shows it once in a warn line, and signs in with it', async () => {
    const m = await startLoggedNode({ 'dashboard.default_user.login': 'root' })
    try {
      const shown = m.lines.map(l => JSON.parse(l)).filter(l => l.password !== undefined)
      expect(shown).toHaveLength(1)
      expect(shown[0]).toMatchObject({ level: 40, username: 'root' })
      const generated: string = shown[0].password
      expect(generated).toMatch(/^[\w-]{24}$/)
      const res = await signIn(m.port, 'root', generated)
      expect(res.body.data).toMatchObject({ username: 'root', tags: 'administrator', must_change_password: true })
      expect((await call(m.port, 'GET', '/api/v3/users', { headers: bearer(res.body.data.token) })).body.data).toEqual([{ username: 'root', tags: 'administrator' }])
      expect((await call(m.port, 'DELETE', '/api/v3/users/root', { headers: bearer(res.body.data.token) })).body.code).toBe(106)
      // the generated password (nothing to guess) is a salted SHA-256; a chosen one is bcrypt
      const stored = (): string => (m.node.shared.table(DASHBOARD_USERS_TABLE).get('root') as { password_hash: string }).password_hash
      expect(stored()).toMatch(/^sha256:[0-9a-f]{32}:[0-9a-f]{64}$/)
      expect((n.node.shared.table(DASHBOARD_USERS_TABLE).get('admin') as { password_hash: string }).password_hash).toMatch(/^\$2[ab]\$10\$/)
      // a restart does not generate another
      const dataDir = m.dataDir
      await m.node.stop()
      const again = await startLoggedNode({ 'node.data_dir': dataDir, 'dashboard.default_user.login': 'root' })
      try {
        expect(again.lines.filter(l => l.includes('"password"'))).toEqual([])
        expect((await signIn(again.port, 'root', generated)).body.code).toBe(0)
      } finally {
        await again.destroy()
      }
    } finally {
      rmSync(m.dataDir, { recursive: true, force: true })
    }
  })
})

describe('the dashboard over HTTPS, and unloading', () => {
  it('serves dashboard.listener.https with its keyfile and certfile (Secure cookie), and stops both listeners on unload', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'starling-dash-certs-'))
    execFileSync('bash', [join(PROJECT_ROOT, 'etc/certs/make-dev-certs.sh'), dir], { stdio: 'pipe' })
    const m = await startLoggedNode({
      'dashboard.default_user.password': ADMIN_PASSWORD,
      'dashboard.listener.https': '127.0.0.1:0',
      'dashboard.listener.https.keyfile': join(dir, 'key.pem'),
      'dashboard.listener.https.certfile': join(dir, 'cert.pem')
    })
    try {
      const port = m.lines.map(l => JSON.parse(l)).find(l => l.protocol === 'https:dashboard').port as number
      const res = await new Promise<{ status: number, cookie: string, body: any }>((resolve, reject) => {
        const req = https.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/v3/auth', ca: readFileSync(join(dir, 'cacert.pem')), headers: { 'content-type': 'application/json' } }, (r) => {
          let text = ''
          r.on('data', (c) => { text += String(c) })
          r.on('end', () => resolve({ status: r.statusCode ?? 0, cookie: String(r.headers['set-cookie'] ?? ''), body: JSON.parse(text) }))
        })
        req.on('error', reject)
        req.end(JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }))
      })
      expect(res.body.code).toBe(0)
      expect(res.cookie).toMatch(/; Secure$/)
      await m.node.services.plugins.unload('svc_dashboard')
      expect(m.node.listenerBoard.list().map(l => l.protocol)).not.toContain('http:dashboard')
      await expect(fetch(`http://127.0.0.1:${m.port}/`)).rejects.toThrow()
      await m.node.services.plugins.load('svc_dashboard')
      expect(m.node.listenerBoard.list().map(l => l.protocol)).toContain('http:dashboard')
    } finally {
      await m.destroy()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('passwords', () => {
  it('are in no answer and no log line (but the generated one, shown once)', () => {
    const passwords = [ADMIN_PASSWORD, 'bob-pass-1', 'dora-old-1', 'dora-new-1', 'erin-pass-1', 'erin-pass-2', 'wrong-1', 'not-the-password']
    const text = answers.join('\n') + n.lines.join('')
    for (const p of passwords) expect(text).not.toContain(p)
    expect(n.lines.join('')).not.toMatch(/\$2[aby]\$/)
    expect(answers.join('\n')).not.toMatch(/\$2[aby]\$|password_hash/)
  })
})
