// `npm run release`: builds the project and packs an installation that is not a clone,
// dist/release/starling-<version>-<platform>-<arch>.tar.gz, holding everything a node needs on a
// machine with no Node.js and no npm: the Node.js runtime (node_modules/node/bin/node, the one
// `npm install` brought, which bin/runtime.sh runs), the production dependencies the server
// loads, dist/ (the server and the dashboard's built app), bin/, etc/ (no certificates: a
// node makes its development certificate at first start), etc/systemd/starling.service, docs/
// and README.md. Unpacked under any directory, `bin/starling foreground` (or `start`) runs it;
// docs/operations.md, "Install from a release".
//
// node_modules: the production dependency tree (`npm ls --omit=dev`) without the packages only
// the dashboard's browser build uses (vite bundles them into dist/dashboard/), copied from this
// checkout's node_modules, so packing needs no registry.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)))
/** Dependencies the browser app alone imports (dashboard/src): bundled into dist/dashboard/ by vite. */
const BROWSER_ONLY = new Set(['echarts', 'vue', 'vue-router', '@codemirror/commands', '@codemirror/lang-sql', '@codemirror/language', '@codemirror/state', '@codemirror/view'])
/** What of dist/ the server and the dashboard use (not the tests' and benches' builds). */
const DIST_PARTS = ['api', 'bin', 'cluster', 'dashboard', 'node', 'plugins', 'rules']

const run = (cmd, args) => execFileSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] })

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const name = `starling-${pkg.version}-${process.platform}-${process.arch}`
const out = join(ROOT, 'dist', 'release')
const stage = join(out, name)
const runtime = join(ROOT, 'node_modules', 'node', 'bin', 'node')
if (!existsSync(runtime)) throw new Error(`${runtime} is missing: run npm install first (it brings the Node.js runtime the release carries)`)

if (!process.argv.includes('--no-build')) run('npm', ['run', 'build'])
rmSync(out, { recursive: true, force: true })
mkdirSync(stage, { recursive: true })

const copy = (from, to = from, filter = undefined) => cpSync(join(ROOT, from), join(stage, to), { recursive: true, filter: filter && ((src) => filter(relative(join(ROOT, from), src))) })
for (const file of ['package.json', 'package-lock.json', 'README.md']) copy(file)
copy('docs')
copy('bin', 'bin', (path) => !path.endsWith('.ts'))
// etc/ without the development certificates a checkout may have made (each installation makes its own)
copy('etc', 'etc', (path) => !/^certs\/.+\.(pem|key|srl|csr)$/.test(path))
for (const part of DIST_PARTS) copy(join('dist', part))

// the production dependency tree, walked from package.json's dependencies less the browser-only ones
// (npm ls exits 1 on a problem it only reports, such as an extraneous package: its JSON is still whole)
let listing
try {
  listing = execFileSync('npm', ['ls', '--omit=dev', '--all', '--json', '--long'], { cwd: ROOT, maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] })
} catch (err) {
  if (err.stdout === undefined || err.stdout.length === 0) throw err
  listing = err.stdout
}
const tree = JSON.parse(listing.toString())
const paths = new Set()
// a package met again is listed as deduped, its dependencies under its first listing: walk every listing
const walk = (deps) => {
  for (const info of Object.values(deps ?? {})) {
    if (info.path === undefined || info.missing === true) continue
    paths.add(info.path)
    walk(info.dependencies)
  }
}
walk(Object.fromEntries(Object.entries(tree.dependencies ?? {}).filter(([dep]) => !BROWSER_ONLY.has(dep))))
for (const path of [...paths].sort()) {
  const rel = relative(ROOT, path)
  // a nested package comes with its parent's folder; copy each folder once
  if ([...paths].some((p) => p !== path && rel.startsWith(relative(ROOT, p) + '/'))) continue
  cpSync(path, join(stage, rel), { recursive: true })
}
// the runtime: the `node` package's binary, where bin/runtime.sh looks for it
mkdirSync(join(stage, 'node_modules', 'node', 'bin'), { recursive: true })
cpSync(runtime, join(stage, 'node_modules', 'node', 'bin', 'node'))
cpSync(join(ROOT, 'node_modules', 'node', 'package.json'), join(stage, 'node_modules', 'node', 'package.json'))

const tarball = join(out, `${name}.tar.gz`)
execFileSync('tar', ['-czf', tarball, '-C', out, name])
rmSync(stage, { recursive: true, force: true })
console.log(`${relative(ROOT, tarball)} (${(statSync(tarball).size / 1024 / 1024).toFixed(1)} MB, ${paths.size} packages)`)
