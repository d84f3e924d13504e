/**
 * The backup service's order (node/ops/backup/backup-service.ts): every section checks the
 * whole file before any section writes, so one malformed entry anywhere changes nothing; two
 * sections may write one key; a file the node writes is mode 0600.
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createBackupSections, type BackupSection } from '../../../node/ops/backup/sections.js'
import { exportData, importData } from '../../../node/ops/backup/backup-service.js'
import { WrongTypeError } from '../../../node/errors.js'

/** A section over `key` that records its writes and refuses an entry `{bad: true}`. */
function recording (name: string, key: string, writes: string[], order = 0): BackupSection {
  return {
    name,
    order,
    export: () => ({ [key]: [{ from: name }] }),
    check (file) {
      const entries = (file[key] ?? []) as Array<Record<string, unknown>>
      entries.forEach((e, i) => { if (e.bad === true) throw new WrongTypeError(`${key}[${i}] is bad`) })
      return { counts: { [key]: entries.length }, skipped: [], notes: [], apply: async () => { writes.push(name) } }
    }
  }
}

describe('the backup service', () => {
  let dir: string
  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'starling-backup-')) })
  afterEach(async () => { await rm(dir, { recursive: true, force: true }) })

  it('writes nothing when a later section refuses an entry', async () => {
    const writes: string[] = []
    const sections = createBackupSections()
    sections.add(recording('first', 'apps', writes, 0))
    sections.add(recording('second', 'rules', writes, 1))
    const c = { dir, sections, node: 'n@h' }
    await expect(importData(c, { content: { version: '4.4', apps: [{}], rules: [{}, { bad: true }] } })).rejects.toThrow('rules[1] is bad')
    expect(writes).toEqual([])
    expect(await importData(c, { content: { version: '4.4', apps: [{}], rules: [{}] } })).toEqual({ version: '4.4', imported: { apps: 1, rules: 1 }, skipped: [], notes: [] })
    expect(writes).toEqual(['first', 'second'])
  })

  it('refuses a file without a version, with an unsupported one, or that is not an object', async () => {
    const c = { dir, sections: createBackupSections(), node: 'n@h' }
    await expect(importData(c, { content: {} })).rejects.toMatchObject({ code: 107 })
    await expect(importData(c, { content: { version: '5.1' } })).rejects.toMatchObject({ code: 108 })
    await expect(importData(c, { content: [] })).rejects.toMatchObject({ code: 108 })
    expect((await importData(c, { content: { version: 4.2 } })).version).toBe('4.2')
  })

  it('joins the entries two sections write under one key, and writes the file 0600', async () => {
    const sections = createBackupSections()
    sections.add(recording('clientids', 'auth_mnesia', []))
    sections.add(recording('usernames', 'auth_mnesia', []))
    const made = await exportData({ dir, sections, node: 'n@h' }, { withSecrets: false })
    expect((await stat(made.path)).mode & 0o777).toBe(0o600)
    const data = JSON.parse(await readFile(made.path, 'utf8'))
    expect(data.auth_mnesia).toEqual([{ from: 'clientids' }, { from: 'usernames' }])
    expect(Object.keys(data)).toEqual(['version', 'auth_mnesia', 'date', 'exported_by'])
  })
})
