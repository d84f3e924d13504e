/**
 * `starling-ctl clientid ...` and `users ...` through runCtl against a test node's control
 * socket (found from STARLING_NODE__DATA_DIR, as bin/starling-ctl finds it), with the
 * plugins loaded and unloaded by the test through the node's plugin manager.
 */
import { join } from 'node:path'
import { PROJECT_ROOT } from '../helpers/process.js'
import { closeClients, connect, type TestNode } from '../helpers/node.js'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'
import { loadPluginConfig } from '../../node/config/index.js'
import { CTL_COMMANDS } from '../../node/control/commands.js'
import {
  svcAuthUsername, createAuthClientids, AUTH_CTL_COMMANDS, registerAuthControl, type CredentialPluginInstance
} from '../../plugins/auth/index.js'
import { runCtlOn } from '../helpers/ctl.js'

const COMMANDS = [...CTL_COMMANDS, ...AUTH_CTL_COMMANDS]
const AUTH_PLUGINS = ['svc_auth_clientid', 'svc_auth_username']

let p: PluginNode

/** Loads an auth plugin through the node's manager, with its shipped file plus `overrides`. */
async function load (name: string, overrides: Record<string, string> = {}): Promise<void> {
  p.writeConf(name, shippedPluginConf(name, overrides))
  await p.manager.load(name)
}

/** Runs starling-ctl in-process against `node`; resolves with exit code and output. */
async function ctlOn (node: TestNode, ...argv: string[]): Promise<{ code: number, out: string, err: string }> {
  return await runCtlOn(node, argv, { cwd: PROJECT_ROOT, commands: COMMANDS })
}

/** Runs starling-ctl against the shared test node. */
async function ctl (...argv: string[]): Promise<{ code: number, out: string, err: string }> {
  return await ctlOn(p.node, ...argv)
}

beforeAll(async () => { p = await startPluginNode({ overrides: { allow_anonymous: 'false' } }) })
afterEach(async () => {
  for (const name of AUTH_PLUGINS) if (p.manager.isActive(name)) await p.manager.unload(name)
  await closeClients()
})
afterAll(async () => { await p.destroy() })

describe('starling-ctl users', () => {
  it('adds, lists, updates and deletes users, printing ok and one username per line', async () => {
    await load('svc_auth_username')
    expect(await ctl('users', 'add', 'zoe', 'pw-1')).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect(await ctl('users', 'add', 'adam', 'pw-2')).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect(await ctl('users', 'list')).toEqual({ code: 0, out: 'adam\nzoe\n', err: '' })
    await connect(p.node, { protocolVersion: 4, username: 'zoe', password: 'pw-1' })

    expect(await ctl('users', 'update', 'zoe', 'pw-new')).toEqual({ code: 0, out: 'ok\n', err: '' })
    await connect(p.node, { protocolVersion: 4, username: 'zoe', password: 'pw-new' })

    expect(await ctl('users', 'del', 'zoe')).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect(await ctl('users', 'del', 'adam')).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect(await ctl('users', 'list')).toEqual({ code: 0, out: '', err: '' })
  })

  it('prints the list as JSON with --json', async () => {
    await load('svc_auth_username')
    await ctl('users', 'add', 'json-user', 'pw')
    const { code, out } = await ctl('--json', 'users', 'list')
    expect(code).toBe(0)
    expect(JSON.parse(out)).toEqual(['json-user'])
    await ctl('users', 'del', 'json-user')
  })

  it('fails with exit code 1 and a message naming the user for a duplicate add or an unknown user', async () => {
    await load('svc_auth_username')
    await ctl('users', 'add', 'dup', 'pw')
    const dup = await ctl('users', 'add', 'dup', 'other')
    expect(dup.code).toBe(1)
    expect(dup.err).toMatch(/username "dup" already exists/)
    const unknown = await ctl('users', 'update', 'ghost', 'pw')
    expect(unknown.code).toBe(1)
    expect(unknown.err).toMatch(/username "ghost" does not exist/)
    expect((await ctl('users', 'del', 'ghost')).code).toBe(1)
    await ctl('users', 'del', 'dup')
  })

  it('tells the user to load the plugin while it is attached but not loaded', async () => {
    // the node's plugin manager attached the placeholders at start
    const before = await ctl('users', 'list')
    expect(before.code).toBe(1)
    expect(before.err).toMatch(/plugin svc_auth_username is not loaded; load it first with `starling-ctl plugins load svc_auth_username`/)
    await load('svc_auth_username')
    expect(await ctl('users', 'list')).toMatchObject({ code: 0, err: '' })
    await p.manager.unload('svc_auth_username')
    expect((await ctl('users', 'list')).err).toMatch(/svc_auth_username is not loaded/)
  })
})

describe('starling-ctl users on a node whose plugin manager has stopped (no placeholders attached)', () => {
  let own: PluginNode
  const direct: CredentialPluginInstance[] = []
  beforeEach(async () => { own = await startPluginNode({ overrides: { allow_anonymous: 'false' } }) })
  afterEach(async () => {
    for (const plugin of direct.splice(0)) await plugin.unload()
    await own.destroy()
  })

  /** Loads svc_auth_username outside the (stopped) manager, with its shipped file. */
  async function loadDirect (): Promise<CredentialPluginInstance> {
    const config = loadPluginConfig(join(PROJECT_ROOT, 'etc/plugins/svc_auth_username.conf'), svcAuthUsername.configSchema, { env: {} })
    const plugin = await svcAuthUsername.load({ node: own.node, config, logger: own.node.logger, parts: undefined as never }) as CredentialPluginInstance
    direct.push(plugin)
    return plugin
  }

  it('exists only while svc_auth_username is loaded or attached', async () => {
    await own.manager.load('svc_auth_username')
    expect(await ctlOn(own.node, 'users', 'list')).toMatchObject({ code: 0, err: '' })
    await own.manager.stop() // unloads, then detaches the placeholders
    const gone = await ctlOn(own.node, 'users', 'list')
    expect(gone.code).toBe(1)
    expect(gone.err).toMatch(/Unknown command 'users list'/)
    const plugin = await loadDirect()
    expect(await ctlOn(own.node, 'users', 'list')).toMatchObject({ code: 0, err: '' })
    await plugin.unload()
    expect((await ctlOn(own.node, 'users', 'list')).err).toMatch(/Unknown command 'users list'/)
  })

  it('keeps a loaded plugin\'s commands when the placeholders are attached after the load', async () => {
    await own.manager.stop()
    await loadDirect()
    registerAuthControl(own.node)
    expect(await ctlOn(own.node, 'users', 'list')).toMatchObject({ code: 0, err: '' })
    expect((await ctlOn(own.node, 'clientid', 'list')).err).toMatch(/svc_auth_clientid is not loaded/)
  })
})

describe('starling-ctl clientid', () => {
  it('adds, lists, updates and deletes client ids', async () => {
    await load('svc_auth_clientid')
    expect(await ctl('clientid', 'add', 'meter-7', 'pw-1')).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect(await ctl('clientid', 'list')).toEqual({ code: 0, out: 'meter-7\n', err: '' })
    await connect(p.node, { protocolVersion: 5, clientId: 'meter-7', username: 'u', password: 'pw-1' })
    expect(await ctl('clientid', 'update', 'meter-7', 'pw-2')).toEqual({ code: 0, out: 'ok\n', err: '' })
    await connect(p.node, { protocolVersion: 5, clientId: 'meter-7', username: 'u', password: 'pw-2' })
    expect(await ctl('clientid', 'del', 'meter-7')).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect(await ctl('clientid', 'list')).toEqual({ code: 0, out: '', err: '' })
  })

  it('hashes what it adds with the plugin\'s configured password_hash', async () => {
    await load('svc_auth_clientid', { 'auth.client.password_hash': 'md5' })
    await ctl('clientid', 'add', 'md5-client', 'pw')
    // read back from the node's store, as the API's service layer does
    expect(createAuthClientids(p.node.store).lookup('md5-client')).toMatchObject({ hash: 'md5', salt: expect.stringMatching(/^[0-9a-f]{32}$/) })
    await ctl('clientid', 'del', 'md5-client')
  })
})
