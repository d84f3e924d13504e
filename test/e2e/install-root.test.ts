/**
 * A node runs from any working directory: relative paths in the configuration (the default
 * `etc/starling.conf`, `acl_file`, the listeners' certificates, `node.data_dir`) resolve
 * against the installation root, as EMQ X's resolve against its install root; a file the user
 * names with `--config` or `STARLING_CONFIG` resolves against the user's directory.
 */
import { readdirSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { spawnNode, killAllNodes, tempDir, connectTo, closeProcessClients } from '../helpers/process.js'

afterEach(async () => { await closeProcessClients() })
afterAll(async () => { await killAllNodes() })

it('starts from another directory, reading the installation\'s etc/ and writing nothing in the working directory', async () => {
  const elsewhere = tempDir()
  const node = await spawnNode({ cwd: elsewhere })
  expect((await connectTo(node.port('mqtt:tcp'))).connected).toBe(true)
  // the ACL file and the TLS certificates were the installation's: nothing made here
  expect(readdirSync(elsewhere)).toEqual([])
  expect(node.stdout()).not.toContain('no configuration file')
})

it('reads a --config file named relative to the user\'s directory, its relative paths the installation\'s', async () => {
  const elsewhere = tempDir()
  mkdirSync(join(elsewhere, 'conf'))
  writeFileSync(join(elsewhere, 'conf', 'my.conf'), 'acl_file = etc/acl.conf\nmqtt.max_clientid_len = 23\n')
  const node = await spawnNode({ cwd: elsewhere, args: ['--config', 'conf/my.conf'] })
  // the file's value applies: a 24-character client id is refused
  await expect(connectTo(node.port('mqtt:tcp'), { clientId: 'twenty-four-characters-x', reconnectPeriod: 0 })).rejects.toThrow()
  expect(readdirSync(elsewhere)).toEqual(['conf'])
})
