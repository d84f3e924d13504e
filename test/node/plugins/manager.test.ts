import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { silentLogger } from '../../../node/logger.js'
import type { StarlingNode } from '../../../node/node.js'
import { createPluginManager, type PluginManager } from '../../../node/plugins/manager.js'
import {
  PluginAlreadyStartedError, PluginLoadError, PluginNotFoundError, PluginNotStartedError, LoadedPluginsFileError
} from '../../../node/plugins/errors.js'
import type { PluginDefinition } from '../../../node/plugins/types.js'
import { startPluginNode } from './harness.js'

/** A plugin that records its loads (with the config it got) and unloads. */
function recorder (name: string, opts: { loadedByDefault?: boolean, fail?: string, log?: string[] } = {}): PluginDefinition {
  const log = opts.log ?? []
  return {
    name,
    version: '1.2.3',
    description: `test plugin ${name}`,
    configSchema: { 'test.greeting': { type: 'string', default: 'hello', live: true, doc: 'A greeting.' } },
    loadedByDefault: opts.loadedByDefault ?? false,
    async load ({ config }) {
      if (opts.fail !== undefined) throw new Error(opts.fail)
      log.push(`load ${name} ${String(config['test.greeting'])}`)
      return { unload: async () => { log.push(`unload ${name}`) } }
    }
  }
}

/**
 * The node the managers below run on: only its logger is used (the recorder plugins neither
 * attach nor touch the node, and every manager is given its data directory). A started node
 * already runs its own manager over the node's plugins; these test the manager on its own.
 */
const node = { logger: silentLogger() } as unknown as StarlingNode
const dirs: string[] = []
const managers: PluginManager[] = []
afterEach(async () => {
  for (const m of managers.splice(0)) await m.stop()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** A manager over `definitions` with fresh data and etc directories. */
function managerOf (definitions: PluginDefinition[], dirsIn?: { dataDir: string, etcDir: string }) {
  const dataDir = dirsIn?.dataDir ?? mkdtempSync(join(tmpdir(), 'starling-pm-data-'))
  const etcDir = dirsIn?.etcDir ?? mkdtempSync(join(tmpdir(), 'starling-pm-etc-'))
  mkdirSync(join(etcDir, 'plugins'), { recursive: true })
  if (dirsIn === undefined) dirs.push(dataDir, etcDir)
  const manager = createPluginManager({ components: node, definitions, dataDir, etcDir, env: {} })
  managers.push(manager)
  const listFile = join(dataDir, 'loaded_plugins')
  const conf = (plugin: string, text: string): void => writeFileSync(join(etcDir, 'plugins', `${plugin}.conf`), text)
  return { manager, dataDir, etcDir, listFile, conf }
}

describe('plugin manager: start', () => {
  it('loads the loadedByDefault plugins when data/loaded_plugins does not exist, and does not write it', async () => {
    const log: string[] = []
    const { manager, listFile } = managerOf([recorder('svc_a', { loadedByDefault: true, log }), recorder('svc_b', { log })])
    expect(await manager.start(node)).toEqual([])
    expect(log).toEqual(['load svc_a hello'])
    expect(manager.isActive('svc_a')).toBe(true)
    expect(manager.isActive('svc_b')).toBe(false)
    expect(existsSync(listFile)).toBe(false)
  })

  it('loads what data/loaded_plugins says; a plugin it does not mention gets its default', async () => {
    const log: string[] = []
    const { manager, listFile } = managerOf([
      recorder('svc_a', { loadedByDefault: true, log }), recorder('svc_b', { log }), recorder('svc_c', { loadedByDefault: true, log })
    ])
    writeFileSync(listFile, '% comment\n{svc_a, false}.\n{svc_b,true}.\n\n')
    await manager.start(node)
    expect(manager.list().map(p => [p.name, p.active])).toEqual([['svc_a', false], ['svc_b', true], ['svc_c', true]])
  })

  it('refuses a malformed data/loaded_plugins, naming the file and line', async () => {
    const { manager, listFile } = managerOf([recorder('svc_a')])
    writeFileSync(listFile, '{svc_a, true}.\n{svc_a true}\n')
    const err = await manager.start(node).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LoadedPluginsFileError)
    expect((err as Error).message).toBe(`${listFile}:2: cannot read "{svc_a true}"; write one plugin per line as {svc_name, true}. or {svc_name, false}.`)
  })

  it('keeps a plugin whose load throws inactive, reports it with its name, and loads the others', async () => {
    const log: string[] = []
    const { manager } = managerOf([recorder('svc_bad', { loadedByDefault: true, fail: 'boom' }), recorder('svc_good', { loadedByDefault: true, log })])
    const failures = await manager.start(node)
    expect(failures).toHaveLength(1)
    expect(failures[0]).toBeInstanceOf(PluginLoadError)
    expect(failures[0].message).toBe('cannot load plugin svc_bad: boom')
    expect(manager.isActive('svc_bad')).toBe(false)
    expect(log).toEqual(['load svc_good hello'])
  })
})

describe('plugin manager: list', () => {
  it('lists every defined plugin by name with the spec fields name, version, description, active, and EMQ X\'s type', async () => {
    const { manager } = managerOf([recorder('svc_z', { loadedByDefault: true }), recorder('svc_m')])
    await manager.start(node)
    expect(manager.list()).toEqual([
      { name: 'svc_m', version: '1.2.3', description: 'test plugin svc_m', active: false, type: 'feature' },
      { name: 'svc_z', version: '1.2.3', description: 'test plugin svc_z', active: true, type: 'feature' }
    ])
  })
})

describe('plugin manager: load and unload', () => {
  it('loads an inactive plugin and records it in data/loaded_plugins', async () => {
    const { manager, listFile } = managerOf([recorder('svc_a', { loadedByDefault: true }), recorder('svc_b')])
    await manager.start(node)
    expect(await manager.load('svc_b')).toEqual({ name: 'svc_b', version: '1.2.3', description: 'test plugin svc_b', active: true, type: 'feature' })
    expect(readFileSync(listFile, 'utf8')).toBe('{svc_a, true}.\n{svc_b, true}.\n')
  })

  it('refuses to load an active plugin with code 110 already_started and changes nothing', async () => {
    const log: string[] = []
    const { manager, listFile } = managerOf([recorder('svc_a', { loadedByDefault: true, log })])
    await manager.start(node)
    const err = await manager.load('svc_a').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PluginAlreadyStartedError)
    expect(err).toMatchObject({ code: 110, message: 'already_started', plugin: 'svc_a' })
    expect(log).toEqual(['load svc_a hello'])
    expect(existsSync(listFile)).toBe(false)
  })

  it('unloads an active plugin, records it, and refuses a second unload with code 111 not_started', async () => {
    const log: string[] = []
    const { manager, listFile } = managerOf([recorder('svc_a', { loadedByDefault: true, log })])
    await manager.start(node)
    expect((await manager.unload('svc_a')).active).toBe(false)
    expect(readFileSync(listFile, 'utf8')).toBe('{svc_a, false}.\n')
    const err = await manager.unload('svc_a').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PluginNotStartedError)
    expect(err).toMatchObject({ code: 111, message: 'not_started' })
    expect(log).toEqual(['load svc_a hello', 'unload svc_a'])
  })

  it('names an unknown plugin and the known ones', async () => {
    const { manager } = managerOf([recorder('svc_b'), recorder('svc_a')])
    await manager.start(node)
    for (const op of [manager.load, manager.unload, manager.reload]) {
      const err = await op('svc_nope').catch((e: unknown) => e)
      expect(err).toBeInstanceOf(PluginNotFoundError)
      expect(err).toMatchObject({ code: 102, message: 'unknown plugin "svc_nope"; known plugins: svc_a, svc_b' })
    }
  })

  it('fails a load whose config file is wrong with the config error, leaving the plugin inactive', async () => {
    const { manager, conf, listFile } = managerOf([recorder('svc_a')])
    await manager.start(node)
    conf('svc_a', 'test.greting = hi\n')
    const err = await manager.load('svc_a').catch((e: unknown) => e) as PluginLoadError
    expect(err).toBeInstanceOf(PluginLoadError)
    expect(err.message).toMatch(/^cannot load plugin svc_a: .*svc_a\.conf:1: unknown key "test\.greting"/)
    expect(manager.isActive('svc_a')).toBe(false)
    expect(existsSync(listFile)).toBe(false)
  })

  it('keeps a failing plugin inactive when loaded at run time, with its name in the error', async () => {
    const { manager } = managerOf([recorder('svc_bad', { fail: 'cannot bind' })])
    await manager.start(node)
    await expect(manager.load('svc_bad')).rejects.toThrow('cannot load plugin svc_bad: cannot bind')
    expect(manager.isActive('svc_bad')).toBe(false)
  })
})

describe('plugin manager: reload', () => {
  it('re-reads the config file, then unloads and loads the plugin', async () => {
    const log: string[] = []
    const { manager, conf } = managerOf([recorder('svc_a', { loadedByDefault: true, log })])
    await manager.start(node)
    conf('svc_a', 'test.greeting = hi\n')
    await manager.reload('svc_a')
    expect(log).toEqual(['load svc_a hello', 'unload svc_a', 'load svc_a hi'])
  })

  it('keeps the running plugin when the new config file is wrong', async () => {
    const log: string[] = []
    const { manager, conf } = managerOf([recorder('svc_a', { loadedByDefault: true, log })])
    await manager.start(node)
    conf('svc_a', 'test.greeting =\n')
    await expect(manager.reload('svc_a')).rejects.toThrow(PluginLoadError)
    expect(manager.isActive('svc_a')).toBe(true)
    expect(log).toEqual(['load svc_a hello'])
  })

  it('loads an inactive plugin', async () => {
    const { manager } = managerOf([recorder('svc_a')])
    await manager.start(node)
    expect((await manager.reload('svc_a')).active).toBe(true)
  })
})

describe('plugin manager: stop and the loaded_plugins file', () => {
  it('unloads in reverse load order and leaves the file as it was', async () => {
    const log: string[] = []
    const { manager, listFile } = managerOf([recorder('svc_a', { log }), recorder('svc_b', { log })])
    await manager.start(node)
    await manager.load('svc_b')
    await manager.load('svc_a')
    const before = readFileSync(listFile, 'utf8')
    await manager.stop()
    expect(log.slice(-2)).toEqual(['unload svc_a', 'unload svc_b'])
    expect(readFileSync(listFile, 'utf8')).toBe(before)
    await expect(manager.load('svc_a')).rejects.toThrow('stopped')
  })

  it('keeps entries of plugins this node does not define when rewriting the file', async () => {
    const { manager, listFile } = managerOf([recorder('svc_a')])
    writeFileSync(listFile, '{svc_dashboard, true}.\n{svc_a, false}.\n')
    await manager.start(node)
    await manager.load('svc_a')
    expect(readFileSync(listFile, 'utf8')).toBe('{svc_a, true}.\n{svc_dashboard, true}.\n')
  })

  it('serialises operations: a load and an unload issued together run in order', async () => {
    const { manager } = managerOf([recorder('svc_a')])
    await manager.start(node)
    const [loaded, unloaded] = await Promise.all([manager.load('svc_a'), manager.unload('svc_a')])
    expect([loaded.active, unloaded.active]).toEqual([true, false])
  })
})

describe('plugin manager on a real node: loaded_plugins across a restart', () => {
  it('keeps svc_retainer unloaded after the node restarts on the same data directory', async () => {
    const first = await startPluginNode()
    try {
      expect(first.manager.list().filter(p => p.active).map(p => p.name))
        .toEqual(['svc_dashboard', 'svc_delayed_publish', 'svc_management', 'svc_retainer', 'svc_rule_engine'])
      await first.manager.unload('svc_retainer')
    } finally {
      await first.stop()
    }
    const second = await startPluginNode({ dataDir: first.node.dataDir, etcDir: first.etcDir })
    try {
      expect(second.manager.info('svc_retainer').active).toBe(false)
      expect(second.manager.info('svc_management').active).toBe(true)
      expect(readFileSync(join(first.node.dataDir, 'loaded_plugins'), 'utf8')).toContain('{svc_retainer, false}.\n')
    } finally {
      await second.destroy()
    }
  })
})
