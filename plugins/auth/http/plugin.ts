/**
 * `svc_auth_http`: authentication, superuser and ACL by an HTTP service, as EMQ X 4.4's
 * `emqx_auth_http` (docs/auth/svc_auth_http.md). The framework (plugins/auth/backend/plugin.ts)
 * puts it in the chains and bounds every check by `auth.http.timeout`; this module makes the
 * requests and reads the answers:
 *
 * | request | answer | verdict |
 * |---|---|---|
 * | auth_req | 200, body `ignore` | ignore |
 * | auth_req | other 200 | allow (superuser if super_req answers 200) |
 * | auth_req | 5xx, or no answer (after 2 retries) | ignore, alarm `svc_auth_http_unreachable` |
 * | auth_req | any other status (400, 401, 403, 404, 429 ...) | deny |
 * | super_req | 200 / other / no answer | superuser / not / not |
 * | acl_req | 200 `ignore` / other 200 / other status | ignore / allow / deny |
 * | acl_req | no answer (after 2 retries) | ignore, alarm |
 *
 * The alarm is cleared by the next check the service answers in time (a 5xx to auth_req
 * raises it instead); a check that got no answer never clears it.
 *
 * Invariants (the pool): one undici `Agent` per loaded plugin, closed at unload; at most
 * `pool_size` connections per origin, each carrying up to `enable_pipelining` requests. It
 * connects lazily, so loading with the service down succeeds; a closed connection is
 * reopened by the next request. Every request carries an abort signal that fires at the
 * check's deadline, so no socket waits past `auth.http.timeout`.
 */
import { maskUrl, type ConfigSchema } from '../../../node/config/index.js'
import type { AclAction } from '../../../node/acl/acl-matcher.js'
import type { PluginDefinition } from '../../../node/plugins/types.js'
import { defineAuthBackend, type AuthContext, type BackendAuthResult, type BackendClient, type BackendOpenContext, type BackendRequest, type BackendVerdict } from '../backend/index.js'
import { sslKeyOptions, type SslKeyRules } from '../backend/ssl-keys.js'
import { compileHttpRequest, renderHttpRequest, type HttpRequestSpec } from './request.js'

/** Retries of a request that got no answer (connection refused, reset, connect timeout), as EMQ X 4.4's ehttpc pool. */
export const HTTP_RETRIES = 2

const REQUEST_DOCS = {
  auth_req: 'authentication',
  super_req: 'superuser',
  acl_req: 'ACL'
} as const

function requestKeys (kind: keyof typeof REQUEST_DOCS, url: string, params: string): ConfigSchema {
  const what = REQUEST_DOCS[kind]
  return {
    [`auth.http.${kind}.url`]: {
      type: 'string', default: url, allowEmpty: true, live: false, secretParts: 'url',
      doc: `URL of the ${what} request (http:// or https://); empty turns the ${what} request off.`
    },
    [`auth.http.${kind}.method`]: {
      type: 'enum', values: ['post', 'get'], default: 'post', live: false,
      doc: 'get sends the params as the query string; post sends them in the body, as JSON or a form by the content-type header.'
    },
    [`auth.http.${kind}.headers.<name>`]: {
      type: 'string', live: false, secretParts: 'header',
      doc: 'A request header: <name> is the header name (content_type is content-type); content-type application/json or application/x-www-form-urlencoded (the default) picks the POST body format.'
    },
    [`auth.http.${kind}.params`]: {
      type: 'string', default: params, allowEmpty: true, live: false, secretParts: 'pairs',
      doc: 'name=value pairs, comma-separated; values may hold the placeholders %u %c %a %r %P %p %C %d' + (kind === 'acl_req' ? ' %A %t %m' : '') + '.'
    }
  }
}

/** Keys of `etc/plugins/svc_auth_http.conf` (EMQ X 4.4's names), beside `auth.http.priority`. */
export const AUTH_HTTP_CONFIG_SCHEMA: ConfigSchema = {
  ...requestKeys('auth_req', 'http://127.0.0.1:80/mqtt/auth', 'clientid=%c,username=%u,password=%P'),
  ...requestKeys('super_req', '', 'clientid=%c,username=%u'),
  ...requestKeys('acl_req', 'http://127.0.0.1:80/mqtt/acl', 'access=%A,username=%u,clientid=%c,ipaddr=%a,topic=%t,mountpoint=%m'),
  'auth.http.timeout': {
    type: 'duration', default: '5s', min: 1, live: false,
    doc: 'Longest wait for one check (the auth request with its superuser request, or one ACL request, retries included); past it the plugin answers ignore and the next in the chain decides.'
  },
  'auth.http.connect_timeout': {
    type: 'duration', default: '5s', min: 1, live: false,
    doc: 'Longest wait for a TCP (and TLS) connection to the HTTP service.'
  },
  'auth.http.pool_size': {
    type: 'int', default: '32', min: 1, max: 1024, live: false,
    doc: 'Most connections to each HTTP service origin.'
  },
  'auth.http.enable_pipelining': {
    type: 'int', default: '100', min: 1, max: 1000, live: false,
    doc: 'Most requests in flight on one connection (HTTP/1.1 pipelining); 1 sends one at a time.'
  },
  'auth.http.ssl.cacertfile': {
    type: 'string', default: '', allowEmpty: true, live: false,
    doc: 'PEM CA certificates the https service is checked against (with ssl.verify); empty: the system\'s CAs.'
  },
  'auth.http.ssl.certfile': {
    type: 'string', default: '', allowEmpty: true, live: false,
    doc: 'PEM client certificate sent to an https service; empty: none.'
  },
  'auth.http.ssl.keyfile': {
    type: 'string', default: '', allowEmpty: true, live: false,
    doc: 'PEM private key of ssl.certfile.'
  },
  'auth.http.ssl.verify': {
    type: 'bool', default: 'false', live: false,
    doc: 'Check the https service\'s certificate and host name (EMQ X 4.4 default: false).'
  },
  'auth.http.ssl.server_name_indication': {
    type: 'string', default: '', allowEmpty: true, live: false,
    doc: 'TLS SNI host name; empty: the URL\'s host; disable: send none.'
  }
}

/** A 5xx answer: the service is there but cannot decide; the check answers ignore with the alarm. */
class HttpServiceError extends Error {
  readonly code = 'STARLING_AUTH_HTTP_STATUS'
  constructor (url: URL, status: number) {
    // the message reaches the log and the alarm's details: no credential of the URL in it
    super(`${maskUrl(url.href)} answered HTTP ${status}`)
    this.name = 'HttpServiceError'
  }
}

/** One answer: the status and, for 200, the body. */
interface HttpAnswer { status: number, body: string }

/** Longest body read from an answer (the body is only compared with `ignore`). */
const MAX_BODY_BYTES = 64 * 1024

/** HTTP's `ssl.verify` is a bool, undici sends the URL's host as SNI itself (`disable`: none), certfile and keyfile together. */
const HTTP_SSL_RULES: SslKeyRules = { verify: (v) => v === true, serverName: 'sni', certNeedsKey: true }

/** Error codes of a request that got no answer and may be sent again (refused, reset, connect timeout). */
const RETRIABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT'])

/** Whether a failure is a request that got no answer and may be sent again before the deadline. */
function retriable (err: unknown, signal: AbortSignal): boolean {
  return !signal.aborted && RETRIABLE_CODES.has((err as { code?: string }).code ?? '')
}

async function openHttp (ctx: BackendOpenContext): Promise<BackendClient> {
  const { config, logger } = ctx
  const auth = compileHttpRequest(config, 'auth_req')
  const superuser = compileHttpRequest(config, 'super_req')
  const acl = compileHttpRequest(config, 'acl_req')
  const timeoutMs: number = config['auth.http.timeout']
  const tls = sslKeyOptions('auth.http', config, ctx.resolvePath, HTTP_SSL_RULES)
  const verify = tls.rejectUnauthorized === true
  const usesTls = [auth, superuser, acl].some((r) => r?.url.protocol === 'https:')
  if (usesTls && !verify) logger.warn('svc_auth_http: auth.http.ssl.verify is off: the https service\'s certificate is not checked')

  // undici is loaded by the first load of the plugin, not by every node
  const { Agent } = await import('undici')
  const agent = new Agent({
    connections: config['auth.http.pool_size'],
    pipelining: config['auth.http.enable_pipelining'],
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: {
      timeout: config['auth.http.connect_timeout'],
      ...tls
    }
  })

  /**
   * Sends `spec` for `client`, retrying a request that got no answer; the status and (for
   * 200) the body. Any status marks `check` answered: the service was heard from (a 5xx
   * still raises the alarm, as the check then throws).
   */
  async function send (spec: HttpRequestSpec, client: AuthContext, signal: AbortSignal, check: BackendRequest): Promise<HttpAnswer> {
    const request = renderHttpRequest(spec, client)
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await agent.request({ ...request, signal, idempotent: true, blocking: false })
        check.answered()
        if (res.statusCode !== 200) {
          await res.body.dump()
          return { status: res.statusCode, body: '' }
        }
        return { status: 200, body: await readBody(res.body) }
      } catch (err) {
        if (attempt >= HTTP_RETRIES || !retriable(err, signal)) throw err
        logger.debug({ err, url: maskUrl(spec.url.href), attempt: attempt + 1 }, 'svc_auth_http: no answer; retrying')
      }
    }
  }

  const client: BackendClient = {
    async close () { await agent.close() }
  }
  if (auth !== undefined) {
    client.authenticate = async (who: AuthContext, check: BackendRequest): Promise<BackendAuthResult> => {
      const signal = AbortSignal.timeout(timeoutMs)
      const answer = await send(auth, who, signal, check)
      if (answer.status === 200) {
        if (answer.body.trim() === 'ignore') return { verdict: 'ignore' }
        return { verdict: 'allow', superuser: superuser === undefined ? false : await isSuperuser(superuser, who, signal, check) }
      }
      if (answer.status >= 500) throw new HttpServiceError(auth.url, answer.status)
      logger.info({ clientId: who.clientId, username: who.username, status: answer.status }, 'svc_auth_http: the service refused the client')
      return { verdict: 'deny' }
    }
  }

  async function isSuperuser (spec: HttpRequestSpec, who: AuthContext, signal: AbortSignal, check: BackendRequest): Promise<boolean> {
    try {
      return (await send(spec, who, signal, check)).status === 200
    } catch (err) {
      logger.warn({ err, clientId: who.clientId }, 'svc_auth_http: the superuser request failed; not a superuser')
      return false
    }
  }

  if (acl !== undefined) {
    client.checkAcl = async (who: AuthContext, _action: AclAction, check: BackendRequest): Promise<BackendVerdict> => {
      const answer = await send(acl, who, AbortSignal.timeout(timeoutMs), check)
      if (answer.status !== 200) return 'deny'
      return answer.body.trim() === 'ignore' ? 'ignore' : 'allow'
    }
  }
  return client
}

/** The body as text, at most {@link MAX_BODY_BYTES} (the rest is discarded). */
async function readBody (body: AsyncIterable<Buffer> & { dump: () => Promise<void> }): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    chunks.push(chunk)
    size += chunk.length
    if (size > MAX_BODY_BYTES) {
      await body.dump()
      break
    }
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** The `svc_auth_http` plugin. */
export const svcAuthHttp: PluginDefinition = defineAuthBackend({
  name: 'svc_auth_http',
  description: 'Authentication and ACL by an HTTP service (EMQ X 4.4 emqx_auth_http)',
  prefix: 'auth.http',
  configSchema: AUTH_HTTP_CONFIG_SCHEMA,
  open: openHttp
})
