/**
 * The user's etc directory (`loadConfig({ etcDir })`, `STARLING_ETC_DIR`): its starling.conf
 * replaces the installation's, and a path key written `etc/...` names a file in it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { configEtcDir, configFile, loadConfig, resolveConfigPath, resolvePath } from '../../../node/config/index.js'

let root: string
let etc: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'etc-root-'))
  etc = mkdtempSync(join(tmpdir(), 'etc-user-'))
})
afterEach(() => { rmSync(root, { recursive: true, force: true }); rmSync(etc, { recursive: true, force: true }) })

it('reads <etcDir>/starling.conf and resolves etc/ paths into the etc directory', () => {
  writeFileSync(join(etc, 'starling.conf'), 'mqtt.max_clientid_len = 23\n')
  const cfg = loadConfig({ root, etcDir: etc, env: {} })
  expect(cfg['mqtt.max_clientid_len']).toBe(23)
  expect(configFile(cfg)).toEqual({ path: join(etc, 'starling.conf'), found: true })
  expect(resolvePath(cfg, 'acl_file')).toBe(join(etc, 'acl.conf'))
  expect(resolvePath(cfg, 'node.data_dir')).toBe(join(root, 'data'))
  expect(configEtcDir(cfg)).toBe(etc)
  // the listeners' certificate files (the development certificate's directory among them)
  expect(resolveConfigPath(cfg, cfg['listener.ssl.external.keyfile'])).toBe(join(etc, 'certs', 'key.pem'))
  expect(resolveConfigPath(cfg, 'etc/certs', '/elsewhere')).toBe(join(etc, 'certs'))
})

it('takes the etc directory from STARLING_ETC_DIR, which is not a config key', () => {
  const cfg = loadConfig({ root, env: { STARLING_ETC_DIR: etc } })
  expect(configFile(cfg)).toEqual({ path: join(etc, 'starling.conf'), found: false })
  expect(resolvePath(cfg, 'acl_file')).toBe(join(etc, 'acl.conf'))
})

it('without one, is the installation\'s etc/', () => {
  const cfg = loadConfig({ root, env: {} })
  expect(configEtcDir(cfg)).toBe(join(root, 'etc'))
  expect(resolvePath(cfg, 'acl_file')).toBe(join(root, 'etc', 'acl.conf'))
})
