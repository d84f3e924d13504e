import { spawn } from 'node:child_process'
import { mkdtemp, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { createStore, MAX_KEY_BYTES, type Store } from '../../../node/store/index.js'
import { silentLogger } from '../../../node/logger.js'

const projectRoot = resolve(fileURLToPath(import.meta.url), '../../../..')

describe('store', () => {
  let dir: string
  let store: Store | undefined

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'starling-store-'))
  })

  afterEach(async () => {
    await store?.close()
    store = undefined
    await rm(dir, { recursive: true, force: true })
  })

  async function openStore (): Promise<Store> {
    store = await createStore({ dir, logger: silentLogger() })
    return store
  }

  it('reads back a committed value, with nested Buffers as Buffers', async () => {
    const table = (await openStore()).table<any>('kv')
    const value = { payload: Buffer.from('hello'), properties: { correlationData: Buffer.from([0, 1, 255]), userProperties: { a: ['1', '2'] } }, n: 3, none: null }
    await table.put('k', value)
    const got = table.get('k')
    expect(Buffer.isBuffer(got.payload)).toBe(true)
    expect(Buffer.isBuffer(got.properties.correlationData)).toBe(true)
    expect(got).toEqual(value)
    expect(table.has('k')).toBe(true)
    expect(table.has('missing')).toBe(false)
    expect(table.get('missing')).toBeUndefined()
  })

  it('keeps tables apart by name', async () => {
    const s = await openStore()
    await Promise.all([s.table('a').put('k', 1), s.table('b').put('k', 2)])
    expect(s.table('a').get('k')).toBe(1)
    expect(s.table('b').get('k')).toBe(2)
    expect(s.table('a')).toBe(s.table('a'))
  })

  it('scans, counts and clears by key prefix in key order', async () => {
    const table = (await openStore()).table<number>('kv')
    const keys = ['b/2', 'a/1', 'b/10', 'ab', 'b/1', 'b', 'c', '\u0001ctl', 'b/\u00e9']
    await Promise.all(keys.map((k, i) => table.put(k, i)))
    expect([...table.entries('b/')].map(([k]) => k)).toEqual(['b/1', 'b/10', 'b/2', 'b/\u00e9'])
    expect([...table.entries('a')].map(([k]) => k)).toEqual(['a/1', 'ab'])
    expect([...table.entries('\u0001')].map(([k, v]) => [k, v])).toEqual([['\u0001ctl', 7]])
    expect([...table.entries()].length).toBe(keys.length)
    expect(table.count('b')).toBe(5)
    expect(table.count()).toBe(keys.length)
    await table.clear('b/')
    expect([...table.entries()].map(([k]) => k)).toEqual(['\u0001ctl', 'a/1', 'ab', 'b', 'c'])
    await table.clear()
    expect(table.count()).toBe(0)
  })

  it('deletes a key and ignores deleting a missing one', async () => {
    const table = (await openStore()).table<string>('kv')
    await table.put('k', 'v')
    await table.del('k')
    await table.del('never')
    expect(table.has('k')).toBe(false)
  })

  it('rejects an empty key and a key longer than MAX_KEY_BYTES with a message naming the table', async () => {
    const table = (await openStore()).table<number>('kv')
    await expect(table.put('x'.repeat(MAX_KEY_BYTES + 1), 1)).rejects.toThrow(/store table "kv".*hash long keys/)
    await expect(table.put('', 1)).rejects.toThrow(/non-empty/)
    await table.put('x'.repeat(MAX_KEY_BYTES), 1)
    expect(table.count()).toBe(1)
  })

  it('flushed() resolves after every write issued so far is committed', async () => {
    const s = await openStore()
    const table = s.table<number>('kv')
    for (let i = 0; i < 100; i++) void table.put(`k${i}`, i)
    await s.flushed()
    expect(table.count()).toBe(100)
  })

  it('resolves writes in the order they were issued, across tables and event-loop turns', async () => {
    const s = await openStore()
    const tables = [s.table<any>('a'), s.table<any>('b')]
    const resolved: number[] = []
    const writes: Array<Promise<void>> = []
    for (let i = 0; i < 3000; i++) {
      const table = tables[i % 2]
      const shape = i % 3 === 0 ? { i, payload: Buffer.alloc(i % 200) } : i % 3 === 1 ? { cmd: 'pubrel', messageId: i } : i
      const write = i % 5 === 4 ? table.del(`k${i - 2}`) : table.put(`k${i}`, shape)
      writes.push(write.then(() => { resolved.push(i) }))
      if (i % 97 === 0) await new Promise((resolve) => setImmediate(resolve))
    }
    await Promise.all(writes)
    expect(resolved).toEqual([...resolved].sort((a, b) => a - b))
  })

  it('keeps the data when closed and opened again', async () => {
    let s = await openStore()
    void s.table('kv').put('unawaited', Buffer.from('pending at close'))
    await s.table('other').put('k', { v: 1 })
    await s.close()
    store = undefined
    expect(() => s.table('kv')).toThrow(/closed/)
    s = await openStore()
    expect(s.table('kv').get('unawaited')).toEqual(Buffer.from('pending at close'))
    expect(s.table('other').get('k')).toEqual({ v: 1 })
  })

  it('refuses, through the promise, a write to a table once the store began closing', async () => {
    // a table taken before the close, written after it (a connection's queue still being
    // dropped while the node stops): lmdb-js threw outside any caller and took the process down
    const s = await openStore()
    const kv = s.table<Buffer>('kv')
    await kv.put('before', Buffer.from('x'))
    const closing = s.close()
    await expect(kv.put('after', Buffer.from('y'))).rejects.toThrow(/closed/)
    await expect(kv.del('before')).rejects.toThrow(/closed/)
    await expect(kv.clear()).rejects.toThrow(/closed/)
    await closing
    store = undefined
    await expect(kv.put('later', Buffer.from('z'))).rejects.toThrow(/closed/)
  })

  it('keeps a committed write when the writing process is SIGKILLed', async () => {
    const child = await childWriter()
    try {
      const { signal, stderr } = await runChild(child.script, dir)
      expect(stderr).toBe('')
      expect(signal).toBe('SIGKILL')
    } finally {
      await rm(child.dir, { recursive: true, force: true })
    }
    const s = await openStore()
    expect(s.table('kv').get('k')).toEqual({ payload: Buffer.from('survives'), n: 1 })
    expect(s.table('kv').count()).toBe(1000)
  })
})

/**
 * Transpiles node/store/*.ts to a temp dir, with a node_modules link back to the project,
 * plus a script that writes 1000 entries, awaits them, and SIGKILLs its own process.
 */
async function childWriter (): Promise<{ dir: string, script: string }> {
  const out = await mkdtemp(join(tmpdir(), 'starling-store-child-'))
  await symlink(join(projectRoot, 'node_modules'), join(out, 'node_modules'), 'dir')
  await mkdir(join(out, 'store'))
  const src = join(projectRoot, 'node', 'store')
  for (const file of (await readdir(src)).filter((f) => f.endsWith('.ts'))) {
    const { outputText } = ts.transpileModule(await readFile(join(src, file), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }
    })
    await writeFile(join(out, 'store', file.replace(/\.ts$/, '.js')), outputText)
  }
  await writeFile(join(out, 'package.json'), '{"type":"module"}')
  const script = join(out, 'writer.js')
  await writeFile(script, `
import { pino } from 'pino'
import { createStore } from './store/index.js'
const store = await createStore({ dir: process.argv[2], logger: pino({ level: 'silent' }) })
const table = store.table('kv')
const writes = []
for (let i = 0; i < 999; i++) writes.push(table.put('n' + i, i))
writes.push(table.put('k', { payload: Buffer.from('survives'), n: 1 }))
await Promise.all(writes)
process.kill(process.pid, 'SIGKILL')
`)
  return { dir: out, script }
}

function runChild (script: string, dataDir: string): Promise<{ code: number | null, signal: NodeJS.Signals | null, stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, dataDir], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    child.on('error', reject)
    child.on('exit', (code, signal) => resolve({ code, signal, stderr }))
  })
}
