/**
 * svc_web_hook's file: the shipped etc/plugins/svc_web_hook.conf loads, sets every fixed key
 * to its default, and the rules (`web.hook.rule.<event>.<n>`) are read and checked; EMQ X's
 * base62 for the payload field.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadPluginConfig, parseConfText } from '../../../node/config/index.js'
import { base62, encodePayload } from '../../../plugins/web_hook/bodies.js'
import { WEB_HOOK_CONFIG_SCHEMA, WEB_HOOK_EVENTS, actionOf, readRules, resourceConfigOf } from '../../../plugins/web_hook/config.js'

const shipped = fileURLToPath(new URL('../../../etc/plugins/svc_web_hook.conf', import.meta.url))
let dir: string
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'starling-wh-conf-')) })
afterAll(() => { rmSync(dir, { recursive: true, force: true }) })

function load (lines: string[]): Record<string, any> {
  const file = join(dir, 'svc_web_hook.conf')
  writeFileSync(file, lines.join('\n') + '\n')
  return loadPluginConfig(file, WEB_HOOK_CONFIG_SCHEMA, { env: {} })
}

describe('etc/plugins/svc_web_hook.conf', () => {
  it('sets every fixed key, loads as the defaults, and ships no rule', () => {
    const keys = parseConfText(readFileSync(shipped, 'utf8'), shipped).map(e => e.key)
    expect(keys.filter(k => k !== 'web.hook.headers.content-type').sort()).toEqual(Object.keys(WEB_HOOK_CONFIG_SCHEMA).filter(k => !k.includes('<name>')).sort())
    const cfg = loadPluginConfig(shipped, WEB_HOOK_CONFIG_SCHEMA, { env: {} })
    const defaults = loadPluginConfig(join(dir, 'none.conf'), WEB_HOOK_CONFIG_SCHEMA, { env: {}, optional: true })
    expect({ ...cfg, 'web.hook.headers.<name>': {} }).toEqual(defaults)
    expect(cfg['web.hook.headers.<name>']).toEqual({ 'content-type': 'application/json' })
    expect(readRules(cfg)).toEqual([])
    expect(cfg['web.hook.pool_size']).toBe(32)
  })

  it('reads a rule of every event EMQ X 4.4 lists, and message.dropped, with their topics', () => {
    const events = Object.keys(WEB_HOOK_EVENTS)
    expect(events).toEqual([
      'client.connect', 'client.connack', 'client.connected', 'client.disconnected', 'client.subscribe', 'client.unsubscribe',
      'session.subscribed', 'session.unsubscribed', 'session.terminated', 'message.publish', 'message.delivered', 'message.acked', 'message.dropped'
    ])
    const cfg = load([
      ...events.map(e => `web.hook.rule.${e}.1 = {"action": "${actionOf(e as any)}"}`),
      'web.hook.rule.message.publish.2 = {"action": "on_message_publish", "topic": "foo/#"}',
      'web.hook.rule.message.publish.10 = {"action": "on_message_publish", "topic": "a/b/c"}'
    ])
    const rules = readRules(cfg)
    expect(rules).toHaveLength(events.length + 2)
    expect(rules.filter(r => r.event === 'message.publish')).toEqual([
      { event: 'message.publish', name: '1', topic: undefined },
      { event: 'message.publish', name: '2', topic: 'foo/#' },
      { event: 'message.publish', name: '10', topic: 'a/b/c' }
    ])
  })

  it.each([
    ['web.hook.rule.client.connected.1 = {"action": "on_client_connect"}', /web\.hook\.rule\.client\.connected\.1.*"action": "on_client_connected"/],
    ['web.hook.rule.client.connected.1 = on_client_connected', /a JSON object/],
    ['web.hook.rule.client.connected.1 = {"action": "on_client_connected", "topic": "a/#"}', /no "topic": client\.connected has none/],
    ['web.hook.rule.message.publish.1 = {"action": "on_message_publish", "topic": ""}', /a "topic" that is a topic filter/]
  ])('refuses %s', (line, message) => {
    expect(() => readRules(load([line]))).toThrow(message)
  })

  it('gives the pool the URL, JSON content-type under the configured headers, and TLS files resolved from the root', () => {
    const cfg = load(['web.hook.url = https://h.example:8443/x', 'web.hook.headers.X-Token = t', 'web.hook.ssl.cacertfile = etc/certs/ca.pem', 'web.hook.ssl.verify = true'])
    expect(resourceConfigOf(cfg, '/opt/starling')).toMatchObject({
      url: 'https://h.example:8443/x',
      headers: { 'content-type': 'application/json', 'x-token': 't' },
      method: 'POST',
      pool_size: 32,
      enable_pipelining: true,
      connect_timeout: 5000,
      request_timeout: 5000,
      cacertfile: '/opt/starling/etc/certs/ca.pem',
      certfile: '',
      verify: true
    })
  })
})

describe('the payload field', () => {
  // emqx_base62:encode/1: 6-bit groups; 61..63 are 9A..9C; a 4- or 2-bit tail is written as its value
  it.each([
    ['', ''],
    ['Man', 'TWFu'],
    ['\xff\xff\xff', '9C9C9C9C'],
    ['\xff', '9CD'],
    ['\xff\x00', '9CwA'],
    ['\xff\x00\x41', '9CwBB']
  ])('base62 of %j is %s', (bytes, text) => {
    expect(base62(Buffer.from(bytes, 'latin1'))).toBe(text)
  })

  it('is the text (plain) or base64 otherwise', () => {
    expect(encodePayload(Buffer.from('héllo'), 'plain')).toBe('héllo')
    expect(encodePayload(Buffer.from('hello'), 'base64')).toBe('aGVsbG8=')
  })
})
