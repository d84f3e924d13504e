/**
 * No credential is served, printed, logged or traced (issue 19, item 1): a node is given a
 * distinct secret in every credential-carrying key and field (the node's cookie and API
 * secret, every plugin's passwords, tokens, request headers and URL query secrets, a bridge's
 * password, rule resources of every type with credentials, a codec service URL), made to use
 * them (auth requests answered 500, web hooks failing, bridges reconnecting, a client
 * traced), and then every GET route of the API's route table (path parameters filled with
 * every existing id), every read-only `starling-ctl` command, the node's log and the trace
 * file are searched for them. A key or param whose name says credential must be marked, so a
 * new one cannot be forgotten. Sending back what was shown (`******`) keeps the stored value.
 */
import { createServer, type Server } from 'node:http'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { jest } from '@jest/globals'
import { pino } from 'pino'
import type { MqttClient } from 'mqtt'
import { EPHEMERAL, closeClients, connect, freePort, waitFor } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { ALL_CTL_COMMANDS, startStarling, type Starling } from '../../bin/assemble.js'
import { EVERY_API_ROUTE as API_ROUTES } from '../helpers/api-routes.js'
import { CONFIG_SCHEMA } from '../../node/config/schema.js'
import { loadConfig, type ConfigSchema } from '../../node/config/index.js'
import { startCodecServer, type CodecServer } from '../../rules/schemas/codec-server.js'

jest.setTimeout(30_000)

/** Every planted secret by where it was planted; each is distinct, so a leak names its source. */
const SECRETS: Record<string, string> = {}
function secret (where: string): string {
  SECRETS[where] ??= `S3CR3T-${where.replace(/[^A-Za-z0-9]/g, '-')}-${Object.keys(SECRETS).length}`
  return SECRETS[where]
}

/** Key names that say "credential", and the ones that only look so (a hash's name, a field's name, a file). */
const CREDENTIAL_KEY = /password|secret|token|cookie|headers|\.url$|jwks$|params$/
const NOT_CREDENTIALS = /password_hash$|password_field$|password\.attributetype$/
/** Rule params that only look so: data_to_kafka's `kafka_headers` names selected data (`${pub_props}`), it holds no value. */
const NOT_CREDENTIAL_PARAMS = /^kafka_headers$/

let node: Starling
let dataDir: string
let etcDir: string
let traceDir: string
let http: Server
let codec: CodecServer
let client: MqttClient
const logLines: string[] = []
const httpPort = { value: 0 }
let closedPort: number
let ruleId: string
/** The answers to the POSTs that created resources and the schema: they are served too. */
const createAnswers: unknown[] = []
const API_SECRET = secret('management.default_application.secret')

/** Conf file text of `keys`. */
const conf = (keys: Record<string, string>): string => Object.entries(keys).map(([k, v]) => `${k} = ${v}`).join('\n') + '\n'

/** The plugin files, each credential key with its own secret (`auth.http.*` against the 500 server). */
function pluginFiles (): Record<string, Record<string, string>> {
  const local = `127.0.0.1:${closedPort}`
  const http = `127.0.0.1:${httpPort.value}`
  return {
    svc_auth_http: {
      'auth.http.priority': '10',
      'auth.http.timeout': '2s',
      'auth.http.auth_req.url': `http://${http}/auth?token=${secret('auth_req.url.token')}&x=1`,
      'auth.http.auth_req.headers.authorization': `Bearer ${secret('auth_req.headers.authorization')}`,
      'auth.http.auth_req.headers.content_type': 'application/x-www-form-urlencoded',
      'auth.http.auth_req.params': `clientid=%c,username=%u,password=%P,client_secret=${secret('auth_req.params.client_secret')}`,
      'auth.http.super_req.url': `http://user:${secret('super_req.url.userinfo')}@${http}/super?access_token=${secret('super_req.url.access_token')}`,
      'auth.http.super_req.headers.x-api-key': secret('super_req.headers.x-api-key'),
      'auth.http.super_req.params': `clientid=%c,api_key=${secret('super_req.params.api_key')}`,
      'auth.http.acl_req.url': `http://${http}/acl?password=${secret('acl_req.url.password')}`,
      'auth.http.acl_req.headers.cookie': `session=${secret('acl_req.headers.cookie')}`,
      'auth.http.acl_req.params': `access=%A,topic=%t,secret=${secret('acl_req.params.secret')}`
    },
    svc_auth_jwt: {
      'auth.jwt.secret': secret('auth.jwt.secret'),
      'auth.jwt.jwks': `http://${http}/jwks?key=${secret('auth.jwt.jwks.key')}`
    },
    svc_auth_clientid: { 'auth.client.1.clientid': 'preset-client', 'auth.client.1.password': secret('auth.client.1.password') },
    // plain: GET /auth_username/:username would show the stored password itself
    svc_auth_username: { 'auth.user.password_hash': 'plain', 'auth.user.1.username': 'u1', 'auth.user.1.password': secret('auth.user.1.password') },
    svc_auth_ldap: { 'auth.ldap.servers': '127.0.0.1', 'auth.ldap.port': String(closedPort), 'auth.ldap.timeout': '1s', 'auth.ldap.bind_password': secret('auth.ldap.bind_password') },
    svc_auth_mongo: { 'auth.mongo.server': local, 'auth.mongo.login': 'm', 'auth.mongo.password': secret('auth.mongo.password'), 'auth.mongo.query_timeout': '1s' },
    svc_auth_mysql: { 'auth.mysql.server': local, 'auth.mysql.password': secret('auth.mysql.password') },
    svc_auth_pgsql: { 'auth.pgsql.server': local, 'auth.pgsql.password': secret('auth.pgsql.password') },
    svc_auth_redis: { 'auth.redis.server': local, 'auth.redis.password': secret('auth.redis.password'), 'auth.redis.query_timeout': '1s' },
    // hooks go to the 500 server: its failures are logged, and swept
    svc_web_hook: {
      'web.hook.url': `http://${http}/hook?token=${secret('web.hook.url.token')}`,
      'web.hook.headers.authorization': `Bearer ${secret('web.hook.headers.authorization')}`,
      'web.hook.rule.client.connected.1': '{"action": "on_client_connected"}',
      'web.hook.rule.message.publish.1': '{"action": "on_message_publish"}'
    },
    svc_bridge_mqtt: {
      'bridge.mqtt.b1.address': local,
      'bridge.mqtt.b1.username': 'bridge-user',
      'bridge.mqtt.b1.password': secret('bridge.mqtt.b1.password'),
      'bridge.mqtt.b1.forwards': 't/#'
    }
  }
}

/** Calls the API as the default application; the status and the answer's text. */
async function api (path: string, method = 'GET', body?: unknown): Promise<{ status: number, text: string }> {
  const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3${path}`, {
    method,
    headers: { authorization: 'Basic ' + Buffer.from(`admin:${API_SECRET}`).toString('base64'), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, text: await res.text() }
}
const json = async (path: string, method = 'GET', body?: unknown): Promise<any> => JSON.parse((await api(path, method, body)).text)

/** The planted secrets `text` contains, by where they were planted. */
function leaked (text: string): string[] {
  return Object.entries(SECRETS).filter(([, s]) => text.includes(s)).map(([where]) => where)
}

beforeAll(async () => {
  // the auth service, the web hooks and the JWKS answer 500 (the URLs land in errors); the ACL
  // requests `ignore`, so that the client may subscribe and publish
  http = createServer((req, res) => {
    req.resume()
    if (req.url?.startsWith('/acl') === true) res.end('ignore')
    else { res.statusCode = 500; res.end('no') }
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  httpPort.value = (http.address() as { port: number }).port
  closedPort = await freePort()
  codec = await startCodecServer({ http: { port: 0 } })

  dataDir = mkdtempSync(join(tmpdir(), 'starling-sweep-'))
  etcDir = join(dataDir, 'etc')
  traceDir = mkdtempSync(join(tmpdir(), 'starling-sweep-trace-'))
  mkdirSync(join(etcDir, 'plugins'), { recursive: true })
  for (const [plugin, keys] of Object.entries(pluginFiles())) writeFileSync(join(etcDir, 'plugins', `${plugin}.conf`), conf(keys))
  const config = loadConfig({
    env: {},
    overrides: {
      ...EPHEMERAL,
      'node.data_dir': join(dataDir, 'data'),
      'node.cookie': secret('node.cookie'),
      'management.default_application.secret': API_SECRET,
      'dashboard.default_user.password': secret('dashboard.default_user.password'),
      'broker.sys_interval': '0'
    }
  })
  const logger = pino({ level: 'trace' }, new Writable({ write (chunk, _enc, done) { logLines.push(chunk.toString()); done() } }))
  node = await startStarling(config, { logger, env: {}, etcDir })

  for (const plugin of Object.keys(pluginFiles())) {
    // the backends that cannot be reached may refuse to load: what they log is swept all the same
    await node.services.plugins.load(plugin).catch(() => undefined)
  }
  expect(node.services.plugins.isActive('svc_auth_http')).toBe(true)
  // the dashboard's default user signs in with its password, as HTTP Basic too (svc_dashboard)
  const dashboard = node.listenerBoard.list().find((l) => l.protocol === 'http:dashboard')!.listen_on
  const signIn = await fetch(`http://${String(dashboard)}/api/v3/auth`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: secret('dashboard.default_user.password') })
  })
  createAnswers.push(await signIn.json())
  const basicUse = await fetch(`http://${String(dashboard)}/api/v3/users`, {
    headers: { authorization: 'Basic ' + Buffer.from(`admin:${secret('dashboard.default_user.password')}`).toString('base64') }
  })
  createAnswers.push(await basicUse.json())
  expect(node.services.plugins.isActive('svc_bridge_mqtt')).toBe(true)

  const hook = `http://127.0.0.1:${httpPort.value}/hook`
  const created = [
    await json('/resources', 'POST', {
      name: 'w1',
      type: 'web_hook',
      config: {
        url: `${hook}?token=${secret('web_hook.url.token')}&api_key=${secret('web_hook.url.api_key')}&x=1`,
        headers: { Authorization: `Bearer ${secret('web_hook.headers.Authorization')}`, 'x-api-key': secret('web_hook.headers.x-api-key'), 'content-type': 'application/json' }
      }
    }),
    await json('/resources', 'POST', { name: 'w2', type: 'web_hook', config: { url: `http://hook:${secret('web_hook.url.userinfo')}@127.0.0.1:${httpPort.value}/hook2` } }),
    await json('/resources', 'POST', {
      name: 'rb',
      type: 'bridge_mqtt',
      config: { address: `127.0.0.1:${closedPort}`, username: 'rb', password: secret('bridge_mqtt.password'), reconnect_interval: '30s' }
    })
  ]
  for (const answer of created) expect(answer.code).toBe(0)
  createAnswers.push(...created)
  const rule = await json('/rules', 'POST', {
    rawsql: 'SELECT * FROM "t/#"',
    actions: [
      { name: 'data_to_webserver', params: { $resource: 'web_hook:w1', headers: { 'content-type': 'application/json', 'x-action-key': secret('data_to_webserver.headers.x-action-key') } } },
      { name: 'data_to_webserver', params: { $resource: 'web_hook:w2' } }
    ]
  })
  createAnswers.push(rule)
  ruleId = rule.data.id
  // a Kafka resource (its SASL password is a resource param: the plugin has no file) cannot be
  // created without a broker (it is probed); a data import takes it as is, and the node then
  // keeps trying to connect with its SASL credentials
  await node.services.plugins.load('svc_bridge_kafka')
  const kafka = await json('/data/import', 'POST', {
    version: '4.4',
    resources: [{
      id: 'resource:kafka-sasl',
      type: 'bridge_kafka',
      config: { servers: `127.0.0.1:${closedPort}`, authentication_mechanism: 'SCRAM_SHA_512', username: 'emqx', password: secret('bridge_kafka.password') },
      description: ''
    }],
    rules: [{
      id: 'rule:kafka-sasl',
      rawsql: 'SELECT * FROM "t/#"',
      actions: [{ name: 'data_to_kafka', args: { $resource: 'resource:kafka-sasl', topic: 'mqtt', kafka_ext_headers: [{ key: 'authorization', value: `Bearer ${secret('data_to_kafka.kafka_ext_headers')}` }] } }],
      enabled: true,
      description: ''
    }]
  })
  expect(kafka).toMatchObject({ code: 0, data: { imported: { resources: 1, rules: 1 } } })
  createAnswers.push(kafka)
  const schema = await json('/schemas', 'POST', {
    name: 'sweep_codec',
    parser_type: '3rd-party',
    parser_addr: { url: `${codec.httpUrl!}?token=${secret('schema.parser_addr.url.token')}` },
    parser_opts: { '3rd_party_opts': 'xor:k' }
  })
  expect(schema.code).toBe(0)
  createAnswers.push(schema)
  expect((await json('/apps/', 'POST', { app_id: 'sweep', name: 'Sweep', secret: secret('apps.sweep.secret') })).code).toBe(0)

  // a traced client: asked of the HTTP service (500: the alarm), then let in anonymously; publishing to the hooks
  expect((await runCtlOn({ dataDir: join(dataDir, 'data') }, ['trace', 'start', 'client', 'sweeper', join(traceDir, 'sweeper.trace')])).code).toBe(0)
  client = await connect(node, { clientId: 'sweeper' })
  await client.subscribeAsync('t/#', { qos: 1 })
  await client.publishAsync('t/1', 'hello', { qos: 1 })
  await waitFor(() => logLines.some((l) => l.includes('rule action failed')), 'the web hooks to fail')
  // the 500 raised the alarm (its details name the URL; the ACL's answers clear it again)
  await waitFor(() => logLines.some((l) => l.includes('answered HTTP 500')), 'the auth service to fail')
})

afterAll(async () => {
  await closeClients()
  await node?.stop()
  await codec?.close()
  await new Promise((resolve) => http?.close(resolve))
  rmSync(dataDir, { recursive: true, force: true })
  rmSync(traceDir, { recursive: true, force: true })
})

/** Values to try for each path parameter: every existing id. */
async function pathValues (): Promise<Record<string, string[]>> {
  const plugins = (await json('/plugins/')).data.flatMap((n: { plugins: Array<{ name: string }> }) => n.plugins.map((p) => p.name))
  const resources = (await json('/resources')).data.map((r: { id: string }) => r.id)
  const types = (await json('/resource_types')).data.map((t: { name: string }) => t.name)
  // a data export as made without --with-secrets: `GET /data/file/:filename` serves it
  const exported = (await json('/data/export', 'POST', {})).data.filename
  return {
    node: [node.name],
    clientid: ['sweeper', 'preset-client'],
    username: ['u1'],
    topic: ['t/#'],
    plugin: plugins,
    appid: ['admin', 'sweep'],
    id: [ruleId, ...resources],
    name: ['data_to_webserver', 'sweep_codec', 'b1'],
    type: types,
    filename: [exported]
  }
}

/** Every concrete path of `path` with its parameters filled from `values` (all combinations). */
function expand (path: string, values: Record<string, string[]>): string[] {
  const m = /:([A-Za-z_]+)/.exec(path)
  if (m === null) return [path]
  const options = values[m[1]]
  if (options === undefined) throw new Error(`no values for the path parameter :${m[1]} of ${path}: add them to pathValues()`)
  return options.flatMap((v) => expand(path.replace(m[0], encodeURIComponent(v)), values))
}

it('marks every key and param whose name says credential, and plants a secret in each', async () => {
  const planted = new Set(Object.values(pluginFiles()).flatMap((keys) => Object.keys(keys)))
  const unmarked: string[] = []
  const notPlanted: string[] = []
  const schemas: Array<[string, ConfigSchema]> = [['starling.conf', CONFIG_SCHEMA]]
  for (const { name } of (await json('/plugins/')).data[0].plugins) schemas.push([name, node.services.plugins.definition(name).configSchema])
  for (const [file, schema] of schemas) {
    for (const [key, spec] of Object.entries(schema)) {
      const marked = spec.secret === true || spec.secretParts !== undefined
      if (CREDENTIAL_KEY.test(key) && !NOT_CREDENTIALS.test(key) && !marked) unmarked.push(`${file}: ${key}`)
      // a marked key of a plugin has a secret planted in it (one of its concrete keys)
      const pattern = new RegExp('^' + key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace('<name>', '[^.]+') + '$')
      const plantedKey = file === 'starling.conf' ? Object.hasOwn(SECRETS, key) : [...planted].some((k) => pattern.test(k))
      if (marked && !plantedKey) notPlanted.push(`${file}: ${key}`)
    }
  }
  for (const type of node.rules.registry.resourceTypes()) {
    for (const [param, spec] of Object.entries(type.params)) {
      const marked = spec.secret === true || spec.secretParts !== undefined
      if (/password|secret|token|cookie|headers|^url$/.test(param) && !marked) unmarked.push(`resource type ${type.name}: ${param}`)
      if (marked && !Object.keys(SECRETS).some((where) => where.startsWith(`${type.name}.${param}`))) notPlanted.push(`resource type ${type.name}: ${param}`)
    }
  }
  for (const action of node.rules.registry.actions()) {
    for (const [param, spec] of Object.entries(action.params)) {
      const marked = spec.secret === true || spec.secretParts !== undefined
      if (/password|secret|token|cookie|headers|^url$/.test(param) && !NOT_CREDENTIAL_PARAMS.test(param) && !marked) unmarked.push(`action ${action.name}: ${param}`)
      if (marked && !Object.keys(SECRETS).some((where) => where.startsWith(`${action.name}.${param}`))) notPlanted.push(`action ${action.name}: ${param}`)
    }
  }
  expect({ unmarked, notPlanted }).toEqual({ unmarked: [], notPlanted: [] })
})

it('serves no secret on any GET route of the API, with every path parameter filled, nor in a create answer', async () => {
  const values = await pathValues()
  const gets = API_ROUTES.filter((r) => r.method === 'GET')
  const unanswered: string[] = []
  const leaks: string[] = []
  for (const route of gets) {
    let answered = false
    for (const path of expand(route.path, values)) {
      for (const query of route.path.includes('plugin_configs') ? ['', '?format=object'] : ['']) {
        const { status, text } = await api(path + query)
        if (status === 200) answered = true
        for (const where of leaked(text)) leaks.push(`GET ${path}${query}: ${where}`)
      }
    }
    if (!answered) unanswered.push(route.path)
  }
  for (const path of ['/', '/openapi.json']) for (const where of leaked((await api(path)).text)) leaks.push(`GET ${path}: ${where}`)
  for (const answer of createAnswers) for (const where of leaked(JSON.stringify(answer))) leaks.push(`a create answer: ${where}`)
  expect({ leaks, unanswered }).toEqual({ leaks: [], unanswered: [] })
  // masked, not dropped: the operator still sees where the requests go
  const shown = (await json(`/nodes/${node.name}/plugin_configs/svc_auth_http?format=object`)).data
  expect(shown['auth.http.auth_req.url']).toBe(`http://127.0.0.1:${httpPort.value}/auth?token=******&x=1`)
  expect(shown['auth.http.auth_req.headers.authorization']).toBe('******')
  expect(shown['auth.http.auth_req.headers.content_type']).toBe('application/x-www-form-urlencoded')
  expect(shown['auth.http.auth_req.params']).toBe('clientid=%c,username=%u,password=%P,client_secret=******')
  const w1 = (await json('/resources/web_hook:w1')).data.config
  expect(w1.url).toBe(`http://127.0.0.1:${httpPort.value}/hook?token=******&api_key=******&x=1`)
  expect(w1.headers).toEqual({ Authorization: '******', 'x-api-key': '******', 'content-type': 'application/json' })
})

it('prints no secret in any read-only starling-ctl command, as text or JSON', async () => {
  // not swept: commands that change something, and resources test (it connects to a server like a create)
  const mutating = /^(load|unload|reload|add|update|del|delete|passwd|start|stop|insert|kick|create|test|join|leave|force-leave|set-level|add-forward|del-forward|add-subscription|del-subscription|import|export)$/
  const values = await pathValues()
  const args: Record<string, string[]> = {
    ClientId: ['sweeper'], AppId: ['admin', 'sweep'], Topic: ['t/#'], RuleId: [ruleId], ActionId: ['data_to_webserver'],
    ResourceId: values.id.filter((id) => id !== ruleId), Type: values.type, Node: [node.name]
  }
  const leaks: string[] = []
  let runs = 0
  for (const command of ALL_CTL_COMMANDS) {
    if (command.words.some((w) => mutating.test(w)) || command.words[0] === 'log') continue
    let argvs: string[][] = [command.words]
    for (const arg of command.args ?? []) {
      const options = arg.name === 'Name' ? [command.words[0] === 'schemas' ? 'sweep_codec' : 'b1'] : args[arg.name]
      if (options === undefined) throw new Error(`no values for the argument ${arg.name} of ${command.words.join(' ')}`)
      argvs = argvs.flatMap((argv) => options.map((v) => [...argv, v]))
    }
    for (const argv of argvs) {
      for (const form of [argv, ['--json', ...argv]]) {
        const run = await runCtlOn({ dataDir: join(dataDir, 'data') }, form)
        runs++
        for (const where of leaked(run.out + run.err)) leaks.push(`${form.join(' ')}: ${where}`)
      }
    }
  }
  expect(runs).toBeGreaterThan(40)
  expect(leaks).toEqual([])
})

it('logs and traces no secret', async () => {
  const trace = readFileSync(join(traceDir, 'sweeper.trace'), 'utf8')
  expect(trace).toContain('CONNECT(')
  expect(leaked(trace)).toEqual([])
  // the failures that name a URL were logged, masked
  const log = logLines.join('')
  expect(log).toContain('token=******')
  expect(leaked(log)).toEqual([])
})

it('keeps every stored secret when a plugin\'s settings are sent back as shown', async () => {
  for (const plugin of Object.keys(pluginFiles())) {
    const file = join(etcDir, 'plugins', `${plugin}.conf`)
    const before = readFileSync(file, 'utf8')
    const shown = (await json(`/nodes/${node.name}/plugin_configs/${plugin}?format=object`)).data
    const answer = await json(`/nodes/${node.name}/plugin_configs/${plugin}`, 'PUT', shown)
    expect([plugin, answer.code, answer.data?.reload_required]).toEqual([plugin, 0, []])
    expect([plugin, readFileSync(file, 'utf8')]).toEqual([plugin, before])
  }
  // a change of another key, or of a URL's host, keeps the masked parts
  const url = `http://localhost:${httpPort.value}/auth?token=******&x=1`
  const answer = await json(`/nodes/${node.name}/plugin_configs/svc_auth_http`, 'PUT', {
    'auth.http.auth_req.url': url, 'auth.http.auth_req.headers.authorization': '******', 'auth.http.timeout': '3s'
  })
  expect(answer.data.reload_required.sort()).toEqual(['auth.http.auth_req.url', 'auth.http.timeout'])
  const text = readFileSync(join(etcDir, 'plugins', 'svc_auth_http.conf'), 'utf8')
  expect(text).toContain(`auth.http.auth_req.url = http://localhost:${httpPort.value}/auth?token=${SECRETS['auth_req.url.token']}&x=1`)
  expect(text).toContain(`auth.http.auth_req.headers.authorization = Bearer ${SECRETS['auth_req.headers.authorization']}`)
})

it('keeps a rule action\'s stored secrets when the rule is sent back as shown', async () => {
  const stored = node.rules.rules.get(ruleId).actions
  const shown = (await json(`/rules/${ruleId}`)).data
  expect(shown.actions[0].params.headers).toEqual({ 'content-type': 'application/json', 'x-action-key': '******' })
  const answer = await json(`/rules/${ruleId}`, 'PUT', { actions: shown.actions.map((a: any) => ({ name: a.name, params: a.params })), description: 'sent back' })
  expect([answer.code, leaked(JSON.stringify(answer))]).toEqual([0, []])
  expect(node.rules.rules.get(ruleId).actions.map((a) => a.params)).toEqual(stored.map((a) => a.params))
  // data_to_kafka's headers, a list of {key, value}
  const kafka = node.rules.rules.get('rule:kafka-sasl').actions
  const kafkaShown = (await json('/rules/rule:kafka-sasl')).data
  expect(kafkaShown.actions[0].params.kafka_ext_headers).toEqual([{ key: 'authorization', value: '******' }])
  const kafkaAnswer = await json('/rules/rule:kafka-sasl', 'PUT', { actions: kafkaShown.actions.map((a: any) => ({ name: a.name, params: a.params })) })
  expect([kafkaAnswer.code, leaked(JSON.stringify(kafkaAnswer))]).toEqual([0, []])
  expect(node.rules.rules.get('rule:kafka-sasl').actions.map((a) => a.params)).toEqual(kafka.map((a) => a.params))
})

it('keeps a resource\'s stored secrets when its config is sent back as shown', async () => {
  for (const id of ['web_hook:w1', 'web_hook:w2', 'bridge_mqtt:rb']) {
    const stored = node.rules.resources.get(id).config
    const shown = (await json(`/resources/${id}`)).data
    const answer = await json(`/resources/${id}`, 'PUT', { config: shown.config, description: 'sent back' })
    expect([id, answer.code, leaked(JSON.stringify(answer))]).toEqual([id, 0, []])
    expect(node.rules.resources.get(id)).toMatchObject({ config: stored, description: 'sent back' })
  }
  // a new header value is taken, the masked ones stay
  const shown = (await json('/resources/web_hook:w1')).data.config
  await json('/resources/web_hook:w1', 'PUT', { config: { ...shown, headers: { ...shown.headers, 'x-api-key': 'changed' } } })
  expect(node.rules.resources.get('web_hook:w1').config.headers).toEqual({
    Authorization: `Bearer ${SECRETS['web_hook.headers.Authorization']}`, 'x-api-key': 'changed', 'content-type': 'application/json'
  })
})
