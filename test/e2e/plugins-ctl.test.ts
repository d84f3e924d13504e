/**
 * `starling-ctl plugins list|load|unload|reload` (runCtl, in process) against a node's
 * control socket, with EMQ X 4's output and the spec's codes on the wire.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CTL_COMMANDS } from '../../node/control/commands.js'
import { callControl } from '../../node/control/client.js'
import { PLUGIN_CTL_COMMANDS } from '../../node/plugins/control.js'
import { connect, closeClients } from '../helpers/node.js'
import { startPluginNode, type PluginNode } from '../node/plugins/harness.js'
import { runCtlOn } from '../helpers/ctl.js'

let p: PluginNode
let cwd: string
beforeAll(async () => {
  // no $SYS statistics round: its retained messages would count against the retainer limit set below
  p = await startPluginNode({ overrides: { 'broker.sys_interval': '0' } })
  cwd = mkdtempSync(join(tmpdir(), 'starling-ctl-cwd-'))
})
afterAll(async () => {
  await p.destroy()
  rmSync(cwd, { recursive: true, force: true })
})
afterEach(async () => { await closeClients() })

/** Runs starling-ctl against the test node; resolves with the exit code and output. */
async function ctl (...argv: string[]): Promise<{ code: number, out: string, err: string }> {
  return await runCtlOn(p.node, argv, { cwd, commands: [...CTL_COMMANDS, ...PLUGIN_CTL_COMMANDS] })
}

/** The error code the node answers for a command, as it travels on the control socket. */
async function codeOf (command: string, plugin: string): Promise<unknown> {
  const err = await callControl(p.node.control.socketPath, command, [plugin], {}, { nodeName: p.node.name }).catch((e: unknown) => e)
  return (err as { code?: unknown }).code
}

describe('starling-ctl plugins list', () => {
  it('prints Plugin(<name>, description=<text>, active=<bool>) per plugin, by name', async () => {
    const expected = p.manager.list().map(x => `Plugin(${x.name}, description=${x.description}, active=${String(x.active)})\n`).join('')
    expect(await ctl('plugins', 'list')).toEqual({ code: 0, out: expected, err: '' })
    // by name (EMQ X's order); the auth backends and the bridge are not loaded by default
    const names = p.manager.list().map(x => x.name)
    expect(names).toEqual([...names].sort())
    expect(expected).toMatch(/^Plugin\(svc_auth_clientid, description=.+, active=false\)\n/)
    expect(expected).toMatch(/\nPlugin\(svc_auth_username, description=.+, active=false\)\n/)
    expect(expected).toMatch(/\nPlugin\(svc_delayed_publish, description=.+, active=true\)\nPlugin\(svc_management, /)
    expect(expected).toMatch(/\nPlugin\(svc_auth_mysql, description=.+, active=false\)\n/)
  })

  it('prints the spec Plugin objects with --json', async () => {
    const { code, out } = await ctl('plugins', 'list', '--json')
    expect(code).toBe(0)
    expect(JSON.parse(out)).toEqual(p.manager.list())
    for (const plugin of JSON.parse(out)) expect(Object.keys(plugin).sort()).toEqual(['active', 'description', 'name', 'type', 'version'])
  })
})

describe('starling-ctl plugins load / unload', () => {
  it('unloads and loads a plugin with EMQ X messages, and fails the repeat with 111 / 110', async () => {
    expect(await ctl('plugins', 'unload', 'svc_rule_engine')).toEqual({ code: 0, out: 'Plugin svc_rule_engine unloaded successfully.\n', err: '' })
    expect(p.manager.isActive('svc_rule_engine')).toBe(false)
    expect(await ctl('plugins', 'unload', 'svc_rule_engine')).toEqual({ code: 1, out: '', err: 'Unload plugin svc_rule_engine error: not_started.\n' })
    expect(await codeOf('plugins unload', 'svc_rule_engine')).toBe(111)

    expect(await ctl('plugins', 'load', 'svc_rule_engine')).toEqual({ code: 0, out: 'Plugin svc_rule_engine loaded successfully.\n', err: '' })
    expect(p.manager.isActive('svc_rule_engine')).toBe(true)
    expect(await ctl('plugins', 'load', 'svc_rule_engine')).toEqual({ code: 1, out: '', err: 'Load plugin svc_rule_engine error: already_started.\n' })
    expect(await codeOf('plugins load', 'svc_rule_engine')).toBe(110)
  })

  it('names an unknown plugin and the known ones', async () => {
    expect(await ctl('plugins', 'load', 'svc_nope')).toEqual({
      code: 1,
      out: '',
      err: `Load plugin svc_nope error: unknown plugin "svc_nope"; known plugins: ${p.manager.list().map(x => x.name).join(', ')}.\n`
    })
  })

  it('refuses to unload svc_management, as EMQ X did', async () => {
    expect(await ctl('plugins', 'unload', 'svc_management')).toEqual({ code: 1, out: '', err: 'Plugin svc_management can not be unloaded.\n' })
    expect(p.manager.isActive('svc_management')).toBe(true)
  })
})

describe('starling-ctl plugins reload', () => {
  it("re-reads the plugin's file: a new retainer limit applies at once", async () => {
    p.writeConf('svc_retainer', 'retainer.max_retained_messages = 1\n')
    expect(await ctl('plugins', 'reload', 'svc_retainer')).toEqual({ code: 0, out: 'Plugin svc_retainer reloaded successfully.\n', err: '' })
    const pub = await connect(p.node)
    await pub.publishAsync('ctl/reload/1', 'a', { qos: 1, retain: true })
    await pub.publishAsync('ctl/reload/2', 'b', { qos: 1, retain: true })
    expect(p.node.broker.core.sessions.retainedCount()).toBe(1)
  })

  it('reports a bad file and keeps the plugin running with its old settings', async () => {
    p.writeConf('svc_retainer', 'retainer.storage_type = tape\n')
    const { code, out, err } = await ctl('plugins', 'reload', 'svc_retainer')
    expect([code, out]).toEqual([1, ''])
    expect(err).toMatch(/^Reload plugin svc_retainer error: .*svc_retainer\.conf:1: .*retainer\.storage_type.*\.\n$/)
    expect(p.manager.isActive('svc_retainer')).toBe(true)
  })
})
