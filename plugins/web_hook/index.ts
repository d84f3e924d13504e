/** svc_web_hook (docs/web-hook.md): client, session and message events POSTed as JSON to a web server, as EMQ X 4.4's emqx_web_hook. */
export { svcWebHook, WEB_HOOK_METRICS, WARN_EVERY_MS } from './plugin.js'
export { WEB_HOOK_CONFIG_SCHEMA, WEB_HOOK_EVENTS, readRules, actionOf, type WebHookEvent, type WebHookRule } from './config.js'
export { base62, bodiesOf, encodePayload, type PayloadEncoding, type HookBody } from './bodies.js'
