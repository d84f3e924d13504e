/**
 * An idle node loads no database or client driver (issue 22, idle memory): each auth backend
 * imports its driver when it is loaded, svc_bridge_mqtt imports mqtt.js at its first bridge
 * connection. A default node (its default plugins, no backend loaded) is started with a module
 * hook that records every package it resolves, then stopped; none of the drivers may be there.
 * Loading a backend does load its driver (the same hook, svc_auth_redis loaded at start).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT, killAllNodes, spawnNode, stopNode, tempDir } from '../helpers/process.js'

/** Drivers only a plugin that uses them may load: about 10 to 30 MB of memory each. */
const DRIVERS = ['pg', 'mysql2', 'ioredis', 'mongodb', 'ldapts', 'undici', 'mqtt']

const HOOK = join(PROJECT_ROOT, 'test/helpers/loaded-packages.mjs')

/** The packages a node loaded from start to stop; `loadedPlugins` is its data/loaded_plugins file. */
async function packagesOf (loadedPlugins?: string): Promise<string[]> {
  const dataDir = tempDir('stpk-')
  const file = join(dataDir, 'packages.txt')
  if (loadedPlugins !== undefined) writeFileSync(join(dataDir, 'loaded_plugins'), loadedPlugins)
  const node = await spawnNode({ dataDir, env: { NODE_OPTIONS: `--import ${HOOK}`, LOADED_PACKAGES_FILE: file } })
  await stopNode(node)
  return readFileSync(file, 'utf8').split('\n').filter(l => l !== '')
}

afterAll(async () => { await killAllNodes() })

it('a default node loads none of the drivers', async () => {
  const loaded = await packagesOf()
  expect(loaded).toContain('aedes') // the hook saw the node's packages
  expect(loaded.filter(p => DRIVERS.includes(p))).toEqual([])
}, 30_000)

it('a node with svc_auth_redis loaded at start loads ioredis', async () => {
  // Redis need not run: the plugin loads and reconnects in the background
  const loaded = await packagesOf('{svc_auth_redis, true}.\n')
  expect(loaded).toContain('ioredis')
}, 30_000)
