/**
 * A node for the dashboard's browser tests: started in this process on ephemeral ports with
 * its log lines kept (the generated first password is one of them), the dashboard's address,
 * and a clean-up that stops it and removes its data directory. Sign in as `admin` with
 * {@link DASH_PASSWORD} (set as `dashboard.default_user.password` unless overridden).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { Page } from 'playwright-core'
import { loadConfig } from '../../node/config/index.js'
import { createLogger } from '../../node/logger.js'
import { startStarling, type Starling } from '../../bin/assemble.js'
import { EPHEMERAL } from './node.js'
import { signInThroughPage } from './browser.js'

/** The admin password the helper configures. */
export const DASH_PASSWORD = 'dashboard-test-pass-1'

/** A node with its log lines, its dashboard address and a clean-up. */
export interface DashNode {
  node: Starling
  lines: string[]
  /** `http://127.0.0.1:<dashboard port>` */
  url: string
  /** The bound port of a listener of `protocol` (`mqtt:tcp`, `mqtt:ws`, `http:management`, ...). */
  port: (protocol: string) => number
  destroy: () => Promise<void>
}

/**
 * Starts a node; `overrides` are configuration keys (`dashboard.default_user.password` is
 * {@link DASH_PASSWORD} unless given); `init.etcDir` is its `etc` (plugin files in
 * `<etcDir>/plugins/`; default the project's `etc`), for tests that change plugin settings.
 */
export async function startDashNode (overrides: Record<string, string> = {}, init: { etcDir?: string } = {}): Promise<DashNode> {
  const dataDir = mkdtempSync(join(tmpdir(), 'starling-dash-ui-'))
  const lines: string[] = []
  const destination = new Writable({ write (chunk, _enc, cb) { lines.push(String(chunk)); cb() } })
  const config = loadConfig({
    env: {},
    overrides: { ...EPHEMERAL, 'node.data_dir': dataDir, 'dashboard.default_user.password': DASH_PASSWORD, ...overrides }
  })
  const node = await startStarling(config, { logger: createLogger({ level: 'info', destination }), env: {}, etcDir: init.etcDir })
  const port = (protocol: string): number => {
    // the MQTT listeners are the broker's; the board lists the listeners of the parts above it
    if (protocol.startsWith('mqtt:')) return node.port(protocol as Parameters<typeof node.port>[0])
    const entry = node.listenerBoard.list().find(l => l.protocol === protocol)
    if (entry === undefined) throw new Error(`no ${protocol} listener`)
    return Number(String(entry.listen_on).split(':').pop())
  }
  return {
    node,
    lines,
    url: `http://127.0.0.1:${port('http:dashboard')}`,
    port,
    destroy: async () => {
      await node.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

/** Signs in as admin with {@link DASH_PASSWORD} and changes nothing else (the configured password still asks to be changed: this goes past that page). */
export async function signInAsAdmin (page: Page, password = DASH_PASSWORD): Promise<void> {
  await signInThroughPage(page, 'admin', password)
}
