/**
 * A test node with an `etc` directory of its own (plugin files written by the test), whose
 * plugin manager is the node's own (`node.services.plugins`: the core plugins loaded, the
 * auth plugins known, the `starling-ctl plugins` handlers registered by startNode).
 * Shared by the plugin, auth, retainer and delayed publish suites.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestNode, type TestNode } from '../../helpers/node.js'
import { PROJECT_ROOT } from '../../helpers/process.js'
import type { PluginManager } from '../../../node/plugins/manager.js'

/** What {@link startPluginNode} takes. */
export interface PluginNodeOptions {
  /** Node config overrides (etc/starling.conf keys). */
  overrides?: Record<string, string>
  /** Reuse a data directory (restart tests). */
  dataDir?: string
  /** Reuse an etc directory. */
  etcDir?: string
  /** Plugin files to write before the node starts: plugin name -> file text. */
  pluginConf?: Record<string, string>
}

/** A started node and its plugin manager. */
export interface PluginNode {
  node: TestNode
  /** The node's own manager (`node.services.plugins`). */
  manager: PluginManager
  etcDir: string
  /** Writes `etc/plugins/<name>.conf` (read at the plugin's next load or reload). */
  writeConf: (name: string, text: string) => void
  /** Stops the node (and so its manager), keeping the data and etc directories (for a restart). */
  stop: () => Promise<void>
  /** Stops and deletes both directories. */
  destroy: () => Promise<void>
}

/**
 * Writes the plugin files, then starts a test node on that etc directory. Fails (stopping
 * the node) when a plugin given a file is not loaded after the start: the node only logs a
 * plugin that could not load, and a test of that plugin would otherwise run without it.
 */
export async function startPluginNode (opts: PluginNodeOptions = {}): Promise<PluginNode> {
  const etcDir = opts.etcDir ?? mkdtempSync(join(tmpdir(), 'starling-etc-'))
  mkdirSync(join(etcDir, 'plugins'), { recursive: true })
  const writeConf = (name: string, text: string): void => writeFileSync(join(etcDir, 'plugins', `${name}.conf`), text)
  for (const [name, text] of Object.entries(opts.pluginConf ?? {})) writeConf(name, text)
  const node = await startTestNode(opts.overrides, opts.dataDir, { etcDir })
  const manager = node.services.plugins
  try {
    for (const name of Object.keys(opts.pluginConf ?? {})) {
      // readConfig names the file and line of a bad file; a load that threw has no better report here
      manager.readConfig(name)
      if (!manager.isActive(name)) throw new Error(`plugin ${name} did not load on the test node`)
    }
  } catch (err) {
    await node.destroy()
    if (opts.etcDir === undefined) rmSync(etcDir, { recursive: true, force: true })
    throw err
  }
  const stop = (): Promise<void> => node.stop()
  return {
    node,
    manager,
    etcDir,
    writeConf,
    stop,
    destroy: async () => {
      await node.destroy()
      rmSync(etcDir, { recursive: true, force: true })
    }
  }
}

/**
 * The text of the shipped `etc/plugins/<name>.conf` with `overrides` appended as
 * `key = value` lines (a later line for a key wins), for {@link PluginNode.writeConf}.
 */
export function shippedPluginConf (name: string, overrides: Record<string, string> = {}): string {
  const shipped = readFileSync(join(PROJECT_ROOT, 'etc/plugins', `${name}.conf`), 'utf8')
  return shipped + '\n' + Object.entries(overrides).map(([key, value]) => `${key} = ${value}\n`).join('')
}
