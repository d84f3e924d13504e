/**
 * The `web_hook` resource type (config `url`, `headers`, `method`, `request_timeout`) and its
 * actions `data_to_webserver`, `web_hook:event_action` and `web_hook:publish_action` (spec:
 * "Rule-engine trigger events": an HTTP request with a JSON body, content type
 * `application/json`, plus the resource's headers).
 *
 * Delivery: one request per action run with global `fetch`, bounded by the resource's
 * `request_timeout`; no retries (the spec does not show any). A network error, a timeout or
 * a status other than 2xx fails the run (counted as `failed`, logged). At most
 * {@link MAX_IN_FLIGHT} requests per resource and node are pending; a run beyond that fails
 * at once, so a slow server cannot make the node hold an unbounded backlog.
 *
 * Per-node state: the pending count lives in the resource's instance on the node (the
 * type's `open`, closed with the resource or the rule engine), which the action reaches
 * through `ctx.instance()`; no module keeps a count. Several nodes in one process (the
 * tests) with a resource of the same id each have their own instance, so their own limit.
 */
import { maskUrl } from '../../node/config/index.js'
import { fillString, fillTemplate } from '../../node/template/index.js'
import type { ActionContext, ActionDefinition, ParamSpec, Resource, ResourceInstance, ResourceTypeDefinition } from '../types.js'

/**
 * The plugin providing the web_hook type and its actions: svc_rule_engine, until a
 * svc_web_hook plugin (EMQ X's emqx_web_hook; issue 23, plugins/web_hook/) provides them.
 */
export const WEB_HOOK_APP = 'svc_rule_engine'
/** Pending requests allowed per resource. */
export const MAX_IN_FLIGHT = 1000
/** Methods a web_hook resource may use. */
export const WEB_HOOK_METHODS = ['POST', 'PUT', 'GET', 'DELETE', 'PATCH'] as const

/** Bounds an instance's health check, as the resource service bounds `healthCheck` (5 s). */
const ALIVE_TIMEOUT_MS = 5000

/**
 * A web_hook resource's running part on one node: its pending requests. Invariant:
 * `pending` counts the {@link sendToWebServer} calls through this instance that passed the
 * limit and have not settled, so it never exceeds {@link MAX_IN_FLIGHT}.
 */
export class WebHookInstance implements ResourceInstance {
  /** Requests sent and not answered yet. */
  pending = 0

  constructor (private readonly resource: Resource) {}

  /** The status while the rule engine runs: the same check as the type's `healthCheck`. */
  async alive (): Promise<boolean> {
    return await serverAnswers(this.resource, AbortSignal.timeout(ALIVE_TIMEOUT_MS))
  }

  /** Nothing to stop: pending requests end by themselves, within the request timeout. */
  async close (): Promise<void> {}
}

/** Whether the resource's server answers a HEAD request within its timeout (any status). */
async function serverAnswers (resource: Resource, signal: AbortSignal): Promise<boolean> {
  try {
    const res = await fetch(String(resource.config.url), { method: 'HEAD', signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutOf(resource))]) })
    await res.body?.cancel()
    return true
  } catch {
    return false
  }
}

/** `web_hook`: an HTTP endpoint the actions send to. */
export const webHookResourceType: ResourceTypeDefinition = {
  name: 'web_hook',
  provider: WEB_HOOK_APP,
  title: 'WebHook',
  description: 'WebHook: sends the selected data as an HTTP request with a JSON body',
  params: {
    // credential query values (token=, password=) and userinfo are shown as ****** (docs/rules.md)
    url: { type: 'string', format: 'url', required: true, secretParts: 'url', title: 'Request URL', description: 'The URL of the server (http:// or https://)' },
    headers: {
      type: 'object', required: false, default: {}, secretParts: 'headers', title: 'Request Header',
      description: 'Headers sent with every request; their values (but content-type\'s and accept\'s) are shown as ******', schema: {}
    },
    method: {
      type: 'string', enum: [...WEB_HOOK_METHODS], required: false, default: 'POST', title: 'Request Method',
      description: 'The HTTP method; GET sends no body'
    },
    request_timeout: {
      type: 'integer', required: false, default: 5000, title: 'Request Timeout',
      description: 'How long a request may take, in milliseconds'
    }
  },
  async healthCheck (resource, signal) {
    return await serverAnswers(resource, signal)
  },
  // pending requests are counted per node: each node opens its own instance of the resource
  async open (resource) {
    return new WebHookInstance(resource)
  }
}

function timeoutOf (resource: Resource): number {
  const t = resource.config.request_timeout
  return typeof t === 'number' && t > 0 ? t : 5000
}

/** Sends `body` (JSON, or text as is) to the action's resource. */
export async function sendToWebServer (body: unknown, ctx: ActionContext): Promise<void> {
  const resource = ctx.resource
  if (resource === undefined) throw new Error(`resource ${String(ctx.params.$resource)} does not exist`)
  const instance = await ctx.instance()
  if (!(instance instanceof WebHookInstance)) throw new Error(`web_hook ${resource.id} is not running on this node (the rule engine is not started)`)
  if (instance.pending >= MAX_IN_FLIGHT) throw new Error(`web_hook ${resource.id}: ${MAX_IN_FLIGHT} requests already pending; request dropped`)
  instance.pending++
  const method = String(resource.config.method ?? 'POST').toUpperCase()
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  for (const [k, v] of Object.entries((resource.config.headers ?? {}) as Record<string, unknown>)) headers[k.toLowerCase()] = String(v)
  try {
    const res = await fetch(String(resource.config.url), {
      method,
      headers,
      body: method === 'GET' ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutOf(resource))
    })
    await res.body?.cancel()
    // the message is logged and counted: no credential of the URL in it
    if (res.status < 200 || res.status > 299) throw new Error(`web_hook ${resource.id}: ${method} ${maskUrl(String(resource.config.url))} answered HTTP ${res.status}`)
  } catch (err: any) {
    if (err?.name === 'TimeoutError') throw new Error(`web_hook ${resource.id}: no answer within ${timeoutOf(resource)} ms`)
    // fetch names the URL in some errors (one with user:pass@ is refused so): not its credentials
    const url = String(resource.config.url)
    if (typeof err?.message === 'string' && err.message.includes(url)) throw new Error(err.message.replaceAll(url, maskUrl(url)))
    throw err
  } finally {
    instance.pending--
  }
}

const RESOURCE_PARAM: ParamSpec = {
  type: 'string', required: true, title: 'Resource ID', description: 'Bind a resource to this action (the id of a web_hook resource)'
}

/** `data_to_webserver`: the selected data (or `payload_tmpl` filled) to the resource. */
export const dataToWebServerAction: ActionDefinition = {
  name: 'data_to_webserver',
  aliases: ['web_hook:data_to_webserver'],
  app: WEB_HOOK_APP,
  for: '$any',
  types: ['web_hook'],
  title: 'Data to Web Server',
  description: 'Forward the selected data to a web server as JSON',
  params: {
    $resource: RESOURCE_PARAM,
    payload_tmpl: {
      type: 'string', format: 'template', required: false, default: '', title: 'Payload Template',
      description: 'The body, with ${key} placeholders; empty: the selected data as JSON'
    }
  },
  async run (selected, ctx) {
    const template = String(ctx.params.payload_tmpl ?? '')
    await sendToWebServer(template === '' ? selected : fillString(template, selected), ctx)
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
    await sendToWebServer(template === undefined ? selected : fillTemplate(template, selected), ctx)
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
    await sendToWebServer(selected, ctx)
  }
}

/** Every web_hook action. */
export const WEB_HOOK_ACTIONS: readonly ActionDefinition[] = [dataToWebServerAction, webHookEventAction, webHookPublishAction]
