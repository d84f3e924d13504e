/**
 * `starling-ctl data export|import` and the API's `/data/export`, `/data/import`,
 * `/data/file` (EMQ X 4.4's paths) against spawned `bin/starling` processes: EMQ X 4.0, 4.2
 * and 4.4 backups imported and each entity checked through the API and by what it does
 * (a banned client refused at CONNECT, a built-in auth entry's password accepted, an
 * imported rule republishing, a dashboard user signing in), a malformed file refused with
 * nothing changed, the export's file mode and masked credentials, and our own export
 * imported into a fresh node. Needs `dist/` (`npm run build`). Fixtures: test/fixtures/backup/.
 */
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import {
  PROJECT_ROOT, spawnNode, killAllNodes, connectTo, closeProcessClients, runCtl, within, type NodeProcess
} from '../helpers/process.js'

const FIXTURES = 'test/fixtures/backup'
const API_AUTH = 'Basic ' + Buffer.from('admin:public').toString('base64')

let node: NodeProcess

beforeAll(async () => {
  node = await spawnNode()
  for (const plugin of ['svc_auth_clientid', 'svc_auth_username']) {
    const run = await runCtl(['plugins', 'load', plugin], node.env)
    expect(run.stderr).toBe('')
  }
}, 60000)
afterEach(async () => { await closeProcessClients() })
afterAll(async () => { await killAllNodes() })

/** A `/api/v3` call on `target`'s management listener; answers the status and the JSON body. */
async function api (target: NodeProcess, method: string, path: string, body?: unknown, auth = API_AUTH): Promise<{ status: number, body: any }> {
  const port = (target.ports as Record<string, number>)['http:management']
  const res = await fetch(`http://127.0.0.1:${port}/api/v3${path}`, {
    method,
    headers: { authorization: auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: await res.json() }
}

/** Whether `user`/`password` are let in by the dashboard listener of `target` (HTTP Basic, as EMQ X 4's dashboard API). */
async function dashboardSignsIn (target: NodeProcess, user: string, password: string): Promise<boolean> {
  const port = (target.ports as Record<string, number>)['http:dashboard']
  const res = await fetch(`http://127.0.0.1:${port}/api/v3/users`, { headers: { authorization: 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64') } })
  return res.status === 200
}

/** Whether an MQTT CONNECT with `opts` to `target` is accepted (MQTT 3.1.1 sends a password only with a username [MQTT-3.1.2-22]). */
async function connects (target: NodeProcess, opts: { clientId: string, username?: string, password?: string }): Promise<boolean> {
  try {
    const client = await connectTo(target.port('mqtt:tcp'), { protocolVersion: 4, ...opts })
    await client.endAsync()
    return true
  } catch {
    return false
  }
}

/** A ctl import of `file` on `target`; fails the test unless it succeeds. */
async function ctlImport (target: NodeProcess, file: string, ...extra: string[]): Promise<string> {
  const run = await runCtl(['data', 'import', file, ...extra], target.env)
  expect(run.stderr).toBe('')
  expect(run.code).toBe(0)
  return run.stdout
}

/** The newest export's content, written by `data export` on `target`. */
async function ctlExport (target: NodeProcess, ...extra: string[]): Promise<{ path: string, data: any }> {
  const run = await runCtl(['data', 'export', ...extra], target.env)
  expect(run.stderr).toBe('')
  const path = /exported to (\S+)\.\n$/.exec(run.stdout)?.[1]
  if (path === undefined) throw new Error(`no path in ${run.stdout}`)
  return { path, data: JSON.parse(readFileSync(path, 'utf8')) }
}

describe('data import of an EMQ X 4.2 backup (starling-ctl)', () => {
  let report: string
  beforeAll(async () => { report = await ctlImport(node, `${FIXTURES}/emqx42-backup.json`) })

  it('reports what it imported, the default application it kept and the ACL rules to write by hand', () => {
    expect(report).toContain('The data has been imported successfully.\nImported (EMQ X 4.2 format): auth_clientid 1, auth_username 1, users 1\n')
    expect(report).toContain('Skipped apps admin: the default application comes from management.default_application.*')
    expect(report).toContain('Skipped acl_mnesia {user, "emqx_c"} pub Topic/A: Starling has no ACL table; add this rule to etc/acl.conf: {allow, {user, "emqx_c"}, publish, ["Topic/A"]}.')
    expect(report).toContain('imported as usernames (EMQ X\'s default auth.mnesia.as = username)')
  })

  it('lets the auth_clientid entry connect with its EMQ X password and refuses a wrong one', async () => {
    expect((await api(node, 'GET', '/auth_clientid')).body.data).toContain('emqx_clientid')
    expect(await connects(node, { clientId: 'emqx_clientid', username: 'anyname', password: 'emqx_p' })).toBe(true)
    expect(await connects(node, { clientId: 'emqx_clientid', username: 'anyname', password: 'wrong' })).toBe(false)
  })

  it('lets the 4.2 auth_mnesia user (bare SHA-256) connect with its password', async () => {
    expect((await api(node, 'GET', '/auth_username')).body.data).toContain('emqx_c')
    expect(await connects(node, { clientId: 'c-emqx_c', username: 'emqx_c', password: 'emqx_p' })).toBe(true)
    expect(await connects(node, { clientId: 'c-emqx_c', username: 'emqx_c', password: 'emqx_q' })).toBe(false)
  })

  it('lets the dashboard admin sign in with its EMQ X password (salted MD5) and rehashes it with bcrypt', async () => {
    expect(await dashboardSignsIn(node, 'admin', 'nope')).toBe(false)
    expect(await dashboardSignsIn(node, 'admin', 'public')).toBe(true)
    const { data } = await ctlExport(node)
    const admin = data.users.find((u: any) => u.username === 'admin')
    expect(Buffer.from(admin.password, 'base64').toString('utf8')).toMatch(/^\$2[aby]\$10\$/)
    expect(await dashboardSignsIn(node, 'admin', 'public')).toBe(true)
  })
})

describe('data import of an EMQ X 4.4 backup (POST /data/import with the backup as the body)', () => {
  let report: any
  beforeAll(async () => {
    const backup = JSON.parse(readFileSync(join(PROJECT_ROOT, FIXTURES, 'emqx44-backup.json'), 'utf8'))
    const res = await api(node, 'POST', '/data/import', backup)
    expect(res.body.code).toBe(0)
    report = res.body.data
  })

  it('answers the counts and lists the Enterprise resource and the rule bound to it as skipped', () => {
    expect(report.version).toBe('4.4')
    expect(report.imported).toMatchObject({ rules: 2, resources: 1, schemas: 1, blacklist: 3, apps: 1, users: 1, auth_clientid: 1, auth_username: 1, acl_mnesia: 0 })
    expect(report.skipped).toEqual(expect.arrayContaining([
      { section: 'resources', entry: 'resource:kafka44', reason: expect.stringContaining('resource type bridge_kafka is not provided here') },
      { section: 'rules', entry: 'rule:kafka44', reason: 'its resource resource:kafka44 is not imported' },
      { section: 'blacklist', entry: 'client_id long-gone', reason: 'expired at 1600000000' }
    ]))
  })

  it('shows the rules, the resource and the schema through the API, ids kept', async () => {
    const rule = (await api(node, 'GET', '/rules/rule:republish44')).body.data
    expect(rule).toMatchObject({ id: 'rule:republish44', rawsql: 'SELECT payload FROM "t/in"', enabled: true, description: 'copies t/in to t/out' })
    expect(rule.actions[0]).toMatchObject({ name: 'republish', params: { target_topic: 't/out' } })
    const resource = (await api(node, 'GET', '/resources/resource:hook44')).body.data
    expect(resource).toMatchObject({ type: 'web_hook', description: 'a web server', config: { url: 'http://127.0.0.1:9/hook?token=******' } })
    expect((await api(node, 'GET', '/schemas/sensor_avro')).body.data).toMatchObject({ parser_type: 'avro', description: 'a sensor reading' })
  })

  it('runs the imported rule: a message to t/in is republished to t/out', async () => {
    const sub = await connectTo(node.port('mqtt:tcp'), { clientId: 'sub-out' })
    await sub.subscribeAsync('t/out', { qos: 1 })
    const got = new Promise<string>(resolve => sub.on('message', (_t, payload) => resolve(payload.toString())))
    const pub = await connectTo(node.port('mqtt:tcp'), { clientId: 'pub-in' })
    await pub.publishAsync('t/in', 'hello from 4.4', { qos: 1 })
    expect(await within(got, 10000, 'the republished message')).toBe('hello from 4.4')
  })

  it('refuses the banned client id, username and address at CONNECT, and lets others in', async () => {
    expect((await api(node, 'GET', '/banned/')).body.data.map((e: any) => `${e.as} ${e.who}`).sort())
      .toEqual(['client_id banned-client', 'ip_address 10.9.8.7', 'username banned-user'])
    expect(await connects(node, { clientId: 'free-client' })).toBe(true)
    expect(await connects(node, { clientId: 'banned-client' })).toBe(false)
    expect(await connects(node, { clientId: 'someone', username: 'banned-user' })).toBe(false)
  })

  it('lets the typed auth_mnesia entries connect with their passwords', async () => {
    expect(await connects(node, { clientId: 'device-44', username: 'anyname', password: 'device44-pass' })).toBe(true)
    expect(await connects(node, { clientId: 'device-44', username: 'anyname', password: 'x' })).toBe(false)
    expect(await connects(node, { clientId: 'a1', username: 'alice', password: 'alice-pass' })).toBe(true)
  })

  it('hashes the application\'s clear secret, which then calls the API; the dashboard user signs in (salted SHA-256)', async () => {
    const monitoring = 'Basic ' + Buffer.from('monitoring:m0nit0r-s3cret').toString('base64')
    expect((await api(node, 'GET', '/brokers/', undefined, monitoring)).body.code).toBe(0)
    const { data } = await ctlExport(node)
    expect(data.apps.find((a: any) => a.id === 'monitoring').secret).toMatch(/^sha256:[0-9a-f]{32}:[0-9a-f]{64}$/)
    expect(JSON.stringify(data)).not.toContain('m0nit0r-s3cret')
    expect(await dashboardSignsIn(node, 'viewer44', 'viewer44-pass')).toBe(true)
  })
})

describe('data import of an EMQ X 4.4 bridge_kafka resource and data_to_kafka rule (svc_bridge_kafka loaded)', () => {
  let report: any
  beforeAll(async () => {
    expect((await runCtl(['plugins', 'load', 'svc_bridge_kafka'], node.env)).stderr).toBe('')
    const backup = JSON.parse(readFileSync(join(PROJECT_ROOT, FIXTURES, 'emqx44-kafka-backup.json'), 'utf8'))
    const res = await api(node, 'POST', '/data/import', backup)
    expect(res.body.code).toBe(0)
    report = res.body.data
  })
  // the later suites compare exports with a node that has no svc_bridge_kafka
  afterAll(async () => {
    expect((await api(node, 'DELETE', '/rules/rule:886709')).body.code).toBe(0)
    expect((await api(node, 'DELETE', '/resources/resource:959424')).body.code).toBe(0)
    await runCtl(['plugins', 'unload', 'svc_bridge_kafka'], node.env)
  })

  it('imports both, EMQ X\'s per-action buffer moved onto the resource with a note; a TLS file given as content is skipped', () => {
    expect(report.imported).toMatchObject({ resources: 1, rules: 1 })
    expect(report.skipped).toEqual([{
      section: 'resources',
      entry: 'resource:kafka-ca',
      reason: 'cacertfile (ca.pem) came as file content: Starling reads TLS files from paths; write it to a file on each node and create the resource with the path'
    }])
    expect(report.notes).toContain('resource resource:959424: local_buffer true, max_buffer_bytes 2147483648 from the params of its data_to_kafka action (EMQ X kept them per action, Starling per resource)')
  })

  it('shows the resource with EMQ X\'s keys, the password masked, the empty TLS files as none; not alive (nothing listens)', async () => {
    const resource = (await api(node, 'GET', '/resources/resource:959424')).body.data
    expect(resource.config).toMatchObject({
      servers: '127.0.0.1:9',
      authentication_mechanism: 'SCRAM_SHA_256',
      username: 'emqx',
      password: '******',
      max_batch_bytes: '900KB',
      min_metadata_refresh_interval: '3s',
      query_api_versions: true,
      send_buffer: '1024KB',
      sync_timeout: '3s',
      tcp_keepalive: '0s',
      server_name_indication: 'auto',
      cacertfile: '',
      ssl: false,
      local_buffer: true,
      max_buffer_bytes: 2147483648
    })
    expect(JSON.stringify(resource)).not.toContain('kafka-secret-44')
    expect(resource.status[0].is_alive).toBe(false)
  })

  it('shows the rule\'s action with EMQ X\'s params, header values masked as data_to_webserver\'s', async () => {
    const rule = (await api(node, 'GET', '/rules/rule:886709')).body.data
    expect(rule.actions[0]).toMatchObject({
      name: 'data_to_kafka',
      params: { $resource: 'resource:959424', type: 'sync', strategy: 'roundrobin', key: 'clientid', cache_mode: 'Memory+Disk', kafka_ext_headers: [{ key: 'clientid', value: '******' }] }
    })
  })

  it('exports the SASL password masked, and in clear with --with-secrets', async () => {
    const kafka = (d: any): any => d.resources.find((r: any) => r.id === 'resource:959424').config
    const masked = await ctlExport(node)
    expect(kafka(masked.data).password).toBe('******')
    expect(JSON.stringify(masked.data)).not.toContain('kafka-secret-44')
    expect(kafka((await ctlExport(node, '--with-secrets')).data).password).toBe('kafka-secret-44')
  })
})

describe('data import of an EMQ X 4.0 backup', () => {
  let report: string
  beforeAll(async () => { report = await ctlImport(node, join(PROJECT_ROOT, FIXTURES, 'emqx40-backup.json')) })

  it('migrates the 4.0 web_hook resource and rule as EMQ X 4.4 did', async () => {
    expect(report).toContain('Imported (EMQ X 4.0 format): apps 1, resources 1, rules 1, auth_username 1, users 1\n')
    const resource = (await api(node, 'GET', '/resources/resource:web40')).body.data
    expect(resource.config).toMatchObject({ url: 'http://127.0.0.1:9/hook40', connect_timeout: '3s', request_timeout: '4s', pool_size: 4 })
    const rule = (await api(node, 'GET', '/rules/rule:web40')).body.data
    expect(rule.actions[0].params).toMatchObject({ $resource: 'resource:web40', path: '/x', body: '${payload}', method: 'PUT', headers: { 'content-type': 'text/plain' } })
  })

  it('lets the untyped auth_mnesia user connect and the dashboard user sign in (salted MD5)', async () => {
    expect(await connects(node, { clientId: 'u40', username: 'user40', password: 'user40-pass' })).toBe(true)
    expect(await dashboardSignsIn(node, 'ops40', 'ops40-pass')).toBe(true)
  })
})

describe('data import --env (EMQ X\'s overrides)', () => {
  it('imports 4.0-4.2 untyped auth_mnesia logins as client ids with {"auth.mnesia.as":"clientid"}', async () => {
    const out = await ctlImport(node, `${FIXTURES}/emqx40-backup.json`, '--env', '{"auth.mnesia.as":"clientid"}')
    expect(out).toContain('auth_clientid 1')
    expect(out).toContain('add this rule to etc/acl.conf: {allow, {client, "user40"}, publish, ["u40/#"]}.')
    expect((await api(node, 'GET', '/auth_clientid')).body.data).toContain('user40')
    expect(await connects(node, { clientId: 'user40', username: 'anyname', password: 'user40-pass' })).toBe(true)
  })

  it('refuses an auth.mnesia.as other than username or clientid', async () => {
    const run = await runCtl(['data', 'import', `${FIXTURES}/emqx40-backup.json`, '--env', '{"auth.mnesia.as":"peerhost"}'], node.env)
    expect(run.code).toBe(1)
    expect(run.stderr).toBe('auth.mnesia.as must be username or clientid, not "peerhost"\n')
  })
})

describe('a malformed backup', () => {
  it('is refused with the entry and field named, and changes nothing', async () => {
    const before = await ctlExport(node)
    const bad = {
      version: '4.4',
      rules: [],
      blacklist: [{ who: { clientid: 'would-be-banned' }, by: 'x', reason: '', at: 1, until: 4102444800 }, { who: 42, until: 4102444800 }],
      apps: [{ id: 'would-be-app', secret: 's' }]
    }
    const res = await api(node, 'POST', '/data/import', bad)
    expect(res.status).toBe(400)
    expect(res.body).toEqual({ code: 108, message: 'blacklist[1].who must be one of {"clientid": ...}, {"username": ...}, {"peerhost": ...}, not 42' })
    expect((await api(node, 'POST', '/data/import', { version: '5.0.1' })).body.code).toBe(108)
    expect((await api(node, 'POST', '/data/import', { rules: [] })).body).toEqual({ code: 107, message: 'missing parameter version: not an EMQ X 4 or Starling backup file' })
    const notJson = await runCtl(['data', 'import', `${FIXTURES}/README.md`], node.env)
    expect(notJson.code).toBe(1)
    expect(notJson.stderr).toMatch(/^the backup file is not JSON: /)
    const after = await ctlExport(node)
    const { date: _a, ...was } = before.data
    const { date: _b, ...is } = after.data
    // `at` of banned entries is the export's time
    const strip = (d: any): any => ({ ...d, blacklist: d.blacklist.map(({ at: _at, ...e }: any) => e) })
    expect(strip(is)).toEqual(strip(was))
  })
})

describe('data export', () => {
  it('writes data/backup/<name>.json with mode 0600, credentials masked unless --with-secrets', async () => {
    const masked = await ctlExport(node)
    expect(masked.path.startsWith(join(node.dataDir, 'backup') + '/')).toBe(true)
    expect(statSync(masked.path).mode & 0o777).toBe(0o600)
    expect(statSync(join(node.dataDir, 'backup')).mode & 0o777).toBe(0o700)
    const hook = (d: any): any => d.resources.find((r: any) => r.id === 'resource:hook44')
    expect(hook(masked.data).config.url).toBe('http://127.0.0.1:9/hook?token=******')
    expect(JSON.stringify(masked.data)).not.toContain('s3cr3t-token')
    const clear = await ctlExport(node, '--with-secrets')
    expect(statSync(clear.path).mode & 0o777).toBe(0o600)
    expect(hook(clear.data).config.url).toBe('http://127.0.0.1:9/hook?token=s3cr3t-token')
    expect(Object.keys(clear.data).slice(0, 9)).toEqual(['version', 'rules', 'resources', 'blacklist', 'apps', 'users', 'auth_mnesia', 'acl_mnesia', 'schemas'])
  })

  it('serves POST and GET /data/export, GET and DELETE /data/file/:filename as EMQ X 4.4 did', async () => {
    const made = (await api(node, 'POST', '/data/export', {})).body.data
    expect(made).toMatchObject({ filename: expect.stringMatching(/^emqx-export-[\d-]+\.json$/), size: expect.any(Number), node: 'starling@127.0.0.1' })
    expect((await api(node, 'GET', '/data/export')).body.data.map((f: any) => f.filename)).toContain(made.filename)
    const file = (await api(node, 'GET', `/data/file/${made.filename}`)).body.data
    expect(JSON.parse(file.file).version).toBe('4.4')
    // a masked export imported into the node it came from keeps the stored credentials
    expect((await api(node, 'POST', '/data/import', { filename: made.filename })).body.code).toBe(0)
    const after = await ctlExport(node, '--with-secrets')
    expect(after.data.resources.find((r: any) => r.id === 'resource:hook44').config.url).toBe('http://127.0.0.1:9/hook?token=s3cr3t-token')
    expect((await api(node, 'DELETE', `/data/file/${made.filename}`)).body).toEqual({ code: 0 })
    expect((await api(node, 'GET', `/data/file/${made.filename}`)).status).toBe(404)
  })
})

describe('our own export imported into a fresh node', () => {
  let fresh: NodeProcess
  beforeAll(async () => { fresh = await spawnNode() }, 60000)

  it('brings every table across: the API shows the same, and credentials work there', async () => {
    // a rule whose action has a fallback (with one of its own), stopping at a failure
    const republish = (topic: string): Record<string, unknown> => ({ name: 'republish', params: { target_topic: topic, target_qos: 0, payload_tmpl: '${payload}' } })
    const made = await api(node, 'POST', '/rules', {
      rawsql: 'SELECT * FROM "fb/in"',
      actions: [{ ...republish('fb/out'), fallbacks: [{ ...republish('fb/fallback'), fallbacks: [republish('fb/last')] }] }],
      on_action_failed: 'stop'
    })
    expect(made.body.code).toBe(0)
    const { path, data } = await ctlExport(node, '--with-secrets')
    const exported = data.rules.find((r: any) => r.id === made.body.data.id)
    expect(exported.on_action_failed).toBe('stop')
    expect(exported.actions[0].fallbacks[0]).toMatchObject({ name: 'republish', args: { target_topic: 'fb/fallback' } })
    expect(exported.actions[0].fallbacks[0].fallbacks[0]).toMatchObject({ name: 'republish', args: { target_topic: 'fb/last' } })
    const report = await ctlImport(fresh, path)
    expect(report).toContain('Imported (EMQ X 4.4 format): ')
    for (const plugin of ['svc_auth_clientid', 'svc_auth_username']) await runCtl(['plugins', 'load', plugin], fresh.env)
    const second = await ctlExport(fresh, '--with-secrets')
    // action ids are made anew at import
    const withoutIds = (actions: any[]): any[] => actions.map(({ id: _id, fallbacks, ...a }: any) => ({ ...a, fallbacks: withoutIds(fallbacks ?? []) }))
    const comparable = (d: any): any => ({
      rules: d.rules.map(({ actions, ...r }: any) => ({ ...r, actions: withoutIds(actions) })),
      resources: d.resources,
      schemas: d.schemas,
      blacklist: d.blacklist.map(({ at: _at, ...e }: any) => e),
      // the fresh node's default application and dashboard admin are its own
      apps: d.apps.filter((a: any) => a.id !== 'admin'),
      users: d.users.filter((u: any) => u.username !== 'admin'),
      auth_mnesia: d.auth_mnesia
    })
    expect(comparable(second.data)).toEqual(comparable(data))
    expect(await connects(fresh, { clientId: 'a2', username: 'alice', password: 'alice-pass' })).toBe(true)
    expect(await connects(fresh, { clientId: 'banned-client' })).toBe(false)
    expect(await dashboardSignsIn(fresh, 'viewer44', 'viewer44-pass')).toBe(true)
    expect(await dashboardSignsIn(fresh, 'ops40', 'ops40-pass')).toBe(true)
  })
})
