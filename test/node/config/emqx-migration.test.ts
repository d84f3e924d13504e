/**
 * EMQ X 4.4's configuration keys (test/fixtures/emqx44, every key of its shipped `emqx.conf` and
 * `plugins/*.conf`, commented ones included): each has one outcome, applied or accepted with
 * one warning line, never refused for being EMQ X's and never silently dropped; bad values
 * are refused all in one start; `{{ platform_*_dir }}` is rendered as EMQ X's release does.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, configWarnings, emqxOutcome, foreignPluginFileWarnings, loadConfig, loadPluginConfig } from '../../../node/config/index.js'
import type { PluginDefinition } from '../../../node/plugins/types.js'
import { pluginList } from '../../../plugins/index.js'
import { createRuleEnginePlugin } from '../../../rules/plugin.js'
import { emqxFiles, emqxKeys, type EmqxKey } from '../../fixtures/emqx44/emqx44.js'

/** svc_management's place in the plugin list (its keys are the node's: an empty schema). */
function createManagementStandIn (): PluginDefinition {
  return { name: 'svc_management', version: '0', description: '', configSchema: {}, loadedByDefault: true, load: async () => ({ unload: async () => {} }) }
}

let dir: string
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'starling-emqx-')) })
afterAll(() => { rmSync(dir, { recursive: true, force: true }) })

/** Loads one `key = value` as the main file, with the keys it needs beside it. */
function loadLine (key: string, value: string): ReturnType<typeof loadConfig> {
  const file = join(dir, 'one.conf')
  writeFileSync(file, `${key} = ${value}\n`)
  return loadConfig({ file, env: {}, root: dir })
}

/** EMQ X's keys the main file carries: emqx.conf's, and emqx_management.conf's (Starling's management keys are node keys). */
const MAIN_FILES = new Set(['etc/emqx.conf', 'etc/plugins/emqx_management.conf'])
/** EMQ X plugin file -> the Starling plugin that has the same keys (in its own file, etc/plugins/<name>.conf). */
const STARLING_PLUGIN: Record<string, string> = {
  'etc/plugins/emqx_auth_http.conf': 'svc_auth_http',
  'etc/plugins/emqx_auth_jwt.conf': 'svc_auth_jwt',
  'etc/plugins/emqx_auth_ldap.conf': 'svc_auth_ldap',
  'etc/plugins/emqx_auth_mongo.conf': 'svc_auth_mongo',
  'etc/plugins/emqx_auth_mysql.conf': 'svc_auth_mysql',
  'etc/plugins/emqx_auth_pgsql.conf': 'svc_auth_pgsql',
  'etc/plugins/emqx_auth_redis.conf': 'svc_auth_redis',
  'etc/plugins/emqx_bridge_mqtt.conf': 'svc_bridge_mqtt',
  'etc/plugins/emqx_psk_file.conf': 'svc_psk_file',
  'etc/plugins/emqx_retainer.conf': 'svc_retainer',
  'etc/plugins/emqx_rule_engine.conf': 'svc_rule_engine',
  'etc/plugins/emqx_web_hook.conf': 'svc_web_hook'
}

const keys = emqxKeys()

describe('every key of EMQ X 4.4\'s emqx.conf (and emqx_management.conf)', () => {
  const main = keys.filter(k => MAIN_FILES.has(k.file))

  it('holds the keys of the shipped files', () => {
    expect(main.length).toBeGreaterThan(380)
  })

  it.each(main.map((k): [string, EmqxKey] => [`${k.commented ? '#' : ''}${k.key}`, k]))('%s loads: applied, or one warning line', (_, k) => {
    const cfg = loadLine(k.key, k.value)
    const warnings = configWarnings(cfg).filter(w => w.key === k.key)
    expect(warnings.length).toBeLessThanOrEqual(1)
    for (const w of warnings) expect(w.message).not.toMatch(/\n/)
  })
})

describe('every key of the files of EMQ X 4.4\'s plugins that Starling does not have', () => {
  const missing = keys.filter(k => !MAIN_FILES.has(k.file) && STARLING_PLUGIN[k.file] === undefined)

  it.each(missing.map((k): [string, string, EmqxKey] => [k.file, `${k.commented ? '#' : ''}${k.key}`, k]))('%s: %s names the plugin Starling does not have', (_file, _, k) => {
    const outcome = emqxOutcome(k.key, k.value)
    expect(outcome).toMatchObject({ kind: 'warn', why: 'plugin' })
  })
})

describe('EMQ X 4.4\'s files of the plugins Starling has, dropped into etc/plugins/ as they are', () => {
  const plugins = new Map(pluginList({ management: createManagementStandIn(), ruleEngine: createRuleEnginePlugin(() => ({ start: async () => {}, stop: async () => {} })) }).map(p => [p.name, p]))
  const etc = (): string => join(dir, 'plugins-etc')
  beforeAll(() => { emqxFiles(etc()) })

  it.each(Object.entries(STARLING_PLUGIN))('%s is read as %s\'s file: every active key applied or one warning line', (file, name) => {
    const schema = plugins.get(name)!.configSchema
    const cfg = loadPluginConfig(join(etc(), 'etc/plugins', `${name}.conf`), schema, { optional: true, env: {} })
    const active = keys.filter(k => k.file === file && !k.commented)
    const warned = configWarnings(cfg)
    for (const k of active) expect(warned.filter(w => w.key === k.key).length).toBeLessThanOrEqual(1)
    for (const w of warned) expect(w.message).not.toMatch(/\n/)
  })

  /** EMQ X's commented examples Starling's schemas refuse: an empty value (EMQ X: unset), or a value of another form. */
  const REFUSED_EXAMPLES = new Set(['auth.mongo.w_mode', 'auth.mongo.r_mode', 'bridge.mqtt.aws.verify'])

  it.each(keys.filter(k => k.commented && STARLING_PLUGIN[k.file] !== undefined && !REFUSED_EXAMPLES.has(k.key)).map((k): [string, EmqxKey] => [k.key, k]))('commented %s, uncommented, loads', (_, k) => {
    const name = STARLING_PLUGIN[k.file]
    const path = join(dir, `${name}.conf`)
    const bridge = name === 'svc_bridge_mqtt' ? 'bridge.mqtt.aws.address = 127.0.0.1:1883\n' : ''
    writeFileSync(path, `${bridge}${k.key} = ${k.value}\n`)
    const cfg = loadPluginConfig(path, plugins.get(name)!.configSchema, { env: {} })
    expect(configWarnings(cfg).filter(w => w.key === k.key).length).toBeLessThanOrEqual(1)
  })

  it('names each key of the files of plugins Starling does not have in one warning line', () => {
    const warnings = foreignPluginFileWarnings(join(etc(), 'etc/plugins'), new Set(plugins.keys()))
    const expected = keys.filter(k => !k.commented && !MAIN_FILES.has(k.file) && STARLING_PLUGIN[k.file] === undefined)
    expect(warnings.map(w => w.key).sort()).toEqual(expected.map(k => k.key).sort())
    expect(warnings.find(w => w.key === 'coap.bind.udp.1')?.message).toMatch(/emqx_coap, which Starling does not have \(yet\)/)
  })
})

describe('refusals', () => {
  it('reports every bad value and unknown key of one start together, one line each', () => {
    const file = join(dir, 'bad.conf')
    writeFileSync(file, ['mqtt.max_packet_size = big', 'zone.internal.max_qos_allowed = 3', 'node.process_limit = 2097152', 'mqtt.max_inflite = 3', 'listener.tcp.external.zone = in-ternal'].join('\n') + '\n')
    let caught: unknown
    try { loadConfig({ file, env: {}, root: dir }) } catch (err) { caught = err }
    expect(caught).toBeInstanceOf(ConfigError)
    const err = caught as ConfigError
    expect(err.problems.map(p => p.key)).toEqual(['mqtt.max_packet_size', 'zone.internal.max_qos_allowed', 'mqtt.max_inflite', 'listener.tcp.external.zone'])
    expect(err.message.split('\n')).toHaveLength(5)
  })

  it('refuses a zone key EMQ X never had, with a suggestion', () => {
    expect(() => loadLine('zone.internal.max_inflite', '3')).toThrow(/zone\.internal\.max_inflight/)
  })
})

describe('zones and listeners of other names', () => {
  it('takes zone keys and other listeners from the environment too', () => {
    const cfg = loadConfig({ env: { STARLING_ZONE__INTERNAL__ALLOW_ANONYMOUS: 'false', STARLING_LISTENER__TCP__INTERNAL: '127.0.0.1:0' }, root: dir, cwd: dir }) as unknown as Record<string, unknown>
    expect(cfg['zone.internal.allow_anonymous']).toBe(false)
    expect(cfg['listener.tcp.internal.max_conns']).toBe(1024000) // the external listener's default
  })

  it('warns of the keys of a listener that has no address, which opens nothing', () => {
    const cfg = loadLine('listener.ws.second.zone', 'internal')
    expect(configWarnings(cfg).map(w => w.message)).toEqual([expect.stringMatching(/listener\.ws\.second has no address, so it is not opened/)])
  })

  it('warns of a node-wide zone key only when it differs from the node\'s value', () => {
    expect(configWarnings(loadLine('zone.internal.max_inflight', '32'))).toEqual([])
    expect(configWarnings(loadLine('zone.internal.max_inflight', '128')).map(w => w.key)).toEqual(['zone.internal.max_inflight'])
  })
})

describe('{{ platform_*_dir }} placeholders', () => {
  it('renders them as EMQ X\'s zip release does, relative to the installation root', () => {
    const cfg = loadLine('node.data_dir', '{{ platform_data_dir }}/node1')
    expect(cfg['node.data_dir']).toBe('data/node1')
    expect(loadLine('acl_file', '{{platform_etc_dir}}/acl.conf').acl_file).toBe('etc/acl.conf')
    expect(loadLine('log.dir', '{{ platform_log_dir }}')['log.dir']).toBe('log')
  })
})
