/**
 * The `web_hook` resource type and its actions, as EMQ X 4.4 offers them in the rule engine
 * (emqx_web_hook's resource and `data_to_webserver`, without starting the emqx_web_hook
 * plugin): the resource is a server (`url`, `connect_timeout`, `request_timeout`,
 * `pool_size`, `enable_pipelining`, the TLS files and checks), the action says what to send
 * there (`method`, `path`, `headers`, `body`). `web_hook:event_action` and
 * `web_hook:publish_action` are Starling's older actions, kept for the rules that use them.
 *
 * Delivery: one request per action run through the resource's pool on this node
 * (web-hook-pool.ts), bounded by `request_timeout`; no retries (EMQ X 4.4 has none). A
 * network error, a timeout or a status other than 2xx fails the run (counted as `failed`,
 * logged). At most {@link MAX_IN_FLIGHT} requests per resource and node are pending; a run
 * beyond that fails at once, so a slow server cannot make the node hold an unbounded backlog.
 *
 * Configs stored by earlier versions keep working: a resource's `headers` and `method` (the
 * action's, when it has them, come first), `request_timeout` as a number of milliseconds, and
 * an action's `payload_tmpl` (used when `body` is empty).
 *
 * Per-node state: the pool and the pending count live in the resource's instance on the
 * node (the type's `open`, closed with the resource or the rule engine), which the action
 * reaches through `ctx.instance()`; no module keeps either.
 */
import { fillString, fillTemplate } from '../../node/template/index.js'
import { resourceTlsParams } from '../resource-tls.js'
import type { ActionContext, ActionDefinition, ParamSpec, ResourceTypeDefinition } from '../types.js'
import { WebHookInstance, openWebHookPool, webHookSettings, webHookTlsOptions, type WebHookRequest } from './web-hook-pool.js'

export { MAX_IN_FLIGHT, PIPELINING_DEPTH, WebHookInstance } from './web-hook-pool.js'

/**
 * The plugin providing the web_hook type and its actions: svc_rule_engine (EMQ X 4.4 offers
 * the type in the rule engine whether or not emqx_web_hook runs; docs/rules.md).
 */
export const WEB_HOOK_APP = 'svc_rule_engine'
/** Methods of `data_to_webserver` (EMQ X 4.4's). */
export const WEB_HOOK_ACTION_METHODS = ['POST', 'DELETE', 'PUT', 'GET'] as const
/** Methods a web_hook resource stored by an earlier version may name. */
export const WEB_HOOK_METHODS = ['POST', 'PUT', 'GET', 'DELETE', 'PATCH'] as const

/** `web_hook`: an HTTP server the actions send to. */
export const webHookResourceType: ResourceTypeDefinition = {
  name: 'web_hook',
  provider: WEB_HOOK_APP,
  title: 'WebHook',
  description: 'WebHook: sends the selected data as an HTTP request with a JSON body',
  params: {
    // credential query values (token=, password=) and userinfo are shown as ****** (docs/rules.md)
    url: {
      // an action's path is appended to it (docs/rules.md)
      type: 'string', format: 'url', required: true, secretParts: 'url', title: 'Request URL', description: 'The URL of the server (http:// or https://)'
    },
    connect_timeout: {
      type: 'string', format: 'duration', required: false, default: '5s', title: 'Connect Timeout',
      description: 'How long connecting to the server may take (TLS handshake included): 5s, 500ms; a number is milliseconds'
    },
    request_timeout: {
      type: 'string', format: 'duration', required: false, default: '5s', title: 'Request Timeout',
      description: 'How long a request may take, waiting for a connection of the pool included: 5s, 500ms; a number is milliseconds'
    },
    pool_size: { type: 'integer', required: false, default: 8, title: 'Pool Size', description: 'Connections to the server per node, at most' },
    enable_pipelining: {
      type: 'boolean', required: false, default: true, title: 'Enable Pipelining',
      description: 'Send further requests on a connection before the answers to the earlier ones came (HTTP/1.1 pipelining)'
    },
    ...resourceTlsParams({ sslSwitch: false, verifyDefault: false }),
    headers: {
      type: 'object', required: false, secretParts: 'headers', title: 'Request Header (older resources)',
      description: 'Headers sent with every request, under the action\'s own (set headers on the action: this key is kept for resources made before it had them); values but content-type\'s and accept\'s are shown as ******',
      schema: {}
    },
    method: {
      type: 'string', enum: [...WEB_HOOK_METHODS], required: false, title: 'Request Method (older resources)',
      description: 'The method of actions that name none (event_action, publish_action, and data_to_webserver actions made before it had one)'
    }
  },
  checkConfig (config) {
    webHookTlsOptions(webHookSettings(config))
  },
  // the pool and the pending requests are per node: each node opens its own instance of the resource
  async open (resource) {
    return await openWebHookPool(resource.id, webHookSettings(resource.config))
  }
}

/**
 * The request path: the URL's path, then `actionPath` (its placeholders filled, each value
 * URL-encoded), one `/` between them, the URL's query string then the action path's.
 */
export function requestPath (base: URL, actionPath: string): string {
  if (actionPath === '') return base.pathname + base.search
  const at = actionPath.indexOf('?')
  const extra = (at < 0 ? actionPath : actionPath.slice(0, at)).replace(/^\/+/, '')
  const head = base.pathname.replace(/\/+$/, '')
  const path = extra === '' ? (head === '' ? '/' : head) : `${head}/${extra}`
  const query = [base.search.slice(1), at < 0 ? '' : actionPath.slice(at + 1)].filter(q => q !== '').join('&')
  return query === '' ? path : `${path}?${query}`
}

/** What an action asks of the request; unset fields come from the resource. */
interface ActionRequest {
  method?: string
  path?: string
  headers?: Record<string, string>
  /** Undefined: the selected data as JSON. */
  body?: string | unknown
}

/** The action's resource instance on this node, running. */
async function instanceOf (ctx: ActionContext): Promise<WebHookInstance> {
  const resource = ctx.resource
  if (resource === undefined) throw new Error(`resource ${String(ctx.params.$resource)} does not exist`)
  const instance = await ctx.instance()
  if (!(instance instanceof WebHookInstance)) throw new Error(`web_hook ${resource.id} is not running on this node (the rule engine is not started, or it could not start: see the log)`)
  return instance
}

/** Sends `selected` as `asked` says to the action's resource. */
async function sendToWebServer (selected: Record<string, unknown>, asked: ActionRequest, ctx: ActionContext): Promise<void> {
  const instance = await instanceOf(ctx)
  const settings = instance.settings
  const method = asked.method ?? settings.method ?? 'POST'
  // EMQ X 4.4 sends no body with GET and DELETE; a DELETE named by an older resource kept its body
  const bodyless = method === 'GET' || (method === 'DELETE' && asked.method !== undefined)
  const content = asked.body ?? selected
  const request: WebHookRequest = {
    method,
    path: requestPath(settings.url, asked.path ?? ''),
    headers: { 'content-type': 'application/json', ...settings.headers, ...asked.headers },
    body: bodyless ? undefined : typeof content === 'string' ? content : JSON.stringify(content)
  }
  await instance.send(request)
}

const RESOURCE_PARAM: ParamSpec = {
  type: 'string', required: true, title: 'Resource ID', description: 'Bind a resource to this action (the id of a web_hook resource)'
}

/** The action's headers, names in lower case, values filled from `selected`. */
function actionHeaders (given: unknown, selected: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {}
  if (typeof given !== 'object' || given === null || Array.isArray(given)) return out
  for (const [name, value] of Object.entries(given)) out[name.toLowerCase()] = fillString(String(value), selected)
  return out
}

/** `data_to_webserver`: EMQ X 4.4's action: method, path, headers and body (the selected data as JSON when empty). */
export const dataToWebServerAction: ActionDefinition = {
  name: 'data_to_webserver',
  aliases: ['web_hook:data_to_webserver'],
  app: WEB_HOOK_APP,
  for: '$any',
  types: ['web_hook'],
  title: 'Data to Web Server',
  description: 'Send the selected data to a web server as an HTTP request',
  params: {
    $resource: RESOURCE_PARAM,
    method: {
      type: 'string', enum: [...WEB_HOOK_ACTION_METHODS], required: false, default: 'POST', title: 'Method',
      description: 'The HTTP method; GET and DELETE send no body'
    },
    path: {
      type: 'string', format: 'template', required: false, default: '', title: 'Path',
      description: 'Appended to the resource\'s URL, with ${key} placeholders (each value URL-encoded); empty: the URL as it is'
    },
    headers: {
      type: 'object', required: false, default: { 'content-type': 'application/json' }, secretParts: 'headers', title: 'Headers',
      description: 'The request\'s headers, values with ${key} placeholders; values but content-type\'s and accept\'s are shown as ******', schema: {}
    },
    body: {
      type: 'string', format: 'template', required: false, default: '', title: 'Body',
      description: 'The body, with ${key} placeholders; empty: the selected data as JSON'
    }
  },
  async run (selected, ctx) {
    const p = ctx.params
    // payload_tmpl: actions stored before `body` existed
    const template = typeof p.body === 'string' && p.body !== '' ? p.body : typeof p.payload_tmpl === 'string' ? p.payload_tmpl : ''
    await sendToWebServer(selected, {
      method: typeof p.method === 'string' ? p.method.toUpperCase() : undefined,
      path: typeof p.path === 'string' ? fillString(p.path, selected, encodeURIComponent) : undefined,
      headers: p.headers === undefined ? undefined : actionHeaders(p.headers, selected),
      body: template === '' ? undefined : fillString(template, selected)
    }, ctx)
  }
}

/** `web_hook:event_action`: any event; the body is `template` filled, or the selected data. */
export const webHookEventAction: ActionDefinition = {
  name: 'web_hook:event_action',
  aliases: ['event_action'],
  app: WEB_HOOK_APP,
  for: '$events',
  types: ['web_hook'],
  title: 'Data to Web Server (events)',
  description: 'Forward events to a web server; the optional template object is filled with ${key} values',
  params: {
    $resource: RESOURCE_PARAM,
    template: {
      type: 'object', required: false, title: 'Payload Template', schema: {},
      description: 'The JSON body, its strings filled with ${key} values from the selected data; absent: the selected data'
    }
  },
  async run (selected, ctx) {
    const template = ctx.params.template
    await sendToWebServer(selected, { body: template === undefined ? undefined : fillTemplate(template, selected) }, ctx)
  }
}

/** `web_hook:publish_action`: message.publish rules; the selected data as the body. */
export const webHookPublishAction: ActionDefinition = {
  name: 'web_hook:publish_action',
  aliases: ['publish_action'],
  app: WEB_HOOK_APP,
  for: 'message.publish',
  types: ['web_hook'],
  title: 'Data to Web Server (messages)',
  description: 'Forward published messages to a web server',
  params: { $resource: RESOURCE_PARAM },
  async run (selected, ctx) {
    await sendToWebServer(selected, {}, ctx)
  }
}

/** Every web_hook action. */
export const WEB_HOOK_ACTIONS: readonly ActionDefinition[] = [dataToWebServerAction, webHookEventAction, webHookPublishAction]
