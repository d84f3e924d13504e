/**
 * docker-compose.yml passes configuration keys to the nodes as `STARLING_*` variables, and takes
 * the operator's own settings (cookie, API secret) from variables that must not look like
 * configuration keys: a node started by hand in a shell where they are set would refuse any
 * `STARLING_*` name it does not know.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../../../node/config/index.js'
import { PROJECT_ROOT } from '../../helpers/process.js'

const compose = readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')

it('sets only STARLING_* variables that a node accepts as configuration keys', () => {
  const env: Record<string, string> = {}
  for (const m of compose.matchAll(/^\s+(STARLING_[A-Z0-9_]+):\s*(.+)$/gm)) {
    // ${VAR:-default} as compose interpolates it with VAR unset
    env[m[1]] = m[2].replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1').trim()
  }
  expect(Object.keys(env).length).toBeGreaterThan(3)
  expect(() => loadConfig({ env, cwd: PROJECT_ROOT })).not.toThrow()
})

it('takes the operator\'s settings from variables outside the STARLING_ namespace', () => {
  const interpolated = [...compose.matchAll(/\$\{([A-Z0-9_]+)/g)].map(m => m[1])
  expect(interpolated).toEqual(expect.arrayContaining(['CLUSTER_COOKIE', 'CLUSTER_API_SECRET']))
  for (const name of interpolated) expect(name).not.toMatch(/^STARLING_/)
  // and a node refuses a STARLING_ name that is no key, as it should
  expect(() => loadConfig({ env: { STARLING_COOKIE: 'x' }, cwd: PROJECT_ROOT })).toThrow(/STARLING_COOKIE/)
})
