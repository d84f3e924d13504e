/**
 * A node started from EMQ X 4.4's unmodified `emqx.conf` (test/fixtures/emqx44): `bin/starling
 * --config emqx.conf` starts, `GET /api/v3/configs/` shows EMQ X's values applied (under
 * Starling's names where they differ), and each key accepted without effect is one warning
 * line of the log. Only the listen addresses, the data directory and the log target and level come from
 * the environment (ephemeral ports, a temporary directory, the console). Needs `dist/`.
 */
import { join } from 'node:path'
import { emqxFiles } from '../fixtures/emqx44/emqx44.js'
import { API_AUTH } from '../helpers/node.js'
import { killAllNodes, spawnNode, stopNode, tempDir, type NodeProcess } from '../helpers/process.js'

let node: NodeProcess
let configs: Record<string, string>

beforeAll(async () => {
  const dir = tempDir('emqx44-')
  emqxFiles(dir)
  node = await spawnNode({ args: ['--config', join(dir, 'etc/emqx.conf')], env: { STARLING_LOG__TO: 'console', STARLING_LISTENER__TCP__INTERNAL: '127.0.0.1:0' } })
  const api = /Start http:management listener on ([^ ]+) successfully/.exec(node.stdout())?.[1]
  const res = await fetch(`http://${api}/api/v3/configs/`, { headers: { authorization: API_AUTH } })
  configs = ((await res.json()) as { data: Array<{ configs: Record<string, string> }> }).data[0].configs
}, 30000)
afterAll(async () => {
  await stopNode(node)
  await killAllNodes()
})

describe('a node from EMQ X 4.4\'s emqx.conf', () => {
  it('applies EMQ X\'s values, under Starling\'s names where they differ', () => {
    expect(configs['node.name']).toBe('emqx@127.0.0.1')
    expect(configs['mqtt.max_topic_levels']).toBe('128') // Starling's default is 0
    expect(configs['listener.tcp.external.max_conns']).toBe('1024000') // listener.tcp.external.max_connections
    expect(configs['listener.ssl.external.max_conns']).toBe('102400')
    expect(configs['listener.tcp.external.zone']).toBe('external')
    expect(configs.acl_file).toBe('etc/acl.conf') // {{ platform_etc_dir }}/acl.conf
    expect(configs['zone.internal.allow_anonymous']).toBe('true')
    expect(configs['zone.internal.enable_acl']).toBe('off')
    expect(configs['zone.internal.bypass_auth_plugins']).toBe('true')
    expect(configs['zone.external.enable_acl']).toBe('on')
    expect(configs['mqtt.max_inflight']).toBe('32') // zone.external.max_inflight, node-wide
    expect(configs['mqtt.session_expiry_interval']).toBe('2h')
    // EMQ X's second TCP listener, in zone internal
    expect(configs['listener.tcp.internal.zone']).toBe('internal')
    expect(configs['listener.tcp.internal.max_conns']).toBe('1024000')
    expect(configs['listener.tcp.internal.acceptors']).toBe('4')
  })

  it('opens EMQ X\'s internal TCP listener beside the external one', () => {
    const started = node.logLines().filter(l => l.msg === 'listener started' && l.protocol === 'mqtt:tcp').map(l => l.listener)
    expect(started).toEqual(['listener.tcp.external', 'listener.tcp.internal'])
  })

  it('logs each key accepted without effect as one warning line', () => {
    const warned = node.logLines().filter(l => typeof l.key === 'string' && typeof l.source === 'string' && l.source.includes('emqx.conf'))
    const keys = warned.map(l => l.key)
    for (const key of ['node.dist_listen_min', 'rpc.mode', 'listener.tcp.internal.active_n', 'zone.internal.max_inflight', 'modules.loaded_file']) {
      expect(keys.filter(k => k === key)).toHaveLength(1)
    }
    expect(warned.find(l => l.key === 'node.dist_listen_min')?.msg).toMatch(/no meaning outside the Erlang VM/)
    expect(warned.find(l => l.key === 'module.presence.qos')?.msg).toMatch(/emqx_mod_presence .*, which Starling does not have/)
    expect(new Set(keys).size).toBe(keys.length)
    for (const l of warned) expect(l.msg).not.toMatch(/\n/)
    // and nothing else went wrong
    expect(node.stderr()).toBe('')
  })
})
