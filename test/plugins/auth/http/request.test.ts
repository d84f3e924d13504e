/**
 * svc_auth_http's request building (EMQ X 4.4's emqx_auth_http_cli): params compiled once,
 * rendered per client, encoded for GET (query string), POST form and POST JSON; and the
 * shipped etc/plugins/svc_auth_http.conf against the schema.
 */
import { join } from 'node:path'
import { loadPluginConfig, parseConfText } from '../../../../node/config/index.js'
import { readFileSync } from 'node:fs'
import { compileHttpRequest, parseParams, renderHttpRequest } from '../../../../plugins/auth/http/request.js'
import { svcAuthHttp } from '../../../../plugins/auth/http/plugin.js'
import { PROJECT_ROOT } from '../../../helpers/process.js'
import type { AuthContext } from '../../../../plugins/auth/backend/index.js'

const client: AuthContext = { clientId: 'c1', username: 'alice', password: Buffer.from('pw'), peerhost: '::ffff:10.0.0.7', protocol: 'mqtt', sockport: 1883 }

function config (kind: string, values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [`auth.http.${kind}.${k}`, v]))
}

describe('svc_auth_http requests', () => {
  it('sends GET params as the query string after the URL\'s own, without content-type', () => {
    const spec = compileHttpRequest(config('auth_req', {
      url: 'http://127.0.0.1:8080/mqtt/auth?app=1', method: 'get', params: 'clientid=%c,username=%u,password=%P,ip=%a,port=%p,proto=%r',
      'headers.<name>': { 'content-type': 'application/json', accept: '*/*' }
    }), 'auth_req')!
    const r = renderHttpRequest(spec, client)
    expect(r.method).toBe('GET')
    expect(r.origin).toBe('http://127.0.0.1:8080')
    expect(r.path).toBe('/mqtt/auth?app=1&clientid=c1&username=alice&password=pw&ip=10.0.0.7&port=1883&proto=mqtt')
    expect(r.headers).toEqual({ accept: '*/*' })
    expect(r.body).toBeUndefined()
  })

  it('sends POST params as a form by default and as JSON with content-type application/json', () => {
    const form = renderHttpRequest(compileHttpRequest(config('auth_req', { url: 'http://h/a', method: 'post', params: 'u=%u,c=%c' }), 'auth_req')!, client)
    expect(form).toMatchObject({ method: 'POST', path: '/a', body: 'u=alice&c=c1', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    const json = renderHttpRequest(compileHttpRequest(config('auth_req', {
      url: 'http://h/a', method: 'post', params: 'u=%u,c=%c', 'headers.<name>': { content_type: 'application/json; charset=utf-8' }
    }), 'auth_req')!, client)
    expect(JSON.parse(json.body!)).toEqual({ u: 'alice', c: 'c1' })
    expect(json.headers['content-type']).toBe('application/json; charset=utf-8')
  })

  it('keeps a value with & = , and spaces one value of its parameter (form, query string and JSON)', () => {
    const evil: AuthContext = { ...client, username: 'x&password=y,z=1 %u' }
    for (const method of ['get', 'post']) {
      const r = renderHttpRequest(compileHttpRequest(config('auth_req', { url: 'http://h/a', method, params: 'username=%u,password=%P' }), 'auth_req')!, evil)
      const query = new URLSearchParams(method === 'get' ? r.path.split('?')[1] : r.body)
      expect([...query.entries()]).toEqual([['username', 'x&password=y,z=1 %u'], ['password', 'pw']])
    }
    const json = renderHttpRequest(compileHttpRequest(config('auth_req', { url: 'http://h/a', method: 'post', params: 'username=%u', 'headers.<name>': { 'content-type': 'application/json' } }), 'auth_req')!, { ...client, username: '","password":"x' })
    expect(JSON.parse(json.body!)).toEqual({ username: '","password":"x' })
  })

  it('renders ACL placeholders %A %t %m and a missing value as empty', () => {
    const spec = compileHttpRequest(config('acl_req', { url: 'http://h/acl', method: 'post', params: 'access=%A,topic=%t,mountpoint=%m,user=%u' }), 'acl_req')!
    expect(renderHttpRequest(spec, { ...client, username: undefined, access: 2, topic: 'a/+/b' }).body).toBe('access=2&topic=a%2F%2B%2Fb&mountpoint=&user=')
  })

  it('turns a request off with an empty URL and refuses a bad URL or params', () => {
    expect(compileHttpRequest(config('super_req', { url: '' }), 'super_req')).toBeUndefined()
    expect(() => compileHttpRequest(config('auth_req', { url: 'ftp://h/x' }), 'auth_req')).toThrow(/auth\.http\.auth_req\.url/)
    expect(() => compileHttpRequest(config('auth_req', { url: 'not a url' }), 'auth_req')).toThrow(/auth\.http\.auth_req\.url/)
    expect(() => parseParams('clientid', 'auth.http.auth_req.params')).toThrow(/auth\.http\.auth_req\.params/)
    expect(parseParams('a=b=c,,d=%u', 'k').map(([k, t]) => [k, t.source])).toEqual([['a', 'b=c'], ['d', '%u']])
  })
})

describe('the shipped etc/plugins/svc_auth_http.conf', () => {
  const file = join(PROJECT_ROOT, 'etc/plugins/svc_auth_http.conf')
  it('sets every fixed key of the schema, only known keys, and loads as the defaults', () => {
    const schema = svcAuthHttp.configSchema
    const keys = parseConfText(readFileSync(file, 'utf8'), file).map(e => e.key)
    const fixed = Object.keys(schema).filter(k => !k.includes('<name>'))
    expect(keys.filter(k => !k.includes('.headers.')).sort()).toEqual(fixed.sort())
    const shipped = loadPluginConfig(file, schema, { env: {} }) as Record<string, unknown>
    const defaults = loadPluginConfig(join(PROJECT_ROOT, 'etc/plugins/does-not-exist.conf'), schema, { env: {}, optional: true }) as Record<string, unknown>
    for (const key of fixed) expect([key, shipped[key]]).toEqual([key, defaults[key]])
    expect(shipped['auth.http.auth_req.headers.<name>']).toEqual({ 'content-type': 'application/x-www-form-urlencoded' })
    expect(shipped['auth.http.timeout']).toBe(5000)
    expect(shipped['auth.http.pool_size']).toBe(32)
  })
})
