/**
 * The layer rules of `npm run depcheck` (.dependency-cruiser.cjs, docs/architecture.md, issue
 * 20): the core imports no plugin, the parts above it (rules/, cluster/, api/) import no plugin,
 * a plugin imports no other plugin's folder (plugins/kit/ excepted), plugins/kit/ imports no
 * plugin, only bin/ (and the tests) read the plugin list, and the dashboard web app imports no
 * Node room. dependency-cruiser runs, with the repository's configuration, in a child process
 * on a small tree of its own in a temporary folder, laid out with the repository's folders.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'
import { dirname, join, posix } from 'node:path'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/**
 * The fixture: each file and the files it imports (paths from the fixture's root). Every file
 * exports one constant and uses what it imports; an entry with `type` imports types only.
 */
const TREE: Record<string, Array<string | { type: string }>> = {
  'node/types.ts': [],
  'node/a.ts': ['plugins/x/b.ts'],
  'node/t.ts': [{ type: 'plugins/x/b.ts' }],
  'node/uses-list.ts': ['plugins/index.ts'],
  'node/r.ts': ['rules/r.ts'],
  'plugins/x/own.ts': ['node/types.ts'],
  'plugins/x/b.ts': ['node/types.ts', 'plugins/x/own.ts'],
  'plugins/x/c.ts': ['plugins/y/d.ts'],
  'plugins/x/e.ts': ['plugins/kit/f.ts'],
  'plugins/x/cl.ts': ['cluster/h.ts'],
  'plugins/y/d.ts': ['rules/r.ts', 'api/s.ts', 'plugins/kit/f.ts'],
  'plugins/kit/f.ts': ['node/types.ts'],
  'plugins/kit/g.ts': ['plugins/y/d.ts'],
  'plugins/index.ts': ['plugins/x/b.ts', 'plugins/y/d.ts'],
  'rules/r.ts': ['node/types.ts'],
  'rules/g.ts': ['plugins/x/b.ts'],
  'cluster/h.ts': ['node/types.ts'],
  'cluster/k.ts': ['plugins/kit/f.ts'],
  'api/s.ts': ['node/types.ts'],
  'api/i.ts': ['plugins/index.ts'],
  'bin/main.ts': ['plugins/index.ts', 'node/a.ts', 'rules/g.ts', 'api/i.ts', 'cluster/k.ts'],
  'test/list.test.ts': ['plugins/index.ts'],
  'dashboard/src/page.ts': ['api/s.ts'],
  'dashboard/src/view.ts': ['dashboard/src/page.ts']
}

/** The rules each file breaks; a file not named here breaks none. */
const EXPECTED: Record<string, string[]> = {
  'node/a.ts': ['core-imports-no-plugin'],
  'node/t.ts': ['core-imports-no-plugin'],
  'node/uses-list.ts': ['core-imports-no-plugin', 'only-the-root-reads-the-plugin-list'],
  'node/r.ts': ['core-imports-no-layer-above'],
  'plugins/x/c.ts': ['plugin-imports-no-other-plugin'],
  'plugins/x/cl.ts': ['plugins-stay-out-of-cluster-and-bin'],
  'plugins/kit/g.ts': ['kit-imports-no-plugin'],
  'rules/g.ts': ['parts-import-no-plugin'],
  'cluster/k.ts': ['parts-import-no-plugin'],
  'api/i.ts': ['only-the-root-reads-the-plugin-list', 'parts-import-no-plugin'],
  'dashboard/src/page.ts': ['dashboard-app-speaks-http-only']
}

/** Writes the fixture under `dir`: one constant per file, built from what it imports. */
function writeTree (dir: string): void {
  // the repository's module settings (imports name `.js`, files are `.ts`), nothing else
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, rootDir: '.' }
  }))
  for (const [file, imports] of Object.entries(TREE)) {
    const lines: string[] = []
    const used: string[] = []
    imports.forEach((target, i) => {
      const path = typeof target === 'string' ? target : target.type
      let spec = posix.relative(posix.dirname(file), path).replace(/\.ts$/, '.js')
      if (!spec.startsWith('.')) spec = './' + spec
      if (typeof target === 'string') {
        lines.push(`import { value as v${i} } from '${spec}'`)
        used.push(`v${i}`)
      } else {
        lines.push(`import type { Value as T${i} } from '${spec}'`)
        used.push(`(0 as unknown as T${i})`)
      }
    })
    lines.push(`export type Value = number`, `export const value: Value = [${used.join(', ')}].length`)
    mkdirSync(join(dir, dirname(file)), { recursive: true })
    writeFileSync(join(dir, file), lines.join('\n') + '\n')
  }
}

/** dependency-cruiser's violations (with the repository's config), as rule names by file. */
function cruise (dir: string): Record<string, string[]> {
  const cli = join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs')
  const run = spawnSync(process.execPath, [
    cli, 'node', 'plugins', 'cluster', 'api', 'rules', 'bin', 'test', 'dashboard',
    '--config', join(root, '.dependency-cruiser.cjs'), '--output-type', 'json'
  ], { cwd: dir, encoding: 'utf8' })
  if (run.stdout === '') throw new Error(`dependency-cruiser failed (${String(run.status)}): ${run.stderr}`)
  const result = JSON.parse(run.stdout) as { modules: unknown[], summary: { violations: Array<{ from: string, to: string, rule: { name: string } }> } }
  const found: Record<string, string[]> = {}
  for (const v of result.summary.violations) (found[v.from] ??= []).push(v.rule.name)
  for (const file of Object.keys(found)) found[file] = [...new Set(found[file])].sort()
  return Object.assign(found, { '(modules)': [String(result.modules.length)] })
}

describe('npm run depcheck: the core, the parts and the plugins', () => {
  let dir: string
  let found: Record<string, string[]>
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'starling-depcheck-'))
    writeTree(dir)
    found = cruise(dir)
  }, 20000)
  afterAll(() => { rmSync(dir, { recursive: true, force: true }) })

  it('cruises every file of the fixture, with its imports resolved', () => {
    expect(found['(modules)']).toEqual([String(Object.keys(TREE).length)])
  })

  it('fails a core file that imports a plugin, even for its types or for the plugin list', () => {
    expect(found['node/a.ts']).toEqual(EXPECTED['node/a.ts'])
    expect(found['node/t.ts']).toEqual(EXPECTED['node/t.ts'])
    expect(found['node/uses-list.ts']).toEqual(EXPECTED['node/uses-list.ts'])
    expect(found['node/r.ts']).toEqual(EXPECTED['node/r.ts'])
  })

  it('fails a plugin that imports another plugin\'s folder, and lets it use its own folder and plugins/kit/', () => {
    expect(found['plugins/x/c.ts']).toEqual(EXPECTED['plugins/x/c.ts'])
    expect(found['plugins/x/b.ts']).toBeUndefined()
    expect(found['plugins/x/e.ts']).toBeUndefined()
    expect(found['plugins/y/d.ts']).toBeUndefined()
  })

  it('fails plugins/kit/ importing a plugin, and a plugin importing the cluster', () => {
    expect(found['plugins/kit/g.ts']).toEqual(EXPECTED['plugins/kit/g.ts'])
    expect(found['plugins/kit/f.ts']).toBeUndefined()
    expect(found['plugins/x/cl.ts']).toEqual(EXPECTED['plugins/x/cl.ts'])
  })

  it('fails rules/, cluster/ and api/ importing a plugin or the plugin list', () => {
    expect(found['rules/g.ts']).toEqual(EXPECTED['rules/g.ts'])
    expect(found['cluster/k.ts']).toEqual(EXPECTED['cluster/k.ts'])
    expect(found['api/i.ts']).toEqual(EXPECTED['api/i.ts'])
  })

  it('lets bin/ and the tests read the plugin list, and the list import every plugin', () => {
    expect(found['bin/main.ts']).toBeUndefined()
    expect(found['test/list.test.ts']).toBeUndefined()
    expect(found['plugins/index.ts']).toBeUndefined()
  })

  it('fails the dashboard web app importing a Node room, and lets it import its own files', () => {
    expect(found['dashboard/src/page.ts']).toEqual(EXPECTED['dashboard/src/page.ts'])
    expect(found['dashboard/src/view.ts']).toBeUndefined()
  })

  it('reports nothing else', () => {
    const { '(modules)': _modules, ...violations } = found
    expect(violations).toEqual(EXPECTED)
  })
})
