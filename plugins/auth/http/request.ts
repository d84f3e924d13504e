/**
 * The requests of `svc_auth_http` (EMQ X 4.4's `emqx_auth_http_cli`): a configured request
 * (`auth.http.<kind>_req.url|method|headers.<name>|params`) compiled once when the plugin
 * loads, and rendered per client into the URL, headers and body undici sends.
 *
 * Invariants:
 * - `params` is parsed once: `k1=v1,k2=v2`, each value a template of placeholders. The keys
 *   and the number of parameters are fixed by the configuration; a client's value (a
 *   username with `&`, `=` or `,` in it) is encoded by `URLSearchParams` or `JSON.stringify`
 *   and always stays one value of its parameter.
 * - GET sends the parameters as the query string (after the URL's own query, if any), no
 *   body, no `content-type`; POST sends them as a JSON object when the `content-type` header
 *   is `application/json`, else as `application/x-www-form-urlencoded` (EMQ X's shipped
 *   header; EMQ X 4.4 crashed the request when the header was missing).
 */
import { ConfigError, maskUrl } from '../../../node/config/index.js'
import { parseTemplate, renderString, type AuthContext, type Template } from '../backend/index.js'

/** The three requests EMQ X 4.4 has. */
export type HttpRequestKind = 'auth_req' | 'super_req' | 'acl_req'

/** A request as configured, compiled. */
export interface HttpRequestSpec {
  kind: HttpRequestKind
  url: URL
  method: 'GET' | 'POST'
  /** Lower-case header names (`content_type` in a key is `content-type`) -> value. */
  headers: Readonly<Record<string, string>>
  /** Parameter name -> value template, in the configured order. */
  params: ReadonlyArray<readonly [string, Template]>
  /** POST body encoding, from the `content-type` header. */
  json: boolean
}

/** A rendered request, ready for undici. */
export interface RenderedRequest {
  origin: string
  /** Path and query string. */
  path: string
  method: 'GET' | 'POST'
  headers: Record<string, string>
  body?: string
}

/**
 * Compiles `auth.http.<kind>.*` from the plugin config; undefined when `<kind>.url` is
 * empty (that request is off: no superuser request, or no ACL).
 */
export function compileHttpRequest (config: Record<string, any>, kind: HttpRequestKind): HttpRequestSpec | undefined {
  const prefix = `auth.http.${kind}`
  const urlText: string = config[`${prefix}.url`] ?? ''
  if (urlText === '') return undefined
  let url: URL
  try {
    url = new URL(urlText)
  } catch {
    throw ConfigError.badValue(`${prefix}.url`, maskUrl(urlText), 'an http:// or https:// URL such as http://127.0.0.1:80/mqtt/auth', 'plugin config')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw ConfigError.badValue(`${prefix}.url`, maskUrl(urlText), 'an http:// or https:// URL such as http://127.0.0.1:80/mqtt/auth', 'plugin config')
  }
  const method = (config[`${prefix}.method`] ?? 'post') === 'get' ? 'GET' : 'POST'
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries((config[`${prefix}.headers.<name>`] ?? {}) as Record<string, string>)) {
    headers[name.toLowerCase().replace(/_/g, '-')] = value
  }
  const params = parseParams(config[`${prefix}.params`] ?? '', `${prefix}.params`)
  const contentType = headers['content-type'] ?? 'application/x-www-form-urlencoded'
  const json = /^application\/json\s*(;|$)/i.test(contentType)
  return { kind, url, method, headers, params, json }
}

/** Parses EMQ X's `k1=v1,k2=v2` (a value may hold `=`; empty pairs are skipped). */
export function parseParams (text: string, key: string): Array<readonly [string, Template]> {
  const out: Array<readonly [string, Template]> = []
  for (const pair of text.split(',')) {
    if (pair.trim() === '') continue
    const at = pair.indexOf('=')
    if (at <= 0) throw ConfigError.badValue(key, text, 'name=value pairs separated by commas, such as clientid=%c,username=%u', 'plugin config')
    out.push([pair.slice(0, at).trim(), parseTemplate(pair.slice(at + 1).trim())])
  }
  return out
}

/** The request for one client: placeholders rendered, then encoded for the method. */
export function renderHttpRequest (spec: HttpRequestSpec, ctx: AuthContext): RenderedRequest {
  const headers = { ...spec.headers }
  const pathname = spec.url.pathname
  if (spec.method === 'GET') {
    const query = new URLSearchParams(spec.url.search)
    for (const [name, template] of spec.params) query.append(name, renderString(template, ctx))
    delete headers['content-type']
    const qs = query.toString()
    return { origin: spec.url.origin, path: qs === '' ? pathname : `${pathname}?${qs}`, method: 'GET', headers }
  }
  let body: string
  if (spec.json) {
    const object: Record<string, string> = {}
    for (const [name, template] of spec.params) object[name] = renderString(template, ctx)
    body = JSON.stringify(object)
  } else {
    const form = new URLSearchParams()
    for (const [name, template] of spec.params) form.append(name, renderString(template, ctx))
    body = form.toString()
    headers['content-type'] ??= 'application/x-www-form-urlencoded'
  }
  return { origin: spec.url.origin, path: pathname + spec.url.search, method: 'POST', headers, body }
}
