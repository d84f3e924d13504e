/**
 * A data directory written by the previous release opens in this one (docs/operations.md,
 * "Upgrades"): test/fixtures/store-0.1.0-501b4cc holds one written by commit 501b4cc's node,
 * before the store's format was versioned (its PROVENANCE.md says how). This release takes it as
 * format 1, writes its format version, and serves everything in it: the retained message, the
 * banned entry, the user and the plugin that holds it, the API application and the rule.
 */
import { cpSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startTestNode, connect, closeClients, collect, waitFor, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { STORE_FORMAT } from '../../node/store/index.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/store-0.1.0-501b4cc', import.meta.url))

let node: TestNode
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'store-upgrade-'))
  cpSync(FIXTURE, dir, { recursive: true })
  node = await startTestNode({ 'node.name': 'old@127.0.0.1' }, dir)
})
afterAll(async () => {
  await closeClients()
  await node?.destroy()
})

it('writes the current format version into the old store', () => {
  expect(node.store.table('_meta').get('format')).toBe(STORE_FORMAT)
})

it('keeps the retained message, the user (svc_auth_username loaded as before) and the banned client', async () => {
  expect(node.services.plugins.isActive('svc_auth_username')).toBe(true)
  const client = await connect(node, { username: 'alice', password: 's3cret' })
  const got = collect(client)
  await client.subscribeAsync('fixture/retained', { qos: 1 })
  await waitFor(() => got.length > 0, 'the retained message')
  expect(got[0].payload.toString()).toBe('kept across releases')
  await expect(connect(node, { username: 'alice', password: 'wrong' })).rejects.toThrow()
  await expect(connect(node, { clientId: 'banned-client', username: 'alice', password: 's3cret' })).rejects.toThrow()
})

it('keeps the API application and the rule', async () => {
  const apps = await runCtlOn(node, ['--json', 'mgmt', 'list'])
  expect(JSON.parse(apps.out).map((a: { app_id: string }) => a.app_id)).toContain('fixture-app')
  const rules = await runCtlOn(node, ['--json', 'rules', 'list'])
  expect(JSON.parse(rules.out).map((r: { id: string, rawsql: string }) => [r.id, r.rawsql])).toEqual([['rule:2aee0cef', 'SELECT payload FROM "sensors/#"']])
})
