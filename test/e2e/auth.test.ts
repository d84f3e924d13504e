/**
 * The built-in auth plugins over the wire: real mqtt.js clients (MQTT 3.1.1 and 5) against a
 * node whose svc_auth_clientid / svc_auth_username the test loads through the node's plugin
 * manager, with the shipped etc/plugins/*.conf files (plus the keys a test sets).
 */
import type { IClientOptions } from 'mqtt'
import { closeClients, connect, type TestNode } from '../helpers/node.js'
import { closeOpened, refusedConnack } from '../helpers/mqtt.js'
import { startPluginNode, shippedPluginConf, type PluginNode } from '../node/plugins/harness.js'
import { createAuthClientids, createAuthUsers, type CredentialService } from '../../plugins/auth/index.js'

/** The plugins a test loaded, unloaded after it. */
const loaded: Array<{ p: PluginNode, name: string }> = []
/** Loads `name` through `p`'s plugin manager with its shipped config file plus `overrides`. */
async function load (p: PluginNode, name: string, overrides: Record<string, string> = {}): Promise<void> {
  p.writeConf(name, shippedPluginConf(name, overrides))
  await p.manager.load(name)
  loaded.push({ p, name })
}
async function unloadAll (): Promise<void> {
  for (const { p, name } of loaded.splice(0)) if (p.manager.isActive(name)) await p.manager.unload(name)
}

/** The node's username table, through the service layer the ctl commands and the API use. */
const usersOf = (p: PluginNode): CredentialService => createAuthUsers(p.node.store)
/** The node's client id table, through the service layer the ctl commands and the API use. */
const clientidsOf = (p: PluginNode): CredentialService => createAuthClientids(p.node.store)

/** The CONNACK code of an accepted (0) or refused connection, for either protocol version. */
async function connackCode (node: TestNode, opts: IClientOptions): Promise<number> {
  const connack = await refusedOrAccepted(node, opts)
  return opts.protocolVersion === 5 ? connack.reasonCode : connack.returnCode
}
async function refusedOrAccepted (node: TestNode, opts: IClientOptions): Promise<any> {
  try {
    const client = await connect(node, opts)
    return { returnCode: 0, reasonCode: 0, client }
  } catch {
    return await refusedConnack(node, opts)
  }
}

afterEach(async () => {
  await unloadAll()
  await closeClients()
  await closeOpened()
})

describe('svc_auth_username', () => {
  let p: PluginNode
  let node: TestNode
  beforeAll(async () => { p = await startPluginNode({ overrides: { allow_anonymous: 'false' } }); node = p.node })
  afterAll(async () => { await p.destroy() })

  it('accepts the right username and password (MQTT 3.1.1 and 5)', async () => {
    await load(p, 'svc_auth_username')
    await usersOf(p).add('alice', 'wonderland')
    for (const protocolVersion of [4, 5] as const) {
      await connect(node, { protocolVersion, clientId: `alice-${protocolVersion}`, username: 'alice', password: 'wonderland' })
    }
  })

  it('refuses a wrong password with CONNACK 0x86 (MQTT 5) and 4 (MQTT 3.1.1)', async () => {
    await load(p, 'svc_auth_username')
    await usersOf(p).add('bob', 'right')
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'bob', password: 'wrong' })).reasonCode).toBe(0x86)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'bob', password: 'wrong' })).returnCode).toBe(4)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'bob' })).returnCode).toBe(4)
  })

  it('lets allow_anonymous = false refuse an unknown user with 0x87 (MQTT 5) and 5 (MQTT 3.1.1)', async () => {
    await load(p, 'svc_auth_username')
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'stranger', password: 'x' })).reasonCode).toBe(0x87)
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'stranger', password: 'x' })).returnCode).toBe(5)
  })

  it('stops deciding when unloaded: its users fall through to allow_anonymous', async () => {
    await load(p, 'svc_auth_username')
    await usersOf(p).add('carol', 'pw')
    await connect(node, { protocolVersion: 5, username: 'carol', password: 'pw' })
    await p.manager.unload('svc_auth_username')
    expect(node.broker.authenticators.map(a => a.name)).not.toContain('svc_auth_username')
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'carol', password: 'pw' })).reasonCode).toBe(0x87)
  })

  it('adds the preset users of the config file once, keeping a password changed later', async () => {
    const presets = { 'auth.user.1.username': 'preset', 'auth.user.1.password': 'initial' }
    await load(p, 'svc_auth_username', presets)
    await usersOf(p).update('preset', 'changed')
    await p.manager.unload('svc_auth_username')
    await load(p, 'svc_auth_username', presets)
    await connect(node, { protocolVersion: 4, username: 'preset', password: 'changed' })
    expect((await refusedConnack(node, { protocolVersion: 4, username: 'preset', password: 'initial' })).returnCode).toBe(4)
  })
})

describe('allow_anonymous = true with svc_auth_username loaded', () => {
  let p: PluginNode
  let node: TestNode
  beforeAll(async () => { p = await startPluginNode({ overrides: { allow_anonymous: 'true' } }); node = p.node })
  afterAll(async () => { await p.destroy() })

  it('accepts an unknown user and a client without username, still refusing a known user with a wrong password', async () => {
    await load(p, 'svc_auth_username')
    await usersOf(p).add('dave', 'pw')
    await connect(node, { protocolVersion: 5, username: 'stranger', password: 'whatever' })
    await connect(node, { protocolVersion: 4 })
    expect((await refusedConnack(node, { protocolVersion: 5, username: 'dave', password: 'nope' })).reasonCode).toBe(0x86)
  })
})

describe('svc_auth_clientid', () => {
  let p: PluginNode
  let node: TestNode
  beforeAll(async () => { p = await startPluginNode({ overrides: { allow_anonymous: 'false' } }); node = p.node })
  afterAll(async () => { await p.destroy() })

  it('accepts a client id with its password and refuses a wrong one', async () => {
    await load(p, 'svc_auth_clientid')
    await clientidsOf(p).add('sensor-1', 's3cret')
    // mqtt.js refuses to send a password without a username, even in MQTT 5
    await connect(node, { protocolVersion: 5, clientId: 'sensor-1', username: 'any', password: 's3cret' })
    await connect(node, { protocolVersion: 4, clientId: 'sensor-1', username: 'any', password: 's3cret' })
    expect((await refusedConnack(node, { protocolVersion: 4, clientId: 'sensor-1', username: 'any', password: 'bad' })).returnCode).toBe(4)
    expect((await refusedConnack(node, { protocolVersion: 5, clientId: 'sensor-1', username: 'any', password: 'bad' })).reasonCode).toBe(0x86)
    expect((await refusedConnack(node, { protocolVersion: 5, clientId: 'sensor-2', username: 'any', password: 's3cret' })).reasonCode).toBe(0x87)
  })
})

describe('the auth chain', () => {
  let p: PluginNode
  let node: TestNode
  beforeAll(async () => { p = await startPluginNode({ overrides: { allow_anonymous: 'false' } }); node = p.node })
  afterAll(async () => { await p.destroy() })

  /** A client whose client id entry accepts its password and whose username entry does not. */
  const mixed: IClientOptions = { protocolVersion: 5, clientId: 'dev-1', username: 'operator', password: 'device-pw' }

  async function loadBoth (clientPriority: number, userPriority: number): Promise<void> {
    await load(p, 'svc_auth_clientid', { 'auth.client.priority': String(clientPriority) })
    await load(p, 'svc_auth_username', { 'auth.user.priority': String(userPriority) })
    if (clientidsOf(p).lookup('dev-1') === undefined) await clientidsOf(p).add('dev-1', 'device-pw')
    if (usersOf(p).lookup('operator') === undefined) await usersOf(p).add('operator', 'operator-pw')
  }

  it('lets the higher priority decide first: client id (allow) above username (deny) accepts', async () => {
    // svc_dashboard's MQTT tokens (loaded by default) are asked first, about dashboard: names only
    await loadBoth(20, 10)
    expect(node.broker.authenticators.map(a => a.name)).toEqual(['svc_dashboard_mqtt_token', 'svc_auth_clientid', 'svc_auth_username'])
    expect(await connackCode(node, mixed)).toBe(0)
  })

  it('lets the higher priority decide first: username (deny) above client id (allow) refuses with 0x86', async () => {
    await loadBoth(10, 20)
    expect(node.broker.authenticators.map(a => a.name)).toEqual(['svc_dashboard_mqtt_token', 'svc_auth_username', 'svc_auth_clientid'])
    expect(await connackCode(node, mixed)).toBe(0x86)
  })

  it('asks the next provider when the first has no entry', async () => {
    await loadBoth(10, 20)
    // username "nobody" has no entry: svc_auth_username ignores, svc_auth_clientid allows
    expect(await connackCode(node, { ...mixed, username: 'nobody' })).toBe(0)
  })
})

describe('credentials across a restart', () => {
  it('keeps users and client ids in the data directory', async () => {
    let p = await startPluginNode({ overrides: { allow_anonymous: 'false' } })
    try {
      await load(p, 'svc_auth_username')
      await load(p, 'svc_auth_clientid')
      await usersOf(p).add('persisted', 'pw-u')
      await clientidsOf(p).add('persisted-client', 'pw-c')
      await p.manager.unload('svc_auth_username')
      await p.manager.unload('svc_auth_clientid')
      await p.stop()
      p = await startPluginNode({ overrides: { allow_anonymous: 'false' }, dataDir: p.node.dataDir, etcDir: p.etcDir })
      await load(p, 'svc_auth_username')
      await load(p, 'svc_auth_clientid')
      await connect(p.node, { protocolVersion: 4, clientId: 'x', username: 'persisted', password: 'pw-u' })
      await connect(p.node, { protocolVersion: 5, clientId: 'persisted-client', username: 'any', password: 'pw-c' })
      await unloadAll()
    } finally {
      await closeClients()
      await p.destroy()
    }
  })
})
