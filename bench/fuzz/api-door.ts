/**
 * The management API door of the fuzzer: schema-aware mutation of every route of the route
 * table (api/routes/index.ts `API_ROUTES`: method, path, body schema), a quarter of the
 * requests at their `/api/v4/` path. Each input is one HTTP
 * request: a body built from the route's schema and mutated (wrong types, missing, extra and
 * prototype-polluting fields, huge strings, deep nesting, unicode, numbers out of range, null),
 * random query strings, path parameters that are random, existing or malicious, bodies that
 * are not JSON, wrong content types and encodings, oversized bodies, bad credentials, methods
 * no route has, and raw HTTP garbage on a socket that is then half-closed.
 *
 * The bar: no 5xx; every answer is the spec's envelope (`{code: 0, ...}` with a 2xx, or
 * `{code, message}` with a 4xx), within 10 s; and a state-changing call that is refused
 * changes nothing (checked now and then, alone, against the list endpoints).
 *
 * Left alone on purpose, so that the node stays one the fuzzer can reach: loaded plugins are
 * never unloaded, reloaded or reconfigured by their real name, the `admin` application is
 * never changed or deleted, configuration keys are random (a real key with a valid value could
 * close the listeners), and the witness's client ids and topic are never named.
 */
import net from 'node:net'
import { API_ROUTES as CORE_ROUTES } from '../../api/routes/index.js'
import { AUTH_ROUTES } from '../../plugins/auth/routes.js'
import { BRIDGE_ROUTES } from '../../plugins/bridge_mqtt/routes.js'

/** Every endpoint of the node under test: the core's and those its plugins add. */
const API_ROUTES = [...CORE_ROUTES, ...AUTH_ROUTES, ...BRIDGE_ROUTES]
import type { RouteDef } from '../../api/route-table.js'
import {
  count, deepJson, fail, fromSchema, nastyKey, nastyString, newStats, randomValue, runInputs, startWitness, sleep,
  type DoorOptions, type DoorStats, type Random
} from './door-kit.js'

/** What the API door needs of a node. */
export interface ApiDoorOptions extends DoorOptions {
  /** The node's `management.listener.http` port. */
  apiPort: number
  /** Its MQTT/TCP port, for the witness. */
  mqttPort: number
  /** HTTP Basic credentials of an application (default `admin` / `public`, the tests' secret). */
  appId?: string
  secret?: string
  /** Every this many inputs, one refused state-changing call is checked alone against the lists (default 100). */
  checkEvery?: number
  /** Every this many inputs, what the fuzzer created (rules, banned entries, users ...) is deleted (default 2000). */
  cleanEvery?: number
}

/** Lists a refused call must leave unchanged, by the first path segment of the call. */
const LISTS: Record<string, string> = {
  banned: '/banned/?_limit=10000',
  auth_clientid: '/auth_clientid',
  auth_username: '/auth_username',
  apps: '/apps/',
  rules: '/rules',
  resources: '/resources',
  schemas: '/schemas',
  plugins: '/plugins/',
  configs: '/configs/'
}

/** The field naming each item of a list (what the cleanup deletes it by). */
const ITEM_KEYS = ['id', 'app_id', 'clientid', 'username', 'name', 'who']

const KINDS = ['schema-body', 'schema-body', 'schema-body', 'query', 'path-params', 'bad-json', 'deep-json', 'content-type', 'huge-body', 'bad-auth', 'wrong-method', 'raw-http'] as const
type Kind = typeof KINDS[number]

interface Request { method: string, path: string, headers: Record<string, string>, body?: string | Buffer, route?: RouteDef, base?: string }

/** Runs the API door; resolves with the counts once the witness has caught up. */
export async function runApiDoor (opts: ApiDoorOptions): Promise<DoorStats> {
  const stats = newStats('api')
  const base = `http://127.0.0.1:${opts.apiPort}/api/v3`
  const auth = 'Basic ' + Buffer.from(`${opts.appId ?? 'admin'}:${opts.secret ?? 'public'}`).toString('base64')
  const call = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(base + path, { method, headers: { authorization: auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(10_000) })
    return await res.json()
  }
  const nodeName = ((await call('GET', '/nodes/')).data as Array<{ node: string }>)[0].node
  const plugins = new Set(((await call('GET', '/plugins/')).data as Array<{ plugins: Array<{ name: string }> }>).flatMap(n => n.plugins.map(p => p.name)))
  const tag = `api${opts.seed}`
  const witness = await startWitness({ publishPort: opts.mqttPort }, stats, tag)
  const ctx: Context = { base, auth, nodeName, plugins, known: ['admin', 'no-such', nodeName, 'web_hook', 'republish', 'inspect', 'svc_retainer', 'starling'] }
  // a checked call runs alone: the others wait at the gate and the call waits for them to land
  let gate: Promise<void> | null = null
  let inflight = 0
  const alone = async <T>(fn: () => Promise<T>): Promise<T> => {
    while (gate !== null) await gate
    let open!: () => void
    gate = new Promise<void>(resolve => { open = resolve })
    try {
      while (inflight > 0) await sleep(5)
      return await fn()
    } finally {
      gate = null
      open()
    }
  }
  const checkEvery = opts.checkEvery ?? 100
  const cleanEvery = opts.cleanEvery ?? 2000
  try {
    await runInputs(opts, stats, opts.concurrency ?? 8, async (r, n) => {
      if (n > 0 && n % cleanEvery === 0) await alone(async () => { await cleanUp(call, nodeName) })
      if (n > 0 && n % checkEvery === 0) {
        await alone(async () => { await checkedRefusal(r, ctx, stats, call) })
        return 1
      }
      while (gate !== null) await gate
      inflight++
      try {
        const kind = r.pick(KINDS)
        count(stats.byKind, kind)
        await send(build(r, kind, ctx), stats, kind, ctx)
      } finally {
        inflight--
      }
      return 1
    })
    await witness.finish(opts.alive ?? (() => true))
  } finally {
    witness.close()
  }
  return stats
}

interface Context { base: string, auth: string, nodeName: string, plugins: Set<string>, known: string[] }

/** The request of one input of `kind`. */
function build (r: Random, kind: Kind, ctx: Context): Request {
  const route = r.pick(API_ROUTES)
  const headers: Record<string, string> = { authorization: ctx.auth, 'content-type': 'application/json' }
  const req: Request = { method: route.method, path: fillPath(r, route, ctx, kind === 'path-params'), headers, route }
  // a quarter through /api/v4/: the same handlers behind EMQ X 4.4's names (api/v4.ts)
  if (r.chance(0.25)) req.base = ctx.base.replace(/\/api\/v3$/, '/api/v4')
  const body = (): string => JSON.stringify(fromSchema(r, route.body, 0, route.body === undefined ? 1 : 0.3)) ?? 'null'
  switch (kind) {
    case 'schema-body':
      if (route.body !== undefined || r.chance(0.2)) req.body = body()
      if (r.chance(0.3)) req.path += query(r)
      break
    case 'query':
      req.path += query(r)
      if (route.body !== undefined) req.body = body()
      break
    case 'path-params':
      if (route.body !== undefined) req.body = body()
      break
    case 'bad-json': {
      const text = route.body !== undefined ? body() : JSON.stringify(randomValue(r, 2)) ?? '{'
      req.body = r.pick([
        text.slice(0, Math.max(0, text.length - 1 - r.int(text.length))),
        text + r.pick([',', '}', ']', 'x', '\u0000']),
        "{'single': 'quotes'}", '{"a":1,}', 'NaN', 'undefined', '\ufeff' + text, '[' .repeat(100_000),
        r.bytes(1 + r.int(200)).toString('latin1')
      ])
      break
    }
    case 'deep-json': {
      // a nested value where the schema has a field, or the whole body
      const depth = r.pick([100, 1000, 10_000, 100_000])
      const text = route.body !== undefined ? body() : '{}'
      const field = /^\{"([^"]+)":/.exec(text)?.[1]
      req.body = field !== undefined && r.chance(0.7) ? `{"${field}":${deepJson(r, depth)}}` : deepJson(r, depth)
      break
    }
    case 'content-type':
      req.body = route.body !== undefined ? body() : JSON.stringify(randomValue(r, 1))
      headers['content-type'] = r.pick(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/json; charset=latin1', '', '*/*', 'application/xml'])
      if (r.chance(0.3)) headers['content-encoding'] = r.pick(['gzip', 'deflate', 'br', 'identity, gzip', 'x-bogus'])
      if (r.chance(0.2)) delete headers['content-type']
      break
    case 'huge-body': {
      const size = r.pick([1024 * 1024 - 2, 1024 * 1024 + 1, 3 * 1024 * 1024])
      req.body = r.chance(0.5) ? '"' + 'x'.repeat(size) + '"' : '{"topic":"' + 'a/'.repeat(size / 2) + '"}'
      break
    }
    case 'bad-auth':
      headers.authorization = r.pick([
        '', 'Basic', 'Basic ', 'Basic !!!', 'Bearer x', 'Basic ' + Buffer.from('admin').toString('base64'),
        'Basic ' + Buffer.from('admin:wrong').toString('base64'), 'Basic ' + Buffer.from(':').toString('base64'),
        'Basic ' + Buffer.from(nastyString(r).slice(0, 2000) + ':' + nastyString(r).slice(0, 2000)).toString('base64'),
        'basic ' + Buffer.from('admin:public').toString('base64').toLowerCase(), 'Digest username="admin"'
      ])
      if (headers.authorization === '') delete headers.authorization
      if (route.body !== undefined) req.body = body()
      break
    case 'wrong-method':
      req.method = r.pick(['PATCH', 'OPTIONS', 'HEAD', 'POST', 'PUT', 'DELETE', 'GET'])
      if (r.chance(0.5)) req.body = body()
      break
    case 'raw-http':
      break
  }
  if (req.method === 'GET' || req.method === 'HEAD') delete req.body
  return req
}

/** `route.path` with its parameters filled: mostly names that exist or name nothing, sometimes malicious ones. */
function fillPath (r: Random, route: RouteDef, ctx: Context, malicious: boolean): string {
  const writes = route.method !== 'GET'
  return route.path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => {
    let value: string
    if (name === 'node' && r.chance(malicious ? 0.3 : 0.85)) value = ctx.nodeName
    else if (malicious || r.chance(0.4)) value = r.pick([nastyString(r), '..', '.', '%2e%2e', '%2F', 'a%2Fb', '%00', '%', '%ZZ', ' ', '\u{10ffff}', 'x'.repeat(8000)])
    else value = r.pick([...ctx.known, `fz-${r.int(50)}`, `${ctx.nodeName.split('@')[0]}@nohost`])
    // protected: the fuzzer does not take its own node apart (see the file's comment)
    if (writes && (ctx.plugins.has(value) || value === 'admin')) value = `not-${value}`
    return /%|\s/.test(value) && malicious && r.chance(0.5) ? value : pct(value)
  })
}

/** Percent-encodes the UTF-8 bytes of `s` (a lone surrogate becomes U+FFFD, where encodeURIComponent throws). */
function pct (s: string): string {
  let out = ''
  for (const b of Buffer.from(s, 'utf8')) out += /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : '%' + b.toString(16).toUpperCase().padStart(2, '0')
  return out
}

function query (r: Random): string {
  const keys = ['_page', '_limit', 'as', 'clientid', 'node', 'test', 'type', 'like_clientid', '_like_username', 'topic', 'qos', nastyKey(r)]
  const parts = Array.from({ length: 1 + r.int(4) }, () => {
    const v = r.chance(0.5) ? String(r.pick([-1, 0, 1, 2, 1e9, 1e21, 0.5, 'abc', '', 'true', '[]', '{}', 'NaN', 'Infinity'])) : nastyString(r).slice(0, 3000)
    const k = r.pick(keys)
    return r.chance(0.1) ? `${pct(k)}[]=${pct(v)}&${pct(k)}=x` : `${pct(k)}=${pct(v)}`
  })
  return '?' + parts.join('&')
}

/** Sends one request and counts its answer against the bar. */
async function send (req: Request, stats: DoorStats, kind: Kind, ctx: Context): Promise<void> {
  if (kind === 'raw-http') { await rawHttp(stats, ctx); return }
  const what = `${req.method} ${req.path.slice(0, 200)}${req.body === undefined ? '' : ` body ${String(req.body).slice(0, 300)}`} [${kind}]`
  let res: Response
  try {
    res = await fetch((req.base ?? ctx.base) + req.path, { method: req.method, headers: req.headers, body: req.body, signal: AbortSignal.timeout(10_000) })
  } catch (err: any) {
    // a path the client refuses to send (bad percent-encoding) never reached the node
    if (err?.name === 'TypeError' && /URL|ByteString|header/i.test(String(err.message) + String(err.cause?.message ?? ''))) { count(stats.answers, 'not sendable'); return }
    fail(stats, err?.name === 'TimeoutError' ? 'no answer in 10 s' : 'connection error', `${what}: ${err?.message} ${err?.cause?.message ?? ''}`)
    return
  }
  const text = await res.text().catch(() => '')
  const status = res.status
  count(stats.answers, `${Math.floor(status / 100)}xx`)
  const route = req.route?.name ?? '?'
  if (status >= 500) { fail(stats, `5xx ${route}`, `${what} -> ${status} ${text.slice(0, 300)}`); return }
  if (req.method === 'HEAD' || req.method === 'OPTIONS' || status === 204) return
  let body: any
  try { body = JSON.parse(text) } catch { fail(stats, `not JSON ${route}`, `${what} -> ${status} ${text.slice(0, 200)}`); return }
  const envelope = body !== null && typeof body === 'object' && typeof body.code === 'number' &&
    (status < 300 ? body.code === 0 : body.code !== 0 && typeof body.message === 'string')
  if (!envelope) fail(stats, `not the envelope ${route}`, `${what} -> ${status} ${text.slice(0, 300)}`)
}

/** Raw bytes on a socket: a request line or headers that are garbage, a body cut short, then a half-close. */
async function rawHttp (stats: DoorStats, ctx: Context): Promise<void> {
  const port = Number(new URL(ctx.base).port)
  const r = rawRandom()
  const lines = [
    'GET /api/v3/ HTTP/1.1\r\nHost: x\r\nAuthorization: ' + ctx.auth + '\r\nContent-Length: 100\r\n\r\n{"a":',
    'POST /api/v3/banned/ HTTP/1.1\r\nHost: x\r\nAuthorization: ' + ctx.auth + '\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    'POST /api/v3/rules HTTP/1.1\r\nHost: x\r\nAuthorization: ' + ctx.auth + '\r\nContent-Length: -5\r\n\r\n',
    'GET /api/v3/' + 'a'.repeat(100_000) + ' HTTP/1.1\r\n\r\n',
    'GET / HTTP/1.1\r\n' + 'X: y\r\n'.repeat(5000) + '\r\n',
    '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03',
    'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    Buffer.from(Array.from({ length: 64 }, () => Math.floor(r() * 256))).toString('latin1')
  ]
  const line = lines[Math.floor(r() * lines.length)]
  await new Promise<void>(resolve => {
    const socket = net.connect(port, '127.0.0.1')
    socket.on('error', () => {})
    socket.once('connect', () => { socket.end(Buffer.from(line, 'latin1')) })
    let answer = ''
    socket.on('data', (chunk: Buffer) => { answer += chunk.toString('latin1') })
    const timer = setTimeout(() => { socket.destroy() }, 3000)
    socket.once('close', () => {
      clearTimeout(timer)
      // each answer on the connection: its status, and for an error the envelope as its body
      for (const m of answer.matchAll(/HTTP\/1\.1 (\d{3})[^\r]*\r\n(?:[^\r]+\r\n)*?(?:content-length: *(\d+)\r\n)?(?:[^\r]+\r\n)*\r\n/gi)) {
        const status = Number(m[1])
        count(stats.answers, `${Math.floor(status / 100)}xx`)
        const at = (m.index ?? 0) + m[0].length
        const body = answer.slice(at, m[2] === undefined ? undefined : at + Number(m[2]))
        const what = `${JSON.stringify(line.slice(0, 120))} -> ${answer.slice(m.index, at + 200)}`
        if (status >= 500) fail(stats, '5xx raw-http', what)
        else if (status >= 400 && !isErrorEnvelope(body)) fail(stats, 'not the envelope raw-http', what)
      }
      count(stats.answers, 'raw closed')
      resolve()
    })
  })
}

function isErrorEnvelope (body: string): boolean {
  try {
    const value = JSON.parse(body)
    return typeof value?.code === 'number' && value.code !== 0 && typeof value.message === 'string'
  } catch {
    return false
  }
}

/** The raw requests do not need to replay exactly: Math.random picks their garbage. */
function rawRandom (): () => number { return Math.random }

/**
 * A refused state-changing call changes nothing: a write of the lists' groups (banned, auth,
 * apps, rules, resources, schemas, plugins, configs) with a body that cannot pass its schema
 * or a target that names nothing, and the list compared before and after.
 */
async function checkedRefusal (r: Random, ctx: Context, stats: DoorStats, call: (method: string, path: string, body?: unknown) => Promise<any>): Promise<void> {
  const writes = API_ROUTES.filter(route => route.method !== 'GET' && LISTS[route.path.split('/')[1]] !== undefined)
  const route = r.pick(writes)
  const list = LISTS[route.path.split('/')[1]]
  const path = fillPath(r, route, ctx, false)
  const body = route.body === undefined ? undefined : r.pick([null, 'x', [], 7, route.body.type === 'array' ? {} : []])
  count(stats.byKind, 'checked-refusal')
  const before = JSON.stringify(await call('GET', list))
  const res = await fetch(ctx.base + path, { method: route.method, headers: { authorization: ctx.auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(10_000) })
  const text = await res.text()
  if (res.status >= 500) { fail(stats, `5xx ${route.name}`, `${route.method} ${path} ${JSON.stringify(body)} -> ${res.status} ${text}`); return }
  if (res.status < 400) { count(stats.answers, 'checked call accepted'); return }
  const after = JSON.stringify(await call('GET', list))
  // uptime and counters move on their own in /plugins/ and /configs/: compare those lists' names only
  const same = list === '/plugins/' || list === '/configs/' ? names(before) === names(after) : before === after
  if (same) count(stats.answers, 'refused, unchanged')
  else fail(stats, `refused call changed ${list}`, `${route.method} ${path} ${JSON.stringify(body)} -> ${res.status} ${text}`)
}

function names (json: string): string {
  return JSON.stringify(JSON.parse(json), (key, value) => (typeof value === 'number' || key === 'uptime' ? undefined : value))
}

/** Deletes what the fuzz created that the node keeps (rules, resources, schemas, banned, users, apps but `admin`). */
async function cleanUp (call: (method: string, path: string, body?: unknown) => Promise<any>, _node: string): Promise<void> {
  for (const [group, list] of Object.entries(LISTS)) {
    if (group === 'plugins' || group === 'configs') continue
    const answer = await call('GET', list).catch(() => null)
    const items: any[] = Array.isArray(answer?.data) ? answer.data : []
    for (const item of items) {
      const key = ITEM_KEYS.find(k => typeof item?.[k] === 'string')
      if (key === undefined) continue
      const id = item[key] as string
      if (group === 'apps' && id === 'admin') continue
      const path = `/${group}/${pct(id)}${group === 'banned' ? `?as=${pct(String(item.as))}` : ''}`
      await call('DELETE', path).catch(() => null)
    }
  }
}
