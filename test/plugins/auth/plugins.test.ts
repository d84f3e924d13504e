import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PROJECT_ROOT } from '../../helpers/process.js'
import { ConfigError, loadPluginConfig } from '../../../node/config/index.js'
import { svcAuthClientid, svcAuthUsername } from '../../../plugins/auth/index.js'

describe.each([
  { name: 'svc_auth_clientid', def: svcAuthClientid, prefix: 'auth.client' },
  { name: 'svc_auth_username', def: svcAuthUsername, prefix: 'auth.user' }
])('$name definition and config', ({ name, def, prefix }) => {
  const file = join(PROJECT_ROOT, 'etc/plugins', `${def.name}.conf`)

  it('is a plugin that is not loaded by default, as in EMQ X', () => {
    expect(def.name).toBe(name)
    expect(def.loadedByDefault).toBe(false)
    expect(def.version).toMatch(/^v\d+\.\d+\.\d+/)
  })

  it('ships a config file with the defaults: salted sha256, priority 0, no preset entries', () => {
    const cfg: Record<string, unknown> = loadPluginConfig(file, def.configSchema, { env: {} })
    expect(cfg[`${prefix}.password_hash`]).toBe('sha256')
    expect(cfg[`${prefix}.priority`]).toBe(0)
    expect(Object.keys(cfg[`${prefix}.<name>.password`] as object)).toEqual([])
  })

  it('documents every key in the shipped file', () => {
    const text = readFileSync(file, 'utf8')
    for (const key of Object.keys(def.configSchema)) expect(text).toContain(key.replace('<name>', '1'))
  })

  it('refuses an unknown hash name at load with a message naming the key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'starling-authconf-'))
    try {
      writeFileSync(join(dir, 'x.conf'), `${prefix}.password_hash = sha512\n`)
      expect(() => loadPluginConfig(join(dir, 'x.conf'), def.configSchema, { env: {} })).toThrow(ConfigError)
      expect(() => loadPluginConfig(join(dir, 'x.conf'), def.configSchema, { env: {} }))
        .toThrow(new RegExp(`${prefix.replace('.', '\\.')}\\.password_hash`))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses an unknown hash name in a config that skipped the schema', async () => {
    await expect(def.load({ node: {} as any, config: { [`${prefix}.password_hash`]: 'rot13' }, logger: {} as any, parts: undefined as never }))
      .rejects.toThrow(ConfigError)
  })
})
