/**
 * `/api/v3/plugins/`, `/nodes/:node/plugins/...` and `/nodes/:node/plugin_configs/:plugin`
 * over real HTTP: the Plugin fields, load/unload and their codes 110/111 and effect (no
 * retained messages while svc_retainer is unloaded), and reading and changing a plugin's
 * settings (its file rewritten, the plugin reloaded), with the bad inputs changing nothing.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestNode, closeClients, connect, collect, type TestNode } from '../helpers/node.js'
import { closeOpened } from '../helpers/mqtt.js'
import { apiOf, expectError, settle } from './api-actions-client.js'

let node: TestNode
let etcDir: string
const api = apiOf(() => node)

beforeAll(async () => {
  // plugin files are changed by these tests: a copy of etc/plugins, not the project's
  etcDir = mkdtempSync(join(tmpdir(), 'starling-etc-'))
  cpSync('etc/plugins', join(etcDir, 'plugins'), { recursive: true })
  node = await startTestNode({}, undefined, { etcDir })
})
afterEach(async () => { await closeClients(); await closeOpened() })
afterAll(async () => {
  await node.destroy()
  rmSync(etcDir, { recursive: true, force: true })
})

/** Publishes a retained message over HTTP and answers what a new subscriber then gets. */
async function retainedAfterPublish (topic: string, payload: string): Promise<string[]> {
  expect((await api('POST', '/mqtt/publish', { topic, payload, qos: 1, retain: true })).body.code).toBe(0)
  const late = await connect(node)
  const got = collect(late)
  await late.subscribeAsync(topic, { qos: 1 })
  await settle()
  return got.map(m => m.payload.toString())
}

describe('plugins', () => {
  it('lists the plugins of every node and of one node with the spec fields and EMQ X 3.4\'s type', async () => {
    const all = await api('GET', '/plugins/')
    expect(all.status).toBe(200)
    expect(all.body.data).toHaveLength(1)
    expect(all.body.data[0].node).toBe(node.name)
    const plugins = all.body.data[0].plugins
    expect(plugins.map((p: any) => p.name)).toContain('svc_retainer')
    for (const p of plugins) {
      expect(Object.keys(p).sort()).toEqual(['active', 'description', 'name', 'type', 'version'])
      expect(typeof p.active).toBe('boolean')
      expect(typeof p.version).toBe('string')
    }
    const typeOf = (name: string): string => plugins.find((p: any) => p.name === name).type
    expect([typeOf('svc_auth_username'), typeOf('svc_retainer'), typeOf('svc_management'), typeOf('svc_rule_engine')]).toEqual(['auth', 'feature', 'feature', 'feature'])
    const one = await api('GET', `/nodes/${node.name}/plugins/`)
    expect(one.body).toEqual({ code: 0, data: plugins })
  })

  it('unloads and loads svc_retainer, with 111 and 110 on repeats and no retained messages while unloaded', async () => {
    const path = `/nodes/${node.name}/plugins/svc_retainer`
    expect((await api('PUT', `${path}/unload`)).body).toEqual({ code: 0 })
    expect(node.services.plugins.isActive('svc_retainer')).toBe(false)
    const again = await api('PUT', `${path}/unload`)
    expectError(again, 111, 400)
    expect(again.body.message).toBe('not_started')
    expect(await retainedAfterPublish('plugins/retained/off', 'lost')).toEqual([])

    expect((await api('PUT', `${path}/load`)).body).toEqual({ code: 0 })
    const repeat = await api('PUT', `${path}/load`)
    expectError(repeat, 110, 400)
    expect(repeat.body.message).toBe('already_started')
    expect((await api('GET', `/nodes/${node.name}/plugins/`)).body.data.find((p: any) => p.name === 'svc_retainer').active).toBe(true)
    expect(await retainedAfterPublish('plugins/retained/on', 'kept')).toEqual(['kept'])
  })

  it('answers an unknown plugin or node with HTTP 404 and a clear message, changing nothing', async () => {
    const before = node.services.plugins.list()
    for (const action of ['load', 'unload']) {
      const res = await api('PUT', `/nodes/${node.name}/plugins/svc_nothing/${action}`)
      expectError(res, 102, 404)
      expect(res.body.message).toMatch(/unknown plugin "svc_nothing"; known plugins: .*svc_retainer/)
      expectError(await api('PUT', `/nodes/nobody@nowhere/plugins/svc_retainer/${action}`), 102, 404)
    }
    expectError(await api('GET', '/nodes/nobody@nowhere/plugins/'), 102, 404)
    expect(node.services.plugins.list()).toEqual(before)
  })
})

describe('plugin_configs', () => {
  const path = (plugin: string): string => `/nodes/${node.name}/plugin_configs/${plugin}`
  const file = (plugin: string): string => join(etcDir, 'plugins', `${plugin}.conf`)

  it('reads a plugin\'s settings as EMQ X 3.4\'s list of {key, value, desc, required}, and as an object with ?format=object', async () => {
    const list = await api('GET', path('svc_retainer'))
    expect(list.status).toBe(200)
    expect(list.body.data.map((e: any) => [e.key, e.value, e.required])).toEqual([
      ['retainer.storage_type', 'disc', false],
      ['retainer.max_retained_messages', '0', false],
      ['retainer.max_payload_size', '1MB', false],
      ['retainer.expiry_interval', '0s', false]
    ])
    for (const e of list.body.data) {
      expect(Object.keys(e).sort()).toEqual(['desc', 'key', 'required', 'value'])
      expect(e.desc).not.toBe('')
    }
    expect((await api('GET', `${path('svc_retainer')}?format=list`)).body).toEqual(list.body)
    expectError(await api('GET', `${path('svc_retainer')}?format=xml`), 108, 400)
    const res = await api('GET', `${path('svc_retainer')}?format=object`)
    expect(res.body).toEqual({
      code: 0,
      data: {
        'retainer.storage_type': 'disc',
        'retainer.max_retained_messages': '0',
        'retainer.max_payload_size': '1MB',
        'retainer.expiry_interval': '0s'
      }
    })
  })

  it('changes a loaded plugin\'s settings: writes its file and reloads it', async () => {
    const res = await api('PUT', path('svc_retainer'), { 'retainer.max_payload_size': '8', 'retainer.storage_type': 'disc' })
    expect(res.body).toEqual({ code: 0, data: { reload_required: ['retainer.max_payload_size'], reloaded: true } })
    expect(readFileSync(file('svc_retainer'), 'utf8')).toMatch(/^retainer\.max_payload_size = 8$/m)
    expect(readFileSync(file('svc_retainer'), 'utf8')).toMatch(/^## Largest payload of a retained message/m) // comments stay
    expect((await api('GET', `${path('svc_retainer')}?format=object`)).body.data['retainer.max_payload_size']).toBe('8')
    expect(await retainedAfterPublish('plugin-configs/big', 'longer than eight')).toEqual([])
    expect(await retainedAfterPublish('plugin-configs/small', 'short')).toEqual(['short'])
    expect((await api('PUT', path('svc_retainer'), { 'retainer.max_payload_size': '1MB' })).body.data.reloaded).toBe(true)
  })

  it('writes the settings of an inactive plugin for its next load', async () => {
    const res = await api('PUT', path('svc_auth_username'), { 'auth.user.password_hash': 'bcrypt', 'auth.user.1.username': 'preset', 'auth.user.1.password': 'pw' })
    expect(res.body.data).toEqual({ reload_required: ['auth.user.password_hash', 'auth.user.1.username', 'auth.user.1.password'], reloaded: false })
    expect(node.services.plugins.isActive('svc_auth_username')).toBe(false)
    expect(node.services.plugins.readConfig('svc_auth_username')['auth.user.password_hash']).toBe('bcrypt')
    expect((await api('GET', path('svc_auth_username'))).body.data).toContainEqual(expect.objectContaining({ key: 'auth.user.1.username', value: 'preset' }))
    expect((await api('GET', path('svc_auth_username'))).body.data).toContainEqual(expect.objectContaining({ key: 'auth.user.1.password', required: true }))
  })

  it('refuses bad input with its code, leaving the file and the plugin as they were', async () => {
    const before = readFileSync(file('svc_retainer'), 'utf8')
    const cases: Array<[unknown, number, boolean?]> = [
      ['{"retainer.max_payload_size": ', 109, true],
      [{}, 107],
      [{ 'retainer.max_payload_size': { size: 1 } }, 108],
      [['retainer.max_payload_size'], 108],
      [{ 'retainer.max_payload_size': 'huge' }, 108],
      [{ 'retainer.max_payload_size': '2MB', 'retainer.storage_type': 'cloud' }, 108],
      [{ 'retainer.max_payload_sise': '2MB' }, 108],
      [{ 'retainer.expiry_interval': '1h\nretainer.storage_type = ram' }, 108]
    ]
    for (const [body, code, raw] of cases) expectError(await api('PUT', path('svc_retainer'), body, { raw }), code, 400)
    const typo = await api('PUT', path('svc_retainer'), { 'retainer.max_payload_sise': '2MB' })
    expect(typo.body.message).toMatch(/did you mean retainer\.max_payload_size/)
    expectError(await api('PUT', path('svc_nothing'), { a: '1' }), 102, 404)
    expectError(await api('GET', path('svc_nothing')), 102, 404)
    expectError(await api('GET', `/nodes/nobody@nowhere/plugin_configs/svc_retainer`), 102, 404)
    expect(readFileSync(file('svc_retainer'), 'utf8')).toBe(before)
    expect((await api('GET', `${path('svc_retainer')}?format=object`)).body.data['retainer.max_payload_size']).toBe('1MB')
    expect(node.services.plugins.isActive('svc_retainer')).toBe(true)
  })
})
