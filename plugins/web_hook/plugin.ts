/**
 * `svc_web_hook` (EMQ X 4.4's emqx_web_hook, docs/web-hook.md): the client, session and
 * message events named by `web.hook.rule.<event>.<n>` are POSTed as JSON to `web.hook.url`.
 *
 * Invariants:
 * - It listens on the hooks bus only to the events its rules name, so an event no rule names
 *   costs the broker nothing (the bus's `has` check before an event is built).
 * - Sending never blocks or slows the broker: a listener builds the body and hands it to the
 *   pool (the web_hook resource's, rules/actions/web-hook-pool.ts) without waiting; each
 *   request settles within `web.hook.request_timeout`, and at most MAX_IN_FLIGHT are
 *   pending, past which a request is dropped and counted as failed. The answer's body is
 *   ignored; a non-2xx status, a timeout or a refused connection counts in
 *   `webhook.failed` and is logged (at most one warning per {@link WARN_EVERY_MS}).
 * - Everything `load` added (listeners, metrics, the pool) `unload` removes; requests still
 *   pending settle within `request_timeout` before the pool closes.
 */
import { addMetrics } from '../../node/metrics.js'
import { configRoot } from '../../node/config/index.js'
import { topicMatches } from '../../node/mqtt/topic.js'
import type { BusEventMap } from '../../node/hooks.js'
import { VERSION } from '../../node/version.js'
import { openWebHookPool, webHookSettings, type WebHookInstance } from '../../rules/actions/web-hook-pool.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { bodiesOf, type PayloadEncoding } from './bodies.js'
import { WEB_HOOK_CONFIG_SCHEMA, WEB_HOOK_EVENTS, readRules, resourceConfigOf, type WebHookEvent, type WebHookRule } from './config.js'

/** Failures are logged at most once in this long (the others are counted in the warning). */
export const WARN_EVERY_MS = 10_000

/** The metrics this plugin adds: EMQ X's `webhook.<action>` (requests sent per event) and failures. */
export const WEB_HOOK_METRICS: readonly string[] = [
  ...Object.keys(WEB_HOOK_EVENTS).map((event) => `webhook.${event.replace('.', '_')}`),
  'webhook.failed'
]

/** Counts failures and logs them, one warning per {@link WARN_EVERY_MS} at most. */
class FailureLog {
  private last = 0
  private quiet = 0

  constructor (private readonly metrics: Record<string, number>, private readonly warn: (err: Error, more: number) => void) {}

  failed (err: Error): void {
    this.metrics['webhook.failed']++
    const now = Date.now()
    if (now - this.last < WARN_EVERY_MS) { this.quiet++; return }
    this.warn(err, this.quiet)
    this.last = now
    this.quiet = 0
  }
}

/** The `svc_web_hook` plugin: no state outside a load, so one definition serves every node. */
export const svcWebHook: StarlingPlugin = {
  name: 'svc_web_hook',
  version: VERSION,
  description: 'Starling Web Hook',
  configSchema: WEB_HOOK_CONFIG_SCHEMA,
  loadedByDefault: false,
  async load ({ node, config, logger }) {
    const rules = readRules(config)
    const settings = webHookSettings(resourceConfigOf(config, configRoot(node.config)))
    const pool: WebHookInstance = await openWebHookPool('svc_web_hook', settings)
    const encoding = config['web.hook.body.encoding_of_payload_field'] as PayloadEncoding
    const metrics = node.metrics as Record<string, number>
    const removeMetrics = addMetrics(node.metrics, WEB_HOOK_METRICS)
    const failures = new FailureLog(metrics, (err, more) => logger.warn({ err: err.message, more }, 'web hook request failed' + (more > 0 ? ` (and ${more} more since the last warning)` : '')))
    const headers = settings.headers
    const path = pool.basePath
    const post = (body: Record<string, unknown>): void => {
      pool.send({ method: 'POST', path, headers, body: JSON.stringify(body) }).catch((err: Error) => failures.failed(err))
    }

    const byEvent = new Map<WebHookEvent, WebHookRule[]>()
    for (const rule of rules) byEvent.set(rule.event, [...(byEvent.get(rule.event) ?? []), rule])
    const offs: Array<() => void> = []
    for (const [event, eventRules] of byEvent) {
      const counter = `webhook.${event.replace('.', '_')}`
      const filters = eventRules.some((r) => r.topic === undefined) ? undefined : eventRules.map((r) => r.topic as string)
      const isMessage = event.startsWith('message.')
      const listener = (e: BusEventMap[typeof WEB_HOOK_EVENTS[typeof event]]): void => {
        // EMQ X's web hook skips the broker's own $SYS messages
        if (isMessage && (e as { topic: string }).topic.startsWith('$SYS/')) return
        for (const { topic, body } of bodiesOf(event, e, encoding)) {
          // an event is sent once when any of its rules matches (EMQ X: the topic filter of the rule)
          if (filters !== undefined && (topic === undefined || !filters.some((f) => topicMatches(f, topic)))) continue
          metrics[counter]++
          post(body)
        }
      }
      offs.push(node.hooks.on(WEB_HOOK_EVENTS[event], listener as any))
    }
    logger.info({ url: settings.url.origin, rules: rules.length }, 'web hook loaded')
    return {
      unload: async () => {
        for (const off of offs) off()
        await pool.close()
        removeMetrics()
      }
    }
  }
}
