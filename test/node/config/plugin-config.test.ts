import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  ConfigError, describePluginConfig, loadPluginConfig, type ConfigSchema
} from '../../../node/config/index.js'

const BRIDGE_SCHEMA = {
  'bridge.mqtt.<name>.address': { type: 'address', live: false, doc: 'Remote broker.' },
  'bridge.mqtt.<name>.keepalive': { type: 'duration', default: '60s', live: false, doc: 'Keepalive to the remote.' },
  'bridge.mqtt.<name>.forwards': { type: 'string', default: '', allowEmpty: true, live: false, doc: 'Topics forwarded.' }
} as const satisfies ConfigSchema

const RETAINER_SCHEMA = {
  'retainer.storage_type': { type: 'enum', values: ['ram', 'disc'], default: 'ram', live: false, doc: 'Where retained messages live.' },
  'retainer.max_payload_size': { type: 'size', default: '1MB', live: true, doc: 'Largest retained payload.' },
  'retainer.expiry_interval': { type: 'duration', default: '0', live: true, doc: '0 = never expire.' }
} as const satisfies ConfigSchema

let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'starling-plugin-config-'))
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

function file (name: string, ...lines: string[]): string {
  writeFileSync(join(dir, name), lines.join('\n') + '\n')
  return name
}

describe('loadPluginConfig', () => {
  it('reads a plugin file with the same value types and defaults', () => {
    const cfg = loadPluginConfig(file('retainer.conf', 'retainer.max_payload_size = 64KB'), RETAINER_SCHEMA, { cwd: dir, env: {} })
    expect(cfg['retainer.max_payload_size']).toBe(65_536)
    expect(cfg['retainer.storage_type']).toBe('ram')
    expect(cfg['retainer.expiry_interval']).toBe(0)
  })

  it('lets environment variables and overrides win over the file', () => {
    const cfg = loadPluginConfig(file('retainer.conf', 'retainer.storage_type = disc', 'retainer.expiry_interval = 1h'),
      RETAINER_SCHEMA, {
        cwd: dir,
        env: { STARLING_RETAINER__STORAGE_TYPE: 'ram', STARLING_NODE__NAME: 'not@mine' },
        overrides: { 'retainer.expiry_interval': '2h' }
      })
    expect(cfg['retainer.storage_type']).toBe('ram')
    expect(cfg['retainer.expiry_interval']).toBe(7_200_000)
  })

  it('groups <name> keys by name and fills each name with the defaults', () => {
    const cfg = loadPluginConfig(file('bridge.conf',
      'bridge.mqtt.aws.address = 10.0.0.1:1883',
      'bridge.mqtt.aws.forwards = sensor/#,alarm/#',
      'bridge.mqtt.edge-2.address = 10.0.0.2:1883',
      'bridge.mqtt.edge-2.keepalive = 10s'), BRIDGE_SCHEMA, { cwd: dir, env: {} })
    expect(cfg['bridge.mqtt.<name>.address'].aws.port).toBe(1883)
    expect(cfg['bridge.mqtt.<name>.keepalive']).toEqual({ aws: 60_000, 'edge-2': 10_000 })
    expect(cfg['bridge.mqtt.<name>.forwards']).toEqual({ aws: 'sensor/#,alarm/#', 'edge-2': '' })
    expect(describePluginConfig(BRIDGE_SCHEMA, cfg)).toEqual({
      'bridge.mqtt.aws.address': '10.0.0.1:1883',
      'bridge.mqtt.edge-2.address': '10.0.0.2:1883',
      'bridge.mqtt.aws.keepalive': '1m',
      'bridge.mqtt.edge-2.keepalive': '10s',
      'bridge.mqtt.aws.forwards': 'sensor/#,alarm/#',
      'bridge.mqtt.edge-2.forwards': ''
    })
  })

  it('requires a key without a default for every name that is used', () => {
    const err = (() => {
      try {
        loadPluginConfig(file('bridge.conf', 'bridge.mqtt.aws.keepalive = 10s'), BRIDGE_SCHEMA, { cwd: dir, env: {} })
      } catch (e) { return e as ConfigError }
      throw new Error('expected a ConfigError')
    })()
    expect(err).toBeInstanceOf(ConfigError)
    expect(err.message).toBe('bridge.conf: missing key "bridge.mqtt.aws.address": it has no default; ' +
      'set it in the file or as STARLING_BRIDGE__MQTT__AWS__ADDRESS')
  })

  it('rejects an unknown key in a plugin file naming the closest key', () => {
    expect(() => loadPluginConfig(file('retainer.conf', '', 'retainer.storage_tpye = disc'), RETAINER_SCHEMA, { cwd: dir, env: {} }))
      .toThrow('retainer.conf:2: unknown key "retainer.storage_tpye" (did you mean retainer.storage_type?)')
  })

  it('rejects a bad value in a plugin file with its line', () => {
    expect(() => loadPluginConfig(file('retainer.conf', 'retainer.max_payload_size = big'), RETAINER_SCHEMA, { cwd: dir, env: {} }))
      .toThrow(/^retainer\.conf:1: bad value "big" for retainer\.max_payload_size: expected a size/)
  })

  it('refuses a missing plugin file unless it is optional', () => {
    expect(() => loadPluginConfig('absent.conf', RETAINER_SCHEMA, { cwd: dir, env: {} }))
      .toThrow('absent.conf: config file not found')
    const cfg = loadPluginConfig('absent.conf', RETAINER_SCHEMA, { cwd: dir, env: {}, optional: true })
    expect(cfg['retainer.storage_type']).toBe('ram')
  })
})
