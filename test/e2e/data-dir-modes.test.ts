/**
 * The data directory holds sessions, API applications and the cluster key: only the node's
 * user may read it (the directory 0700, its files 0600), as the control socket already is.
 */
import { readdirSync, statSync, chmodSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestNode, type TestNode } from '../helpers/node.js'

const modeOf = (path: string): number => statSync(path).mode & 0o777

/** Every regular file under `dir`, recursively. */
function filesUnder (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [])
}

let node: TestNode | undefined
afterEach(async () => { await node?.destroy(); node = undefined })

it('creates the data directory 0700 and the store files 0600', async () => {
  node = await startTestNode()
  expect(modeOf(node.dataDir)).toBe(0o700)
  expect(modeOf(join(node.dataDir, 'store'))).toBe(0o700)
  const files = filesUnder(node.dataDir)
  expect(files.some(f => f.endsWith('data.mdb'))).toBe(true)
  for (const file of files) expect([file, modeOf(file)]).toEqual([file, 0o600])
})

it('closes up a data directory left readable by an older version', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'starling-'))
  mkdirSync(join(dir, 'store'))
  chmodSync(dir, 0o755)
  try {
    node = await startTestNode({}, dir)
    expect(modeOf(dir)).toBe(0o700)
    expect(modeOf(join(dir, 'store'))).toBe(0o700)
    for (const file of filesUnder(join(dir, 'store'))) expect([file, modeOf(file)]).toEqual([file, 0o600])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
