import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  ConfigError, configFile, describeConfig, loadConfig, resolvePath, type StarlingConfig
} from '../../../node/config/index.js'

let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'starling-config-'))
  mkdirSync(join(dir, 'etc'))
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

/** Writes etc/starling.conf in the temp dir. */
function conf (...lines: string[]): void {
  writeFileSync(join(dir, 'etc', 'starling.conf'), lines.join('\n') + '\n')
}

/** The ConfigError `fn` throws (fails the test when it throws nothing or something else). */
function configError (fn: () => unknown): ConfigError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return err as ConfigError
  }
  throw new Error('expected a ConfigError')
}

describe('loadConfig', () => {
  it('uses the schema defaults when the default file is missing', () => {
    rmSync(join(dir, 'etc'), { recursive: true })
    const cfg = loadConfig({ cwd: dir, env: {} })
    expect(cfg['mqtt.max_packet_size']).toBe(1_048_576)
    expect(cfg['listener.tcp.external']!.port).toBe(1883)
  })

  it('reads etc/starling.conf relative to cwd, later lines winning', () => {
    conf('## comment', '  # indented comment', '', 'mqtt.max_packet_size = 64KB', 'broker.sys_interval=30s',
      'mqtt.max_packet_size = 2MB', 'node.cookie = "a b = c # d"')
    const cfg = loadConfig({ cwd: dir, env: {} })
    expect(cfg['mqtt.max_packet_size']).toBe(2 * 1_048_576)
    expect(cfg['broker.sys_interval']).toBe(30_000)
    expect(cfg['node.cookie']).toBe('a b = c # d')
  })

  it('refuses a config file given explicitly that does not exist', () => {
    const err = configError(() => loadConfig({ cwd: dir, env: {}, file: 'etc/nope.conf' }))
    expect(err.message).toBe('etc/nope.conf: config file not found')
  })

  it('takes the config file from STARLING_CONFIG when no file is given', () => {
    writeFileSync(join(dir, 'other.conf'), 'node.name = other@127.0.0.1\n')
    conf('node.name = default@127.0.0.1')
    expect(loadConfig({ cwd: dir, env: { STARLING_CONFIG: 'other.conf' } })['node.name']).toBe('other@127.0.0.1')
    expect(loadConfig({ cwd: dir, env: { STARLING_CONFIG: 'other.conf' }, file: 'etc/starling.conf' })['node.name'])
      .toBe('default@127.0.0.1')
    const err = configError(() => loadConfig({ cwd: dir, env: { STARLING_CONFIG: 'missing.conf' } }))
    expect(err.message).toBe('missing.conf: config file not found (given by STARLING_CONFIG)')
  })

  it('lets the environment set listener.tcp.external and node.data_dir', () => {
    const cfg = loadConfig({
      cwd: dir,
      env: { STARLING_LISTENER__TCP__EXTERNAL: '127.0.0.1:11883', STARLING_NODE__DATA_DIR: '/tmp/n1', PATH: '/bin' }
    })
    expect(cfg['listener.tcp.external']).toEqual({ host: '127.0.0.1', port: 11883, text: '127.0.0.1:11883' })
    expect(cfg['node.data_dir']).toBe('/tmp/n1')
  })

  it('applies default < file < environment < overrides', () => {
    conf('mqtt.max_inflight = 10', 'mqtt.max_mqueue_len = 10', 'mqtt.max_subscriptions = 10')
    const cfg = loadConfig({
      cwd: dir,
      env: { STARLING_MQTT__MAX_MQUEUE_LEN: '20', STARLING_MQTT__MAX_SUBSCRIPTIONS: '20' },
      overrides: { 'mqtt.max_subscriptions': '30' }
    })
    expect(cfg['mqtt.max_awaiting_rel']).toBe(100) // default
    expect(cfg['mqtt.max_inflight']).toBe(10) // file
    expect(cfg['mqtt.max_mqueue_len']).toBe(20) // environment over file
    expect(cfg['mqtt.max_subscriptions']).toBe(30) // override over environment
  })

  it('rejects an unknown key naming the closest known key', () => {
    conf('node.name = a@b', 'mqtt.max_pakcet_size = 1MB')
    const err = configError(() => loadConfig({ cwd: dir, env: {} }))
    expect(err.message).toBe('etc/starling.conf:2: unknown key "mqtt.max_pakcet_size" (did you mean mqtt.max_packet_size?)')
    expect(err.key).toBe('mqtt.max_pakcet_size')
    expect(err.source).toBe('etc/starling.conf:2')
  })

  it('suggests the full key when only its last part is written', () => {
    conf('max_packet_size = 1MB')
    expect(configError(() => loadConfig({ cwd: dir, env: {} })).message).toContain('(did you mean mqtt.max_packet_size?)')
  })

  it('rejects an unknown key without a suggestion when nothing is close', () => {
    conf('completely.different = 1')
    expect(configError(() => loadConfig({ cwd: dir, env: {} })).message)
      .toBe('etc/starling.conf:1: unknown key "completely.different"; docs/configuration.md lists the known keys')
  })

  it('rejects a STARLING_ variable that names no key, suggesting the right variable', () => {
    const err = configError(() => loadConfig({ cwd: dir, env: { STARLING_MQTT__MAX_PAKCET_SIZE: '1MB' } }))
    expect(err.message).toBe('environment STARLING_MQTT__MAX_PAKCET_SIZE: unknown key "mqtt.max_pakcet_size" ' +
      '(did you mean STARLING_MQTT__MAX_PACKET_SIZE?)')
    expect(err.source).toBe('environment STARLING_MQTT__MAX_PAKCET_SIZE')
  })

  it('leaves STARLING_ variables of plugin keys to the plugins', () => {
    expect(() => loadConfig({ cwd: dir, env: { STARLING_RETAINER__MAX_RETAINED_MESSAGES: '10' } })).not.toThrow()
  })

  it('refuses a plugin key in the main file, pointing at etc/plugins/', () => {
    conf('bridge.mqtt.aws.address = 127.0.0.1:1883')
    expect(configError(() => loadConfig({ cwd: dir, env: {} })).message)
      .toBe('etc/starling.conf:1: key "bridge.mqtt.aws.address" belongs to a plugin: set it in etc/plugins/svc_bridge_mqtt.conf')
  })

  it('refuses an unknown override key', () => {
    const err = configError(() => loadConfig({ cwd: dir, env: {}, overrides: { 'node.nmae': 'x@y' } }))
    expect(err.message).toBe('override: unknown key "node.nmae" (did you mean node.name?)')
  })

  it('reports a bad value with the key, the value and what is allowed, on one line', () => {
    conf('', 'mqtt.max_packet_size = abc')
    const err = configError(() => loadConfig({ cwd: dir, env: {} }))
    expect(err.message).toMatch(/^etc\/starling\.conf:2: bad value "abc" for mqtt\.max_packet_size: expected a size such as 1MB, 64KB or 1048576/)
    expect(err.message).not.toContain('\n')
    expect(err).toMatchObject({ key: 'mqtt.max_packet_size', value: 'abc', source: 'etc/starling.conf:2' })
    expect(err.allowed).toContain('a size such as 1MB')
  })

  it.each([
    ['acl_nomatch', 'maybe', 'one of allow, deny'],
    ['allow_anonymous', 'yes', 'on, off, true or false'],
    ['mqtt.max_qos_allowed', '3', 'an integer from 0 to 2'],
    ['mqtt.retry_interval', '30 s', 'a duration such as 30s'],
    ['listener.tcp.external', '1883x', 'an address such as 0.0.0.0:1883'],
    ['listener.tcp.external', 'of', 'an address'],
    ['cluster.listen', 'disabled', 'an address such as 0.0.0.0:1883, 127.0.0.1:1883, [::]:1883 or a bare port (1883; 0 = any free port), or off (or empty) to turn it off'],
    ['node.name', 'starling', '<name>@<host>'],
    ['node.data_dir', '', 'a file or directory path'],
    ['log.level', 'warn', 'one of debug, info, notice, warning, error, critical, alert, emergency']
  ])('refuses %s = %p naming what is allowed', (key, value, allowed) => {
    conf(`${key} = ${value}`)
    const err = configError(() => loadConfig({ cwd: dir, env: {} }))
    expect(err.message).toContain(`bad value ${JSON.stringify(value)} for ${key}: expected ${allowed}`)
  })

  it('turns a listener off with off (or an empty value), the cluster port included', () => {
    conf('listener.tcp.external = off', 'cluster.listen = off', 'management.listener.http =', 'dashboard.listener.http = off')
    const cfg = loadConfig({ cwd: dir, env: {} })
    expect(cfg['listener.tcp.external']).toBeNull()
    expect(cfg['cluster.listen']).toBeNull()
    expect(cfg['management.listener.http']).toBeNull()
    expect(cfg['dashboard.listener.http']).toBeNull()
    expect(cfg['listener.ssl.external']?.port).toBe(8883)
  })

  it('names the environment variable when its value is bad', () => {
    const err = configError(() => loadConfig({ cwd: dir, env: { STARLING_MQTT__MAX_PACKET_SIZE: 'lots' } }))
    expect(err.message).toMatch(/^environment STARLING_MQTT__MAX_PACKET_SIZE: bad value "lots" for mqtt\.max_packet_size/)
  })

  it('reports a malformed line with its line number', () => {
    conf('## header', 'node.name = a@b', '', 'this line has no equals sign')
    const err = configError(() => loadConfig({ cwd: dir, env: {} }))
    expect(err.message).toBe('etc/starling.conf:4: malformed line "this line has no equals sign": expected key = value')
    expect(err.source).toBe('etc/starling.conf:4')
  })

  it('accepts port 0 for an ephemeral port and a bare port for all interfaces', () => {
    const cfg = loadConfig({
      cwd: dir,
      env: {},
      overrides: { 'listener.tcp.external': '127.0.0.1:0', 'listener.ws.external': '0', 'cluster.listen': '4371' }
    })
    expect(cfg['listener.tcp.external']).toEqual({ host: '127.0.0.1', port: 0, text: '127.0.0.1:0' })
    expect(cfg['listener.ws.external']!.port).toBe(0)
    expect(cfg['cluster.listen']).toEqual({ host: '0.0.0.0', port: 4371, text: '0.0.0.0:4371' })
  })

  it('turns the management HTTPS listener on with an address and off with an empty value', () => {
    expect(loadConfig({ cwd: dir, env: {} })['management.listener.https']).toBeNull()
    const on = loadConfig({ cwd: dir, env: {}, overrides: { 'management.listener.https': '8081' } })
    expect(on['management.listener.https']?.port).toBe(8081)
  })

  it('returns a frozen config', () => {
    const cfg = loadConfig({ cwd: dir, env: {} })
    expect(Object.isFrozen(cfg)).toBe(true)
    expect(Object.isFrozen(cfg['listener.tcp.external'])).toBe(true)
  })

  it('keeps paths as written and resolves them against the cwd it was loaded with', () => {
    const cfg = loadConfig({ cwd: dir, env: {}, overrides: { 'node.data_dir': 'data/n1' } })
    expect(cfg['node.data_dir']).toBe('data/n1')
    expect(resolvePath(cfg, 'node.data_dir')).toBe(join(dir, 'data', 'n1'))
    expect(resolvePath(cfg, 'acl_file', '/srv/starling')).toBe('/srv/starling/etc/acl.conf')
    const absolute = loadConfig({ cwd: dir, env: {}, overrides: { acl_file: '/etc/starling/acl.conf' } })
    expect(resolvePath(absolute, 'acl_file')).toBe('/etc/starling/acl.conf')
  })

  it('describes every value as config text that loads back to the same config', () => {
    const cfg = loadConfig({
      cwd: dir,
      env: {},
      overrides: { 'mqtt.retry_interval': '1m30s', 'cluster.autoheal': 'false', 'mqtt.max_packet_size': '65536' }
    })
    const text = describeConfig(cfg)
    expect(text['mqtt.retry_interval']).toBe('1m30s')
    expect(text['mqtt.max_packet_size']).toBe('64KB')
    expect(text['cluster.autoheal']).toBe('off')
    expect(text['allow_anonymous']).toBe('true')
    expect(text['listener.tcp.external']).toBe('0.0.0.0:1883')
    expect(text['management.listener.https']).toBe('')
    expect({ ...loadConfig({ cwd: dir, env: {}, overrides: text }) }).toEqual({ ...cfg })
  })

  it('types each key precisely', () => {
    const cfg: StarlingConfig = loadConfig({ cwd: dir, env: {} })
    const size: number = cfg['mqtt.max_packet_size']
    const port: number = cfg['listener.tcp.external']!.port
    const strategy: 'random' | 'round_robin' | 'sticky' | 'hash' = cfg['broker.shared_subscription_strategy']
    const anonymous: boolean = cfg.allow_anonymous
    // @ts-expect-error an enum key is its literal words, not any string
    const notAStrategy: 'fifo' = cfg['broker.shared_subscription_strategy']
    // @ts-expect-error the optional HTTPS listener may be null
    const https: { port: number } = cfg['management.listener.https']
    expect([size, port, strategy, anonymous, notAStrategy, https]).toHaveLength(6)
  })
})

describe('the installation root', () => {
  it('reads the default etc/starling.conf under the root and resolves relative path keys against it', () => {
    conf('acl_file = etc/my-acl.conf', 'node.data_dir = var/data')
    const elsewhere = mkdtempSync(join(tmpdir(), 'starling-cwd-'))
    try {
      const cfg = loadConfig({ env: {}, cwd: elsewhere, root: dir })
      expect(resolvePath(cfg, 'acl_file')).toBe(join(dir, 'etc/my-acl.conf'))
      expect(resolvePath(cfg, 'node.data_dir')).toBe(join(dir, 'var/data'))
      expect(configFile(cfg)).toEqual({ path: join(dir, 'etc/starling.conf'), found: true })
    } finally {
      rmSync(elsewhere, { recursive: true, force: true })
    }
  })

  it('reads a file the user names relative to their working directory, its paths still the root\'s', () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'starling-cwd-'))
    try {
      writeFileSync(join(elsewhere, 'mine.conf'), 'acl_file = etc/other-acl.conf\n')
      const cfg = loadConfig({ file: 'mine.conf', env: {}, cwd: elsewhere, root: dir })
      expect(resolvePath(cfg, 'acl_file')).toBe(join(dir, 'etc/other-acl.conf'))
      expect(configFile(cfg)).toEqual({ path: join(elsewhere, 'mine.conf'), found: true })
      // $STARLING_CONFIG likewise
      const fromEnv = loadConfig({ env: { STARLING_CONFIG: 'mine.conf' }, cwd: elsewhere, root: dir })
      expect(resolvePath(fromEnv, 'acl_file')).toBe(join(dir, 'etc/other-acl.conf'))
    } finally {
      rmSync(elsewhere, { recursive: true, force: true })
    }
  })

  it('reports a missing default file (the node says so once at start) and runs on the defaults', () => {
    const cfg = loadConfig({ env: {}, root: dir })
    expect(configFile(cfg)).toEqual({ path: join(dir, 'etc/starling.conf'), found: false })
    expect(cfg['mqtt.max_packet_size']).toBe(loadConfig({ env: {}, root: dir, overrides: {} })['mqtt.max_packet_size'])
  })
})
